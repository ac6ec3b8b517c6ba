//! Notes: the save → search → update → search → delete → search lifecycle, key upserts,
//! and isolation between users on every path.

mod common;

use common::{count, fresh, index_rows, keyword_integrity};
use nightshift::memory::{HitSource, MemoryError, NewNote, SearchRequest};

fn search(user: &str, query: &str) -> SearchRequest {
    SearchRequest {
        user_id: user.into(),
        query: query.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn lifecycle_save_search_update_delete() {
    let (_dir, memory) = fresh().await;
    let saved = memory
        .save_note(
            "alice",
            &NewNote::new("Alice prefers green tea in the morning"),
        )
        .await
        .unwrap();
    assert!(saved.note_id.starts_with("note-"));
    assert!(saved.created);
    let created_at = memory
        .note("alice", &saved.note_id)
        .await
        .unwrap()
        .created_at;

    let hits = memory
        .search(&search("alice", "what tea does she like"))
        .await
        .unwrap();
    assert_eq!(hits[0].note_id.as_deref(), Some(saved.note_id.as_str()));
    assert_eq!(hits[0].source, HitSource::Note);
    assert_eq!(hits[0].text, "Alice prefers green tea in the morning");

    let updated = memory
        .update_note(
            "alice",
            &saved.note_id,
            "Alice switched to black coffee",
            None,
        )
        .await
        .unwrap();
    assert_eq!(updated.note_id, saved.note_id);
    assert_eq!(updated.created_at, created_at, "created_at is kept");
    assert!(updated.updated_at >= created_at);

    let hits = memory.search(&search("alice", "green tea")).await.unwrap();
    assert!(
        hits.iter().all(|h| !h.text.contains("green tea")),
        "old text gone: {hits:?}"
    );
    let hits = memory.search(&search("alice", "coffee")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].note_id.as_deref(), Some(saved.note_id.as_str()));
    assert_eq!(hits[0].text, "Alice switched to black coffee");

    memory.delete_note("alice", &saved.note_id).await.unwrap();
    assert!(memory
        .search(&search("alice", "coffee"))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(index_rows(&memory, "coffee").await, (0, 0, 0));
    keyword_integrity(&memory).await;
    assert!(matches!(
        memory.delete_note("alice", &saved.note_id).await,
        Err(MemoryError::NoteNotFound(_))
    ));
}

#[tokio::test]
async fn key_gives_upsert_semantics() {
    let (_dir, memory) = fresh().await;
    let mut note = NewNote::new("Alice lives in Lisbon");
    note.key = Some("home-city".into());
    let first = memory.save_note("alice", &note).await.unwrap();
    note.content = "Alice lives in Porto".into();
    let second = memory.save_note("alice", &note).await.unwrap();
    assert_eq!(first.note_id, second.note_id);
    assert!(!second.created);
    let notes = memory.notes("alice").await.unwrap();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].content, "Alice lives in Porto");
    let hits = memory.search(&search("alice", "Lisbon")).await.unwrap();
    assert!(hits.iter().all(|h| !h.text.contains("Lisbon")));
}

#[tokio::test]
async fn another_users_note_behaves_like_a_missing_one() {
    let (_dir, memory) = fresh().await;
    let mut secret = NewNote::new("Bob's door code is 4711");
    secret.key = Some("door".into());
    let bob = memory.save_note("bob", &secret).await.unwrap();
    let before = index_rows(&memory, "door").await;

    // Search: nothing of Bob's, whatever Alice asks.
    for query in ["door code", "4711", "Bob", "code door 4711 bob"] {
        assert!(
            memory
                .search(&search("alice", query))
                .await
                .unwrap()
                .is_empty(),
            "{query}"
        );
    }
    // Update and delete: the same error as for an id that never existed, nothing changed.
    let err = memory
        .update_note("alice", &bob.note_id, "hijacked", None)
        .await
        .unwrap_err();
    let missing = memory
        .update_note("alice", "note-does-not-exist", "hijacked", None)
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::NoteNotFound(_)));
    assert_eq!(
        err.to_string().replace(&bob.note_id, "ID"),
        missing.to_string().replace("note-does-not-exist", "ID")
    );
    assert!(matches!(
        memory.delete_note("alice", &bob.note_id).await,
        Err(MemoryError::NoteNotFound(_))
    ));
    assert!(matches!(
        memory.note("alice", &bob.note_id).await,
        Err(MemoryError::NoteNotFound(_))
    ));
    // Key upsert: Alice's save under Bob's key makes a new note for Alice.
    let alice = memory.save_note("alice", &secret).await.unwrap();
    assert_ne!(alice.note_id, bob.note_id);
    assert!(alice.created);

    let bobs = memory.notes("bob").await.unwrap();
    assert_eq!(bobs.len(), 1);
    assert_eq!(bobs[0].content, "Bob's door code is 4711");
    assert_eq!(index_rows(&memory, "door").await.0, before.0 + 1);
    // Bob still finds only his own.
    let hits = memory.search(&search("bob", "door code")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].note_id.as_deref(), Some(bob.note_id.as_str()));
}

