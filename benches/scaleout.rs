//! `cargo bench --bench scaleout`: several workers on one database, as processes
//! (`nightshift run`), against a fake agent runtime on 127.0.0.1 that answers each goal in
//! 200 ms, with more due than the workers can run.
//!
//! - `NIGHTSHIFT_BENCH_ENGINES` (default `file postgres`): the engines measured. `postgres`
//!   needs a cluster (`eval "$(scripts/postgres-cluster.sh start)"` sets
//!   `NIGHTSHIFT_TEST_POSTGRES_URL`); `libsql` needs `NIGHTSHIFT_TEST_SQLD`.
//! - `NIGHTSHIFT_BENCH_WORKERS` (default `1 2 4`): how many workers, each with
//!   `max_concurrent = 4`.
//!
//! For each engine and number of workers: runs a second, the share of the workers'
//! capacity (runs a second that `workers × max_concurrent / 200 ms` allows) and the ratio
//! to one worker; occurrences run twice (the runtime counts its calls per run); one claim
//! transaction's p50 / p99; and the time from a trigger made by another process to its
//! run reaching the runtime (p50 / p99), with the change check left at its default.
//!
//! Prints a table, then `name=value` pairs as its last line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::config::Config;
use nightshift::db::query_scalar;
use nightshift::schedule::types::{CatchUp, NewSchedule, NotifyPolicy};
use nightshift::schedule::Cadence;
use serde_json::{json, Value};

mod common;
use common::percentile;

#[allow(dead_code)]
#[path = "../tests/common/sqld.rs"]
mod sqld;

const GOAL_TIME: Duration = Duration::from_millis(200);
const MAX_CONCURRENT: usize = 4;
/// Schedules due every second: five times what the most workers measured can run.
const DUE_PER_WORKER: usize = 5 * MAX_CONCURRENT * 5;
const WARM_UP: Duration = Duration::from_secs(5);
const MEASURE: Duration = Duration::from_secs(20);
const CLAIMS: usize = 200;
const WAKES: usize = 40;

/// What the runtime saw: calls per run id, and when each goal arrived.
#[derive(Clone, Default)]
struct Runtime {
    calls: Arc<Mutex<HashMap<String, u32>>>,
    arrivals: Arc<Mutex<HashMap<String, Instant>>>,
}

async fn goal(State(runtime): State<Runtime>, Json(body): Json<Value>) -> Json<Value> {
    let run_id = body["run_id"].as_str().unwrap_or_default().to_string();
    let goal = body["goal"].as_str().unwrap_or_default().to_string();
    runtime
        .arrivals
        .lock()
        .unwrap()
        .entry(goal)
        .or_insert_with(Instant::now);
    *runtime.calls.lock().unwrap().entry(run_id).or_default() += 1;
    tokio::time::sleep(GOAL_TIME).await;
    Json(json!({"output": "ok"}))
}

async fn start_runtime() -> (String, Runtime) {
    let runtime = Runtime::default();
    let router = Router::new()
        .route("/goal", post(goal))
        .with_state(runtime.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/goal", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (url, runtime)
}

/// A fresh database of `engine`, or `None` (said why) when it cannot be had here.
async fn fresh_database(
    engine: &str,
    dir: &Path,
    n: usize,
) -> Option<(String, Option<sqld::Sqld>)> {
    match engine {
        "file" => Some((
            dir.join(format!("bench-{n}.db")).display().to_string(),
            None,
        )),
        "postgres" => {
            let Ok(admin) = std::env::var("NIGHTSHIFT_TEST_POSTGRES_URL") else {
                eprintln!(
                    "skipping postgres: run `eval \"$(scripts/postgres-cluster.sh start)\"` first"
                );
                return None;
            };
            let name = format!("bench_{}_{n}", std::process::id());
            let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
                .await
                .expect("connect to the cluster");
            tokio::spawn(connection);
            client
                .batch_execute(&format!("CREATE DATABASE {name} STRATEGY = FILE_COPY"))
                .await
                .expect("create a database");
            let (base, _) = admin.rsplit_once('/').expect("a database in the URL");
            Some((format!("{base}/{name}"), None))
        }
        "libsql" => {
            let server = sqld::Sqld::start()?;
            Some((server.url.clone(), Some(server)))
        }
        other => panic!("NIGHTSHIFT_BENCH_ENGINES: unknown engine {other}"),
    }
}

fn write_config(
    dir: &Path,
    name: &str,
    database: &str,
    runtime_url: &str,
    change_check_ms: u64,
) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            r#"
[database]
path = "{database}"

[scheduler]
min_interval_secs = 1
max_concurrent = {MAX_CONCURRENT}
max_per_user = 100000
change_check_ms = {change_check_ms}
shutdown_grace_secs = 5
history_keep = 100000

[runtime]
kind = "http"
url = "{runtime_url}"
timeout_secs = 60
max_retries = 0

[consolidation]
enabled = false
"#
        ),
    )
    .unwrap();
    path
}

