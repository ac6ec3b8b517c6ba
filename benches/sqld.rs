//! `cargo bench --bench sqld`: nightshift against a libSQL server (the sqld binary
//! `NIGHTSHIFT_TEST_SQLD` names, started here on 127.0.0.1), side by side with a local file.
//!
//! - one claim transaction (p50), on the server and on a file;
//! - runs a minute from one worker and from three (in this process, each with its own
//!   database handle), against a fake agent runtime that takes 200 ms per goal,
//!   `max_concurrent = 4`, with more work due than they can do: on a file, on the server,
//!   and on the server with each worker reading through its own embedded replica;
//! - hybrid search p95 for a user with 50,000 chunks: a local file, an embedded replica
//!   of the server, and the server read directly.
//!
//! Prints a table, then `name=value` pairs as its last line.

use std::time::{Duration, Instant};

use axum::routing::post;
use axum::{Json, Router};
use nightshift::access::Actor;
use nightshift::app::open_memory;
use nightshift::config::{Config, RuntimeKind};
use nightshift::db::query_scalar;
use nightshift::memory::{Memory, NewEvent, Role, SearchRequest};
use nightshift::schedule::types::{CatchUp, NewSchedule, NotifyPolicy};
use nightshift::schedule::Cadence;
use nightshift::worker::{run_with, WorkerParts};
use serde_json::{json, Value};

mod common;
use common::{cpu_time, percentile, Language, Rng};

/// The tests' sqld: started on 127.0.0.1, stopped when dropped.
#[allow(dead_code)]
#[path = "../tests/common/sqld.rs"]
mod sqld;
use sqld::Sqld;

const GOAL_TIME: Duration = Duration::from_millis(200);
const MAX_CONCURRENT: usize = 4;
const SCHEDULES: usize = 300;
const WARM_UP: Duration = Duration::from_secs(5);
const MEASURE: Duration = Duration::from_secs(30);
const CLAIMS: usize = 200;
const BIG_USER_CHUNKS: usize = 50_000;
const OTHER_CHUNKS: usize = 5_000;
const QUERIES: usize = 200;

async fn fake_runtime() -> String {
    async fn goal(Json(_): Json<Value>) -> Json<Value> {
        tokio::time::sleep(GOAL_TIME).await;
        Json(json!({"output": "ok"}))
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, Router::new().route("/goal", post(goal)))
            .await
            .unwrap()
    });
    format!("http://{addr}/goal")
}

fn config_for(database: &str, runtime_url: &str) -> Config {
    let mut config = Config::default();
    config.database.path = database.to_string();
    config.scheduler.min_interval_secs = 1;
    config.scheduler.max_per_user = SCHEDULES as i64 + CLAIMS as i64;
    config.scheduler.max_concurrent = MAX_CONCURRENT;
    config.scheduler.change_check_ms = 100;
    config.scheduler.shutdown_grace_secs = 5;
    config.scheduler.history_keep = 100_000;
    config.runtime.kind = RuntimeKind::Http;
    config.runtime.url = runtime_url.to_string();
    config.runtime.max_retries = 0;
    config.consolidation.enabled = false;
    config
}

/// One claim transaction, timed, on the database of `config`.
async fn claim_times(config: &Config) -> Vec<Duration> {
    let app = nightshift::app::App::open(config).await.expect("open");
    common::claims::claim_times(&app, CLAIMS).await
}

/// A measured phase: runs a minute, and the cores the workers (this process) and the
/// server kept busy meanwhile.
struct Throughput {
    runs_per_min: f64,
    worker_cores: f64,
    server_cores: f64,
}

