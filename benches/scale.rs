//! `cargo bench --bench scale`: search and ingest when one user's memory is large. One user
//! gets `NIGHTSHIFT_SCALE_CHUNKS` chunks (default 1,000,000) in one conversation, and 100
//! other users a fifth as many between them, with the hash embedder and the shipped search
//! defaults. Then, on that database:
//!
//! - hybrid searches of the big user (notes and that conversation): p50 and p95;
//! - the first search in a fresh handle on the same file (cold: its vectors and keyword
//!   index are loaded, as after a process start, though the OS's page cache stays warm),
//!   first from the vector and chunk rows, then from the stored blocks the embedder packs
//!   when idle;
//! - each leg's top 10 against exhaustive scoring, each leg on its own
//!   (`vector_recall_vs_exact`, `keyword_recall_vs_exact`): the vector leg's against a
//!   scan of every stored vector, the keyword leg's against plain bm25 over every chunk
//!   row, written apart from the index (tests/common/bm25_reference.rs); and how much of the fused top 10 stays when each leg hands every
//!   chunk to the fusion instead of `search.candidates`;
//! - appends from 16 callers, one event per call, into that database;
//! - the process's resident memory after the searches.
//!
//! Prints a table, then `name=value` pairs as its last line, the size in their names
//! (`_1m`, `_200k`). `NIGHTSHIFT_SCALE_CHUNKS=100000` gives a run of a few minutes; the
//! default takes long (the fill is most of it). `NIGHTSHIFT_SCALE_DB=PATH` keeps the
//! database at PATH and, when PATH already exists, searches it without filling it again
//! (for comparing changes to search; its ingest adds 4,000 events each run).

use std::time::{Duration, Instant};

use nightshift::app::App;
use nightshift::config::Config;
use nightshift::memory::{Memory, NewEvent, Role, SearchRequest, SessionKey};

mod common;
use common::{percentile, Language, Rng};

const OTHER_USERS: usize = 100;
const QUERIES: usize = 200;
const EXACT_QUERIES: usize = 20;
const APPENDERS: usize = 16;
const INGEST_EVENTS: usize = 4_000;
const FILL_BATCH: usize = 1_000;

