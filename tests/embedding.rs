//! The background embedding queue: writes never wait for a vector, chunks are embedded once
//! even with several workers, a model change is re-embedded while search says it runs on
//! keywords only, and the derived index stays whole.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{config_in, count, fresh, keyword_integrity};
use nightshift::app::{open_db, open_memory};
use nightshift::config::Config;
use nightshift::embed::{EmbedError, Embedder, HashEmbedder};
use nightshift::memory::{Memory, NewEvent, NewNote, Role, SearchRequest};
use tempfile::TempDir;

fn request(user: &str, query: &str, session: Option<&str>) -> SearchRequest {
    SearchRequest {
        user_id: user.into(),
        query: query.into(),
        top_k: Some(5),
        session_id: session.map(str::to_string),
        tags: Vec::new(),
        ..Default::default()
    }
}

/// Counts every text it embeds, so a test can tell whether a chunk was embedded twice.
struct CountingEmbedder {
    inner: HashEmbedder,
    texts: AtomicUsize,
}

impl Embedder for CountingEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed(texts)
    }
}

async fn memory_with(config: &Config, embedder: Arc<dyn Embedder>) -> Memory {
    let db = open_db(config).await.unwrap();
    nightshift::db::migrate::migrate(&db).await.unwrap();
    Memory::new(db, embedder, config.memory.clone(), config.search.clone())
        .await
        .unwrap()
        .with_embed_batch_size(7)
}

#[tokio::test]
async fn a_write_is_found_by_keywords_at_once_and_by_vector_once_embedded() {
    let (_dir, memory) = fresh().await;
    memory
        .append(
            "u",
            "chat",
            &[NewEvent::new(
                Role::User,
                "the ferry to Lisbon leaves at noon",
            )],
        )
        .await
        .unwrap();
    // Queued, not embedded: the write did not wait for the model.
    assert_eq!(count(&memory, "SELECT count(*) FROM embed_queue").await, 1);
    assert_eq!(
        count(&memory, "SELECT count(*) FROM chunk_vectors").await,
        0
    );
    let status = memory.embedding_status().await.unwrap();
    assert_eq!(status.pending, 1);
    assert!(!status.reembedding);
    let hits = memory
        .search(&request("u", "ferry", Some("chat")))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "keywords find it before its vector exists");
    // A misspelling shares no keyword, only word pieces: only the vector leg finds it.
    let typo = request("u", "Lisbonn", Some("chat"));
    assert!(memory.search(&typo).await.unwrap().is_empty());

    assert_eq!(memory.embed_pending(&|_, _| {}).await.unwrap(), 1);
    assert_eq!(count(&memory, "SELECT count(*) FROM embed_queue").await, 0);
    assert_eq!(
        count(&memory, "SELECT count(*) FROM chunk_vectors").await,
        1
    );
    assert_eq!(memory.embedding_status().await.unwrap().pending, 0);
    let results = memory.search_detailed(&typo).await.unwrap();
    assert_eq!(results.degraded, None);
    assert_eq!(results.hits.len(), 1, "found by its vector once embedded");
}

