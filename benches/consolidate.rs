//! `cargo bench --bench consolidate`: the extractive consolidation passes (summaries and
//! facts) over 1,000 sessions × 200 events, and context assembly for a user holding
//! 50,000 chunks. Prints a table, then `name=value` pairs as its last line.

use std::time::Instant;

use nightshift::app::open_memory;
use nightshift::config::Config;
use nightshift::consolidate::Pass;
use nightshift::memory::{ContextRequest, NewEvent, Role, Strategy};

mod common;
use common::{percentile, Language, Rng};

const SESSIONS: usize = 1_000;
const EVENTS_PER_SESSION: usize = 200;
const BIG_USER_CHUNKS: usize = 50_000;
const CONTEXT_SAMPLES: usize = 100;

const SENTENCES: &[&str] = &[
    "Can you check whether the staging deploy finished before lunch",
    "The report shows three failing checks in the billing service",
    "I prefer short summaries with the numbers first",
    "Let us move the review to Thursday afternoon",
    "I usually read the digest on the train in the morning",
    "The customer asked for an invoice in euros instead of dollars",
    "We decided to use the smaller instance type for the workers",
    "Here is the log excerpt from the last failed run",
];

fn event(i: usize) -> NewEvent {
    let role = if i.is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    };
    let text = format!(
        "{}. {}. Ticket {i}.",
        SENTENCES[i % SENTENCES.len()],
        SENTENCES[(i * 7 + 3) % SENTENCES.len()]
    );
    NewEvent::new(role, text)
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = Config::default();
    config.database.path = dir.path().join("bench.db").display().to_string();
    let memory = open_memory(&config).await.unwrap();

    eprintln!("writing {SESSIONS} sessions × {EVENTS_PER_SESSION} events…");
    for s in 0..SESSIONS {
        let events: Vec<NewEvent> = (0..EVENTS_PER_SESSION).map(|i| event(s * 31 + i)).collect();
        memory
            .append(
                &format!("user-{}", s % 100),
                &format!("session-{s}"),
                &events,
            )
            .await
            .unwrap();
    }
    let total_events = SESSIONS * EVENTS_PER_SESSION;
    let consolidator = nightshift::app::App::open(&config)
        .await
        .unwrap()
        .consolidator(None);

    let started = Instant::now();
    let reports = consolidator
        .run(&[Pass::Summaries, Pass::Facts], None, None)
        .await
        .unwrap();
    let elapsed = started.elapsed().as_secs_f64();
    let events_per_s = total_events as f64 / elapsed;
    for r in &reports {
        assert_eq!(r.status, "succeeded", "{r:?}");
    }

    eprintln!("writing {BIG_USER_CHUNKS} chunks for one user…");
    let lang = Language::new();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for _ in 0..(BIG_USER_CHUNKS / 1_000) {
        let events: Vec<NewEvent> = (0..1_000)
            .map(|i: usize| {
                NewEvent::new(
                    if i.is_multiple_of(2) {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    lang.sentence(&mut rng, 200),
                )
            })
            .collect();
        memory.append("big", "big-chat", &events).await.unwrap();
    }
    memory.embed_pending(&|_, _| {}).await.unwrap();
    let mut samples = Vec::with_capacity(CONTEXT_SAMPLES);
    for i in 0..=CONTEXT_SAMPLES {
        let request = ContextRequest {
            user_id: "big".into(),
            session_id: "big-chat".into(),
            budget_tokens: Some(2000),
            query: Some(if i.is_multiple_of(2) {
                lang.query(&mut rng)
            } else {
                SENTENCES[i % SENTENCES.len()].to_string()
            }),
            strategy: Strategy::All,
        };
        let start = Instant::now();
        let context = memory.context(&request).await.unwrap();
        assert!(context.used_tokens <= 2000);
        // The first one loads the user's vectors; it is reported on its own.
        samples.push(start.elapsed());
    }
    let cold = samples.remove(0);
    samples.sort();

    println!("{:<50} {:>14}  note", "measure", "value");
    println!("{}", "-".repeat(86));
    println!(
        "{:<50} {:>14}",
        "events consolidated (summaries + facts)", total_events
    );
    println!(
        "{:<50} {:>14}  {:.1} s",
        "extractive passes, events per second",
        format!("{events_per_s:.0}"),
        elapsed
    );
    for r in &reports {
        let secs = (r.finished_at.unwrap_or(r.started_at) - r.started_at) as f64 / 1000.0;
        println!(
            "{:<50} {:>14}  {}",
            format!("  {} pass", r.pass),
            format!("{secs:.1} s"),
            r.counts
        );
    }
    println!(
        "{:<50} {:>14}",
        "context, 50k-chunk user, first (cold)",
        format!("{:.2} ms", cold.as_secs_f64() * 1e3)
    );
    println!(
        "{:<50} {:>14}",
        "context, 50k-chunk user, p50",
        format!("{:.2} ms", percentile(&samples, 0.5))
    );
    println!(
        "{:<50} {:>14}  goal ≤ 20 ms",
        "context, 50k-chunk user, p95",
        format!("{:.2} ms", percentile(&samples, 0.95))
    );
    println!(
        "consolidate_events_per_s={events_per_s:.0} context_p50_ms={:.2} context_p95_ms={:.2} context_cold_ms={:.2}",
        percentile(&samples, 0.5),
        percentile(&samples, 0.95),
        cold.as_secs_f64() * 1e3
    );
}
