//! The keyword leg's own index: it ranks exactly as plain bm25 computed from every chunk
//! row by a reference written apart from it (`common::bm25_reference`), whether a session's postings came from stored blocks or
//! rows, after new chunks, after a removal, with a block missing or damaged; its
//! statistics are the searched user's own; and a search still finds stop words, accents
//! and inflections as a user types them.

mod common;

use common::{bm25_reference, config_in, count, memory_in, varied_turn as turn};
use nightshift::app::open_memory;
use nightshift::config::Config;
use nightshift::db::query_scalar;
use nightshift::memory::{
    Memory, NewEvent, NewNote, Role, SearchHit, SearchRequest, SessionKey, SessionKind,
};
use tempfile::TempDir;

/// Two whole blocks and a tail.
const EVENTS: usize = 2 * 4096 + 300;

/// Where user `u`'s session `chat` is stored.
fn chat() -> SessionKey {
    SessionKey::new("u", "chat")
}

const QUERIES: [&str; 5] = [
    "copper lantern",
    "meadow violin saffron",
    "glacier",
    "turn 4100 willow quartz",
    "lanterns of the orchards",
];

async fn filled(dir: &TempDir) -> Memory {
    let memory = memory_in(dir).await;
    let events: Vec<NewEvent> = (0..EVENTS)
        .map(|i| NewEvent::new(Role::User, turn(i)))
        .collect();
    for batch in events.chunks(2_000) {
        memory.append("u", "chat", batch).await.unwrap();
    }
    memory
}

/// A new handle on the same file, as after a restart: nothing cached.
async fn reopened(dir: &TempDir) -> Memory {
    open_memory(&config_in(dir)).await.unwrap()
}

async fn assert_exact(memory: &Memory) {
    assert_exact_for(memory, &QUERIES).await;
}

async fn assert_exact_for(memory: &Memory, queries: &[&str]) {
    let chunks = bm25_reference::chunks(memory.db(), chat().as_str()).await;
    let reference = bm25_reference::Reference::new(&chunks);
    let weight = Config::default().search.context_weight;
    for k in [1, 10, 50] {
        for query in queries {
            let leg = memory.keyword_leg(&chat(), query, k).await.unwrap();
            let want = reference.top(query, k, weight).unwrap();
            assert!(!want.is_empty(), "{query:?} matches nothing: a weak check");
            let leg = leg.unwrap_or_else(|| panic!("{query:?}: the leg found no word"));
            bm25_reference::assert_same_ranking(&leg, &want, &format!("{query:?} k={k}"));
        }
    }
}

#[tokio::test]
async fn a_packed_session_loads_its_postings_from_blocks_and_ranks_exactly() {
    let dir = TempDir::new().unwrap();
    let memory = filled(&dir).await;
    // From rows (nothing packed yet), then packed.
    assert_exact(&memory).await;
    assert_eq!(memory.cached_keywords(&chat()).unwrap().from_blocks, 0);
    assert_eq!(memory.pack_keywords(&chat()).await.unwrap(), 2);
    assert_eq!(
        memory.pack_keywords(&chat()).await.unwrap(),
        0,
        "nothing new"
    );
    assert_eq!(
        count(&memory, "SELECT count(*) FROM keyword_blocks").await,
        2
    );

    let fresh = reopened(&dir).await;
    assert_exact(&fresh).await;
    let held = fresh.cached_keywords(&chat()).unwrap();
    assert_eq!((held.rows, held.from_blocks), (EVENTS, 2 * 4096));

    // New chunks after the blocks are read as rows and topped up in place.
    fresh
        .append(
            "u",
            "chat",
            &[NewEvent::new(Role::User, "copper lantern glow")],
        )
        .await
        .unwrap();
    assert_exact(&fresh).await;
    assert_eq!(fresh.cached_keywords(&chat()).unwrap().rows, EVENTS + 1);
    let best = fresh
        .keyword_leg(&chat(), "glow", 5)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        best.len(),
        1,
        "the new chunk is found at once, before any embedding"
    );
}