/// Runs finished a minute by `workers` workers with more work due than they can do.
/// `server_pid`: the sqld whose CPU time is measured alongside, if any. `replicas`: a
/// folder where each worker keeps its own embedded replica of the server.
async fn runs_per_min(
    config: &Config,
    workers: usize,
    server_pid: Option<&str>,
    replicas: Option<&std::path::Path>,
) -> Throughput {
    let memory = open_memory(config).await.expect("open");
    let mut stops = Vec::new();
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let mut config = config.clone();
        if let Some(dir) = replicas {
            let file = dir.join(format!("replica-{workers}w-{w}.db"));
            config.database.replica_path = Some(file.display().to_string());
        }
        let parts = WorkerParts {
            worker_id: Some(format!("bench-{workers}w-{w}")),
            ..Default::default()
        };
        tasks.push(tokio::spawn(async move {
            let app = nightshift::app::App::open(&config)
                .await
                .map_err(nightshift::worker::WorkerError::from)?;
            run_with(&app, parts, async {
                let _ = stopped.await;
            })
            .await
        }));
        stops.push(stop);
    }
    tokio::time::sleep(WARM_UP).await;
    let from = memory.clock().now_ms();
    let cpu_from = (
        cpu_time("self"),
        server_pid.map(cpu_time).unwrap_or_default(),
    );
    tokio::time::sleep(MEASURE).await;
    let to = memory.clock().now_ms();
    let cpu_to = (
        cpu_time("self"),
        server_pid.map(cpu_time).unwrap_or_default(),
    );
    for stop in stops {
        let _ = stop.send(());
    }
    for task in tasks {
        task.await.unwrap().expect("worker");
    }
    let conn = memory.db().conn().await.unwrap();
    let done: i64 = query_scalar(
        &conn,
        "SELECT count(*) FROM schedule_runs WHERE status = 'succeeded'
         AND finished_at >= ?1 AND finished_at < ?2",
        [from, to],
    )
    .await
    .unwrap()
    .unwrap_or(0);
    let wall = (to - from) as f64 / 1000.0;
    Throughput {
        runs_per_min: done as f64 * 60.0 / wall,
        worker_cores: (cpu_to.0 - cpu_from.0).as_secs_f64() / wall,
        server_cores: (cpu_to.1 - cpu_from.1).as_secs_f64() / wall,
    }
}

/// Schedules due every second with every occurrence kept: always more due than done.
async fn busy_schedules(config: &Config) {
    let app = nightshift::app::App::open(config).await.expect("open");
    let memory = app.memory().clone();
    let store = app.schedules().clone();
    for i in 0..SCHEDULES {
        let mut new = NewSchedule::new(
            format!("user-{}", i % 30),
            format!("job {i}"),
            Cadence::Interval {
                every_secs: 1,
                anchor: memory.clock().now_ms(),
                tz: "UTC".into(),
            },
        );
        new.catch_up = CatchUp::All;
        new.notify = NotifyPolicy::Never;
        store.create(&Actor::Operator, &new).await.expect("create");
    }
}

async fn fill(memory: &Memory, rng: &mut Rng, lang: &Language) {
    for (user, chunks) in [("user-big", BIG_USER_CHUNKS), ("user-other", OTHER_CHUNKS)] {
        let mut left = chunks;
        while left > 0 {
            let batch = left.min(1_000);
            let events: Vec<NewEvent> = (0..batch)
                .map(|_| NewEvent::new(Role::User, lang.sentence(rng, 200)))
                .collect();
            memory
                .append(user, &format!("{user}-chat"), &events)
                .await
                .expect("fill");
            left -= batch;
        }
    }
    memory.embed_pending(&|_, _| {}).await.expect("embed");
}

/// A value as an SQL literal.
fn literal(value: libsql::Value) -> String {
    match value {
        libsql::Value::Null => "NULL".into(),
        libsql::Value::Integer(n) => n.to_string(),
        libsql::Value::Real(x) => format!("{x:?}"),
        libsql::Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
        libsql::Value::Blob(b) => {
            let hex: String = b.iter().map(|byte| format!("{byte:02x}")).collect();
            format!("X'{hex}'")
        }
    }
}

