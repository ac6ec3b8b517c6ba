//! `nightshift run` as real processes on one database file, against a fake agent runtime
//! on 127.0.0.1: CLI changes reach a running worker, a worker killed with SIGKILL has its
//! occurrence recovered by another, and two workers never run an occurrence twice.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tempfile::TempDir;

/// Calls per run id, and how long the first call of each run should hang.
#[derive(Clone, Default)]
struct FakeRuntime {
    calls: Arc<Mutex<HashMap<String, u32>>>,
    hang_first: Arc<Mutex<Option<Duration>>>,
}

async fn goal(State(fake): State<FakeRuntime>, Json(body): Json<Value>) -> Json<Value> {
    let run_id = body["run_id"].as_str().unwrap_or_default().to_string();
    let n = {
        let mut calls = fake.calls.lock().unwrap();
        let n = calls.entry(run_id).or_default();
        *n += 1;
        *n
    };
    let hang = *fake.hang_first.lock().unwrap();
    if let (1, Some(hang)) = (n, hang) {
        tokio::time::sleep(hang).await;
    }
    Json(json!({"output": format!("did: {}", body["goal"].as_str().unwrap_or_default())}))
}

async fn fake_runtime() -> (String, FakeRuntime) {
    let fake = FakeRuntime::default();
    let app = Router::new()
        .route("/goal", post(goal))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/goal"), fake)
}

fn write_config(dir: &Path, runtime_url: &str, lease_secs: i64) -> PathBuf {
    let path = dir.join("nightshift.toml");
    std::fs::write(
        &path,
        format!(
            r#"
[database]
path = "{db}"

[scheduler]
min_interval_secs = 1
lease_secs = {lease_secs}
change_check_ms = 100
retry_base_secs = 1
shutdown_grace_secs = 2

[runtime]
kind = "http"
url = "{runtime_url}"
timeout_secs = 120
max_retries = 0
"#,
            db = dir.join("shared.db").display()
        ),
    )
    .unwrap();
    path
}

fn cli(config: &Path, args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .env("NIGHTSHIFT_LISTEN", "127.0.0.1:0")
        .arg("--config")
        .arg(config)
        .arg("--json")
        .args(args)
        .env_remove("NIGHTSHIFT_DB")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Starts a worker and returns once it says it is running.
fn start_worker(config: &Path) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .env("NIGHTSHIFT_LISTEN", "127.0.0.1:0")
        .arg("--config")
        .arg(config)
        .arg("run")
        .env_remove("NIGHTSHIFT_DB")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("nightshift is running") {
            // Keep draining so the worker never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return child;
        }
    }
    let status = child.wait().unwrap();
    panic!("worker exited ({status}) before it was running");
}

fn stop(mut child: Child) {
    assert_eq!(common::terminate(&mut child).code(), Some(0));
}