/// A query of stop words alone is answered from an index of the session's stop words,
/// as exactly as any other, from rows and from its own stored blocks (packed by the
/// embedder for the sessions searched that way); it loads nothing else, and a search of
/// other words never loads it.
#[tokio::test]
async fn stop_words_have_an_index_of_their_own() {
    let dir = TempDir::new().unwrap();
    let memory = memory_in(&dir).await;
    let stop = [
        "the", "it", "was", "who", "is", "on", "at", "for", "we", "they", "this", "that", "there",
    ];
    let events: Vec<NewEvent> = (0..EVENTS)
        .map(|i| {
            let text = format!(
                "{} {} {} {}",
                stop[i % 13],
                turn(i),
                stop[(i / 13) % 13],
                stop[(i * 5) % 13]
            );
            NewEvent::new(Role::User, text)
        })
        .collect();
    for batch in events.chunks(2_000) {
        memory.append("u", "chat", batch).await.unwrap();
    }
    let queries = ["who is it", "the", "there was this?", "AT THE"];
    assert_exact_for(&memory, &queries).await;
    let held = memory.cached_stop_words(&chat()).unwrap();
    assert_eq!((held.rows, held.from_blocks), (EVENTS, 0));
    assert!(memory.cached_keywords(&chat()).is_none());

    // The search read a block's worth of rows: the embedder's idle packing makes the
    // stop words' blocks, and only theirs.
    assert_eq!(memory.pack_due().await.unwrap(), 2);
    let blocks = |field: i64| {
        format!("SELECT count(*) FROM keyword_blocks WHERE session_id = 'u\u{1f}chat' AND field = {field}")
    };
    assert_eq!(count(&memory, &blocks(1)).await, 2);
    assert_eq!(count(&memory, &blocks(0)).await, 0);

    let fresh = reopened(&dir).await;
    assert_exact_for(&fresh, &queries).await;
    let held = fresh.cached_stop_words(&chat()).unwrap();
    assert_eq!((held.rows, held.from_blocks), (EVENTS, 2 * 4096));
    assert!(fresh.cached_keywords(&chat()).is_none());
    assert_exact(&fresh).await;
    assert_eq!(fresh.cached_keywords(&chat()).unwrap().from_blocks, 0);

    // New chunks are topped up; a removal from the session reloads the stop words'
    // index too, and outdates its blocks.
    fresh
        .append("u", "chat", &[NewEvent::new(Role::User, "who was there")])
        .await
        .unwrap();
    assert_exact_for(&fresh, &queries).await;
    assert_eq!(fresh.cached_stop_words(&chat()).unwrap().rows, EVENTS + 1);
    let conn = fresh.db().conn().await.unwrap();
    conn.execute(
        "DELETE FROM chunks WHERE chunk_id = (SELECT min(chunk_id) FROM chunks)",
        (),
    )
    .await
    .unwrap();
    drop(conn);
    assert_exact_for(&fresh, &queries).await;
    let held = fresh.cached_stop_words(&chat()).unwrap();
    assert_eq!((held.rows, held.from_blocks), (EVENTS, 0));
    assert_eq!(fresh.pack_keywords(&chat()).await.unwrap(), 2);
    assert_eq!(
        count(&memory, &blocks(1)).await,
        0,
        "packing the words drops the outdated blocks of both fields"
    );
    fresh
        .forget(&nightshift::access::Actor::Operator, "chat")
        .await
        .unwrap();
    assert_eq!(count(&memory, &blocks(1)).await, 0);
    assert_eq!(
        fresh.keyword_leg(&chat(), "who is it", 10).await.unwrap(),
        Some(Vec::new())
    );
}

