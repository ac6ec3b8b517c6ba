//! `cargo bench --bench notify`: delivery throughput of the outbox sender to a webhook on
//! 127.0.0.1, and enqueue → delivered latency with a healthy channel. Prints a table, then
//! `name=value` pairs as its last line.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::post;
use axum::Router;
use nightshift::app::open_memory;
use nightshift::config::{ChannelConfig, ChannelKind, Config};
use nightshift::notify::channels::Channels;
use nightshift::notify::outbox::{enqueue_in, NewMessage, NotifyPlan, Outbox, Priority};
use nightshift::notify::sender::Sender;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const BULK: usize = 2_000;
const LATENCY_SAMPLES: usize = 300;

async fn webhook() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().route("/hook", post(|| async { "ok" }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/hook")
}

async fn enqueue(memory: &nightshift::memory::Memory, plan: &NotifyPlan, i: usize) {
    let conn = memory.db().conn().await.unwrap();
    let run_id = format!("run-{i}");
    let payload = serde_json::json!({"event": "run.finished", "summary": format!("run {i} done"), "output": "ok"});
    let message = NewMessage {
        kind: "run",
        run_id: Some(&run_id),
        schedule_id: Some("sch-bench"),
        user_id: "u",
        priority: Priority::Normal,
        payload,
    };
    let tx = conn.write_tx().await.unwrap();
    enqueue_in(&tx, plan, message, memory.clock().now_ms())
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

async fn pending(db: &nightshift::db::Db) -> i64 {
    let conn = db.conn().await.unwrap();
    nightshift::db::query_scalar(
        &conn,
        "SELECT count(*) FROM outbox WHERE status = 'pending'",
        (),
    )
    .await
    .unwrap()
    .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = Config::default();
    config.database.path = dir.path().join("bench.db").display().to_string();
    let url = webhook().await;
    let mut channels = BTreeMap::new();
    channels.insert(
        "hook".to_string(),
        ChannelConfig {
            url: Some(url),
            ..ChannelConfig::new(ChannelKind::Webhook)
        },
    );
    let memory = open_memory(&config).await.unwrap();
    let outbox = Outbox::new(memory.db().clone());
    let plan = NotifyPlan {
        channel_id: "hook".into(),
        channel_context_id: None,
        marker: "[NOTIFY]".into(),
        failure_notice_after: 3,
        max_message_chars: 3500,
        public_url: None,
        ttl_ms: [86_400_000; 3],
        max_pending_per_channel: config.notify.max_pending_per_channel,
        digest_at: nightshift::time_of_day::DailyTime::MORNING_UTC,
    };
    let wake = Arc::new(Notify::new());
    let sender = Sender {
        outbox: outbox.clone(),
        channels: Channels::from_config(&channels, Duration::from_secs(5)).unwrap(),
        config: config.notify.clone(),
        owner: "bench".into(),
        clock: memory.clock().clone(),
        wake: wake.clone(),
        changes: None,
        quiet: Default::default(),
        digests: None,
    };

    // Throughput: a backlog drained by the sender loop.
    for i in 0..BULK {
        enqueue(&memory, &plan, i).await;
    }
    let stop = CancellationToken::new();
    let task = {
        let (sender, stop) = (sender.clone(), stop.clone());
        tokio::spawn(async move { sender.run(stop, Duration::from_millis(500)).await })
    };
    let started = Instant::now();
    while pending(memory.db()).await > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let per_s = BULK as f64 / started.elapsed().as_secs_f64();

    // Latency: one message at a time, as runs finish, each waking the sender.
    for i in 0..LATENCY_SAMPLES {
        enqueue(&memory, &plan, BULK + i).await;
        wake.notify_one();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    while pending(memory.db()).await > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.cancel();
    task.await.unwrap();
    let mut latencies: Vec<i64> = outbox
        .list(Some("delivered"), 1_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| {
            m.run_id
                .as_deref()
                .and_then(|r| r.strip_prefix("run-"))
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n >= BULK)
        })
        .map(|m| m.delivered_at.unwrap() - m.created_at)
        .collect();
    latencies.sort_unstable();
    let p = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];

    println!("{:<46} {:>14}  note", "measure", "value");
    println!("{}", "-".repeat(80));
    println!(
        "{:<46} {:>14}  goal ≥ 500",
        "deliveries per second (backlog of 2,000)",
        format!("{per_s:.0}")
    );
    println!(
        "{:<46} {:>14}",
        "enqueue → delivered p50",
        format!("{} ms", p(0.5))
    );
    println!(
        "{:<46} {:>14}  goal ≤ 100",
        "enqueue → delivered p99",
        format!("{} ms", p(0.99))
    );
    println!(
        "deliveries_per_s={per_s:.0} enqueue_to_delivered_p50_ms={} enqueue_to_delivered_p99_ms={}",
        p(0.5),
        p(0.99)
    );
}