#[tokio::test]
async fn the_background_embedder_picks_up_writes_and_stops_when_told() {
    let (_dir, memory) = fresh().await;
    let stop = tokio_util::sync::CancellationToken::new();
    let task = memory.spawn_embedder(stop.clone());
    for i in 0..20 {
        memory
            .save_note("u", &NewNote::new(format!("note number {i} about gardens")))
            .await
            .unwrap();
    }
    // Bounded wait on the queue, not on the clock.
    for _ in 0..2_000 {
        if memory.embedding_status().await.unwrap().pending == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(memory.embedding_status().await.unwrap().pending, 0);
    assert_eq!(
        count(&memory, "SELECT count(*) FROM chunk_vectors").await,
        20
    );
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn two_workers_never_embed_the_same_chunk() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let embedder = Arc::new(CountingEmbedder {
        inner: HashEmbedder::new(64),
        texts: AtomicUsize::new(0),
    });
    let a = memory_with(&config, embedder.clone()).await;
    let b = memory_with(&config, embedder.clone()).await;
    let events: Vec<NewEvent> = (0..300)
        .map(|i| NewEvent::new(Role::User, format!("turn {i} of a long talk about boats")))
        .collect();
    a.append("u", "chat", &events).await.unwrap();
    let chunks = count(&a, "SELECT count(*) FROM chunks").await;
    assert_eq!(chunks, 300);

    let (ra, rb) = tokio::join!(
        tokio::spawn({
            let a = a.clone();
            async move { a.embed_pending(&|_, _| {}).await.unwrap() }
        }),
        tokio::spawn({
            let b = b.clone();
            async move { b.embed_pending(&|_, _| {}).await.unwrap() }
        }),
    );
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(ra + rb, 300, "a: {ra}, b: {rb}");
    assert_eq!(
        embedder.texts.load(Ordering::SeqCst),
        300,
        "a chunk embedded twice"
    );
    assert_eq!(count(&a, "SELECT count(*) FROM chunk_vectors").await, 300);
    assert_eq!(count(&a, "SELECT count(*) FROM embed_queue").await, 0);
}

#[tokio::test]
async fn a_claim_left_by_a_dead_worker_is_taken_over_after_its_lease() {
    let (_dir, memory) = fresh().await;
    memory
        .append("u", "chat", &[NewEvent::new(Role::User, "orphaned chunk")])
        .await
        .unwrap();
    // A worker claimed the chunk and died before writing its vector.
    let conn = memory.db().conn().await.unwrap();
    let now = memory.clock().now_ms();
    conn.execute(
        "UPDATE embed_queue SET claim_token = 'emb-dead', claim_expires_at = ?1",
        [now + 60_000],
    )
    .await
    .unwrap();
    assert_eq!(
        memory.embed_batch().await.unwrap(),
        0,
        "the lease still holds"
    );
    conn.execute("UPDATE embed_queue SET claim_expires_at = ?1", [now - 1])
        .await
        .unwrap();
    assert_eq!(
        memory.embed_batch().await.unwrap(),
        1,
        "taken over after expiry"
    );
    assert_eq!(
        count(&memory, "SELECT count(*) FROM chunk_vectors").await,
        1
    );
}

#[tokio::test]
async fn a_deleted_note_leaves_nothing_queued_or_embedded() {
    let (_dir, memory) = fresh().await;
    let saved = memory
        .save_note("u", &NewNote::new("temporary thought"))
        .await
        .unwrap();
    memory.delete_note("u", &saved.note_id).await.unwrap();
    assert_eq!(count(&memory, "SELECT count(*) FROM embed_queue").await, 0);
    assert_eq!(memory.embed_pending(&|_, _| {}).await.unwrap(), 0);
    assert_eq!(
        count(&memory, "SELECT count(*) FROM chunk_vectors").await,
        0
    );
    keyword_integrity(&memory).await;
}

#[tokio::test]
async fn a_reply_is_indexed_with_the_turn_before_it_as_context() {
    let (_dir, memory) = fresh().await;
    memory
        .append(
            "u",
            "chat",
            &[
                NewEvent::new(Role::User, "Which day is the pottery class?"),
                NewEvent::new(Role::Assistant, "Every Tuesday evening."),
            ],
        )
        .await
        .unwrap();
    memory
        .append("u", "chat", &[NewEvent::new(Role::User, "Thanks!")])
        .await
        .unwrap();
    let conn = memory.db().conn().await.unwrap();
    let mut rows = conn
        .query(
            "SELECT sequence_start, context FROM chunks WHERE session_id = 'u\u{1f}chat' ORDER BY sequence_start",
            (),
        )
        .await
        .unwrap();
    let mut contexts = Vec::new();
    while let Some(row) = rows.next().await.unwrap() {
        contexts.push((row.get::<i64>(0).unwrap(), row.get::<String>(1).unwrap()));
    }
    assert_eq!(
        contexts,
        [
            (1, String::new()),
            (2, "Which day is the pottery class?".to_string()),
            (3, "Every Tuesday evening.".to_string()),
        ]
    );
    memory.embed_pending(&|_, _| {}).await.unwrap();
    // "pottery" is only in the question, yet the answer is what a search should surface.
    let hits = memory
        .search(&request("u", "pottery class day", Some("chat")))
        .await
        .unwrap();
    let sequences: Vec<i64> = hits.iter().filter_map(|h| h.sequence).collect();
    assert!(sequences.contains(&2), "{sequences:?}");
    keyword_integrity(&memory).await;
}

#[tokio::test]
async fn a_model_change_is_re_embedded_and_search_says_it_is_degraded_until_then() {
    let dir = TempDir::new().unwrap();
    let mut config = config_in(&dir);
    let old = open_memory(&config).await.unwrap();
    for i in 0..10 {
        old.append(
            "u",
            "chat",
            &[NewEvent::new(Role::User, format!("harbour note {i}"))],
        )
        .await
        .unwrap();
    }
    old.embed_pending(&|_, _| {}).await.unwrap();
    let old_model = old.embedder().model_id().to_string();
    drop(old);

    config.embedding.dimensions = 128;
    let new = open_memory(&config).await.unwrap();
    assert_ne!(new.embedder().model_id(), old_model);
    // Before the daemon adopts the new model: its query vectors cannot be compared.
    let results = new
        .search_detailed(&request("u", "harbour", Some("chat")))
        .await
        .unwrap();
    assert!(results.degraded.is_some());
    assert_eq!(results.hits.len(), 5, "keywords still answer");
    // Nothing is embedded with a model the database does not record.
    assert_eq!(new.embed_batch().await.unwrap(), 0);

    assert!(new.adopt_model().await.unwrap());
    assert!(
        !new.adopt_model().await.unwrap(),
        "adopting twice does nothing"
    );
    let status = new.embedding_status().await.unwrap();
    assert!(status.reembedding);
    assert_eq!(status.pending, 10);
    assert!(status.degraded_reason().is_some());
    let results = new
        .search_detailed(&request("u", "harbour", Some("chat")))
        .await
        .unwrap();
    assert!(results.degraded.unwrap().contains("re-embedding"));

    assert_eq!(new.embed_pending(&|_, _| {}).await.unwrap(), 10);
    // The batch that finds the queue empty ends the re-embed.
    new.embed_batch().await.unwrap();
    let status = new.embedding_status().await.unwrap();
    assert!(!status.reembedding);
    assert_eq!(
        status.recorded_model.as_deref(),
        Some(new.embedder().model_id())
    );
    assert_eq!(
        count(
            &new,
            &format!(
                "SELECT count(*) FROM chunk_vectors WHERE model = '{}'",
                new.embedder().model_id()
            )
        )
        .await,
        10
    );
    assert_eq!(count(&new, "SELECT count(*) FROM chunk_vectors").await, 10);
    let results = new
        .search_detailed(&request("u", "harbour", Some("chat")))
        .await
        .unwrap();
    assert_eq!(results.degraded, None);
}

#[tokio::test]
async fn the_backfill_pass_repairs_chunks_without_a_vector() {
    let (_dir, memory) = fresh().await;
    memory
        .append("u", "chat", &[NewEvent::new(Role::User, "lost vector")])
        .await
        .unwrap();
    // A queue row lost (say, by a hand-edited database): backfill finds the chunk anyway.
    let conn = memory.db().conn().await.unwrap();
    conn.execute("DELETE FROM embed_queue", ()).await.unwrap();
    assert_eq!(memory.queue_missing_vectors().await.unwrap(), 1);
    assert_eq!(memory.queue_missing_vectors().await.unwrap(), 0);
    memory.embed_pending(&|_, _| {}).await.unwrap();
    assert_eq!(
        count(&memory, "SELECT count(*) FROM chunk_vectors").await,
        1
    );
}
