//! `cargo bench --bench embed`: the semantic model's throughput alone, and the same
//! conversation turns appended one by one and embedded through the background queue until
//! nothing is pending. Prints a table, then `name=value` pairs as its last line.
//!
//! Needs the model from `scripts/fetch-model.sh`. The turns are the first 1,000 of the
//! LoCoMo dev set in `../shared/eval` when it is there (read, never copied), otherwise
//! generated text of the same length.
//!
//! The queue embeds each conversation chunk with its context (the end of the turn before
//! it), so it feeds the model longer texts than the bare turns. `raw_context_texts_per_s`
//! measures the model alone on exactly those inputs: `pipeline_ratio` compares like with
//! like and so shows what the queue itself costs; `pipeline_ratio_bare` also includes the
//! price of the context.
//!
//! Last, search's second stage (`search.rerank = "late-interaction"`): a user with 50,000
//! chunks (hash vectors, so filling is quick; the stage's cost does not depend on the
//! vectors), the same queries timed with the fusion alone and with the stage, whose
//! candidates are mostly new to its cache as a stream of unrelated questions makes them
//! (`rerank_search_p95_ms_50k`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nightshift::app::open_memory;
use nightshift::config::{Config, EmbeddingBackend, RerankMode};
use nightshift::embed::{Embedder, SemanticEmbedder};
use nightshift::memory::{NewEvent, Role, SearchRequest, CONTEXT_CHARS};
use nightshift::text::tail_chars;

mod common;
use common::{percentile, Language, Rng};

const TURNS: usize = 1_000;
/// The big user's chunks and the searches timed on it.
const BIG_USER_CHUNKS: usize = 50_000;
const RERANK_QUERIES: usize = 100;

fn turns() -> (Vec<String>, &'static str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/locomo-dev.json");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let data: serde_json::Value = serde_json::from_str(&text).expect("valid LoCoMo JSON");
        let mut out = Vec::new();
        for sample in data.as_array().into_iter().flatten() {
            let conversation = &sample["conversation"];
            for number in 1.. {
                let Some(session) = conversation[format!("session_{number}")].as_array() else {
                    break;
                };
                for turn in session {
                    if let (Some(speaker), Some(text)) =
                        (turn["speaker"].as_str(), turn["text"].as_str())
                    {
                        out.push(format!("{speaker}: {text}"));
                    }
                }
            }
        }
        if out.len() >= TURNS {
            out.truncate(TURNS);
            return (out, "LoCoMo dev set turns");
        }
    }
    let lang = Language::new();
    let mut rng = Rng(0x5DEE_CE66_D1CE_5EED);
    (
        (0..TURNS).map(|_| lang.sentence(&mut rng, 120)).collect(),
        "generated text (../shared/eval not found)",
    )
}

fn rate(embedder: &SemanticEmbedder, texts: &[String], batch: usize) -> f64 {
    let start = Instant::now();
    for chunk in texts.chunks(batch) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        embedder.embed(&refs).expect("embed");
    }
    texts.len() as f64 / start.elapsed().as_secs_f64()
}

/// Sorted search times (ms) of `queries` on `memory`, after one untimed warm-up search.
async fn search_times(memory: &nightshift::memory::Memory, queries: &[String]) -> Vec<Duration> {
    let request = |query: &str| SearchRequest {
        user_id: "big".into(),
        query: query.into(),
        top_k: Some(10),
        session_id: Some("big-chat".into()),
        ..Default::default()
    };
    let warm = memory
        .search_detailed(&request("warm up"))
        .await
        .expect("search");
    assert!(warm.degraded.is_none(), "{:?}", warm.degraded);
    let mut times = Vec::with_capacity(queries.len());
    for query in queries {
        let start = Instant::now();
        let results = memory
            .search_detailed(&request(query))
            .await
            .expect("search");
        times.push(start.elapsed());
        assert!(results.degraded.is_none(), "{:?}", results.degraded);
    }
    times.sort();
    times
}