#[tokio::test]
async fn keyword_blocks_made_before_a_removal_or_broken_are_not_used() {
    let dir = TempDir::new().unwrap();
    let memory = filled(&dir).await;
    memory.pack_keywords(&chat()).await.unwrap();
    let conn = memory.db().conn().await.unwrap();
    // A handle that cached the session before the removal.
    assert_exact(&memory).await;

    // A chunk removed before it had a vector makes every block stale: a new handle reads
    // rows, a cached copy is loaded again, and the removed chunk is never a hit.
    let removed: i64 = query_scalar(
        &conn,
        "SELECT chunk_id FROM chunks WHERE session_id = 'u\u{1f}chat' AND text LIKE '%copper%'
         ORDER BY chunk_id LIMIT 1",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    conn.execute("DELETE FROM chunks WHERE chunk_id = ?1", [removed])
        .await
        .unwrap();
    for handle in [&memory, &reopened(&dir).await] {
        assert_exact(handle).await;
        let held = handle.cached_keywords(&chat()).unwrap();
        assert_eq!((held.rows, held.from_blocks), (EVENTS - 1, 0));
        let leg = handle.keyword_leg(&chat(), "copper", 5000).await.unwrap();
        assert!(leg.unwrap().iter().all(|(id, _)| *id != removed));
    }

    // Packed again: stale blocks dropped, new ones made and used.
    assert_eq!(memory.pack_keywords(&chat()).await.unwrap(), 2);
    assert_eq!(
        count(&memory, "SELECT count(*) FROM keyword_blocks").await,
        2
    );
    let again = reopened(&dir).await;
    assert_exact(&again).await;
    assert_eq!(
        again.cached_keywords(&chat()).unwrap().from_blocks,
        2 * 4096
    );

    // A damaged second block ends the chain there: its rows are read instead.
    conn.execute(
        "UPDATE keyword_blocks SET postings = ?1
         WHERE after_chunk_id = (SELECT max(after_chunk_id) FROM keyword_blocks)",
        [libsql::Value::Blob(vec![0; 7])],
    )
    .await
    .unwrap();
    let damaged = reopened(&dir).await;
    assert_exact(&damaged).await;
    let held = damaged.cached_keywords(&chat()).unwrap();
    assert_eq!((held.rows, held.from_blocks), (EVENTS - 1, 4096));

    // A block claiming chunks it does not hold, and a missing first block: no chain.
    conn.execute(
        "UPDATE keyword_blocks SET last_chunk_id = last_chunk_id + 1
         WHERE after_chunk_id = (SELECT min(after_chunk_id) FROM keyword_blocks)",
        (),
    )
    .await
    .unwrap();
    let lying = reopened(&dir).await;
    assert_exact(&lying).await;
    assert_eq!(lying.cached_keywords(&chat()).unwrap().from_blocks, 0);
    conn.execute("DELETE FROM keyword_blocks WHERE after_chunk_id = 0", ())
        .await
        .unwrap();
    let gap = reopened(&dir).await;
    assert_exact(&gap).await;
    assert_eq!(gap.cached_keywords(&chat()).unwrap().from_blocks, 0);

    // Forgetting the session takes its blocks.
    memory.pack_keywords(&chat()).await.unwrap();
    memory
        .forget(&nightshift::access::Actor::Operator, "chat")
        .await
        .unwrap();
    assert_eq!(
        count(&memory, "SELECT count(*) FROM keyword_blocks").await,
        0
    );
}

fn request(user: &str, query: &str) -> SearchRequest {
    SearchRequest {
        user_id: user.into(),
        query: query.into(),
        top_k: Some(10),
        ..Default::default()
    }
}

/// bm25 weighs a word by how many chunks hold it. Those counts are the searched user's
/// own: another user writing the same words, however many, changes nothing in this
/// user's scores or order, and never appears among their hits.
#[tokio::test]
async fn one_users_words_never_weigh_on_anothers_ranking() {
    let dir = TempDir::new().unwrap();
    let memory = memory_in(&dir).await;
    for text in [
        "the harbor lantern was lit at dusk",
        "copper pans hang in the orchard shed",
        "a lantern of copper and glass",
        "we walked the meadow to the glacier",
    ] {
        memory
            .save_note("alice", &NewNote::new(text))
            .await
            .unwrap();
    }
    let before = memory
        .search(&request("alice", "copper lantern"))
        .await
        .unwrap();
    let notes = SessionKey::new("alice", &SessionKind::notes_session("alice", None));
    let scores_before = memory
        .keyword_leg(&notes, "copper lantern", 10)
        .await
        .unwrap();

    let flood: Vec<NewEvent> = (0..3_000)
        .map(|i| NewEvent::new(Role::User, format!("copper copper lantern {}", turn(i))))
        .collect();
    for batch in flood.chunks(1_000) {
        memory
            .append("mallory", "mallory-chat", batch)
            .await
            .unwrap();
    }
    let after = memory
        .search(&request("alice", "copper lantern"))
        .await
        .unwrap();
    let scores_after = memory
        .keyword_leg(&notes, "copper lantern", 10)
        .await
        .unwrap();
    assert_eq!(scores_before, scores_after, "alice's bm25 is alice's alone");
    let texts =
        |hits: &[SearchHit]| -> Vec<String> { hits.iter().map(|h| h.text.clone()).collect() };
    assert_eq!(texts(&before), texts(&after));
    assert!(!after.is_empty());
    assert!(after.iter().all(|h| !h.text.contains("turn")));
}

/// What a user types reaches the chunks it should: a query of stop words alone (from the
/// stop words' index), a word without its accent, another form of a word.
#[tokio::test]
async fn stop_words_accents_and_inflections_are_found() {
    let dir = TempDir::new().unwrap();
    let memory = memory_in(&dir).await;
    for text in [
        "who is it at the door?",
        "We met at the Café Noir on Friday",
        "planning the move to Lisbon",
        "nothing to see here",
    ] {
        memory
            .append("u", "u-chat", &[NewEvent::new(Role::User, text)])
            .await
            .unwrap();
    }
    let search = |query: &'static str| {
        let memory = memory.clone();
        async move {
            let request = SearchRequest {
                session_id: Some("u-chat".into()),
                ..request("u", query)
            };
            let found = memory.search(&request).await.unwrap();
            found.first().map(|h| h.text.clone()).unwrap_or_default()
        }
    };
    assert_eq!(search("who is it").await, "who is it at the door?");
    assert_eq!(
        search("cafe noir").await,
        "We met at the Café Noir on Friday"
    );
    assert_eq!(search("planned moves").await, "planning the move to Lisbon");
}

