//! Stored blocks of vector codes: a fresh handle loads a packed session from its blocks,
//! and the vector leg stays exact (equal to scoring every stored vector) whether the
//! codes came from blocks or rows, after a removal, with a block missing or damaged, and
//! once the session is forgotten.

mod common;

use common::{config_in, count, memory_in, varied_turn as turn};
use nightshift::app::open_memory;
use nightshift::db::query_scalar;
use nightshift::embed::blob_to_vector;
use nightshift::memory::{Memory, NewEvent, Role, SessionKey};
use tempfile::TempDir;

/// Two whole blocks and a tail.
const EVENTS: usize = 2 * 4096 + 300;

/// Where user `u`'s session `chat` is stored.
fn chat() -> SessionKey {
    SessionKey::new("u", "chat")
}

async fn filled(dir: &TempDir) -> Memory {
    let memory = memory_in(dir).await;
    let events: Vec<NewEvent> = (0..EVENTS)
        .map(|i| NewEvent::new(Role::User, turn(i)))
        .collect();
    for batch in events.chunks(2_000) {
        memory.append("u", "chat", batch).await.unwrap();
    }
    memory.embed_pending(&|_, _| {}).await.unwrap();
    memory
}

/// The `k` best chunks of `chat` by the dot product of every stored vector with the
/// query's: the answer an exhaustive scan gives.
async fn exhaustive(memory: &Memory, query: &str, k: usize) -> Vec<(i64, f32)> {
    let q = memory.embedder().embed(&[query]).unwrap().pop().unwrap();
    let conn = memory.db().conn().await.unwrap();
    let mut rows = conn
        .query(
            "SELECT chunk_id, embedding FROM chunk_vectors WHERE session_id = 'u\u{1f}chat'",
            (),
        )
        .await
        .unwrap();
    let mut scored = Vec::new();
    while let Some(row) = rows.next().await.unwrap() {
        let v = blob_to_vector(&row.get::<Vec<u8>>(1).unwrap()).unwrap();
        let score: f32 = {
            // The same summation order as the search's exact scoring: 8 lanes.
            let mut sums = [0.0f32; 8];
            let whole = v.len() - v.len() % 8;
            for (x, y) in v[..whole].chunks_exact(8).zip(q[..whole].chunks_exact(8)) {
                for i in 0..8 {
                    sums[i] += x[i] * y[i];
                }
            }
            let tail: f32 = v[whole..].iter().zip(&q[whole..]).map(|(a, b)| a * b).sum();
            sums.iter().sum::<f32>() + tail
        };
        if score > 0.0 {
            scored.push((row.get::<i64>(0).unwrap(), score));
        }
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    scored.truncate(k);
    scored
}

const QUERIES: [&str; 4] = [
    "copper lantern",
    "meadow violin saffron",
    "glacier",
    "turn 4100 willow quartz",
];

/// A new handle on the same file, as after a restart: nothing cached.
async fn reopened(dir: &TempDir) -> Memory {
    open_memory(&config_in(dir)).await.unwrap()
}

async fn assert_exact(memory: &Memory) {
    for query in QUERIES {
        for k in [1, 10, 50] {
            let leg = memory.vector_leg(&chat(), query, k).await.unwrap();
            assert_eq!(leg, exhaustive(memory, query, k).await, "{query:?} k={k}");
        }
    }
}

#[tokio::test]
async fn a_packed_session_loads_from_its_blocks_and_searches_exactly() {
    let dir = TempDir::new().unwrap();
    let memory = filled(&dir).await;
    assert_eq!(memory.pack_vectors(&chat()).await.unwrap(), 2);
    assert_eq!(
        memory.pack_vectors(&chat()).await.unwrap(),
        0,
        "nothing new"
    );
    assert_eq!(
        count(&memory, "SELECT count(*) FROM vector_blocks").await,
        2
    );

    let fresh = reopened(&dir).await;
    assert_exact(&fresh).await;
    let held = fresh.cached_vectors(&chat()).unwrap();
    assert_eq!((held.rows, held.from_blocks), (EVENTS, 2 * 4096));

    // New vectors after the blocks are read as rows and topped up in place.
    fresh
        .append(
            "u",
            "chat",
            &[NewEvent::new(Role::User, "copper lantern glow")],
        )
        .await
        .unwrap();
    fresh.embed_pending(&|_, _| {}).await.unwrap();
    assert_exact(&fresh).await;
    assert_eq!(fresh.cached_vectors(&chat()).unwrap().rows, EVENTS + 1);
}

#[tokio::test]
async fn blocks_made_before_a_removal_or_broken_are_not_used() {
    let dir = TempDir::new().unwrap();
    let memory = filled(&dir).await;
    memory.pack_vectors(&chat()).await.unwrap();
    let conn = memory.db().conn().await.unwrap();

    // A chunk removed (as a rebuild or a delete removes one) makes every block stale: a
    // new handle reads rows, and the removed chunk is never a hit.
    let removed: i64 = query_scalar(
        &conn,
        "SELECT chunk_id FROM chunks WHERE session_id = 'u\u{1f}chat' ORDER BY chunk_id LIMIT 1 OFFSET 10",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    conn.execute("DELETE FROM chunks WHERE chunk_id = ?1", [removed])
        .await
        .unwrap();
    let fresh = reopened(&dir).await;
    assert_exact(&fresh).await;
    let held = fresh.cached_vectors(&chat()).unwrap();
    assert_eq!((held.rows, held.from_blocks), (EVENTS - 1, 0));
    for query in QUERIES {
        let leg = fresh.vector_leg(&chat(), query, 50).await.unwrap();
        assert!(leg.iter().all(|(id, _)| *id != removed));
    }

    // Packed again: stale blocks dropped, new ones made and used.
    assert_eq!(fresh.pack_vectors(&chat()).await.unwrap(), 2);
    assert_eq!(count(&fresh, "SELECT count(*) FROM vector_blocks").await, 2);
    let again = reopened(&dir).await;
    assert_exact(&again).await;
    assert_eq!(again.cached_vectors(&chat()).unwrap().from_blocks, 2 * 4096);

    // A damaged second block ends the chain there: its rows are read instead.
    conn.execute(
        "UPDATE vector_blocks SET codes = ?1
         WHERE after_vector_id = (SELECT max(after_vector_id) FROM vector_blocks)",
        [libsql::Value::Blob(vec![0; 7])],
    )
    .await
    .unwrap();
    let damaged = reopened(&dir).await;
    assert_exact(&damaged).await;
    let held = damaged.cached_vectors(&chat()).unwrap();
    assert_eq!((held.rows, held.from_blocks), (EVENTS - 1, 4096));

    // A missing first block: no chain at all.
    conn.execute("DELETE FROM vector_blocks WHERE after_vector_id = 0", ())
        .await
        .unwrap();
    let gap = reopened(&dir).await;
    assert_exact(&gap).await;
    assert_eq!(gap.cached_vectors(&chat()).unwrap().from_blocks, 0);

    // Forgetting the session takes its blocks.
    fresh.pack_vectors(&chat()).await.unwrap();
    fresh
        .forget(&nightshift::access::Actor::Operator, "chat")
        .await
        .unwrap();
    assert_eq!(count(&fresh, "SELECT count(*) FROM vector_blocks").await, 0);
}

/// The worker's embedder packs a session that got a block's worth of vectors once it has
/// nothing left to embed: a restart then loads that session from its block.
#[tokio::test]
async fn the_embedder_packs_a_session_when_it_idles() {
    let dir = TempDir::new().unwrap();
    let memory = memory_in(&dir).await.with_embed_batch_size(512);
    let events: Vec<NewEvent> = (0..4096 + 50)
        .map(|i| NewEvent::new(Role::User, turn(i)))
        .collect();
    for batch in events.chunks(2_000) {
        memory.append("u", "chat", batch).await.unwrap();
    }
    let stop = tokio_util::sync::CancellationToken::new();
    let embedder = memory.spawn_embedder(stop.clone());
    // Bounded by the number of polls, not by a time to assert.
    for _ in 0..1_200 {
        if count(&memory, "SELECT count(*) FROM vector_blocks").await > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    stop.cancel();
    embedder.await.unwrap();
    assert_eq!(
        count(&memory, "SELECT count(*) FROM vector_blocks").await,
        1
    );
    let fresh = reopened(&dir).await;
    let leg = fresh
        .vector_leg(&chat(), "copper lantern", 10)
        .await
        .unwrap();
    assert_eq!(leg, exhaustive(&fresh, "copper lantern", 10).await);
    let held = fresh.cached_vectors(&chat()).unwrap();
    assert_eq!((held.rows, held.from_blocks), (4096 + 50, 4096));
}

/// A session forgotten and made again under the same id starts its removal count over:
/// a handle that cached the old session's vectors loads the new session's, not the old
/// ones topped up.
#[tokio::test]
async fn a_session_made_again_under_its_id_is_loaded_again() {
    let dir = TempDir::new().unwrap();
    let memory = memory_in(&dir).await;
    let first: Vec<NewEvent> = (0..300)
        .map(|i| NewEvent::new(Role::User, turn(i)))
        .collect();
    memory.append("u", "chat", &first).await.unwrap();
    memory.embed_pending(&|_, _| {}).await.unwrap();
    assert_exact(&memory).await;
    memory
        .forget(&nightshift::access::Actor::Operator, "chat")
        .await
        .unwrap();
    // Fewer events than before, so the new session's vector ids may lie below the old
    // session's last one (SQLite reuses the largest ids once they are deleted).
    let second: Vec<NewEvent> = (1000..1100)
        .map(|i| NewEvent::new(Role::User, turn(i)))
        .collect();
    memory.append("u", "chat", &second).await.unwrap();
    memory.embed_pending(&|_, _| {}).await.unwrap();
    assert_exact(&memory).await;
    assert_eq!(memory.cached_vectors(&chat()).unwrap().rows, 100);
}
