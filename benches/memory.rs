//! `cargo bench --bench memory`: ingest and hybrid-search speed of the memory core with the
//! hash embedder, on a database already holding 100,000 chunks of about 200 characters
//! spread over 100 users. Prints a table, then `name=value` pairs as its last line.
//!
//! The 50,000-chunk user also gets notes, each saved then updated once (two versions
//! each), before its searches are timed; then the same queries are timed as of a moment
//! between the saves and the updates, and the user is exported to an archive and imported
//! into an empty database.
//!
//! Every rate is measured in this run, side by side: absolute numbers drift with the
//! machine, ratios much less.

use std::time::{Duration, Instant};

use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::config::Config;
use nightshift::embed::blob_to_vectors;
use nightshift::memory::{
    Memory, NewEvent, NewNote, Role, SearchRequest, SessionKey, VectorMatrix,
};
use nightshift::portable::{ExportScope, ImportRequest, Portable};

mod common;
use common::{percentile, Language, Rng};

const TOTAL_CHUNKS: usize = 100_000;
const BIG_USER_CHUNKS: usize = 50_000;
const SMALL_USER_CHUNKS: usize = 1_000;
const USERS: usize = 100;
const INGEST_EVENTS: usize = 2_000;
const QUERIES: usize = 200;
const APPENDERS: usize = 16;
/// Notes of the 50,000-chunk user, each saved then updated once.
const BIG_USER_NOTES: usize = 2_000;

async fn fill(memory: &Memory, rng: &mut Rng, lang: &Language) {
    let mut plan: Vec<(String, usize)> = vec![
        ("user-big".into(), BIG_USER_CHUNKS),
        ("user-small".into(), SMALL_USER_CHUNKS),
    ];
    let rest = (TOTAL_CHUNKS - BIG_USER_CHUNKS - SMALL_USER_CHUNKS) / (USERS - 2);
    for u in 0..USERS - 2 {
        plan.push((format!("user-{u}"), rest));
    }
    for (user, chunks) in plan {
        let session = format!("{user}-chat");
        let mut left = chunks;
        while left > 0 {
            let batch = left.min(1_000);
            let events: Vec<NewEvent> = (0..batch)
                .map(|_| NewEvent::new(Role::User, lang.sentence(rng, 200)))
                .collect();
            memory.append(&user, &session, &events).await.expect("fill");
            left -= batch;
        }
    }
}

/// `QUERIES` + 1 queries: the first is the cold one.
fn queries(rng: &mut Rng, lang: &Language) -> Vec<String> {
    (0..=QUERIES).map(|_| lang.query(rng)).collect()
}

/// The hybrid search of the user's notes and conversation.
fn plain_request(user: &str, query: &str) -> SearchRequest {
    SearchRequest {
        user_id: user.into(),
        query: query.into(),
        top_k: Some(10),
        session_id: Some(format!("{user}-chat")),
        tags: Vec::new(),
        ..Default::default()
    }
}

/// The time of the first request (cold), the sorted times of the others, and every hit's
/// `at` (UTC ms) of those others.
async fn time_requests(
    memory: &Memory,
    requests: &[SearchRequest],
) -> (Duration, Vec<Duration>, Vec<i64>) {
    let start = Instant::now();
    memory.search_detailed(&requests[0]).await.expect("search");
    let cold = start.elapsed();
    let mut times = Vec::with_capacity(requests.len() - 1);
    let mut hits_at = Vec::new();
    for request in &requests[1..] {
        let start = Instant::now();
        let results = memory.search_detailed(request).await.expect("search");
        times.push(start.elapsed());
        hits_at.extend(results.hits.iter().map(|h| h.at));
    }
    times.sort();
    (cold, times, hits_at)
}

async fn search_latencies(
    memory: &Memory,
    user: &str,
    rng: &mut Rng,
    lang: &Language,
) -> (Duration, Vec<Duration>) {
    let requests: Vec<SearchRequest> = queries(rng, lang)
        .iter()
        .map(|q| plain_request(user, q))
        .collect();
    let (cold, times, hits_at) = time_requests(memory, &requests).await;
    assert!(hits_at.len() >= QUERIES, "a search found nothing");
    (cold, times)
}