/// Copies the memory tables of a local file to a server, many rows per request: through
/// the API one statement is one round trip, and 50,000 chunks would take most of an hour.
async fn copy_memory(from: &Memory, to: &Memory) {
    let source = from.db().conn().await.unwrap();
    let target = to.db().conn().await.unwrap();
    for table in [
        "meta",
        "sessions",
        "events",
        "session_state",
        "chunks",
        "chunk_vectors",
    ] {
        let mut rows = source
            .query(&format!("SELECT * FROM {table}"), ())
            .await
            .unwrap();
        let mut values = Vec::new();
        let flush = |values: &mut Vec<String>, last: bool| {
            if values.is_empty() || (!last && values.len() < 200) {
                return None;
            }
            let sql = format!("INSERT OR REPLACE INTO {table} VALUES {}", values.join(","));
            values.clear();
            Some(sql)
        };
        while let Some(row) = rows.next().await.unwrap() {
            let columns: Vec<String> = (0..row.column_count())
                .map(|i| literal(row.get_value(i).unwrap()))
                .collect();
            values.push(format!("({})", columns.join(",")));
            if let Some(sql) = flush(&mut values, false) {
                target.execute(&sql, ()).await.expect("copy");
            }
        }
        if let Some(sql) = flush(&mut values, true) {
            target.execute(&sql, ()).await.expect("copy");
        }
    }
}

