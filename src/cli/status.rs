//! `nightshift status [--watch [SECS]]`: the worker on one screen. With `--watch` the
//! screen is drawn again every SECS seconds (on a terminal it is cleared first; with
//! `--json`, one JSON document a line) until Ctrl-C or the reader goes away.

use std::future::Future;
use std::io::IsTerminal;
use std::time::Duration;

use nightshift::app::overview::Overview;
use nightshift::app::App;
use nightshift::error::Error;

use super::output::{line, print, stdout_closed};

pub async fn run(
    app: &App,
    watch: Option<u64>,
    json: bool,
    stop: impl Future<Output = ()>,
) -> Result<(), Error> {
    let Some(every) = watch else {
        let overview = app.overview().await?;
        return print(json, &overview, || render(&overview));
    };
    let clear = !json && std::io::stdout().is_terminal();
    tokio::pin!(stop);
    loop {
        let overview = app.overview().await?;
        if json {
            let text = serde_json::to_string(&overview).map_err(|e| {
                Error::new(
                    nightshift::error::ErrorKind::Internal,
                    format!("cannot write JSON: {e}"),
                )
            })?;
            line(&text)?;
        } else {
            if clear {
                // Home and clear: the screen is drawn again in place.
                line("\x1b[H\x1b[2J")?;
            }
            print(false, &overview, || render(&overview))?;
        }
        if stdout_closed() {
            return Ok(());
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(every)) => {}
            () = &mut stop => return Ok(()),
        }
    }
}

/// The overview as a screen of text.
pub fn render(o: &Overview) -> String {
    let mut out = Vec::new();
    out.push(format!("nightshift status at {}", o.at));
    let gone = o.workers.len() as i64 - o.workers_alive;
    let mut workers = format!("{} alive", o.workers_alive);
    if gone > 0 {
        workers.push_str(&format!(", {gone} gone"));
    }
    for w in o.workers.iter().filter(|w| w.alive) {
        workers.push_str(&format!(
            "\n             {} on {} (pid {}, v{}), {} run(s) held",
            w.worker_id, w.host, w.pid, w.version, w.running_runs
        ));
    }
    out.push(format!("workers      {workers}"));
    let count = |map: &std::collections::BTreeMap<String, i64>, key: &str| {
        map.get(key).copied().unwrap_or(0)
    };
    let s = &o.schedules.by_status;
    out.push(format!(
        "schedules    {} active, {} paused, {} completed, {} failed; {} failing",
        count(s, "active"),
        count(s, "paused"),
        count(s, "completed"),
        count(s, "failed"),
        o.schedules.failing
    ));
    if o.next_due.is_empty() {
        out.push("next due     nothing".into());
    }
    for (i, due) in o.next_due.iter().enumerate() {
        let label = if i == 0 { "next due" } else { "" };
        out.push(format!(
            "{label:<12} {}  {}  {}  {}",
            due.next_run_at.as_deref().unwrap_or("-"),
            due.schedule_id,
            due.user_id,
            due.name.as_deref().unwrap_or(&due.goal)
        ));
    }
    let r = &o.runs_last_hour;
    let mut runs = if r.total == 0 {
        "none".to_string()
    } else {
        r.by_status
            .iter()
            .map(|(status, n)| format!("{n} {status}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(p99) = r.lateness_p99_ms {
        runs.push_str(&format!("; lateness p99 {p99} ms"));
    }
    out.push(format!("runs (1 h)   {runs}"));
    out.push(format!(
        "outbox       {} pending, {} dead",
        o.outbox.pending, o.outbox.dead
    ));
    out.push(format!(
        "embedding    {} chunk(s) waiting; search {}",
        o.embedding_backlog,
        match &o.search_degraded {
            None => "hybrid".to_string(),
            Some(reason) => format!("by keywords only ({reason})"),
        }
    ));
    out.push(format!(
        "database     {}",
        o.database_bytes
            .map_or_else(|| "size unknown".to_string(), size)
    ));
    out.join("\n")
}

fn size(bytes: i64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes < 1024 * 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else if (bytes as f64) < 1024.0 * MIB {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else {
        format!("{:.2} GiB", bytes as f64 / (1024.0 * MIB))
    }
}