/// Saves `BIG_USER_NOTES` notes for `user`, then updates each once; returns the saves
/// per second, the instant between the saves and the updates, and the updates per second.
async fn notes_with_versions(
    memory: &Memory,
    user: &str,
    rng: &mut Rng,
    lang: &Language,
) -> (f64, i64, f64) {
    let start = Instant::now();
    let mut ids = Vec::with_capacity(BIG_USER_NOTES);
    for _ in 0..BIG_USER_NOTES {
        let note = NewNote::new(lang.sentence(rng, 200));
        ids.push(memory.save_note(user, &note).await.expect("save").note_id);
    }
    let save_per_s = BIG_USER_NOTES as f64 / start.elapsed().as_secs_f64();
    // Versions are stamped in milliseconds: keep the instant strictly between the two.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let between = memory.clock().now_ms();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let start = Instant::now();
    for id in &ids {
        memory
            .update_note(user, id, &lang.sentence(rng, 200), None)
            .await
            .expect("update");
    }
    let update_per_s = BIG_USER_NOTES as f64 / start.elapsed().as_secs_f64();
    let versions: i64 = nightshift::db::query_scalar(
        &memory.db().conn().await.unwrap(),
        "SELECT count(*) FROM note_versions WHERE user_id = ?1",
        [user],
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(versions, 2 * BIG_USER_NOTES as i64, "two versions per note");
    (save_per_s, between, update_per_s)
}

fn portable(app: &App) -> Portable {
    app.portable()
}

async fn open_in(dir: &tempfile::TempDir, file: &str) -> App {
    let mut config = Config::default();
    config.database.path = dir.path().join(file).display().to_string();
    App::open(&config).await.expect("open")
}

/// Where the big user's conversation is stored.
fn big_chat() -> SessionKey {
    SessionKey::new("user-big", "user-big-chat")
}

/// The session's stored vectors as the vector leg holds them in memory.
async fn load_matrix(memory: &Memory, session: &SessionKey) -> VectorMatrix {
    let conn = memory.db().conn().await.unwrap();
    let mut rows = conn
        .query(
            "SELECT chunk_id, embedding FROM chunk_vectors WHERE session_id = ?1
             ORDER BY vector_id",
            [session.as_str()],
        )
        .await
        .unwrap();
    let mut matrix = None;
    while let Some(row) = rows.next().await.unwrap() {
        // A chunk's own vector and its sentences' are rows of the same chunk.
        let dimensions = memory.embedder().dimensions();
        let chunk_id = row.get(0).unwrap();
        for v in blob_to_vectors(&row.get::<Vec<u8>>(1).unwrap(), dimensions).unwrap() {
            matrix
                .get_or_insert_with(|| VectorMatrix::new(dimensions))
                .push(chunk_id, &v);
        }
    }
    matrix.expect("the session has vectors")
}

/// Times of the vector scan for `k` candidates, two-pass and exact, on the same queries;
/// panics if they ever disagree.
fn scan_times(
    matrix: &VectorMatrix,
    memory: &Memory,
    rng: &mut Rng,
    lang: &Language,
    k: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut two_pass, mut exact) = (Vec::new(), Vec::new());
    for _ in 0..QUERIES {
        let q = memory
            .embedder()
            .embed(&[&lang.query(rng)])
            .unwrap()
            .pop()
            .unwrap();
        let start = Instant::now();
        let fast = matrix.top_k(&q, k);
        two_pass.push(start.elapsed());
        let start = Instant::now();
        let slow = matrix.exact_top_k(&q, k);
        exact.push(start.elapsed());
        assert_eq!(fast, slow, "the two-pass scan disagrees with the exact one");
    }
    two_pass.sort();
    exact.sort();
    (two_pass, exact)
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let app = open_in(&dir, "bench.db").await;
    let config = app.config().clone();
    let memory = app.memory().clone();
    let lang = Language::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);

    eprintln!("filling {TOTAL_CHUNKS} chunks over {USERS} users…");
    let start = Instant::now();
    fill(&memory, &mut rng, &lang).await;
    // Vectors come from the background queue; search is measured with both legs.
    memory.embed_pending(&|_, _| {}).await.expect("embed");
    let fill_secs = start.elapsed().as_secs_f64();
    let chunks: i64 = nightshift::db::query_scalar(
        &memory.db().conn().await.unwrap(),
        "SELECT count(*) FROM chunks",
        (),
    )
    .await
    .unwrap()
    .unwrap();

    // Ingest: one event per append (one transaction each), then the same rows as plain
    // inserts into a table with no index, trigger or vector.
    let texts: Vec<String> = (0..INGEST_EVENTS)
        .map(|_| lang.sentence(&mut rng, 200))
        .collect();
    let start = Instant::now();
    for text in &texts {
        memory
            .append(
                "user-7",
                "user-7-ingest",
                &[NewEvent::new(Role::User, text.clone())],
            )
            .await
            .unwrap();
    }
    let sequential_per_s = INGEST_EVENTS as f64 / start.elapsed().as_secs_f64();

    // The same, from 16 concurrent callers (many conversations at once), one event per
    // call: appends waiting together share a commit.
    let ingest_per_s = common::concurrent_appends(&memory, &texts, APPENDERS).await;

    let batched: Vec<NewEvent> = texts
        .iter()
        .map(|t| NewEvent::new(Role::User, t.clone()))
        .collect();
    let start = Instant::now();
    for batch in batched.chunks(100) {
        memory
            .append("user-8", "user-8-ingest", batch)
            .await
            .unwrap();
    }
    let batched_per_s = INGEST_EVENTS as f64 / start.elapsed().as_secs_f64();

    let conn = memory.db().conn().await.unwrap();
    conn.execute(
        "CREATE TABLE plain_events (session_id TEXT, sequence INTEGER, role TEXT, content TEXT, created_at INTEGER)",
        (),
    )
    .await
    .unwrap();
    let start = Instant::now();
    for (i, text) in texts.iter().enumerate() {
        let tx = conn.write_tx().await.unwrap();
        tx.execute(
            "INSERT INTO plain_events VALUES ('plain', ?1, 'user', ?2, ?3)",
            libsql::params![i as i64, text.as_str(), 0i64],
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }
    let plain_per_s = INGEST_EVENTS as f64 / start.elapsed().as_secs_f64();
    drop(conn);

    // Notes for the big user, each with two versions, before its searches are timed; their
    // vectors are drained too, so search runs with both legs over them.
    eprintln!("saving and updating {BIG_USER_NOTES} notes…");
    let added = Instant::now();
    let (save_per_s, between, update_per_s) =
        notes_with_versions(&memory, "user-big", &mut rng, &lang).await;
    memory.embed_pending(&|_, _| {}).await.expect("embed");
    let notes_secs = added.elapsed().as_secs_f64();

    let (cold_1k, small) = search_latencies(&memory, "user-small", &mut rng, &lang).await;
    let big_queries = queries(&mut rng, &lang);
    let requests: Vec<SearchRequest> = big_queries
        .iter()
        .map(|q| plain_request("user-big", q))
        .collect();
    let (cold_50k, big, hits_at) = time_requests(&memory, &requests).await;
    assert!(hits_at.len() >= QUERIES, "a search found nothing");

    // The same queries as of the instant between the saves and the updates: keyword search
    // over the note versions valid then (the first ones), not combinable with a session.
    let added = Instant::now();
    let as_of_requests: Vec<SearchRequest> = big_queries
        .iter()
        .map(|q| SearchRequest {
            user_id: "user-big".into(),
            query: q.clone(),
            top_k: Some(10),
            as_of: Some(between),
            ..Default::default()
        })
        .collect();
    let (_, as_of, as_of_hits_at) = time_requests(&memory, &as_of_requests).await;
    assert!(
        as_of_hits_at.iter().all(|at| *at <= between),
        "an as-of search returned a version written after its instant"
    );
    let as_of_hits = as_of_hits_at.len() as f64 / QUERIES as f64;
    let as_of_ratio = percentile(&as_of, 0.95) / percentile(&big, 0.95);
    let as_of_secs = added.elapsed().as_secs_f64();

    let mut recall_sum = 0.0;
    let mut measured = 0usize;
    let recall_queries = 50;
    for _ in 0..recall_queries {
        let query = lang.query(&mut rng);
        let exact = common::exact_vector_top(&memory, &big_chat(), &query, 10).await;
        let leg: Vec<i64> = memory
            .vector_leg(&big_chat(), &query, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        // A query whose exact scan finds nothing says nothing about recall.
        if exact.is_empty() {
            continue;
        }
        let found = exact.iter().filter(|id| leg.contains(id)).count();
        recall_sum += found as f64 / exact.len() as f64;
        measured += 1;
    }
    assert!(
        measured > 0,
        "no query had a hit in the exact scan: recall would say nothing"
    );
    let recall = recall_sum / measured as f64;

    let matrix = load_matrix(&memory, &big_chat()).await;
    let (scan, scan_exact) =
        scan_times(&matrix, &memory, &mut rng, &lang, config.search.candidates);

    // Export the big user to a file, then import it into an empty database (the import
    // rebuilds the index of the sessions it wrote, vectors included).
    eprintln!("exporting and importing user-big…");
    let added = Instant::now();
    let archive_dir = tempfile::TempDir::new().unwrap();
    let archive = archive_dir.path().join("user-big.ndjson");
    let start = Instant::now();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&archive).unwrap());
    let exported = portable(&app)
        .export(
            &Actor::Operator,
            &ExportScope::User("user-big".into()),
            memory.clock().now_ms(),
            &mut out,
        )
        .await
        .expect("export");
    std::io::Write::flush(&mut out).unwrap();
    drop(out);
    let export_secs = start.elapsed().as_secs_f64();
    let lines: u64 = exported.lines.values().sum();
    let archive_bytes = std::fs::metadata(&archive).unwrap().len();
    let export_per_s = lines as f64 / export_secs;

    let fresh_dir = tempfile::TempDir::new().unwrap();
    let fresh = open_in(&fresh_dir, "fresh.db").await;
    let start = Instant::now();
    let imported = portable(&fresh)
        .import(
            &Actor::Operator,
            &ImportRequest {
                path: archive.clone(),
                format: None,
                user: None,
                dry_run: false,
            },
        )
        .await
        .expect("import");
    let import_secs = start.elapsed().as_secs_f64();
    let import_per_s = lines as f64 / import_secs;
    let imported_lines: u64 = imported.types.values().map(|t| t.imported).sum();
    let by_type = exported
        .lines
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect::<Vec<_>>()
        .join(", ");
    let portable_secs = added.elapsed().as_secs_f64();

    let rows = [
        (
            "database chunks before ingest",
            format!("{chunks}"),
            "".to_string(),
        ),
        (
            "fill (batches of 1,000)",
            format!("{:.0} events/s", TOTAL_CHUNKS as f64 / fill_secs),
            "".into(),
        ),
        (
            "append, 1 caller, 1 event per call",
            format!("{sequential_per_s:.0} events/s"),
            "a commit per event".into(),
        ),
        (
            "append, 16 callers, 1 event per call",
            format!("{ingest_per_s:.0} events/s"),
            "goal ≥ 10,000".into(),
        ),
        (
            "append, 1 caller, 100 events per call",
            format!("{batched_per_s:.0} events/s"),
            "".into(),
        ),
        (
            "plain insert, 1 row per transaction",
            format!("{plain_per_s:.0} rows/s"),
            "no index or vector".into(),
        ),
        (
            "search, user with 1k chunks, cold",
            format!("{:.2} ms", cold_1k.as_secs_f64() * 1e3),
            "first search loads vectors".into(),
        ),
        (
            "search, user with 1k chunks, p50 / p95",
            format!(
                "{:.2} / {:.2} ms",
                percentile(&small, 0.5),
                percentile(&small, 0.95)
            ),
            "".into(),
        ),
        (
            "search, user with 50k chunks, cold",
            format!("{:.2} ms", cold_50k.as_secs_f64() * 1e3),
            "".into(),
        ),
        (
            "notes of the 50k user: save / update",
            format!("{save_per_s:.0} / {update_per_s:.0} notes/s"),
            format!("{BIG_USER_NOTES} notes, each saved then updated: 2 versions each"),
        ),
        (
            "search, user with 50k chunks, p50 / p95",
            format!(
                "{:.2} / {:.2} ms",
                percentile(&big, 0.5),
                percentile(&big, 0.95)
            ),
            format!("goal p95 ≤ 10 ms; + {BIG_USER_NOTES} notes, 2 versions each kept"),
        ),
        (
            "as-of search, same queries, p50 / p95",
            format!(
                "{:.2} / {:.2} ms",
                percentile(&as_of, 0.5),
                percentile(&as_of, 0.95)
            ),
            format!(
                "{as_of_ratio:.2}× plain p95 (goal ≤ 2×); notes' first versions, keywords; {as_of_hits:.1} hits/query"
            ),
        ),
        (
            "vector scan, 50k rows, p50: exact / used",
            format!(
                "{:.2} / {:.2} ms",
                percentile(&scan_exact, 0.5),
                percentile(&scan, 0.5)
            ),
            "same hits; used = two-pass where AVX2".into(),
        ),
        (
            "vector leg recall@10 vs exact scan",
            format!("{recall:.3}"),
            "1.0 when exact".into(),
        ),
        (
            "export user-big to a file",
            format!("{export_per_s:.0} lines/s"),
            format!(
                "goal ≥ 20,000; {lines} lines in {export_secs:.2} s, {:.1} MB: {by_type}",
                archive_bytes as f64 / 1e6
            ),
        ),
        (
            "import it into an empty database",
            format!("{import_per_s:.0} lines/s"),
            format!(
                "goal ≥ 5,000; {imported_lines} of {lines} imported in {import_secs:.2} s, index rebuilt"
            ),
        ),
        (
            "time these add: notes / as-of / export+import",
            format!("{notes_secs:.1} / {as_of_secs:.1} / {portable_secs:.1} s"),
            "".into(),
        ),
    ];
    println!("{:<42} {:>22}  note", "measure", "value");
    println!("{}", "-".repeat(90));
    for (name, value, note) in rows {
        println!("{name:<42} {value:>22}  {note}");
    }
    println!(
        "ingest_events_per_s={ingest_per_s:.0} ingest_sequential_events_per_s={sequential_per_s:.0} ingest_batched_events_per_s={batched_per_s:.0} \
         plain_insert_per_s={plain_per_s:.0} plain_insert_ratio={:.3} search_p50_ms_1k={:.2} \
         search_p95_ms_1k={:.2} search_p50_ms_50k={:.2} search_p95_ms_50k={:.2} \
         search_cold_ms_50k={:.2} vector_recall_vs_exact={recall:.3} \
         vector_scan_ms_50k={:.2} vector_scan_exact_ms_50k={:.2} \
         note_save_per_s={save_per_s:.0} note_update_per_s={update_per_s:.0} \
         search_asof_p50_ms_50k={:.2} search_asof_p95_ms_50k={:.2} search_asof_ratio_p95={as_of_ratio:.2} \
         export_events_per_s={export_per_s:.0} import_events_per_s={import_per_s:.0} \
         export_lines={lines} export_bytes={archive_bytes}",
        ingest_per_s / plain_per_s,
        percentile(&small, 0.5),
        percentile(&small, 0.95),
        percentile(&big, 0.5),
        percentile(&big, 0.95),
        cold_50k.as_secs_f64() * 1e3,
        percentile(&scan, 0.5),
        percentile(&scan_exact, 0.5),
        percentile(&as_of, 0.5),
        percentile(&as_of, 0.95),
    );
}
