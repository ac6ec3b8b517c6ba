//! `nightshift status` and `GET /v1/admin/status`: the overview counts what the database
//! holds, the CLI prints it (once, or again and again with `--watch` until Ctrl-C), and a
//! hostile `--watch` value is refused.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::spec::ScheduleSpec;
use serde_json::Value;
use tempfile::TempDir;

fn nightshift(dir: &TempDir) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nightshift"));
    cmd.env("NIGHTSHIFT_DB", common::database_in(dir))
        .env_remove("NIGHTSHIFT_CONFIG")
        .stdin(Stdio::null());
    cmd
}

fn spec(goal: &str, every: &str) -> ScheduleSpec {
    ScheduleSpec {
        goal: goal.into(),
        every: Some(every.into()),
        ..Default::default()
    }
}

/// Two schedules (one paused, one failing), a hundred runs in the last hour with known
/// lateness and one older, a dead letter.
async fn fill(app: &App) -> (String, String) {
    let now = app.clock().now_ms();
    let operator = Actor::Operator;
    let a = app
        .add_schedule(&operator, "alice", &spec("check the mail", "1h"))
        .await
        .unwrap();
    let b = app
        .add_schedule(&operator, "bob", &spec("water the plants", "1d"))
        .await
        .unwrap();
    app.schedules()
        .pause(&operator, &b.schedule_id, None)
        .await
        .unwrap();
    let conn = app.db().conn().await.unwrap();
    for i in 0..100i64 {
        let scheduled_for = now - 3_000_000 + i * 10_000;
        let (status, late) = if i == 99 {
            ("failed", 5_000)
        } else {
            ("succeeded", i + 1)
        };
        conn.execute(
            "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, started_at,
                                        finished_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
            libsql::params![
                format!("run-{i}"),
                a.schedule_id.as_str(),
                scheduled_for,
                status,
                scheduled_for + late
            ],
        )
        .await
        .unwrap();
    }
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, started_at)
         VALUES ('run-old', ?1, ?2, 'failed', ?2)",
        libsql::params![a.schedule_id.as_str(), now - 7_200_000],
    )
    .await
    .unwrap();
    conn.execute(
        "UPDATE schedules SET consecutive_failures = 1 WHERE schedule_id = ?1",
        [a.schedule_id.as_str()],
    )
    .await
    .unwrap();
    (a.schedule_id, b.schedule_id)
}

#[tokio::test]
async fn the_overview_counts_what_the_database_holds() {
    let dir = TempDir::new().unwrap();
    let app = App::open(&common::config_in(&dir)).await.unwrap();
    let (a, _b) = fill(&app).await;
    let o = app.overview().await.unwrap();
    assert_eq!(o.schedules.by_status["active"], 1);
    assert_eq!(o.schedules.by_status["paused"], 1);
    assert_eq!(o.schedules.by_status["failed"], 0);
    assert_eq!(o.schedules.failing, 1);
    assert_eq!(o.next_due.len(), 1, "only active schedules are due");
    assert_eq!(o.next_due[0].schedule_id, a);
    assert_eq!(
        o.runs_last_hour.total, 100,
        "the older run is outside the hour"
    );
    assert_eq!(o.runs_last_hour.by_status["succeeded"], 99);
    assert_eq!(o.runs_last_hour.by_status["failed"], 1);
    // Ranked from the top, 1 % down: the 5 s outlier is past it, 99 ms is the p99.
    assert_eq!(o.runs_last_hour.lateness_p99_ms, Some(99));
    assert_eq!((o.outbox.pending, o.outbox.dead), (0, 0));
    assert!(o.database_bytes.unwrap() > 0);
    assert!(o.workers.is_empty());
}

