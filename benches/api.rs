//! `cargo bench --bench api`: what the HTTP API adds to the library's own work, measured
//! side by side in one run against one database: hybrid search of a user with 50,000
//! chunks in-process and over HTTP (keep-alive, one client), appends from 16 concurrent
//! callers in-process and from 16 concurrent HTTP clients (one event per request), and
//! how many `/healthz` requests a second the server answers. Prints a table, then
//! `name=value` pairs as its last line.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nightshift::app::App;
use nightshift::config::Config;
use nightshift::memory::{NewEvent, Role, SearchRequest};
use nightshift::tokens::NewToken;
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod common;
use common::{percentile, Language, Rng};

const BIG_USER_CHUNKS: usize = 50_000;
const QUERIES: usize = 300;
const APPEND_EVENTS: usize = 2_000;
const CALLERS: usize = 16;
const HEALTHZ_SECS: u64 = 3;

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = Config::default();
    config.database.path = dir.path().join("bench.db").display().to_string();
    config.server.listen = "127.0.0.1:0".into();
    // The bench makes thousands of requests with one token: no rate in the way.
    config.server.rate_per_token = 100_000.0;
    config.server.rate_burst = 1_000_000;
    let app = App::open(&config).await.unwrap();
    let memory = app.memory().clone();
    let lang = Language::new();
    let mut rng = Rng(0x5eed);

    eprintln!("filling a user with {BIG_USER_CHUNKS} chunks…");
    let mut left = BIG_USER_CHUNKS;
    while left > 0 {
        let batch = left.min(1_000);
        let events: Vec<NewEvent> = (0..batch)
            .map(|_| NewEvent::new(Role::User, lang.sentence(&mut rng, 200)))
            .collect();
        memory
            .append("user-big", "user-big-chat", &events)
            .await
            .unwrap();
        left -= batch;
    }
    memory.embed_pending(&|_, _| {}).await.unwrap();

    let token = app
        .tokens()
        .create(&NewToken {
            user_id: Some("user-big".into()),
            name: None,
            expires_in_secs: None,
        })
        .await
        .unwrap()
        .secret;
    let stop = CancellationToken::new();
    let listening = nightshift::api::Listening::bind(
        &config.server,
        nightshift::api::router(&app, false, &stop),
    )
    .await
    .unwrap();
    let base = format!("http://{}", listening.local_addr().unwrap());
    let server = tokio::spawn({
        let stop = stop.clone();
        async move { listening.serve(stop, Duration::from_secs(5)).await }
    });
    let client = reqwest::Client::new();

    // Search: the same queries, in-process and over HTTP, interleaved so both see the
    // same cache and the same machine.
    let queries: Vec<String> = (0..QUERIES).map(|_| lang.query(&mut rng)).collect();
    // Warm both paths (the vector matrix is loaded by the first search).
    let warm = SearchRequest {
        user_id: "user-big".into(),
        query: queries[0].clone(),
        top_k: Some(10),
        session_id: Some("user-big-chat".into()),
        tags: Vec::new(),
        ..Default::default()
    };
    memory.search(&warm).await.unwrap();
    let (mut inproc, mut http) = (Vec::new(), Vec::new());
    for query in &queries {
        let request = SearchRequest {
            query: query.clone(),
            ..warm.clone()
        };
        let start = Instant::now();
        let hits = memory.search(&request).await.unwrap();
        inproc.push(start.elapsed());
        assert!(!hits.is_empty());
        let start = Instant::now();
        let response = client
            .post(format!("{base}/v1/search"))
            .bearer_auth(&token)
            .json(&json!({"query": query, "top_k": 10, "session": "user-big-chat"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let _body = response.bytes().await.unwrap();
        http.push(start.elapsed());
    }
    inproc.sort();
    http.sort();

    // Appends: 16 callers in-process, then 16 HTTP clients, one event per call.
    let texts: Arc<Vec<String>> = Arc::new(
        (0..APPEND_EVENTS)
            .map(|_| lang.sentence(&mut rng, 200))
            .collect(),
    );
    let start = Instant::now();
    let mut tasks = Vec::new();
    for caller in 0..CALLERS {
        let (memory, texts) = (memory.clone(), texts.clone());
        tasks.push(tokio::spawn(async move {
            for text in texts.iter().skip(caller).step_by(CALLERS) {
                memory
                    .append(
                        &format!("inproc-{caller}"),
                        &format!("inproc-{caller}-chat"),
                        &[NewEvent::new(Role::User, text.clone())],
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let inproc_append = APPEND_EVENTS as f64 / start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for caller in 0..CALLERS {
        let (client, texts, base, token) = (
            reqwest::Client::new(),
            texts.clone(),
            base.clone(),
            token.clone(),
        );
        tasks.push(tokio::spawn(async move {
            for text in texts.iter().skip(caller).step_by(CALLERS) {
                let response = client
                    .post(format!("{base}/v1/sessions/http-{caller}-chat/events"))
                    .bearer_auth(&token)
                    .json(&json!({"events": [{"role": "user", "content": text}]}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 201);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let api_append = APPEND_EVENTS as f64 / start.elapsed().as_secs_f64();

    // /healthz: 16 keep-alive clients for a few seconds.
    let deadline = Instant::now() + Duration::from_secs(HEALTHZ_SECS);
    let mut tasks = Vec::new();
    for _ in 0..CALLERS {
        let (client, base) = (reqwest::Client::new(), base.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                let r = client.get(format!("{base}/healthz")).send().await.unwrap();
                let _ = r.bytes().await.unwrap();
                n += 1;
            }
            n
        }));
    }
    let mut served = 0;
    for task in tasks {
        served += task.await.unwrap();
    }
    let healthz_rps = served as f64 / HEALTHZ_SECS as f64;
    stop.cancel();
    server.await.unwrap();

    let (in_p50, in_p95) = (percentile(&inproc, 0.5), percentile(&inproc, 0.95));
    let (api_p50, api_p95) = (percentile(&http, 0.5), percentile(&http, 0.95));
    println!("| measure | in-process | over HTTP | difference or ratio |");
    println!("|---|---|---|---|");
    println!(
        "| search p50, user of 50k chunks | {in_p50:.2} ms | {api_p50:.2} ms | +{:.2} ms |",
        api_p50 - in_p50
    );
    println!(
        "| search p95, user of 50k chunks | {in_p95:.2} ms | {api_p95:.2} ms | +{:.2} ms |",
        api_p95 - in_p95
    );
    println!(
        "| append, {CALLERS} callers, 1 event per call | {inproc_append:.0} events/s | {api_append:.0} events/s | {:.2} |",
        api_append / inproc_append
    );
    println!("| /healthz, {CALLERS} clients | | {healthz_rps:.0} requests/s | |");
    println!(
        "api_search_p95_ms_50k={api_p95:.3} inproc_search_p95_ms_50k={in_p95:.3} \
         api_overhead_p95_ms={:.3} api_append_events_per_s={api_append:.0} \
         inproc_append_events_per_s={inproc_append:.0} api_append_ratio={:.3} \
         api_healthz_rps={healthz_rps:.0}",
        api_p95 - in_p95,
        api_append / inproc_append
    );
}