async fn search_times(memory: &Memory, rng: &mut Rng, lang: &Language) -> Vec<Duration> {
    let request = |rng: &mut Rng| SearchRequest {
        user_id: "user-big".into(),
        query: lang.query(rng),
        top_k: Some(10),
        session_id: Some("user-big-chat".into()),
        tags: Vec::new(),
        ..Default::default()
    };
    // The first search loads the user's vectors; it is not what a busy worker sees.
    memory.search(&request(rng)).await.expect("search");
    let mut times = Vec::with_capacity(QUERIES);
    for _ in 0..QUERIES {
        let request = request(rng);
        let start = Instant::now();
        let hits = memory.search(&request).await.expect("search");
        times.push(start.elapsed());
        assert!(!hits.is_empty());
    }
    times.sort();
    times
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let runtime_url = fake_runtime().await;
    let file = |name: &str| dir.path().join(name).display().to_string();
    // This bench compares a libSQL server with a file; without sqld it says why and stops.
    if sqld::binary().is_none() {
        return;
    }

    eprintln!("claims…");
    let sqld = Sqld::start().expect("sqld");
    let claims_remote = claim_times(&config_for(&sqld.url, &runtime_url)).await;
    let claims_local = claim_times(&config_for(&file("claims.db"), &runtime_url)).await;
    drop(sqld);

    eprintln!("runs a minute, one worker then three…");
    let sqld = Sqld::start().expect("sqld");
    let remote = config_for(&sqld.url, &runtime_url);
    busy_schedules(&remote).await;
    let remote_1w = runs_per_min(&remote, 1, Some(&sqld.pid), None).await;
    let remote_3w = runs_per_min(&remote, 3, Some(&sqld.pid), None).await;
    drop(sqld);
    let sqld = Sqld::start().expect("sqld");
    let remote = config_for(&sqld.url, &runtime_url);
    busy_schedules(&remote).await;
    let replica_1w = runs_per_min(&remote, 1, Some(&sqld.pid), Some(dir.path())).await;
    let replica_3w = runs_per_min(&remote, 3, Some(&sqld.pid), Some(dir.path())).await;
    drop(sqld);
    let local = config_for(&file("runs.db"), &runtime_url);
    busy_schedules(&local).await;
    let local_1w = runs_per_min(&local, 1, None, None).await;
    let local_3w = runs_per_min(&local, 3, None, None).await;

    eprintln!("search: filling {BIG_USER_CHUNKS} chunks for one user…");
    let lang = Language::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let local_memory = open_memory(&config_for(&file("search.db"), &runtime_url))
        .await
        .expect("open");
    fill(&local_memory, &mut rng, &lang).await;
    let sqld = Sqld::start().expect("sqld");
    let remote_config = config_for(&sqld.url, &runtime_url);
    let remote_memory = open_memory(&remote_config).await.expect("open");
    copy_memory(&local_memory, &remote_memory).await;
    let mut replica_config = remote_config.clone();
    replica_config.database.replica_path = Some(file("replica.db"));
    let replica_memory = open_memory(&replica_config).await.expect("open replica");
    let search_local = search_times(&local_memory, &mut rng, &lang).await;
    let search_replica = search_times(&replica_memory, &mut rng, &lang).await;
    let search_remote = search_times(&remote_memory, &mut rng, &lang).await;
    drop(sqld);

    let ms = |times: &[Duration], p: f64| percentile(times, p);
    println!();
    println!("| measure                                  | local file | sqld (remote) | embedded replica |");
    println!("|------------------------------------------|-----------:|--------------:|-----------------:|");
    println!(
        "| one claim transaction, p50 / p95 (ms)    | {:.2} / {:.2} | {:.2} / {:.2} | — |",
        ms(&claims_local, 0.5),
        ms(&claims_local, 0.95),
        ms(&claims_remote, 0.5),
        ms(&claims_remote, 0.95)
    );
    for (name, local, remote, replica) in [
        (
            "1 worker (200 ms goals)",
            &local_1w,
            &remote_1w,
            &replica_1w,
        ),
        ("3 workers", &local_3w, &remote_3w, &replica_3w),
    ] {
        println!(
            "| runs a minute, {name:<25} | {:.0} | {:.0} | {:.0} |",
            local.runs_per_min, remote.runs_per_min, replica.runs_per_min
        );
        println!(
            "|   cores busy: workers (+ sqld)           | {:.2} | {:.2} + {:.2} | {:.2} + {:.2} |",
            local.worker_cores,
            remote.worker_cores,
            remote.server_cores,
            replica.worker_cores,
            replica.server_cores
        );
    }
    let (local_1w, local_3w) = (local_1w.runs_per_min, local_3w.runs_per_min);
    let (remote_1w, remote_3w) = (remote_1w.runs_per_min, remote_3w.runs_per_min);
    let (replica_1w, replica_3w) = (replica_1w.runs_per_min, replica_3w.runs_per_min);
    println!(
        "| 3 workers / 1 worker                     | {:.2} | {:.2} | {:.2} |",
        local_3w / local_1w,
        remote_3w / remote_1w,
        replica_3w / replica_1w
    );
    println!(
        "| search, 50k chunks, p50 / p95 (ms)       | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} |",
        ms(&search_local, 0.5),
        ms(&search_local, 0.95),
        ms(&search_remote, 0.5),
        ms(&search_remote, 0.95),
        ms(&search_replica, 0.5),
        ms(&search_replica, 0.95)
    );
    println!();
    println!(
        "claim_p50_ms_remote={:.2} claim_p50_ms_local={:.2} runs_per_min_1w={remote_1w:.0} \
         runs_per_min_3w={remote_3w:.0} scaleout_ratio_3w={:.2} runs_per_min_1w_local={local_1w:.0} \
         runs_per_min_3w_local={local_3w:.0} search_p95_ms_replica_50k={:.2} \
         search_p95_ms_remote_50k={:.2} search_p95_ms_local_50k={:.2} \
         runs_per_min_1w_replica={replica_1w:.0} runs_per_min_3w_replica={replica_3w:.0}",
        ms(&claims_remote, 0.5),
        ms(&claims_local, 0.5),
        remote_3w / remote_1w,
        ms(&search_replica, 0.95),
        ms(&search_remote, 0.95),
        ms(&search_local, 0.95),
    );
}