#[tokio::test]
async fn status_prints_the_overview_once_or_until_interrupted() {
    let dir = TempDir::new().unwrap();
    let app = App::open(&common::config_in(&dir)).await.unwrap();
    fill(&app).await;
    drop(app);

    let out = nightshift(&dir)
        .args(["--json", "status"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let overview: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(overview["runs_last_hour"]["total"], 100);
    assert_eq!(overview["schedules"]["failing"], 1);

    let out = nightshift(&dir).arg("status").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1 active, 1 paused"), "{text}");
    assert!(text.contains("lateness p99 99 ms"), "{text}");
    assert!(text.contains("check the mail"), "{text}");

    // --watch: a JSON document a line, again and again, until SIGINT; then exit 0.
    let mut child = nightshift(&dir)
        .args(["--json", "status", "--watch", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for _ in 0..2 {
        let line = lines.next().unwrap().unwrap();
        let doc: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(doc["runs_last_hour"]["total"], 100);
    }
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = common::wait_for_exit(&mut child, std::time::Duration::from_secs(20))
        .expect("status --watch stops on SIGINT");
    assert!(status.success(), "{status}");
}

#[test]
fn a_hostile_watch_interval_is_refused() {
    let dir = TempDir::new().unwrap();
    for bad in [
        "0",
        "3601",
        "-1",
        "1.5",
        "18446744073709551616",
        "soon",
        "\u{ff11}",
        "\u{202e}1",
    ] {
        let out = nightshift(&dir)
            .args(["status", &format!("--watch={bad}")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--watch={bad:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--watch"),
            "{bad:?}"
        );
    }
}

/// A scheduler loop that ticks but whose every pass fails (a full disk, a database that
/// refuses writes) schedules nothing: after three failed passes in a row the worker is not
/// ready, and says why; one pass that works makes it ready again (the report's D16).
#[tokio::test]
async fn a_scheduler_whose_passes_fail_is_not_ready() {
    let dir = tempfile::TempDir::new().unwrap();
    let app = common::app_with(&common::config_in(&dir), None).await;
    app.liveness().tick();
    assert!(app.readiness(true).await.ready);
    for failed in 1..=3 {
        app.liveness()
            .pass_failed("database or disk is full".to_string());
        let readiness = app.readiness(true).await;
        assert_eq!(readiness.ready, failed < 3, "after {failed} failed passes");
    }
    let readiness = app.readiness(true).await;
    let scheduler = readiness
        .checks
        .iter()
        .find(|c| c.name == "scheduler")
        .unwrap();
    assert!(
        scheduler
            .detail
            .contains("last 3 passes failed: database or disk is full"),
        "{}",
        scheduler.detail
    );
    app.liveness().pass_succeeded();
    assert!(app.readiness(true).await.ready);
}

/// Readiness looks at the free space where a local database lives: plenty here, and on a
/// small tmpfs (mounted when the test may: root) less than the 64 MiB every write needs
/// room within, which is not ready, saying where (the report's D16).
#[tokio::test]
async fn readiness_says_when_the_databases_disk_is_nearly_full() {
    if common::postgres::engine_is_postgres() {
        common::skip::skipped("checks the free space under a local database file");
        return;
    }
    let dir = tempfile::TempDir::new().unwrap();
    let app = common::app_with(&common::config_in(&dir), None).await;
    let readiness = app.readiness(false).await;
    let disk = readiness.checks.iter().find(|c| c.name == "disk").unwrap();
    assert!(
        disk.ok && disk.detail.contains("MiB free"),
        "{}",
        disk.detail
    );
    drop(app);

    let small = tempfile::TempDir::new().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
        .arg(small.path())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "skipped readiness on a small disk: cannot mount a tmpfs (needs root)"
        );
        return;
    }
    let app = common::app_with(&common::config_in(&small), None).await;
    let readiness = app.readiness(false).await;
    drop(app);
    let _ = std::process::Command::new("umount")
        .arg(small.path())
        .status();
    assert!(!readiness.ready);
    let disk = readiness.checks.iter().find(|c| c.name == "disk").unwrap();
    assert!(!disk.ok);
    assert!(
        disk.detail.contains(&small.path().display().to_string())
            && disk.detail.contains("at least 64 MiB"),
        "{}",
        disk.detail
    );
}
