//! `cargo bench --bench scheduler`: 10,000 active schedules against a fake agent runtime
//! on 127.0.0.1. Measures lateness (from when each occurrence was due → started) and
//! sustained runs/s, idle CPU with nothing due, and, side by side, the lateness the same
//! occurrences would see with a fixed 15-second poll (seed 000's design). Prints a table,
//! then `name=value` pairs as its last line.
//!
//! One schedule in a hundred has a follower (`after`, on success): `chain_start_p99_ms` is
//! how long from an upstream run's finish its follower's run takes to start, under the
//! same load.
//!
//! Cancel: with the 10,000 (none due) loaded and a worker running, a triggered run whose
//! runtime call never answers is cancelled through `POST /v1/runs/{id}/cancel`, 100
//! times; `cancel_p99_ms` runs from the request to the run recorded `cancelled`.
//!
//! Live views: 1,000 runs of the openai runtime (one memory search, then an answer, the
//! fake model taking 10 ms a turn), 8 at a time, each followed through
//! `GET /v1/runs/{id}/events` from as soon as its run exists; `sse_first_event_p99_ms`
//! runs from the request to the first event, and `sse_dropped_runs` counts the streams
//! that missed or repeated an event or did not end with `end`.
//!
//! Overload: 800 schedules every 2 s with `catch_up = "skip"` against 16 slots of 200 ms
//! goals (five times more due than can run), the worker up before the first comes due;
//! `overload_capacity_share` is the runs started in 20 s (after 5 s) over the 1,600 the
//! slots could run.
//!
//! Traces: last (the process's tracer is set once), the lateness run and the idle CPU
//! again with every run's spans exported over OTLP/HTTP to a receiver on 127.0.0.1:
//! `traces_lateness_p99_ms` and `traces_idle_cpu_pct` beside the figures without.
//!
//! `NIGHTSHIFT_BENCH_SCHEDULES=100000` runs it with more schedules: their period grows with
//! their number (the offered load stays about 167 runs/s), and a tenth of them have a
//! 5-minute jitter; the names of the figures end in the size (`lateness_p99_ms_100k`).

use std::time::{Duration, Instant};

use axum::routing::post;
use axum::{Json, Router};
use nightshift::access::Actor;
use nightshift::app::open_memory;
use nightshift::config::{Config, RuntimeKind};
use nightshift::schedule::types::{CatchUp, ChainOn, NewSchedule, Upstream};
use nightshift::schedule::Cadence;
use nightshift::worker::{run_with, WorkerParts};
use serde_json::{json, Value};

mod common;

const DEFAULT_SCHEDULES: usize = 10_000;
const MEASURE_SECS: u64 = 70;

/// How many schedules, and their period: 60 s for 10,000, longer in proportion.
fn size() -> (usize, i64) {
    let schedules = std::env::var("NIGHTSHIFT_BENCH_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(DEFAULT_SCHEDULES);
    let period = (60 * schedules as i64 / DEFAULT_SCHEDULES as i64).max(60);
    (schedules, period)
}

/// The fake runtime's URL: `/goal` answers at once, `/slow` after [`SLOW_GOAL`].
async fn fake_runtime() -> String {
    async fn goal(Json(_): Json<Value>) -> Json<Value> {
        Json(json!({"output": "ok"}))
    }
    async fn slow(Json(_): Json<Value>) -> Json<Value> {
        tokio::time::sleep(SLOW_GOAL).await;
        Json(json!({"output": "ok"}))
    }
    async fn hang(Json(_): Json<Value>) -> Json<Value> {
        std::future::pending::<()>().await;
        Json(json!({"output": "never"}))
    }
    // An OpenAI-compatible model: one memory search, then its answer, each after a
    // little thought, so a live view opens while the run is going.
    async fn model(Json(body): Json<Value>) -> Json<Value> {
        tokio::time::sleep(MODEL_THINKS).await;
        let searched = body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let message = if searched {
            json!({"role": "assistant", "content": "done"})
        } else {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                "type": "function", "function": {"name": "memory_search",
                "arguments": "{\"query\": \"plants\"}"}}]})
        };
        Json(json!({"choices": [{"message": message}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}}))
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let routes = Router::new()
        .route("/goal", post(goal))
        .route("/slow", post(slow))
        .route("/hang", post(hang))
        .route("/v1/chat/completions", post(model));
    tokio::spawn(async move { axum::serve(listener, routes).await.unwrap() });
    format!("http://{addr}/goal")
}