/// How many chunks the big user gets: `NIGHTSHIFT_SCALE_CHUNKS`, or a million.
fn big_user_chunks() -> usize {
    std::env::var("NIGHTSHIFT_SCALE_CHUNKS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .filter(|n| *n >= FILL_BATCH)
        .unwrap_or(1_000_000)
}

/// `1m`, `200k`, `1500`: the size as the figures' names carry it.
fn size_label(n: usize) -> String {
    if n.is_multiple_of(1_000_000) {
        format!("{}m", n / 1_000_000)
    } else if n.is_multiple_of(1_000) {
        format!("{}k", n / 1_000)
    } else {
        n.to_string()
    }
}

async fn append_many(
    memory: &Memory,
    user: &str,
    session: &str,
    n: usize,
    rng: &mut Rng,
    lang: &Language,
) {
    let mut left = n;
    while left > 0 {
        let batch = left.min(FILL_BATCH);
        let events: Vec<NewEvent> = (0..batch)
            .map(|_| NewEvent::new(Role::User, lang.sentence(rng, 200)))
            .collect();
        memory.append(user, session, &events).await.expect("fill");
        left -= batch;
    }
}

/// Where the big user's conversation is stored.
fn big_chat() -> SessionKey {
    SessionKey::new("user-big", "user-big-chat")
}

fn request(query: &str) -> SearchRequest {
    SearchRequest {
        user_id: "user-big".into(),
        query: query.into(),
        top_k: Some(10),
        session_id: Some("user-big-chat".into()),
        ..Default::default()
    }
}

/// What a hit is: a note or an event, as an identity to compare result lists by.
fn identities(hits: &[nightshift::memory::SearchHit]) -> Vec<String> {
    hits.iter()
        .map(|h| match &h.note_id {
            Some(note) => note.clone(),
            None => format!(
                "{}#{}",
                h.session_id.as_deref().unwrap_or_default(),
                h.sequence.unwrap_or_default()
            ),
        })
        .collect()
}

/// The process's resident memory, in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A handle on the same database with its own (empty) vector cache and `candidates` per
/// leg.
async fn handle(app: &App, candidates: usize) -> Memory {
    let config = app.config();
    let mut search = config.search.clone();
    search.candidates = candidates;
    Memory::new(
        app.db().clone(),
        app.memory().embedder().clone(),
        config.memory.clone(),
        search,
    )
    .await
    .expect("memory handle")
}

#[tokio::main]
async fn main() {
    let big = big_user_chunks();
    let others = big / 5;
    let label = size_label(big);
    let dir = tempfile::TempDir::new().unwrap();
    let db_path = std::env::var_os("NIGHTSHIFT_SCALE_DB")
        .map_or_else(|| dir.path().join("scale.db"), std::path::PathBuf::from);
    let reused = db_path.exists();
    let mut config = Config::default();
    config.database.path = db_path.display().to_string();
    let app = App::open(&config).await.expect("open");
    let memory = app.memory().clone();
    let lang = Language::new();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);

    let start = Instant::now();
    if reused {
        eprintln!("searching {} as it is", db_path.display());
    } else {
        eprintln!("filling {big} chunks for one user and {others} for {OTHER_USERS} others…");
        append_many(&memory, "user-big", "user-big-chat", big, &mut rng, &lang).await;
        for u in 0..OTHER_USERS {
            let n = others / OTHER_USERS;
            append_many(
                &memory,
                &format!("user-{u}"),
                &format!("user-{u}-chat"),
                n,
                &mut rng,
                &lang,
            )
            .await;
        }
    }
    memory.embed_pending(&|_, _| {}).await.expect("embed");
    let fill_secs = start.elapsed().as_secs_f64();
    eprintln!("filled in {fill_secs:.0} s");

    let queries: Vec<String> = (0..=QUERIES).map(|_| lang.query(&mut rng)).collect();

    // Cold: a fresh handle's first search loads the user's vectors, first from the
    // vector rows alone, then (after the embedder's idle packing) from stored blocks.
    let unpacked = handle(&app, config.search.candidates).await;
    let start = Instant::now();
    unpacked
        .search_detailed(&request(&queries[0]))
        .await
        .expect("search");
    let cold_rows = start.elapsed();
    drop(unpacked);
    let start = Instant::now();
    // What the embedder does when idle, for the big user's conversation.
    let blocks = memory
        .pack_vectors(&big_chat())
        .await
        .expect("pack vectors")
        + memory
            .pack_keywords(&big_chat())
            .await
            .expect("pack keywords");
    let pack_secs = start.elapsed().as_secs_f64();
    let searcher = handle(&app, config.search.candidates).await;
    let start = Instant::now();
    searcher
        .search_detailed(&request(&queries[0]))
        .await
        .expect("search");
    let cold = start.elapsed();
    let from_blocks = searcher
        .cached_vectors(&big_chat())
        .map_or(0, |c| c.from_blocks);
    let keywords = searcher.cached_keywords(&big_chat());
    let keywords_from_blocks = keywords.map_or(0, |c| c.from_blocks);
    let keyword_mib = keywords.map_or(0.0, |c| c.bytes as f64 / (1024.0 * 1024.0));
    let mut times: Vec<Duration> = Vec::with_capacity(QUERIES);
    let mut shipped = Vec::with_capacity(QUERIES);
    for query in &queries[1..] {
        let start = Instant::now();
        let found = searcher
            .search_detailed(&request(query))
            .await
            .expect("search");
        times.push(start.elapsed());
        shipped.push(identities(&found.hits));
    }
    times.sort();
    let rss = rss_mib();

    // Exactness: each leg's top 10 against a reference that shares no code with it,
    // each leg on its own: the vector leg's against a scan of every stored vector, the
    // keyword leg's against plain bm25 over every chunk row (tests/common/bm25_reference.rs).
    // A query whose reference finds nothing says nothing about recall and is left out.
    eprintln!("checking {EXACT_QUERIES} queries against exhaustive scoring…");
    let mut vector = Recall::default();
    for query in queries[1..].iter().take(EXACT_QUERIES) {
        let exact = common::exact_vector_top(&memory, &big_chat(), query, 10).await;
        let leg: Vec<i64> = searcher
            .vector_leg(&big_chat(), query, 10)
            .await
            .expect("vector leg")
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        vector.add(&exact, &leg);
    }
    let reference = common::bm25_reference::Reference::new(
        &common::bm25_reference::chunks(memory.db(), big_chat().as_str()).await,
    );
    let mut keyword = Recall::default();
    for query in queries[1..].iter().take(EXACT_QUERIES) {
        let exact: Vec<i64> = reference
            .top(query, 10, config.search.context_weight)
            .unwrap_or_default()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let leg: Vec<i64> = searcher
            .keyword_leg(&big_chat(), query, 10)
            .await
            .expect("keyword leg")
            .unwrap_or_default()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        keyword.add(&exact, &leg);
    }
    drop(reference);
    let (vector_recall, keyword_recall) = (vector.value("vector"), keyword.value("keyword"));
    let deep = handle(&app, big * 2).await;
    let (mut same, mut total) = (0usize, 0usize);
    for (query, got) in queries[1..].iter().zip(&shipped).take(EXACT_QUERIES) {
        let all = deep
            .search_detailed(&request(query))
            .await
            .expect("deep search");
        let all = identities(&all.hits);
        total += all.len();
        same += all.iter().filter(|id| got.contains(id)).count();
    }
    let deep_overlap = if total == 0 {
        1.0
    } else {
        same as f64 / total as f64
    };
    drop(deep);

    // Ingest into the big database: 16 callers, one event per call.
    let texts: Vec<String> = (0..INGEST_EVENTS)
        .map(|_| lang.sentence(&mut rng, 200))
        .collect();
    let ingest_per_s = common::concurrent_appends(&memory, &texts, APPENDERS).await;
    let db_mib = std::fs::metadata(&db_path).map_or(0.0, |m| m.len() as f64 / (1024.0 * 1024.0));

    let (p50, p95) = (percentile(&times, 0.5), percentile(&times, 0.95));
    let cold_ms = cold.as_secs_f64() * 1e3;
    let cold_rows_ms = cold_rows.as_secs_f64() * 1e3;
    let rows = [
        (
            "chunks: big user / all",
            format!("{big} / {}", big + others),
            String::new(),
        ),
        (
            "fill (batches of 1,000) + embed",
            format!("{fill_secs:.0} s"),
            if reused {
                "reused NIGHTSHIFT_SCALE_DB".into()
            } else {
                format!("{:.0} events/s", (big + others) as f64 / fill_secs)
            },
        ),
        ("database file", format!("{db_mib:.0} MiB"), String::new()),
        (
            "search p50 / p95",
            format!("{p50:.2} / {p95:.2} ms"),
            "goal at 1m: ≤ 12 / ≤ 25 ms".into(),
        ),
        (
            "pack vectors and keywords into blocks",
            format!("{pack_secs:.1} s"),
            format!("{blocks} blocks; the embedder does it when idle"),
        ),
        (
            "first search of a fresh handle, rows",
            format!("{cold_rows_ms:.0} ms"),
            "its vectors and chunks read row by row".into(),
        ),
        (
            "first search of a fresh handle, blocks",
            format!("{cold_ms:.0} ms"),
            format!(
                "{from_blocks} vectors, {keywords_from_blocks} chunks from blocks; goal at 1m: ≤ 1,000 ms"
            ),
        ),
        (
            "vector leg's top 10 vs a scan of all",
            format!("{vector_recall:.3}"),
            format!("{} queries with hits; goal ≥ 0.99", vector.queries),
        ),
        (
            "keyword leg's top 10 vs plain bm25",
            format!("{keyword_recall:.3}"),
            format!("{} queries with hits; goal ≥ 0.99", keyword.queries),
        ),
        (
            "fused top 10 vs every chunk as candidate",
            format!("{deep_overlap:.3}"),
            format!(
                "candidates = {}: the fusion's depth",
                config.search.candidates
            ),
        ),
        (
            "append, 16 callers, 1 event per call",
            format!("{ingest_per_s:.0} events/s"),
            "goal ≥ 5,000".into(),
        ),
        (
            "resident memory after the searches",
            format!("{rss:.0} MiB"),
            format!(
                "vector_cache_mib = {}, keyword index {keyword_mib:.0} MiB",
                config.search.vector_cache_mib
            ),
        ),
    ];
    println!("{:<40} {:>22}  note", "measure", "value");
    println!("{}", "-".repeat(90));
    for (name, value, note) in rows {
        println!("{name:<40} {value:>22}  {note}");
    }
    println!(
        "search_p50_ms_{label}={p50:.2} search_p95_ms_{label}={p95:.2} search_cold_ms_{label}={cold_ms:.0} search_cold_rows_ms_{label}={cold_rows_ms:.0} \
         vector_recall_vs_exact_{label}={vector_recall:.3} keyword_recall_vs_exact_{label}={keyword_recall:.3} top10_vs_all_candidates_{label}={deep_overlap:.3} \
         ingest_events_per_s_{label}={ingest_per_s:.0} \
         rss_mib_{label}={rss:.0} fill_secs_{label}={fill_secs:.0}"
    );
}

/// One leg's recall against its reference, summed over the queries the reference has
/// hits for.
#[derive(Default)]
struct Recall {
    kept: usize,
    wanted: usize,
    queries: usize,
}

impl Recall {
    fn add(&mut self, exact: &[i64], leg: &[i64]) {
        if exact.is_empty() {
            return;
        }
        self.queries += 1;
        self.wanted += exact.len();
        self.kept += exact.iter().filter(|id| leg.contains(id)).count();
    }

    /// The share kept; a measurement with no query to measure stops the bench.
    fn value(&self, leg: &str) -> f64 {
        assert!(
            self.wanted > 0,
            "no query had a hit in the {leg} leg's reference: its recall would say nothing"
        );
        self.kept as f64 / self.wanted as f64
    }
}