/// The reference itself, by hand, on three chunks: "lantern" is in one of three (idf =
/// ln(2.5 / 1.5)); each chunk has 2 words, the average.
#[test]
fn the_reference_scores_by_the_formula() {
    let chunk = |id: i64, text: &str, context: &str| bm25_reference::Chunk {
        id,
        text: text.into(),
        context: context.into(),
    };
    let reference = bm25_reference::Reference::new(&[
        chunk(1, "copper lantern", ""),
        chunk(2, "silver bell", ""),
        chunk(3, "green", "field"),
    ]);
    let idf = (2.5f64 / 1.5).ln();
    let got = reference.top("Lanterns", 10, 0.3).unwrap();
    let want = idf * 1.0 * 2.2 / (1.0 + 1.2);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, 1);
    assert!((got[0].1 - want).abs() < 1e-12, "{got:?} vs {want}");
    // A word in the context counts for context_weight of one in the text.
    let got = reference.top("field", 10, 0.3).unwrap();
    let want = idf * 0.3 * 2.2 / (0.3 + 1.2);
    assert_eq!(got[0].0, 3);
    assert!((got[0].1 - want).abs() < 1e-12, "{got:?} vs {want}");
    // Stop words alone look up stop words; a query with no word is none.
    assert!(reference.top("the", 10, 0.3).unwrap().is_empty());
    assert!(reference.top("  ?! ", 10, 0.3).is_none());
}