/// Search latency of a 50,000-chunk user with the fusion alone and with the second stage:
/// (fusion p50, fusion p95, rerank p50, rerank p95) in ms.
async fn rerank_latency(config: &Config) -> (f64, f64, f64, f64) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = config.clone();
    config.database.path = dir.path().join("rerank.db").display().to_string();
    config.embedding.backend = EmbeddingBackend::Hash;
    config.search.rerank = RerankMode::LateInteraction;
    let memory = open_memory(&config).await.expect("open");
    let lang = Language::new();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    eprintln!("filling a {BIG_USER_CHUNKS}-chunk user for the second stage…");
    for _ in 0..BIG_USER_CHUNKS / 1_000 {
        let events: Vec<NewEvent> = (0..1_000)
            .map(|_| NewEvent::new(Role::User, lang.sentence(&mut rng, 120)))
            .collect();
        memory
            .append("big", "big-chat", &events)
            .await
            .expect("fill");
    }
    memory.embed_pending(&|_, _| {}).await.expect("embed");
    let queries: Vec<String> = (0..RERANK_QUERIES).map(|_| lang.query(&mut rng)).collect();
    let mut fusion_config = config.search.clone();
    fusion_config.rerank = RerankMode::None;
    let fusion = memory.clone().with_search_config(fusion_config);
    let fused = search_times(&fusion, &queries).await;
    let reranked = search_times(&memory, &queries).await;
    (
        percentile(&fused, 0.5),
        percentile(&fused, 0.95),
        percentile(&reranked, 0.5),
        percentile(&reranked, 0.95),
    )
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = Config::default();
    config.database.path = dir.path().join("bench.db").display().to_string();
    config.embedding.backend = EmbeddingBackend::Fastembed;
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    config.embedding.model_dir = models.join("all-MiniLM-L6-v2-int8");
    config.embedding.onnxruntime = models.join("onnxruntime/libonnxruntime.so.1.31.1");
    let batch = config.embedding.batch_size;

    let embedder = match SemanticEmbedder::load(&config.embedding) {
        Ok(embedder) => Arc::new(embedder),
        Err(err) => {
            eprintln!("{err}\nrun scripts/fetch-model.sh first");
            std::process::exit(1);
        }
    };
    let (turns, source) = turns();
    // What the queue feeds the model: the previous turn's end, then the turn.
    let contextual: Vec<String> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| match i.checked_sub(1) {
            Some(prev) => format!("{}\n{t}", tail_chars(&turns[prev], CONTEXT_CHARS)),
            None => t.clone(),
        })
        .collect();
    eprintln!("{TURNS} turns from {source}; warming up…");
    rate(&embedder, &turns[..64], batch);

    let raw_a = rate(&embedder, &turns, batch);
    let context_a = rate(&embedder, &contextual, batch);

    // The pipeline: one append per turn, as a live conversation writes them, with the
    // background embedder running; done when nothing is pending.
    let memory = open_memory(&config).await.expect("open");
    let stop = tokio_util::sync::CancellationToken::new();
    let start = Instant::now();
    let task = memory.spawn_embedder(stop.clone());
    let mut append_latencies = Vec::with_capacity(TURNS);
    for turn in &turns {
        let t = Instant::now();
        memory
            .append("bench", "chat", &[NewEvent::new(Role::User, turn.clone())])
            .await
            .expect("append");
        append_latencies.push(t.elapsed());
    }
    let appended = start.elapsed();
    loop {
        if memory.embedding_status().await.expect("status").pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let pipeline_secs = start.elapsed().as_secs_f64();
    stop.cancel();
    task.await.unwrap();
    let vectors: i64 = nightshift::db::query_scalar(
        &memory.db().conn().await.unwrap(),
        "SELECT count(*) FROM chunk_vectors",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(vectors as usize, TURNS, "every turn has its vector");
    drop(memory);

    // The model alone again, so drift over the run shows and is averaged out.
    let raw_b = rate(&embedder, &turns, batch);
    let context_b = rate(&embedder, &contextual, batch);
    let raw = (raw_a + raw_b) / 2.0;
    let raw_context = (context_a + context_b) / 2.0;
    let pipeline = TURNS as f64 / pipeline_secs;
    append_latencies.sort();

    println!("embedding throughput, {TURNS} conversation turns, batch {batch}, 2 cores");
    println!("{:<52} {:>12}", "measure", "value");
    println!(
        "{:<52} {:>12.1}",
        "model alone, bare turns (texts/s; before, after)", raw
    );
    println!("{:<52} {:>12}", "", format!("{raw_a:.1}, {raw_b:.1}"));
    println!(
        "{:<52} {:>12.1}",
        "model alone, turns with context (texts/s)", raw_context
    );
    println!(
        "{:<52} {:>12}",
        "",
        format!("{context_a:.1}, {context_b:.1}")
    );
    println!(
        "{:<52} {:>12.1}",
        "pipeline: append + queue until none pending (texts/s)", pipeline
    );
    println!(
        "{:<52} {:>12.2}",
        "all 1,000 appends committed after (s)",
        appended.as_secs_f64()
    );
    println!(
        "{:<52} {:>12.2}",
        "append latency p50 (ms)",
        percentile(&append_latencies, 0.5)
    );
    println!(
        "{:<52} {:>12.2}",
        "append latency p99 (ms)",
        percentile(&append_latencies, 0.99)
    );
    println!(
        "{:<52} {:>12.2}",
        "model time per text, inline embedding would add (ms)",
        1000.0 / raw_context
    );
    println!(
        "{:<52} {:>12.3}",
        "pipeline / model on the same inputs",
        pipeline / raw_context
    );
    println!(
        "{:<52} {:>12.3}",
        "pipeline / model on bare turns",
        pipeline / raw
    );
    let (fusion_p50, fusion_p95, rerank_p50, rerank_p95) = rerank_latency(&config).await;
    let label = format!(
        "search of a {BIG_USER_CHUNKS}-chunk user, {} candidates reranked",
        config.search.rerank_candidates
    );
    println!("{label}");
    println!(
        "{:<52} {:>12}",
        "fusion alone p50 / p95 (ms)",
        format!("{fusion_p50:.2} / {fusion_p95:.2}")
    );
    println!(
        "{:<52} {:>12}",
        "with the late-interaction stage p50 / p95 (ms)",
        format!("{rerank_p50:.2} / {rerank_p95:.2}")
    );
    println!(
        "raw_texts_per_s={raw:.1} raw_context_texts_per_s={raw_context:.1} pipeline_texts_per_s={pipeline:.1} pipeline_ratio={:.3} pipeline_ratio_bare={:.3} append_p99_ms={:.2} fusion_search_p95_ms_50k={fusion_p95:.2} rerank_search_p50_ms_50k={rerank_p50:.2} rerank_search_p95_ms_50k={rerank_p95:.2}",
        pipeline / raw_context,
        pipeline / raw,
        percentile(&append_latencies, 0.99)
    );
}