#[tokio::test]
async fn tags_filter_search() {
    let (_dir, memory) = fresh().await;
    let mut tea = NewNote::new("likes green tea");
    tea.tags = vec!["food".into()];
    memory.save_note("u", &tea).await.unwrap();
    memory
        .save_note("u", &NewNote::new("green car"))
        .await
        .unwrap();
    let mut request = search("u", "green");
    request.tags = vec!["food".into()];
    let hits = memory.search(&request).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].text, "likes green tea");
    assert_eq!(hits[0].tags.as_deref(), Some(&["food".to_string()][..]));
}

#[tokio::test]
async fn bad_note_input_is_refused_and_changes_nothing() {
    let (_dir, memory) = fresh().await;
    let kept = memory
        .save_note("u", &NewNote::new("original"))
        .await
        .unwrap();
    let huge = "x".repeat(70_000);
    let cases: Vec<(&str, MemoryError)> = vec![
        (
            "empty",
            memory
                .save_note("u", &NewNote::new("  \n "))
                .await
                .unwrap_err(),
        ),
        (
            "huge",
            memory
                .save_note("u", &NewNote::new(huge.clone()))
                .await
                .unwrap_err(),
        ),
        (
            "no user",
            memory.save_note("", &NewNote::new("x")).await.unwrap_err(),
        ),
        (
            "bad tag",
            memory
                .save_note(
                    "u",
                    &NewNote {
                        content: "x".into(),
                        tags: vec![" ".into()],
                        ..Default::default()
                    },
                )
                .await
                .unwrap_err(),
        ),
        (
            "empty update",
            memory
                .update_note("u", &kept.note_id, "", None)
                .await
                .unwrap_err(),
        ),
        (
            "huge update",
            memory
                .update_note("u", &kept.note_id, &huge, None)
                .await
                .unwrap_err(),
        ),
    ];
    for (name, err) in &cases {
        assert!(!err.to_string().is_empty(), "{name}");
    }
    assert!(
        cases[1].1.to_string().contains("max_text_bytes"),
        "{}",
        cases[1].1
    );
    assert_eq!(count(&memory, "SELECT count(*) FROM notes").await, 1);
    assert_eq!(
        memory.note("u", &kept.note_id).await.unwrap().content,
        "original"
    );
}

#[tokio::test]
async fn search_rejects_bad_requests() {
    let (_dir, memory) = fresh().await;
    assert!(matches!(
        memory.search(&search("u", "   ")).await,
        Err(MemoryError::Input(_))
    ));
    let mut request = search("u", "tea");
    request.top_k = Some(21);
    let err = memory.search(&request).await.unwrap_err();
    assert!(err.to_string().contains("top_k"), "{err}");
    request.top_k = Some(0);
    assert!(memory.search(&request).await.is_err());
}

/// `memory.max_notes_per_user`: exactly the limit is kept, one more new note is refused as
/// a conflict naming the limit with nothing changed, while replacing by key, updating,
/// superseding and deleting still work, and other users are not affected.
#[tokio::test]
async fn notes_per_user_are_capped_at_the_limit() {
    use nightshift::error::{ErrorKind, Kind};
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.memory.max_notes_per_user = 3;
    config.validate().unwrap();
    let memory = nightshift::app::open_memory(&config).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..3 {
        let mut note = NewNote::new(format!("note number {i}"));
        note.key = (i == 0).then(|| "first".to_string());
        ids.push(memory.save_note("alice", &note).await.unwrap().note_id);
    }
    let before = (
        count(&memory, "SELECT count(*) FROM notes").await,
        count(&memory, "SELECT count(*) FROM chunks").await,
    );

    let err = memory
        .save_note("alice", &NewNote::new("one note too many"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, MemoryError::TooManyNotes { limit: 3, .. }),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::Conflict);
    let text = err.to_string();
    assert!(
        text.contains("alice")
            && text.contains("3 notes")
            && text.contains("memory.max_notes_per_user"),
        "{text}"
    );
    assert_eq!(
        (
            count(&memory, "SELECT count(*) FROM notes").await,
            count(&memory, "SELECT count(*) FROM chunks").await,
        ),
        before,
        "nothing was stored"
    );
    let hits = memory.search(&search("alice", "too many")).await.unwrap();
    assert!(hits.iter().all(|h| !h.text.contains("too many")));

    // At the limit, what does not add a note still works.
    let mut keyed = NewNote::new("note number 0, replaced by its key");
    keyed.key = Some("first".into());
    let replaced = memory.save_note("alice", &keyed).await.unwrap();
    assert_eq!(
        (replaced.note_id.as_str(), replaced.created),
        (ids[0].as_str(), false)
    );
    memory
        .update_note("alice", &ids[1], "note number 1, updated", None)
        .await
        .unwrap();
    // A changed fact supersedes its note: the old version is history, not counted.
    memory
        .supersede_note("alice", &ids[2], &NewNote::new("note number 2, superseded"))
        .await
        .unwrap();
    assert_eq!(memory.notes("alice").await.unwrap().len(), 3);
    // Another user has their own allowance.
    memory
        .save_note("bob", &NewNote::new("bob's first note"))
        .await
        .unwrap();
    // A deleted note makes room for one more.
    memory.delete_note("alice", &ids[1]).await.unwrap();
    memory
        .save_note("alice", &NewNote::new("room again"))
        .await
        .unwrap();
    assert!(memory
        .save_note("alice", &NewNote::new("and over again"))
        .await
        .is_err());
    keyword_integrity(&memory).await;
}