/// A worker process, started and waited for until it says it is running.
fn start_worker(config: &Path, log: &Path) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .args(["--config", config.to_str().unwrap(), "run"])
        .env("NIGHTSHIFT_LISTEN", "")
        .env_remove("NIGHTSHIFT_DB")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("start a worker");
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        if std::fs::read_to_string(log)
            .unwrap_or_default()
            .contains("nightshift is running")
        {
            return child;
        }
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let status = child.wait();
    panic!(
        "a worker did not start ({status:?}): {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

fn stop_workers(workers: Vec<Child>) {
    for worker in &workers {
        let _ = Command::new("kill")
            .args(["-TERM", &worker.id().to_string()])
            .status();
    }
    for mut worker in workers {
        let _ = worker.wait();
    }
}

/// One engine and number of workers: runs a second while overloaded, and double runs.
struct Throughput {
    runs_per_sec: f64,
    double_runs: usize,
}

async fn throughput(
    engine: &str,
    workers: usize,
    dir: &Path,
    runtime_url: &str,
    runtime: &Runtime,
) -> Option<Throughput> {
    let (database, _server) = fresh_database(engine, dir, workers).await?;
    let name = format!("{engine}-{workers}w");
    let config_path = write_config(dir, &name, &database, runtime_url, 500);
    let config = Config::load(&config_path).unwrap();
    let app = App::open(&config).await.expect("open");
    let store = app.schedules().clone();
    for i in 0..DUE_PER_WORKER * workers {
        let mut new = NewSchedule::new(
            format!("user-{}", i % 50),
            format!("{name} job {i}"),
            Cadence::Interval {
                every_secs: 1,
                anchor: app.clock().now_ms(),
                tz: "UTC".into(),
            },
        );
        new.catch_up = CatchUp::Skip;
        new.notify = NotifyPolicy::Never;
        store.create(&Actor::Operator, &new).await.expect("create");
    }
    runtime.calls.lock().unwrap().clear();
    let children: Vec<Child> = (0..workers)
        .map(|w| start_worker(&config_path, &dir.join(format!("{name}-{w}.log"))))
        .collect();
    tokio::time::sleep(WARM_UP).await;
    let from = app.clock().now_ms();
    tokio::time::sleep(MEASURE).await;
    let to = app.clock().now_ms();
    stop_workers(children);
    let conn = app.memory().db().conn().await.unwrap();
    let done: i64 = query_scalar(
        &conn,
        "SELECT count(*) FROM schedule_runs WHERE status = 'succeeded'
         AND finished_at >= ?1 AND finished_at < ?2",
        [from, to],
    )
    .await
    .unwrap()
    .unwrap_or(0);
    let double_runs = runtime
        .calls
        .lock()
        .unwrap()
        .values()
        .filter(|calls| **calls > 1)
        .count();
    Some(Throughput {
        runs_per_sec: done as f64 * 1000.0 / (to - from) as f64,
        double_runs,
    })
}

/// From a trigger made here (another process than the worker's) to its run reaching the
/// runtime, with an idle worker on the default change check.
async fn wake_times(
    engine: &str,
    dir: &Path,
    runtime_url: &str,
    runtime: &Runtime,
) -> Option<(Vec<Duration>, Vec<Duration>)> {
    let (database, _server) = fresh_database(engine, dir, 0).await?;
    let config_path = write_config(dir, &format!("{engine}-wake"), &database, runtime_url, 500);
    let config = Config::load(&config_path).unwrap();
    let app = App::open(&config).await.expect("open");
    let claims = common::claims::claim_times(&app, CLAIMS).await;
    let schedule = app
        .schedules()
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "waker",
                format!("{engine} wake"),
                Cadence::Triggered { tz: "UTC".into() },
            ),
        )
        .await
        .expect("create");
    let worker = start_worker(&config_path, &dir.join(format!("{engine}-wake.log")));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut times = Vec::with_capacity(WAKES);
    for _ in 0..WAKES {
        // The runtime keeps each goal's first arrival: forgotten before each trigger.
        runtime.arrivals.lock().unwrap().clear();
        let start = Instant::now();
        app.schedules()
            .trigger(&Actor::Operator, &schedule.schedule_id, Some("go"), None)
            .await
            .expect("trigger");
        let key = format!("{engine} wake");
        let arrived = loop {
            if let Some(at) = runtime.arrivals.lock().unwrap().get(&key) {
                break *at;
            }
            if start.elapsed() > Duration::from_secs(30) {
                panic!("{engine}: a triggered run did not start in 30 s");
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        times.push(arrived.saturating_duration_since(start));
        // The run ends (200 ms) before the next trigger, so each one wakes an idle worker.
        tokio::time::sleep(GOAL_TIME + Duration::from_millis(300)).await;
    }
    stop_workers(vec![worker]);
    times.sort();
    Some((claims, times))
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let (runtime_url, runtime) = start_runtime().await;
    let engines: Vec<String> = std::env::var("NIGHTSHIFT_BENCH_ENGINES")
        .unwrap_or_else(|_| "file postgres".into())
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let counts: Vec<usize> = std::env::var("NIGHTSHIFT_BENCH_WORKERS")
        .unwrap_or_else(|_| "1 2 4".into())
        .split_whitespace()
        .map(|n| n.parse().expect("NIGHTSHIFT_BENCH_WORKERS: numbers"))
        .collect();

    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut one_worker: HashMap<String, f64> = HashMap::new();
    let mut double_runs = 0;
    println!();
    println!("| engine | workers | runs/s | share of capacity | ratio to 1 worker | double runs |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut rows = Vec::new();
    for engine in &engines {
        for &n in &counts {
            eprintln!("{engine}, {n} worker(s)…");
            let Some(measured) = throughput(engine, n, dir.path(), &runtime_url, &runtime).await
            else {
                break;
            };
            let capacity = (n * MAX_CONCURRENT) as f64 / GOAL_TIME.as_secs_f64();
            let share = measured.runs_per_sec / capacity;
            if n == 1 {
                one_worker.insert(engine.clone(), measured.runs_per_sec);
            }
            let ratio = one_worker
                .get(engine)
                .map(|one| measured.runs_per_sec / one);
            double_runs += measured.double_runs;
            let row = format!(
                "| {engine} | {n} | {:.1} | {share:.2} | {} | {} |",
                measured.runs_per_sec,
                ratio.map_or("—".into(), |r| format!("{r:.2}")),
                measured.double_runs
            );
            println!("{row}");
            rows.push(row);
            let key = if engine == "postgres" {
                "pg".to_string()
            } else {
                engine.clone()
            };
            if let Some(ratio) = ratio {
                pairs.push((format!("{key}_scale_{n}"), format!("{ratio:.2}")));
            }
            pairs.push((format!("{key}_share_{n}"), format!("{share:.2}")));
            if Some(&n) == counts.iter().max() {
                pairs.push((
                    format!("overload_capacity_share_{key}"),
                    format!("{share:.2}"),
                ));
            }
        }
    }
    if let (Some(pg), Some(file)) = (one_worker.get("postgres"), one_worker.get("file")) {
        pairs.push(("pg_runs_ratio_to_file".into(), format!("{:.2}", pg / file)));
    }
    pairs.push(("double_runs".into(), double_runs.to_string()));

    println!();
    println!("| engine | claim p50 / p99 (ms) | trigger to run p50 / p99 (ms) |");
    println!("|---|---:|---:|");
    for engine in &engines {
        eprintln!("{engine}: claims and wake-ups…");
        let Some((claims, wakes)) = wake_times(engine, dir.path(), &runtime_url, &runtime).await
        else {
            continue;
        };
        let key = if engine == "postgres" {
            "pg".to_string()
        } else {
            engine.clone()
        };
        println!(
            "| {engine} | {:.2} / {:.2} | {:.0} / {:.0} |",
            percentile(&claims, 0.5),
            percentile(&claims, 0.99),
            percentile(&wakes, 0.5),
            percentile(&wakes, 0.99)
        );
        pairs.push((
            format!("{key}_claim_p50_ms"),
            format!("{:.2}", percentile(&claims, 0.5)),
        ));
        pairs.push((
            format!("{key}_claim_p99_ms"),
            format!("{:.2}", percentile(&claims, 0.99)),
        ));
        pairs.push((
            format!("{key}_wake_p99_ms"),
            format!("{:.0}", percentile(&wakes, 0.99)),
        ));
    }
    println!();
    println!(
        "{}",
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
}
