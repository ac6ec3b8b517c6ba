//! `cargo bench --bench mcp`: `memory_search` through the MCP server, side by side with the
//! REST call for the same query in the same run. Over streamable HTTP (rmcp's client, one
//! session) for a user of 1,000 chunks and one of 50,000, each query sent to `/mcp` and to
//! `/v1/search` in turn; then over stdio, `nightshift mcp` as a child process, calls a
//! second for the 1,000-chunk user, one at a time and 16 in flight. Prints a table, then
//! `name=value` pairs as its last line.

use std::time::{Duration, Instant};

use nightshift::app::App;
use nightshift::config::Config;
use nightshift::memory::{NewEvent, Role};
use nightshift::tokens::NewToken;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

mod common;
use common::{percentile, Language, Rng};

const SMALL_CHUNKS: usize = 1_000;
const BIG_CHUNKS: usize = 50_000;
const QUERIES: usize = 300;
const STDIO_CALLS: usize = 1_000;
const IN_FLIGHT: usize = 16;

type Client = RunningService<RoleClient, ()>;

async fn fill(app: &App, user: &str, chunks: usize, lang: &Language, rng: &mut Rng) {
    let mut left = chunks;
    while left > 0 {
        let batch = left.min(1_000);
        let events: Vec<NewEvent> = (0..batch)
            .map(|_| NewEvent::new(Role::User, lang.sentence(rng, 200)))
            .collect();
        app.memory()
            .append(user, &format!("{user}-chat"), &events)
            .await
            .unwrap();
        left -= batch;
    }
}

async fn token(app: &App, user: &str) -> String {
    app.tokens()
        .create(&NewToken {
            user_id: Some(user.into()),
            name: None,
            expires_in_secs: None,
        })
        .await
        .unwrap()
        .secret
}

async fn mcp_search(client: &Client, user: &str, query: &str) -> Duration {
    let Value::Object(arguments) =
        json!({"query": query, "top_k": 10, "session": format!("{user}-chat")})
    else {
        unreachable!()
    };
    let start = Instant::now();
    let result = client
        .call_tool(CallToolRequestParams::new("memory_search").with_arguments(arguments))
        .await
        .unwrap();
    let took = start.elapsed();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    took
}

