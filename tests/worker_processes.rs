//! `nightshift run` as real processes on one database file, against a fake agent runtime
//! on 127.0.0.1: CLI changes reach a running worker, a worker killed with SIGKILL has its
//! occurrence recovered by another, two workers never run an occurrence twice, a trigger
//! repeated with one idempotency key from two processes starts one run, and a chain of
//! three runs each link once with its upstream's output while a worker is killed.

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

/// Calls per run id, how long the first call of each run should hang (of every run, or
/// only of runs of the goal `hang_goal`), and every request's goal and input.
#[derive(Clone, Default)]
struct FakeRuntime {
    calls: Arc<Mutex<HashMap<String, u32>>>,
    hang_first: Arc<Mutex<Option<Duration>>>,
    hang_goal: Arc<Mutex<Option<String>>>,
    requests: Arc<Mutex<Vec<Request>>>,
}

/// One call the runtime received: its run id, goal and input.
type Request = (String, String, Option<String>);

async fn goal(State(fake): State<FakeRuntime>, Json(body): Json<Value>) -> Json<Value> {
    let run_id = body["run_id"].as_str().unwrap_or_default().to_string();
    let goal = body["goal"].as_str().unwrap_or_default().to_string();
    fake.requests.lock().unwrap().push((
        run_id.clone(),
        goal.clone(),
        body["input"].as_str().map(str::to_string),
    ));
    let n = {
        let mut calls = fake.calls.lock().unwrap();
        let n = calls.entry(run_id).or_default();
        *n += 1;
        *n
    };
    let hang = *fake.hang_first.lock().unwrap();
    let this_goal = fake
        .hang_goal
        .lock()
        .unwrap()
        .as_ref()
        .is_none_or(|g| *g == goal);
    if let (1, Some(hang), true) = (n, hang, this_goal) {
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

/// Waits until the one worker running on `config` has ended a scheduler pass that read the
/// waiting events after this call, by triggering two canary schedules one after the other
/// and waiting for each to succeed. A pass reads the waiting events once, after it has
/// recovered expired leases and resumed answered runs, and claims due schedules after
/// them; the second canary is triggered once the first has run, after that read of the
/// pass that claimed the first, so a later pass claims it, and that one has ended: whatever
/// it claimed, rightly or wrongly, has started, and `stop` waits for it. The event a
/// negative check waits for, instead of a sleep.
async fn a_whole_pass_ran(config: &Path, tag: &str) {
    for n in 1..=2 {
        let goal = format!("canary {tag} {n}");
        let id = add_schedule(config, &["--goal", &goal, "--triggered"]);
        cli(config, &["schedule", "trigger", &id]);
        assert!(
            eventually(100, || runs(config, &id)
                .first()
                .is_some_and(|r| r["status"] == "succeeded"))
            .await,
            "{goal} never ran: {:?}",
            runs(config, &id)
        );
    }
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

    // A succeeded occurrence never runs again, whoever starts next: not in the third
    // worker's first pass (which recovers expired leases first), nor in the one after.
    *fake.hang_first.lock().unwrap() = None;
    let third = start_worker(&config);
    a_whole_pass_ran(&config, "after the recovery").await;
    stop(third);
    assert_eq!(fake.calls.lock().unwrap()[&run_id], 2);
    assert_eq!(runs(&config, &id).len(), 1);
}

/// Two workers on thirty schedules due every second, the second started while the first
/// is in the middle of runs: each claims runs of its own (counted by `worker_id`), and
/// the runtime is asked for each run once.
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
    // Each run's call takes a while, and the second worker starts while the first is in
    // the middle of runs: it must leave them to their live worker.
    *fake.hang_first.lock().unwrap() = Some(Duration::from_millis(300));
    let a = start_worker(&config);
    assert!(
        eventually(100, || !fake.calls.lock().unwrap().is_empty()).await,
        "the first worker never called the runtime"
    );
    let b = start_worker(&config);
    let workers: Vec<String> = cli(&config, &["workers"])
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["worker_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(workers.len(), 2, "{workers:?}");
    // Until each worker has claimed runs of its own, however long this machine takes.
    let db = nightshift::db::Db::open(
        &nightshift::db::DbTarget::parse(&dir.path().join("shared.db").display().to_string())
            .unwrap(),
        nightshift::db::DbOptions::default(),
    )
    .await
    .unwrap();
    for _ in 0..1200 {
        let claimed = claimed_by_worker(&db).await;
        if workers
            .iter()
            .all(|w| claimed.get(w).is_some_and(|n| *n >= 20))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop(a);
    stop(b);
    let claimed = claimed_by_worker(&db).await;
    for worker in &workers {
        assert!(
            claimed.get(worker).is_some_and(|n| *n > 0),
            "worker {worker} claimed no run: {claimed:?}"
        );
    }

    let mut occurrences = std::collections::HashSet::new();
    let mut attempts = HashMap::new();
    for id in &ids {
        for run in runs(&config, id) {
            assert!(occurrences.insert((
                id.clone(),
                run["scheduled_for"].as_str().unwrap().to_string()
            )));
            let status = run["status"].as_str().unwrap().to_string();
            assert!(
                matches!(status.as_str(), "succeeded" | "skipped" | "interrupted"),
                "{run}"
            );
            if status != "skipped" {
                let run_id = run["run_id"].as_str().unwrap().to_string();
                attempts.insert(run_id, (status, run["attempt"].as_i64().unwrap()));
            }
        }
    }
    // At the runtime: every run asked for is in the history; no attempt asked twice; a
    // succeeded run asked exactly once (no worker lost its lease here, so one attempt).
    let calls = fake.calls.lock().unwrap();
    for (run_id, n) in calls.iter() {
        let (status, attempt) = attempts.get(run_id).unwrap_or_else(|| {
            panic!("the runtime was asked for run {run_id}, not in the history")
        });
        assert_eq!(*attempt, 1, "run {run_id} needed {attempt} attempts");
        assert!(
            *n <= 1,
            "run {run_id} ({status}) was asked {n} times in one attempt"
        );
    }
    for (run_id, (status, _)) in &attempts {
        if status == "succeeded" {
            assert_eq!(calls.get(run_id), Some(&1), "succeeded run {run_id}");
        }
    }
}

/// Runs claimed (run, not skipped) per worker.
async fn claimed_by_worker(db: &nightshift::db::Db) -> HashMap<String, i64> {
    use nightshift::db::Queryable;
    let conn = db.conn().await.unwrap();
    let mut rows = conn
        .query_rows(
            "SELECT worker_id, count(*) FROM schedule_runs
             WHERE status != 'skipped' AND worker_id IS NOT NULL GROUP BY worker_id",
            (),
        )
        .await
        .unwrap();
    let mut claimed = HashMap::new();
    while let Some(row) = rows.next().await.unwrap() {
        claimed.insert(row.get::<String>(0).unwrap(), row.get::<i64>(1).unwrap());
    }
    claimed
}

/// `cli` for a command that prints its id, returning it.
fn add_schedule(config: &Path, args: &[&str]) -> String {
    let mut all = vec!["schedule", "add", "--user", "u"];
    all.extend_from_slice(args);
    cli(config, &all)["schedule_id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_idempotency_key_from_two_processes_starts_one_run() {
    let dir = TempDir::new().unwrap();
    let (url, fake) = fake_runtime().await;
    let config = write_config(dir.path(), &url, 10);
    let id = add_schedule(&config, &["--goal", "sync the ledger", "--triggered"]);
    // Two processes at once, the same key: both succeed, one run is queued.
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_nightshift"))
            .arg("--config")
            .arg(&config)
            .arg("--json")
            .args([
                "schedule",
                "trigger",
                &id,
                "--input",
                "invoice 42 paid",
                "--idempotency-key",
                "delivery-7",
            ])
            .env_remove("NIGHTSHIFT_DB")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let answers: Vec<Value> = [a, b]
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect();
    assert_eq!(
        answers[0]["event_id"], answers[1]["event_id"],
        "{answers:?}"
    );
    let deduplicated: Vec<bool> = answers
        .iter()
        .map(|a| a["deduplicated"].as_bool().unwrap())
        .collect();
    assert_eq!(
        deduplicated.iter().filter(|d| **d).count(),
        1,
        "{answers:?}"
    );

    let worker = start_worker(&config);
    assert!(
        eventually(100, || runs(&config, &id)
            .first()
            .is_some_and(|r| r["status"] == "succeeded"))
        .await
    );
    // A third time, after the run: still the same trigger, no new run.
    let again = cli(
        &config,
        &[
            "schedule",
            "trigger",
            &id,
            "--input",
            "invoice 42 paid",
            "--idempotency-key",
            "delivery-7",
        ],
    );
    assert_eq!(again["deduplicated"], true);
    assert_eq!(again["run_id"], runs(&config, &id)[0]["run_id"]);
    // A pass that read the waiting events after that trigger has ended.
    a_whole_pass_ran(&config, "after the repeated trigger").await;
    stop(worker);
    let history = runs(&config, &id);
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0]["origin"], "trigger");
    let requests = fake.requests.lock().unwrap();
    let ledger: Vec<_> = requests
        .iter()
        .filter(|(_, goal, _)| goal == "sync the ledger")
        .collect();
    assert_eq!(ledger.len(), 1, "{requests:?}");
    assert_eq!(ledger[0].2.as_deref(), Some("invoice 42 paid"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_of_three_runs_each_link_once_while_a_worker_is_killed() {
    let dir = TempDir::new().unwrap();
    let (url, fake) = fake_runtime().await;
    // The middle link's first attempt hangs: its worker is killed while it runs.
    *fake.hang_first.lock().unwrap() = Some(Duration::from_secs(600));
    *fake.hang_goal.lock().unwrap() = Some("summarize".into());
    let config = write_config(dir.path(), &url, 3);
    let first = add_schedule(&config, &["--goal", "fetch", "--triggered"]);
    let second = add_schedule(&config, &["--goal", "summarize", "--after", &first]);
    let third = add_schedule(
        &config,
        &["--goal", "publish", "--after", &second, "--on", "finished"],
    );
    // A cycle is refused, naming the field, and changes nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .arg("--config")
        .arg(&config)
        .args(["schedule", "edit", &first, "--after", &third])
        .env_remove("NIGHTSHIFT_DB")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cycle"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let first_worker = start_worker(&config);
    let second_worker = start_worker(&config);
    cli(&config, &["schedule", "trigger", &first, "--input", "feed"]);
    assert!(
        eventually(100, || fake
            .requests
            .lock()
            .unwrap()
            .iter()
            .any(|(_, goal, _)| goal == "summarize"))
        .await,
        "the second link never started"
    );
    // Kill whichever worker holds the hanging run; the other takes it over.
    let holder = runs(&config, &second)[0]["worker_id"]
        .as_str()
        .unwrap()
        .to_string();
    let workers = cli(&config, &["workers"]);
    let holder_pid = workers
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["worker_id"] == holder.as_str())
        .map(|w| w["pid"].as_i64().unwrap())
        .unwrap();
    let mut both = vec![first_worker, second_worker];
    let at = both
        .iter()
        .position(|w| w.id() as i64 == holder_pid)
        .expect("the holder is one of the two");
    let mut victim = both.remove(at);
    let other = both.pop().unwrap();
    victim.kill().unwrap();
    common::wait_for_exit(&mut victim, common::EXIT_WITHIN).expect("SIGKILL ends it");
    assert!(
        eventually(150, || runs(&config, &third)
            .first()
            .is_some_and(|r| r["status"] == "succeeded"))
        .await,
        "the chain did not finish: {:?} {:?}",
        runs(&config, &second),
        runs(&config, &third)
    );
    // Nothing more comes of the chain: a pass begun after it finished has ended.
    a_whole_pass_ran(&config, "after the chain").await;
    stop(other);

    for (id, goal, input) in [
        (&first, "fetch", "feed"),
        (&second, "summarize", "did: fetch"),
        (&third, "publish", "did: summarize"),
    ] {
        let history = runs(&config, id);
        assert_eq!(history.len(), 1, "{goal}: {history:?}");
        let run_id = history[0]["run_id"].as_str().unwrap();
        let requests = fake.requests.lock().unwrap();
        let calls: Vec<_> = requests.iter().filter(|(r, _, _)| r == run_id).collect();
        assert!(!calls.is_empty(), "{goal} never reached the runtime");
        assert!(calls
            .iter()
            .all(|(_, g, i)| g == goal && i.as_deref() == Some(input)));
        let expected_calls = if goal == "summarize" { 2 } else { 1 };
        assert_eq!(calls.len(), expected_calls, "{goal}: {calls:?}");
    }
}
