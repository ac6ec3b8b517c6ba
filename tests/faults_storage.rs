//! Fault injection at the database (issue 26, item 2), with `nightshift` as real processes:
//! a libSQL server stopped under a running worker and started again, and a database file
//! that cannot grow (the process's file-size limit, SIGXFSZ ignored, so a write past it
//! fails with EFBIG as on a full disk) under the worker and under the CLI. Expected: the
//! worker stays up and says why, no run is recorded or run twice, no panic, and the file
//! is intact with what was committed once the limit is lifted.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use common::sqld::Sqld;
use common::KillOnDrop;
use nightshift::config::Config;
use nightshift::db::query_scalar;
use serde_json::{json, Value};
use tempfile::TempDir;

/// Calls per run id; answers each at once with `output`.
#[derive(Clone, Default)]
struct Runtime {
    calls: Arc<Mutex<HashMap<String, u32>>>,
    output: Arc<String>,
}

async fn answer(State(rt): State<Runtime>, Json(body): Json<Value>) -> Json<Value> {
    let run_id = body["run_id"].as_str().unwrap_or_default().to_string();
    *rt.calls.lock().unwrap().entry(run_id).or_default() += 1;
    Json(json!({ "output": rt.output.as_str() }))
}

async fn runtime(output: String) -> (String, Runtime) {
    let rt = Runtime {
        output: Arc::new(output),
        ..Default::default()
    };
    let app = Router::new()
        .route("/goal", post(answer))
        .with_state(rt.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/goal"), rt)
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

fn write_config(dir: &Path, database: &str, runtime_url: &str) -> PathBuf {
    let path = dir.join("nightshift.toml");
    let text = format!(
        r#"
[database]
path = "{database}"

[scheduler]
min_interval_secs = 1
lease_secs = 3
change_check_ms = 100
shutdown_grace_secs = 2
history_keep = 10000

[runtime]
kind = "http"
url = "{runtime_url}"
timeout_secs = 10
max_retries = 0

[consolidation]
enabled = false
"#
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `nightshift --config CONFIG ARGS…`, under a file-size limit of `limit` bytes when given,
/// with SIGXFSZ ignored (kept across exec) so a write past the limit fails with EFBIG.
fn nightshift(config: &Path, limit: Option<u64>, args: &[&str]) -> Command {
    let script = match limit {
        Some(bytes) => format!(
            "trap '' XFSZ; ulimit -f {}; exec \"$0\" \"$@\"",
            bytes / 512
        ),
        None => "exec \"$0\" \"$@\"".to_string(),
    };
    let mut command = Command::new("sh");
    command
        .args(["-c", &script, env!("CARGO_BIN_EXE_nightshift"), "--config"])
        .arg(config)
        .args(args)
        .env_remove("NIGHTSHIFT_DB")
        .env("NIGHTSHIFT_LISTEN", "")
        .stdin(Stdio::null());
    command
}

fn cli(config: &Path, args: &[&str]) -> Value {
    let out = nightshift(config, None, &[&["--json"], args].concat())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A worker's log (stderr), line by line.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<String>>);

impl Log {
    fn push(&self, line: &str) {
        let mut text = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        text.push_str(line);
        text.push('\n');
    }

    fn text(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A worker started by `command`, once it says it is running, with its log kept.
fn start_worker(mut command: Command) -> (KillOnDrop, Log) {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Log::default();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        log.push(&line);
        if line.contains("nightshift is running") {
            let keep = log.clone();
            std::thread::spawn(move || {
                for line in lines.map_while(Result::ok) {
                    keep.push(&line);
                }
            });
            return (KillOnDrop(child), log);
        }
    }
    let status = child.wait().unwrap();
    panic!("worker exited ({status}): {}", log.text());
}

/// The port a worker started with `NIGHTSHIFT_LISTEN=127.0.0.1:0` says its API listens on
/// (before it says it is running): the port is the worker's from the start, never one let
/// go by a probe that another test could take meanwhile.
fn api_port(log: &Log) -> u16 {
    let text = log.text();
    let address = text
        .lines()
        .filter(|line| line.contains("the HTTP API is listening"))
        .flat_map(str::split_whitespace)
        .find_map(|word| word.strip_prefix("address=http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no API address in the log: {text}"));
    address.parse().unwrap()
}

/// Polls `check` every 100 ms, at most `secs` seconds of the worker's real work.
async fn eventually(secs: u64, mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..secs * 10 {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    check()
}

/// The HTTP status `/readyz` answers with, or 0 when nothing answers (raw HTTP with a
/// 5 s limit, so it works from any thread).
fn readyz(port: u16) -> u16 {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return 0;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return 0;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn no_panic(log: &str) {
    assert!(
        !log.contains("panicked") && !log.contains("internal error"),
        "{log}"
    );
}

/// Recorded runs as (run id, status, attempt).
async fn recorded(config: &Config) -> Vec<(String, String, i64)> {
    let memory = nightshift::app::open_memory(config).await.unwrap();
    let conn = memory.db().conn().await.unwrap();
    let mut rows = conn
        .query("SELECT run_id, status, attempt FROM schedule_runs", ())
        .await
        .unwrap();
    let mut runs = Vec::new();
    while let Some(row) = rows.next().await.unwrap() {
        runs.push((
            row.get(0).unwrap(),
            row.get(1).unwrap(),
            row.get(2).unwrap(),
        ));
    }
    runs
}

fn succeeded(sqld: &Sqld) -> i64 {
    sqld.read_integer("SELECT count(*) FROM schedule_runs WHERE status = 'succeeded'")
        .unwrap_or(0)
}

/// The server stops (longer than a lease) under a running worker process and comes back
/// on the same port and data: the worker does not exit, says it is not ready meanwhile,
/// goes on running its schedule after, and no occurrence runs twice (docs/scaling.md,
/// "When a worker or the server goes away").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_process_outlives_its_libsql_server_stopping_and_runs_nothing_twice() {
    let data = TempDir::new().unwrap();
    let data_dir = data.path().display().to_string();
    let Some(sqld) = Sqld::start_with(&[], &["-d", &data_dir]) else {
        return;
    };
    let port = sqld.url.rsplit(':').next().unwrap().to_string();
    let (url, rt) = runtime("report written".into()).await;
    let config = write_config(data.path(), &sqld.url, &url);
    cli(
        &config,
        &words("schedule add --user u --goal report --every 1s"),
    );
    let mut command = nightshift(&config, None, &["run"]);
    command.env("NIGHTSHIFT_LISTEN", "127.0.0.1:0");
    let (mut worker, log) = start_worker(command);
    let api = api_port(&log);
    assert!(
        eventually(60, || succeeded(&sqld) >= 3).await,
        "{}",
        log.text()
    );

    sqld.stop();
    let stopped = std::time::Instant::now();
    // The worker notices: not ready while the server is away (polled for, not assumed to
    // show within a time).
    assert!(
        eventually(60, || readyz(api) == 503).await,
        "/readyz never said 503 while the server was away: {}",
        log.text()
    );
    // The scenario is an outage longer than a lease (3 s) by the worker's clock, the wall
    // clock of another process: no event of its says so, so the server stays away for three
    // leases of real time, the worker checked alive meanwhile.
    while stopped.elapsed() < Duration::from_secs(9) {
        assert!(worker.0.try_wait().unwrap().is_none(), "{}", log.text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(worker.0.try_wait().unwrap().is_none(), "{}", log.text());
    let calls_before = rt.calls.lock().unwrap().len();

    let back =
        Sqld::start_with(&[], &["-d", &data_dir, "-p", &port]).expect("the sqld that ran before");
    let before = succeeded(&back);
    assert!(
        eventually(90, || succeeded(&back) >= before + 3).await,
        "no runs after the server came back: {}",
        log.text()
    );
    assert!(rt.calls.lock().unwrap().len() > calls_before);
    assert!(
        eventually(30, || readyz(api) == 200).await,
        "never ready again"
    );
    assert_eq!(common::terminate(&mut worker.0).code(), Some(0));
    no_panic(&log.text());

    let mut config = Config::default();
    config.database.path = back.url.clone();
    let runs = recorded(&config).await;
    let calls = rt.calls.lock().unwrap().clone();
    for (run_id, n) in &calls {
        assert_eq!(*n, 1, "{run_id} was sent to the runtime {n} times");
    }
    for (run_id, status, attempt) in &runs {
        assert_eq!(*attempt, 1, "{run_id} ({status}) was run again");
        if status == "succeeded" {
            assert!(calls.contains_key(run_id), "{run_id} succeeded unseen");
        }
    }
    // Every run the runtime answered was recorded, the one in flight at the stop too.
    for run_id in calls.keys() {
        assert!(
            runs.iter().any(|(id, _, _)| id == run_id),
            "{run_id} not recorded"
        );
    }
    drop(back);
}

/// The largest of the database's files, in bytes.
fn largest_file(db: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", db.display())).ok())
        .map(|m| m.len())
        .max()
        .unwrap()
}

/// The worker's file-size limit is what the test asked for, and SIGXFSZ is ignored.
fn limited_as_asked(pid: u32, limit: u64) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max file size"))
        .unwrap();
    assert!(line.contains(&format!(" {limit} ")), "{line}");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let ignored = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .unwrap();
    let mask = u64::from_str_radix(ignored.trim(), 16).unwrap();
    assert_ne!(
        mask & (1 << (25 - 1)),
        0,
        "SIGXFSZ (25) is not ignored: {ignored}"
    );
}

async fn integrity(config: &Config) {
    let memory = nightshift::app::open_memory(config).await.unwrap();
    let conn = memory.db().conn().await.unwrap();
    let check: Option<String> = query_scalar(&conn, "PRAGMA integrity_check", ())
        .await
        .unwrap();
    assert_eq!(check.as_deref(), Some("ok"));
    common::keyword_integrity(&memory).await;
}

/// The database file cannot grow past a limit a few runs away: the worker logs each write
/// that fails and why (claims, run records, heartbeats, the outbox), keeps running at an
/// unhurried pace (no panic, no busy loop), and leaves a file that is intact with every
/// run it did record; restarted without the limit it goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_on_a_full_disk_says_so_stays_up_and_leaves_an_intact_database() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("nightshift.db");
    // Each run stores about 40 KB of output and its transcript, with their index.
    let (url, rt) = runtime("weather report line\n".repeat(2000)).await;
    let config_path = write_config(dir.path(), &db.display().to_string(), &url);
    cli(
        &config_path,
        &words("schedule add --user u --goal report --every 1s"),
    );
    let limit = (largest_file(&db) + (1 << 20)) / 512 * 512;
    let command = nightshift(&config_path, Some(limit), &["run"]);
    let (mut worker, log) = start_worker(command);
    // The shell exec'd into the worker: same pid.
    limited_as_asked(worker.0.id(), limit);
    let full = eventually(120, || log.text().contains("disk I/O error"));
    assert!(full.await, "the disk never filled: {}", log.text());
    let runs_seen = rt.calls.lock().unwrap().len();
    assert!(runs_seen >= 2, "{runs_seen} runs before the disk filled");
    // Still up a while later, and not retrying in a busy loop: a few failures a second.
    // A bounded wait on purpose: a busy loop shows only as a rate, failures over a stretch
    // of the worker's time (the wall clock of another process, with no event to wait for),
    // and only a count far above the worker's pace fails it, never a slow machine.
    let failures = || log.text().matches("disk I/O error").count();
    let before = failures();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let in_3s = failures() - before;
    assert!(
        in_3s < 100,
        "{in_3s} failed writes logged in 3 s: {}",
        log.text()
    );
    assert!(worker.0.try_wait().unwrap().is_none(), "{}", log.text());
    let text = log.text();
    let what_failed = ["scheduler pass failed", "cannot record the run"];
    assert!(what_failed.iter().any(|m| text.contains(m)), "{text}");
    no_panic(&text);
    let status = common::terminate(&mut worker.0);
    assert_ne!(status.code(), Some(101), "{}", log.text());
    assert!(status.code().is_some(), "killed by a signal: {status}");
    no_panic(&log.text());

    // The limit lifted: the file is intact and holds the runs recorded before.
    let mut config = common::config_in(&dir);
    config.database.path = db.display().to_string();
    integrity(&config).await;
    let runs = recorded(&config).await;
    let done: Vec<_> = runs.iter().filter(|r| r.1 == "succeeded").collect();
    assert!(
        !done.is_empty(),
        "no run was recorded before the disk filled"
    );
    let calls = rt.calls.lock().unwrap().clone();
    for (run_id, _, _) in &done {
        assert_eq!(calls.get(run_id), Some(&1), "{run_id}");
    }
    // At most the run whose result could not be stored is missing.
    assert!(
        done.len() + 1 >= calls.len(),
        "{} of {} recorded",
        done.len(),
        calls.len()
    );

    // Restarted without the limit, it runs its schedule again.
    let (mut worker, log) = start_worker(nightshift(&config_path, None, &["run"]));
    let more = eventually(60, || rt.calls.lock().unwrap().len() >= calls.len() + 2);
    assert!(more.await, "{}", log.text());
    assert_eq!(common::terminate(&mut worker.0).code(), Some(0));
    integrity(&config).await;
    assert!(
        recorded(&config)
            .await
            .iter()
            .filter(|r| r.1 == "succeeded")
            .count()
            > done.len()
    );
}

/// The CLI on a database that cannot grow: an append of a batch or a note save fails
/// with an error saying so (exit 1, no panic) and writes none of it.
#[tokio::test]
async fn the_cli_on_a_full_disk_fails_clearly_and_writes_nothing() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("nightshift.db");
    let config_path = write_config(dir.path(), &db.display().to_string(), "http://127.0.0.1:9");
    cli(&config_path, &words("memory save --user u kept-note"));
    let append = "memory append --user u --session s --role user";
    cli(&config_path, &words(&format!("{append} kept-event")));
    let mut config = common::config_in(&dir);
    config.database.path = db.display().to_string();

    let jsonl: String = (0..400)
        .map(|i| {
            json!({"role": "user", "content": format!("event {i} {}", "words ".repeat(800))})
                .to_string()
                + "\n"
        })
        .collect();
    let batch = dir.path().join("batch.jsonl");
    std::fs::write(&batch, jsonl).unwrap();
    let note = "a long note ".repeat(5000);
    // Room for a small write in the WAL, not for a big one.
    let limit = 64 << 10;
    let small = nightshift(&config_path, Some(limit), &words(&format!("{append} fits")))
        .output()
        .unwrap();
    assert!(
        small.status.success(),
        "{}",
        String::from_utf8_lossy(&small.stderr)
    );
    let batch_path = batch.display().to_string();
    for args in [
        words(&format!(
            "memory append --user u --session s --file {batch_path}"
        )),
        [words("memory save --user u"), vec![note.as_str()]].concat(),
    ] {
        let out = nightshift(&config_path, Some(limit), &args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", args[1]);
        assert!(
            stderr.contains("error: database error") && stderr.contains("disk I/O error"),
            "{stderr}"
        );
        no_panic(&stderr);
        integrity(&config).await;
        let memory = nightshift::app::open_memory(&config).await.unwrap();
        assert_eq!(
            common::count(&memory, "SELECT count(*) FROM events").await,
            2,
            "{}",
            args[1]
        );
        assert_eq!(
            common::count(&memory, "SELECT count(*) FROM notes").await,
            1,
            "{}",
            args[1]
        );
    }
}

/// A CLI write on a libSQL server queued behind other holders of the write lock (each for
/// less than sqld's transaction timeout, eight seconds together) waits its turn at the
/// server and goes through: nothing answers it busy meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_write_waits_out_a_queue_at_the_server_lock() {
    let dir = TempDir::new().unwrap();
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let config = write_config(dir.path(), &sqld.url, "http://127.0.0.1:9/goal");
    cli(&config, &["memory", "save", "--user", "u", "first note"]);
    let connect = || async {
        libsql::Builder::new_remote(sqld.url.clone(), String::new())
            .build()
            .await
            .unwrap()
            .connect()
            .unwrap()
    };
    // Two holders, one after the other, each for less than sqld's transaction timeout.
    let first = connect().await;
    first.execute("BEGIN IMMEDIATE", ()).await.unwrap();
    let second = connect().await;
    let queued = tokio::spawn(async move {
        second.execute("BEGIN IMMEDIATE", ()).await.unwrap();
        tokio::time::sleep(Duration::from_secs(4)).await;
        second.execute("COMMIT", ()).await.unwrap();
    });
    // Ordering, not a measure: the second holder's BEGIN reaches the server before the CLI
    // (the server's queue shows no event to wait for); were it later, the CLI would wait
    // behind the first holder alone, which the test still passes less strictly.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let writer = nightshift(
        &config,
        None,
        &["--json", "memory", "save", "--user", "u", "second note"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    first.execute("COMMIT", ()).await.unwrap();
    queued.await.unwrap();
    let out = tokio::task::spawn_blocking(move || writer.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let notes = cli(&config, &["memory", "notes", "--user", "u"]);
    assert_eq!(notes.as_array().map(Vec::len), Some(2), "{notes}");
}