/// `QUERIES` searches of `user`'s memory over MCP and over REST, interleaved.
async fn side_by_side(
    mcp: &Client,
    rest: &reqwest::Client,
    base: &str,
    token: &str,
    user: &str,
    queries: &[String],
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut over_mcp, mut over_rest) = (Vec::new(), Vec::new());
    mcp_search(mcp, user, &queries[0]).await;
    for query in queries {
        over_mcp.push(mcp_search(mcp, user, query).await);
        let start = Instant::now();
        let response = rest
            .post(format!("{base}/v1/search"))
            .bearer_auth(token)
            .json(&json!({"query": query, "top_k": 10, "session": format!("{user}-chat")}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let _body = response.bytes().await.unwrap();
        over_rest.push(start.elapsed());
    }
    over_mcp.sort();
    over_rest.sort();
    (over_mcp, over_rest)
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = Config::default();
    config.database.path = dir.path().join("bench.db").display().to_string();
    config.server.listen = "127.0.0.1:0".into();
    config.server.rate_per_token = 100_000.0;
    config.server.rate_burst = 1_000_000;
    let app = App::open(&config).await.unwrap();
    let lang = Language::new();
    let mut rng = Rng(0x3c9);
    eprintln!("filling users of {SMALL_CHUNKS} and {BIG_CHUNKS} chunks…");
    fill(&app, "user-small", SMALL_CHUNKS, &lang, &mut rng).await;
    fill(&app, "user-big", BIG_CHUNKS, &lang, &mut rng).await;
    app.memory().embed_pending(&|_, _| {}).await.unwrap();
    let small_token = token(&app, "user-small").await;
    let big_token = token(&app, "user-big").await;

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
    let connect = |token: &str| {
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
            .auth_header(token.to_string());
        ().serve(StreamableHttpClientTransport::from_config(config))
    };
    let small_mcp = connect(&small_token).await.unwrap();
    let big_mcp = connect(&big_token).await.unwrap();
    let rest = reqwest::Client::new();
    let queries: Vec<String> = (0..QUERIES).map(|_| lang.query(&mut rng)).collect();
    let (small_over_mcp, small_over_rest) = side_by_side(
        &small_mcp,
        &rest,
        &base,
        &small_token,
        "user-small",
        &queries,
    )
    .await;
    let (big_over_mcp, big_over_rest) =
        side_by_side(&big_mcp, &rest, &base, &big_token, "user-big", &queries).await;
    small_mcp.cancel().await.unwrap();
    big_mcp.cancel().await.unwrap();
    stop.cancel();
    server.await.unwrap();

    // Stdio: the binary as an agent would spawn it, on the same database.
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nightshift"));
    command
        .args(["mcp", "--user", "user-small"])
        .env("NIGHTSHIFT_DB", &config.database.path)
        .env_remove("NIGHTSHIFT_CONFIG");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdio: Client = ().serve(transport).await.unwrap();
    mcp_search(&stdio, "user-small", &queries[0]).await;
    let start = Instant::now();
    for i in 0..STDIO_CALLS {
        mcp_search(&stdio, "user-small", &queries[i % QUERIES]).await;
    }
    let stdio_serial = STDIO_CALLS as f64 / start.elapsed().as_secs_f64();
    let start = Instant::now();
    let stdio = std::sync::Arc::new(stdio);
    let mut tasks = Vec::new();
    for lane in 0..IN_FLIGHT {
        let (stdio, queries) = (stdio.clone(), queries.clone());
        tasks.push(tokio::spawn(async move {
            for i in (lane..STDIO_CALLS).step_by(IN_FLIGHT) {
                mcp_search(&stdio, "user-small", &queries[i % QUERIES]).await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let stdio_parallel = STDIO_CALLS as f64 / start.elapsed().as_secs_f64();

    let ms = |d: &[Duration], p: f64| percentile(d, p);
    let small_p50 = ms(&small_over_mcp, 0.5);
    let big_p95 = ms(&big_over_mcp, 0.95);
    let overhead_1k = ms(&small_over_mcp, 0.95) - ms(&small_over_rest, 0.95);
    let overhead_50k = big_p95 - ms(&big_over_rest, 0.95);
    println!("| memory_search | over MCP (streamable HTTP) | over REST | MCP − REST |");
    println!("|---|---|---|---|");
    for (label, over_mcp, over_rest) in [
        (
            "p50, user of 1k chunks",
            &small_over_mcp,
            &small_over_rest,
            0.5,
        ),
        (
            "p95, user of 1k chunks",
            &small_over_mcp,
            &small_over_rest,
            0.95,
        ),
        (
            "p50, user of 50k chunks",
            &big_over_mcp,
            &big_over_rest,
            0.5,
        ),
        (
            "p95, user of 50k chunks",
            &big_over_mcp,
            &big_over_rest,
            0.95,
        ),
    ]
    .map(|(l, m, r, p)| (l, ms(m, p), ms(r, p)))
    {
        println!(
            "| {label} | {over_mcp:.2} ms | {over_rest:.2} ms | {:+.2} ms |",
            over_mcp - over_rest
        );
    }
    println!("| stdio, 1k chunks, one call at a time | {stdio_serial:.0} calls/s | | |");
    println!("| stdio, 1k chunks, {IN_FLIGHT} calls in flight | {stdio_parallel:.0} calls/s | | |");
    println!(
        "mcp_search_p50_ms_1k={small_p50:.3} mcp_search_p95_ms_50k={big_p95:.3} \
         mcp_overhead_p95_ms={overhead_50k:.3} mcp_overhead_p95_ms_1k={overhead_1k:.3} \
         mcp_stdio_calls_per_s={stdio_serial:.0} mcp_stdio_calls_per_s_parallel={stdio_parallel:.0}"
    );
}