/// The overload scenario's goals take this long.
const SLOW_GOAL: Duration = Duration::from_millis(200);
/// Its slots: with 200 ms goals, 80 runs a second at most.
const OVERLOAD_SLOTS: usize = 16;
/// Its schedules, each due every 2 s with `catch_up = "skip"`: 400 occurrences a second,
/// five times what the slots can run.
const OVERLOAD_SCHEDULES: usize = 800;
const OVERLOAD_WARM_UP: Duration = Duration::from_secs(5);
const OVERLOAD_MEASURE: Duration = Duration::from_secs(20);

/// Cancels measured, one run at a time.
const CANCELS: usize = 100;

/// From a cancel through the API to the run recorded `cancelled`, with its runtime call
/// in flight and `config`'s schedules loaded: the sorted times in ms.
async fn cancels(config: &Config, url: &str) -> Vec<f64> {
    let mut config = config.clone();
    config.runtime.url = url.replace("/goal", "/hang");
    config.server.listen = String::new();
    let app = nightshift::app::App::open(&config).await.unwrap();
    let store = app.schedules().clone();
    let target = store
        .create(
            &Actor::Operator,
            &NewSchedule::new("canceller", "hang", Cadence::Triggered { tz: "UTC".into() }),
        )
        .await
        .unwrap();
    let admin = app
        .tokens()
        .create(&nightshift::tokens::NewToken {
            user_id: None,
            name: None,
            expires_in_secs: None,
        })
        .await
        .unwrap()
        .secret;
    let stop = tokio_util::sync::CancellationToken::new();
    let api = nightshift::api::router(&app, true, &stop);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, api).await.unwrap() });
    // One app serves the API and runs the worker, as `nightshift run` does: a cancel wakes
    // the worker's loop in the process (from another process, the worker sees it at its
    // next change check, `scheduler.change_check_ms`).
    let (stop_worker, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker_app = app.clone();
    let worker = tokio::spawn(async move {
        run_with(&worker_app, WorkerParts::default(), async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    let client = reqwest::Client::new();
    let conn = app.memory().db().conn().await.unwrap();
    let status_of = |run_id: String| {
        let conn = &conn;
        async move {
            nightshift::db::query_scalar::<String>(
                conn,
                "SELECT status FROM schedule_runs WHERE run_id = ?1",
                [run_id],
            )
            .await
            .unwrap()
        }
    };
    let mut times = Vec::with_capacity(CANCELS);
    for i in 0..CANCELS {
        store
            .trigger(
                &Actor::Operator,
                &target.schedule_id,
                None,
                Some(&format!("c{i}")),
            )
            .await
            .unwrap();
        // Its run started, the runtime call in flight.
        let run_id = loop {
            let running = nightshift::db::query_scalar::<String>(
                &conn,
                "SELECT run_id FROM schedule_runs WHERE schedule_id = ?1 AND status = 'running'",
                [target.schedule_id.as_str()],
            )
            .await
            .unwrap();
            if let Some(run_id) = running {
                break run_id;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        let asked = Instant::now();
        let answer = client
            .post(format!("{api_url}/v1/runs/{run_id}/cancel"))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success(), "{:?}", answer.text().await);
        while status_of(run_id.clone()).await.as_deref() != Some("cancelled") {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        times.push(asked.elapsed().as_secs_f64() * 1000.0);
    }
    stop_worker.send(()).unwrap();
    worker.await.unwrap();
    stop.cancel();
    times.sort_by(f64::total_cmp);
    times
}

/// Runs followed live, in all; by this many viewers at once, each with a schedule of its
/// own.
const LIVE_RUNS: usize = 1000;
const LIVE_VIEWERS: usize = 8;
/// The fake model's time to answer each turn.
const MODEL_THINKS: Duration = Duration::from_millis(10);

/// What the live views saw: the times from each stream's request to its first event (ms,
/// sorted), the runs whose stream missed or repeated an event or did not end with `end`,
/// and the events received.
struct LiveViews {
    first_event_ms: Vec<f64>,
    dropped: usize,
    events: usize,
}

/// Follows [`LIVE_RUNS`] runs through `GET /v1/runs/{id}/events`, each opened as soon as
/// its run exists, `config`'s schedules loaded, the openai runtime against the fake model.
async fn live_views(config: &Config, url: &str) -> LiveViews {
    let mut config = config.clone();
    config.runtime.kind = RuntimeKind::Openai;
    config.runtime.base_url = url.replace("/goal", "/v1");
    config.runtime.model = "m".into();
    config.server.listen = String::new();
    // Eight viewers on one token: its request rate is not what is measured.
    config.server.rate_per_token = 100_000.0;
    config.server.rate_burst = 1_000_000;
    let app = nightshift::app::App::open(&config).await.unwrap();
    let token = app
        .tokens()
        .create(&nightshift::tokens::NewToken {
            user_id: Some("viewer".into()),
            name: None,
            expires_in_secs: None,
        })
        .await
        .unwrap()
        .secret;
    // The server `nightshift run` serves (its accept loop, its socket options).
    let stop = tokio_util::sync::CancellationToken::new();
    let mut server = config.server.clone();
    server.listen = "127.0.0.1:0".into();
    let listening =
        nightshift::api::Listening::bind(&server, nightshift::api::router(&app, true, &stop))
            .await
            .unwrap();
    let api_url = format!("http://{}", listening.local_addr().unwrap());
    tokio::spawn({
        let stop = stop.clone();
        async move { listening.serve(stop, Duration::from_secs(1)).await }
    });
    let (stop_worker, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker_app = app.clone();
    let worker = tokio::spawn(async move {
        run_with(&worker_app, WorkerParts::default(), async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    let mut viewers = Vec::new();
    for v in 0..LIVE_VIEWERS {
        let app = app.clone();
        let (api_url, token) = (api_url.clone(), token.clone());
        viewers.push(tokio::spawn(async move {
            let store = app.schedules().clone();
            let schedule = store
                .create(
                    &Actor::Operator,
                    &NewSchedule::new("viewer", "water", Cadence::Triggered { tz: "UTC".into() }),
                )
                .await
                .unwrap();
            let conn = app.memory().db().conn().await.unwrap();
            let client = reqwest::Client::new();
            let mut seen = LiveViews {
                first_event_ms: Vec::new(),
                dropped: 0,
                events: 0,
            };
            for i in 0..LIVE_RUNS / LIVE_VIEWERS {
                let event = store
                    .trigger(
                        &Actor::Operator,
                        &schedule.schedule_id,
                        None,
                        Some(&format!("v{v}-{i}")),
                    )
                    .await
                    .unwrap()
                    .event_id;
                let run_id = loop {
                    let run = nightshift::db::query_scalar::<String>(
                        &conn,
                        "SELECT run_id FROM schedule_runs WHERE event_id = ?1",
                        [event.as_str()],
                    )
                    .await
                    .unwrap();
                    if let Some(run_id) = run {
                        break run_id;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                };
                let asked = Instant::now();
                let mut response = client
                    .get(format!("{api_url}/v1/runs/{run_id}/events"))
                    .bearer_auth(&token)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200);
                let (mut text, mut first, mut ids, mut ended) =
                    (String::new(), None, Vec::new(), false);
                while let Some(chunk) = response.chunk().await.unwrap() {
                    first.get_or_insert_with(|| asked.elapsed().as_secs_f64() * 1000.0);
                    text.push_str(std::str::from_utf8(&chunk).unwrap());
                    while let Some(end) = text.find("\n\n") {
                        let block: String = text.drain(..end + 2).collect();
                        for line in block.lines() {
                            if let Some(id) = line.strip_prefix("id: ") {
                                ids.push(id.parse::<i64>().unwrap());
                            }
                            ended |= line == "event: end";
                        }
                    }
                }
                let recorded = nightshift::db::query_scalar::<i64>(
                    &conn,
                    "SELECT count(*) FROM run_progress WHERE run_id = ?1",
                    [run_id.as_str()],
                )
                .await
                .unwrap()
                .unwrap_or(0);
                let whole = ended
                    && ids.len() as i64 == recorded + 1
                    && ids.iter().enumerate().all(|(n, id)| *id == n as i64 + 1);
                seen.dropped += usize::from(!whole);
                seen.events += ids.len();
                seen.first_event_ms.extend(first);
            }
            seen
        }));
    }
    let mut all = LiveViews {
        first_event_ms: Vec::new(),
        dropped: 0,
        events: 0,
    };
    for viewer in viewers {
        let seen = viewer.await.unwrap();
        all.first_event_ms.extend(seen.first_event_ms);
        all.dropped += seen.dropped;
        all.events += seen.events;
    }
    stop_worker.send(()).unwrap();
    worker.await.unwrap();
    stop.cancel();
    all.first_event_ms.sort_by(f64::total_cmp);
    all
}

/// Runs the overload scenario; returns (share of capacity used, runs, skips recorded).
async fn overload(url: &str) -> (f64, i64, i64) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = Config::default();
    config.database.path = dir.path().join("overload.db").display().to_string();
    config.scheduler.max_per_user = OVERLOAD_SCHEDULES as i64;
    config.scheduler.max_concurrent = OVERLOAD_SLOTS;
    config.scheduler.min_interval_secs = 1;
    config.runtime.kind = RuntimeKind::Http;
    config.runtime.url = url.replace("/goal", "/slow");
    let app = nightshift::app::App::open(&config).await.unwrap();
    let store = app.schedules().clone();
    let now = app.clock().now_ms();
    for i in 0..OVERLOAD_SCHEDULES {
        // First runs spread over one period, starting 2 s from now (the worker is up by
        // then: what it falls behind on is load, not downtime).
        let anchor = now + 2_000 + (i as i64 * 2_000) / OVERLOAD_SCHEDULES as i64;
        let cadence = Cadence::Interval {
            every_secs: 2,
            anchor,
            tz: "UTC".into(),
        };
        let mut new = NewSchedule::new("overload", format!("goal {i}"), cadence);
        new.catch_up = CatchUp::Skip;
        store.create(&Actor::Operator, &new).await.unwrap();
    }
    let from = nightshift::db::clock::now_ms() + OVERLOAD_WARM_UP.as_millis() as i64;
    let until = from + OVERLOAD_MEASURE.as_millis() as i64;
    run_for(&config, (OVERLOAD_WARM_UP + OVERLOAD_MEASURE).as_secs() + 1).await;
    let conn = app.memory().db().conn().await.unwrap();
    let count = |status: &'static str| {
        let conn = &conn;
        async move {
            nightshift::db::query_scalar::<i64>(
                conn,
                "SELECT count(*) FROM schedule_runs WHERE status = ?1
                 AND started_at >= ?2 AND started_at < ?3",
                libsql::params![status, from, until],
            )
            .await
            .unwrap()
            .unwrap_or(0)
        }
    };
    let (runs, skipped) = (count("succeeded").await, count("skipped").await);
    let capacity = OVERLOAD_SLOTS as f64 * OVERLOAD_MEASURE.as_secs_f64() / SLOW_GOAL.as_secs_f64();
    (runs as f64 / capacity, runs, skipped)
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn setup(dir: &tempfile::TempDir, url: &str, far_future: bool) -> Config {
    let (schedules, period_secs) = size();
    let mut config = Config::default();
    config.database.path = dir.path().join("bench.db").display().to_string();
    config.scheduler.max_per_user = schedules as i64;
    config.scheduler.max_concurrent = 16;
    config.runtime.kind = RuntimeKind::Http;
    config.runtime.url = url.to_string();
    let app = nightshift::app::App::open(&config).await.unwrap();
    let store = app.schedules().clone();
    let now = app.clock().now_ms();
    for i in 0..schedules {
        let cadence = if far_future {
            Cadence::cron("0 0 1 1 *", "UTC").unwrap()
        } else {
            // First runs spread evenly over one period, starting 10 s from now.
            let anchor = now + 10_000 + (i as i64 * period_secs * 1000) / schedules as i64;
            Cadence::Interval {
                every_secs: period_secs,
                anchor,
                tz: "UTC".into(),
            }
        };
        let mut new = NewSchedule::new(format!("user-{}", i % 100), format!("goal {i}"), cadence);
        // Beyond the default size, a tenth of them start up to 5 minutes late by jitter.
        if schedules > DEFAULT_SCHEDULES && i % 10 == 0 {
            new.jitter_secs = Some(300);
        }
        let upstream = store.create(&Actor::Operator, &new).await.unwrap();
        if !far_future && i % CHAIN_EVERY == 0 {
            let mut follower = NewSchedule::new(
                upstream.user_id.clone(),
                format!("follow {i}"),
                Cadence::Triggered { tz: "UTC".into() },
            );
            follower.after = Some(Upstream {
                schedule_id: upstream.schedule_id,
                on: ChainOn::Succeeded,
                status: None,
            });
            store.create(&Actor::Operator, &follower).await.unwrap();
        }
    }
    config
}

/// One schedule in this many has a follower.
const CHAIN_EVERY: usize = 100;

async fn run_for(config: &Config, secs: u64) {
    let wait = tokio::time::sleep(Duration::from_secs(secs));
    let app = nightshift::app::App::open(config).await.unwrap();
    run_with(&app, WorkerParts::default(), wait).await.unwrap();
}

/// What one run of the worker over the loaded schedules showed.
struct Lateness {
    /// Due → started, sorted, ms.
    sorted: Vec<i64>,
    mean: f64,
    poll15_mean: f64,
    runs_per_s: f64,
    chain_p99: i64,
    chain_links: usize,
}

/// Loads the schedules, runs a worker over them for [`MEASURE_SECS`] (after warm-up) and
/// reads how late each occurrence started.
async fn measure_lateness(url: &str) -> Lateness {
    let (schedules, _) = size();
    eprintln!("creating {schedules} schedules…");
    let busy_dir = tempfile::TempDir::new().unwrap();
    let creating = Instant::now();
    let config = setup(&busy_dir, url, false).await;
    // Occurrences that fell due while the schedules were still being created (100,000
    // take longer than the 10 s lead) start in a burst when the worker starts: the
    // occurrences due in that long again after it started are left out, as warm-up.
    let warm_up = creating.elapsed();
    eprintln!(
        "running the worker for {} s…",
        MEASURE_SECS + warm_up.as_secs()
    );
    let measured_from = nightshift::db::clock::now_ms() + warm_up.as_millis() as i64;
    run_for(&config, MEASURE_SECS + warm_up.as_secs()).await;

    let memory = open_memory(&config).await.unwrap();
    let conn = memory.db().conn().await.unwrap();
    let mut rows = conn
        .query(
            // Due: its time, moved by its jitter when it has one.
            "SELECT coalesce(due_at, scheduled_for), started_at, finished_at FROM schedule_runs
             WHERE status = 'succeeded' AND origin = 'cadence'
             AND coalesce(due_at, scheduled_for) >= ?1",
            [measured_from],
        )
        .await
        .unwrap();
    let mut lateness = Vec::new();
    let mut poll15 = Vec::new();
    let (mut first_start, mut last_finish) = (i64::MAX, 0);
    while let Some(row) = rows.next().await.unwrap() {
        let (due, started, finished): (i64, i64, i64) = (
            row.get(0).unwrap(),
            row.get(1).unwrap(),
            row.get(2).unwrap(),
        );
        lateness.push(started - due);
        // A loop that wakes every 15 s (phase-aligned to the epoch) starts it at the next tick.
        poll15.push((due + 14_999) / 15_000 * 15_000 - due);
        first_start = first_start.min(started);
        last_finish = last_finish.max(finished);
    }
    drop(rows);
    lateness.sort_unstable();
    // From an upstream run's finish (when its follower's event was queued, in the same
    // transaction) to the follower's run starting.
    let mut rows = conn
        .query(
            "SELECT d.started_at - u.finished_at FROM schedule_events e
             JOIN schedule_runs d ON d.event_id = e.event_id
             JOIN schedule_runs u ON u.run_id = e.event_key
             WHERE e.kind = 'chain' AND u.finished_at >= ?1",
            [measured_from],
        )
        .await
        .unwrap();
    let mut chain_start = Vec::new();
    while let Some(row) = rows.next().await.unwrap() {
        chain_start.push(row.get::<i64>(0).unwrap());
    }
    drop(rows);
    chain_start.sort_unstable();
    let chain_p99 = if chain_start.is_empty() {
        -1
    } else {
        percentile(&chain_start, 0.99)
    };
    let runs = lateness.len();
    Lateness {
        runs_per_s: runs as f64 / ((last_finish - first_start) as f64 / 1000.0).max(0.001),
        poll15_mean: poll15.iter().sum::<i64>() as f64 / poll15.len().max(1) as f64,
        mean: lateness.iter().sum::<i64>() as f64 / runs.max(1) as f64,
        sorted: lateness,
        chain_p99,
        chain_links: chain_start.len(),
    }
}

/// The worker's CPU share over 10 s with the schedules of `config` loaded, none due.
async fn measure_idle_cpu(config: &Config) -> f64 {
    let cpu_before = common::cpu_time("self");
    let started = Instant::now();
    run_for(config, 10).await;
    (common::cpu_time("self") - cpu_before).as_secs_f64() / started.elapsed().as_secs_f64() * 100.0
}

/// An OTLP/HTTP receiver on 127.0.0.1 that takes every export and counts their bytes.
async fn trace_sink() -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let received = std::sync::Arc::new(AtomicU64::new(0));
    let counted = received.clone();
    let app = Router::new().route(
        "/v1/traces",
        post(move |body: axum::body::Bytes| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(body.len() as u64, Ordering::Relaxed);
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), received)
}

#[tokio::main]
async fn main() {
    let url = fake_runtime().await;
    let (schedules, period_secs) = size();
    // Figures of another size are named for it.
    let suffix = if schedules == DEFAULT_SCHEDULES {
        String::new()
    } else {
        format!("_{}k", schedules / 1000)
    };

    let off = measure_lateness(&url).await;
    let lateness = &off.sorted;
    let runs = lateness.len();
    let (mean, poll15_mean, runs_per_s, chain_p99) =
        (off.mean, off.poll15_mean, off.runs_per_s, off.chain_p99);

    eprintln!("overload: {OVERLOAD_SCHEDULES} schedules every 2 s, {OVERLOAD_SLOTS} slots of 200 ms goals…");
    let (overload_share, overload_runs, overload_skipped) = overload(&url).await;

    eprintln!("measuring idle CPU with {schedules} schedules, none due…");
    let idle_dir = tempfile::TempDir::new().unwrap();
    let idle_config = setup(&idle_dir, &url, true).await;
    let idle_cpu_pct = measure_idle_cpu(&idle_config).await;

    eprintln!("cancelling {CANCELS} runs through the API, {schedules} schedules loaded…");
    let cancel_times = cancels(&idle_config, &url).await;
    let cancel_at = |p: f64| cancel_times[((cancel_times.len() as f64 - 1.0) * p).round() as usize];
    let (cancel_p50, cancel_p99) = (cancel_at(0.5), cancel_at(0.99));

    eprintln!(
        "following {LIVE_RUNS} runs live, {LIVE_VIEWERS} at a time, {schedules} schedules loaded…"
    );
    let live = live_views(&idle_config, &url).await;
    let live_at = |p: f64| {
        live.first_event_ms[((live.first_event_ms.len() as f64 - 1.0) * p).round() as usize]
    };
    let (sse_p50, sse_p99) = (live_at(0.5), live_at(0.99));
    let sse_dropped = live.dropped;

    // Last, as the process's tracer is set once: the same load with every run's spans
    // exported to a receiver on 127.0.0.1.
    eprintln!("the same, with traces exported…");
    let (sink, received) = trace_sink().await;
    let traces = nightshift::traces::install(&nightshift::config::TracesConfig {
        otlp_endpoint: Some(sink),
        ..Default::default()
    })
    .unwrap()
    .expect("an endpoint is set");
    let on = measure_lateness(&url).await;
    let traced_idle_cpu_pct = measure_idle_cpu(&idle_config).await;
    traces.shutdown();
    let trace_bytes = received.load(std::sync::atomic::Ordering::Relaxed);
    let traced_p99 = percentile(&on.sorted, 0.99);
    let within = |on: f64, off: f64| {
        if off <= 0.0 {
            String::new()
        } else {
            format!(
                "{:+.0} % against off; goal within 10 %",
                (on - off) / off * 100.0
            )
        }
    };

    println!("{:<46} {:>14}  note", "measure", "value");
    println!("{}", "-".repeat(84));
    for (name, value, note) in [
        (
            "occurrences run (after warm-up)",
            format!("{runs}"),
            format!("{schedules} schedules every {period_secs} s"),
        ),
        (
            "lateness p50 (due → started)",
            format!("{} ms", percentile(lateness, 0.5)),
            String::new(),
        ),
        (
            "lateness p99",
            format!("{} ms", percentile(lateness, 0.99)),
            "goal ≤ 50 ms".into(),
        ),
        ("lateness mean", format!("{mean:.1} ms"), String::new()),
        (
            "same occurrences, fixed 15 s poll, mean",
            format!("{poll15_mean:.0} ms"),
            "seed 000's loop".into(),
        ),
        (
            "runs per second, sustained",
            format!("{runs_per_s:.0}"),
            "max_concurrent = 16".into(),
        ),
        (
            "chain start p99 (upstream end → follower)",
            format!("{chain_p99} ms"),
            format!("{} links; goal ≤ 100 ms", off.chain_links),
        ),
        (
            "overload: share of capacity running",
            format!("{overload_share:.2}"),
            format!(
                "{overload_runs} runs, {overload_skipped} skips recorded in {} s; goal ≥ 0.9",
                OVERLOAD_MEASURE.as_secs()
            ),
        ),
        (
            "cancel through the API → recorded, p50 / p99",
            format!("{cancel_p50:.1} / {cancel_p99:.1} ms"),
            format!("{CANCELS} runs, runtime call in flight; goal p99 ≤ 200 ms"),
        ),
        (
            "live view: request → first event, p50 / p99",
            format!("{sse_p50:.1} / {sse_p99:.1} ms"),
            format!("{LIVE_RUNS} runs, {LIVE_VIEWERS} followed at once; goal p99 ≤ 50 ms"),
        ),
        (
            "live view: runs missing an event",
            format!("{sse_dropped}"),
            format!("{} events received; goal 0", live.events),
        ),
        (
            "idle CPU, nothing due",
            format!("{idle_cpu_pct:.2} %"),
            "goal about 0".into(),
        ),
        (
            "traces on: lateness p99",
            format!("{traced_p99} ms"),
            within(traced_p99 as f64, percentile(lateness, 0.99) as f64),
        ),
        (
            "traces on: idle CPU",
            format!("{traced_idle_cpu_pct:.2} %"),
            format!("off {idle_cpu_pct:.2} %"),
        ),
        (
            "traces on: spans exported",
            format!("{} KiB", trace_bytes / 1024),
            format!("{} runs traced", on.sorted.len()),
        ),
    ] {
        println!("{name:<46} {value:>14}  {note}");
    }
    println!(
        "lateness_p50_ms{suffix}={} lateness_p99_ms{suffix}={} lateness_mean_ms{suffix}={mean:.1} poll15_mean_lateness_ms{suffix}={poll15_mean:.0} runs_per_s{suffix}={runs_per_s:.0} idle_cpu_pct{suffix}={idle_cpu_pct:.2} occurrences{suffix}={runs} chain_start_p99_ms{suffix}={chain_p99} overload_capacity_share={overload_share:.2} cancel_p99_ms{suffix}={cancel_p99:.1} sse_first_event_p99_ms{suffix}={sse_p99:.1} sse_dropped_runs{suffix}={sse_dropped} traces_lateness_p99_ms{suffix}={traced_p99} traces_idle_cpu_pct{suffix}={traced_idle_cpu_pct:.2} traces_exported_bytes{suffix}={trace_bytes}",
        percentile(lateness, 0.5),
        percentile(lateness, 0.99),
    );
}