/// Polls `check` until it holds, for at most `tries` × 100 ms of the child's real work.
async fn eventually(tries: u32, mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..tries {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    check()
}

fn runs(config: &Path, schedule_id: &str) -> Vec<Value> {
    cli(
        config,
        &["schedule", "runs", schedule_id, "--limit", "1000"],
    )
    .as_array()
    .unwrap()
    .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_changes_reach_a_running_worker() {
    let dir = TempDir::new().unwrap();
    let (url, fake) = fake_runtime().await;
    let config = write_config(dir.path(), &url, 30);
    let worker = start_worker(&config);
    let added = cli(
        &config,
        &[
            "schedule",
            "add",
            "--user",
            "u",
            "--goal",
            "water the plants",
            "--every",
            "1h",
        ],
    );
    let id = added["schedule_id"].as_str().unwrap().to_string();
    cli(&config, &["schedule", "run-now", &id]);
    assert!(
        eventually(50, || runs(&config, &id)
            .first()
            .is_some_and(|r| r["status"] == "succeeded"))
        .await
    );
    let run = &runs(&config, &id)[0];
    assert_eq!(run["output_summary"], "did: water the plants");
    assert_eq!(fake.calls.lock().unwrap().len(), 1);
    // The running worker is registered, alive, and unregisters when stopped.
    let workers = cli(&config, &["workers"]);
    let workers = workers.as_array().unwrap();
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0]["alive"], true);
    assert_eq!(workers[0]["pid"], worker.id() as i64);
    stop(worker);
    assert_eq!(cli(&config, &["workers"]), json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_worker_has_its_occurrence_recovered_once() {
    let dir = TempDir::new().unwrap();
    let (url, fake) = fake_runtime().await;
    *fake.hang_first.lock().unwrap() = Some(Duration::from_secs(600));
    let config = write_config(dir.path(), &url, 3);
    let added = cli(
        &config,
        &[
            "schedule",
            "add",
            "--user",
            "u",
            "--goal",
            "nightly report",
            "--every",
            "1h",
        ],
    );
    let id = added["schedule_id"].as_str().unwrap().to_string();

    let mut first = start_worker(&config);
    cli(&config, &["schedule", "run-now", &id]);
    assert!(
        eventually(50, || !fake.calls.lock().unwrap().is_empty()).await,
        "the run never started"
    );
    first.kill().unwrap();
    common::wait_for_exit(&mut first, common::EXIT_WITHIN).expect("SIGKILL ends it");

    let second = start_worker(&config);
    assert!(
        eventually(100, || runs(&config, &id)
            .first()
            .is_some_and(|r| r["status"] == "succeeded"))
        .await,
        "the occurrence was not recovered: {:?}",
        runs(&config, &id)
    );
    // The killed worker is still listed, no longer alive; the survivor is.
    let workers = cli(&config, &["workers"]);
    let alive: Vec<bool> = workers
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["alive"].as_bool().unwrap())
        .collect();
    assert_eq!(alive.len(), 2, "{workers}");
    assert_eq!(alive.iter().filter(|a| **a).count(), 1, "{workers}");
    stop(second);
    let history = runs(&config, &id);
    assert_eq!(history.len(), 1, "one occurrence, one run row: {history:?}");
    assert_eq!(history[0]["attempt"], 2);
    let run_id = history[0]["run_id"].as_str().unwrap().to_string();
    assert_eq!(fake.calls.lock().unwrap()[&run_id], 2);

    // A succeeded occurrence never runs again, whoever starts next.
    let third = start_worker(&config);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop(third);
    assert_eq!(fake.calls.lock().unwrap()[&run_id], 2);
    assert_eq!(runs(&config, &id).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worker_processes_run_each_occurrence_once() {
    let dir = TempDir::new().unwrap();
    let (url, fake) = fake_runtime().await;
    let config = write_config(dir.path(), &url, 10);
    let mut ids = Vec::new();
    for i in 0..30 {
        let added = cli(
            &config,
            &[
                "schedule",
                "add",
                "--user",
                &format!("u{}", i % 3),
                "--goal",
                &format!("job {i}"),
                "--every",
                "1s",
            ],
        );
        ids.push(added["schedule_id"].as_str().unwrap().to_string());
    }
    let a = start_worker(&config);
    let b = start_worker(&config);
    tokio::time::sleep(Duration::from_secs(8)).await;
    stop(a);
    stop(b);

    let mut occurrences = std::collections::HashSet::new();
    let mut total = 0;
    for id in &ids {
        for run in runs(&config, id) {
            total += 1;
            assert!(occurrences.insert((
                id.clone(),
                run["scheduled_for"].as_str().unwrap().to_string()
            )));
            assert!(
                matches!(
                    run["status"].as_str().unwrap(),
                    "succeeded" | "skipped" | "interrupted"
                ),
                "{run}"
            );
        }
    }
    assert!(total >= 150, "only {total} occurrences in 8 s");
    let calls = fake.calls.lock().unwrap();
    assert!(calls.values().all(|n| *n == 1), "an occurrence ran twice");
}
