//! Conversation sessions: appends, recall, listing, forgetting, JSONL imports.

mod common;

use common::{count, fresh, index_rows, keyword_integrity};
use nightshift::access::Actor;
use nightshift::db::clock::ManualClock;
use nightshift::memory::{MemoryError, NewEvent, Role, SearchRequest, SessionKind};

#[tokio::test]
async fn append_and_recall_in_order_with_importance_by_role() {
    let (_dir, memory) = fresh().await;
    let events = [
        NewEvent::new(Role::System, "You are helpful."),
        NewEvent::new(Role::User, "Remind me to water the plants"),
        NewEvent::new(Role::Assistant, "Sure, when?"),
        NewEvent::new(Role::Tool, "{\"ok\":true}"),
    ];
    let seqs = memory.append("alice", "chat-1", &events).await.unwrap();
    assert_eq!(seqs, [1, 2, 3, 4]);
    let more = memory
        .append("alice", "chat-1", &[NewEvent::new(Role::User, "at six")])
        .await
        .unwrap();
    assert_eq!(more, [5]);

    let all = memory.recall(&Actor::Operator, "chat-1", 50).await.unwrap();
    assert_eq!(
        all.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(
        all.iter().map(|e| e.importance).collect::<Vec<_>>(),
        [0.1, 0.5, 0.5, 0.3, 0.5]
    );
    let last_two = memory
        .recall(&Actor::user("alice").unwrap(), "chat-1", 2)
        .await
        .unwrap();
    assert_eq!(
        last_two
            .iter()
            .map(|e| e.content.as_str())
            .collect::<Vec<_>>(),
        ["{\"ok\":true}", "at six"]
    );
}

#[tokio::test]
async fn concurrent_appends_get_unique_consecutive_sequences() {
    let (_dir, memory) = fresh().await;
    let mut tasks = Vec::new();
    for task in 0..8 {
        let memory = memory.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                memory
                    .append(
                        "u",
                        "busy",
                        &[NewEvent::new(
                            Role::User,
                            format!("task {task} message {i}"),
                        )],
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let events = memory.recall(&Actor::Operator, "busy", 1000).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        (1..=80).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn sessions_are_listed_most_recent_first_and_per_user() {
    let (_dir, memory) = fresh().await;
    let clock = ManualClock::starting_at(1_700_000_000_000);
    let memory = memory.with_clock(clock.clone());
    for s in ["a", "b", "c"] {
        memory
            .append("alice", s, &[NewEvent::new(Role::User, "hi")])
            .await
            .unwrap();
        clock.advance_ms(1_000);
    }
    memory
        .append("alice", "a", &[NewEvent::new(Role::User, "again")])
        .await
        .unwrap();
    memory
        .append("bob", "z", &[NewEvent::new(Role::User, "hi")])
        .await
        .unwrap();
    memory
        .save_note("alice", &nightshift::memory::NewNote::new("a note"))
        .await
        .unwrap();
    let ids: Vec<String> = memory
        .sessions("alice")
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    assert_eq!(
        ids,
        ["a", "c", "b"],
        "most recent first, no memory pseudo-session"
    );
}

#[tokio::test]
async fn sessions_belong_to_one_user() {
    let (_dir, memory) = fresh().await;
    memory
        .append(
            "bob",
            "bobs-chat",
            &[NewEvent::new(Role::User, "my bank pin is 1234")],
        )
        .await
        .unwrap();
    let err = memory
        .append("alice", "bobs-chat", &[NewEvent::new(Role::User, "sneaky")])
        .await
        .unwrap_err();
    assert!(
        matches!(err, MemoryError::SessionOfOtherUser { .. }),
        "{err}"
    );
    assert!(matches!(
        memory
            .recall(&Actor::user("alice").unwrap(), "bobs-chat", 10)
            .await,
        Err(MemoryError::SessionNotFound(_))
    ));
    assert!(matches!(
        memory
            .forget(&Actor::user("alice").unwrap(), "bobs-chat")
            .await,
        Err(MemoryError::SessionNotFound(_))
    ));
    let request = SearchRequest {
        user_id: "alice".into(),
        query: "bank pin".into(),
        session_id: Some("bobs-chat".into()),
        ..Default::default()
    };
    assert!(matches!(
        memory.search(&request).await,
        Err(MemoryError::SessionNotFound(_))
    ));
    assert_eq!(
        memory
            .recall(&Actor::user("bob").unwrap(), "bobs-chat", 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn forget_removes_the_session_and_everything_derived() {
    let (_dir, memory) = fresh().await;
    memory
        .append(
            "u",
            "doomed",
            &[NewEvent::new(Role::User, "the launch codes are purple")],
        )
        .await
        .unwrap();
    memory
        .append(
            "u",
            "kept",
            &[NewEvent::new(Role::User, "purple is my favourite colour")],
        )
        .await
        .unwrap();
    // Chunks (and what the keyword leg finds) at once; vectors once the queue has run.
    assert_eq!(index_rows(&memory, "purple").await, (2, 0, 2));
    assert_eq!(count(&memory, "SELECT count(*) FROM embed_queue").await, 2);
    memory.embed_pending(&|_, _| {}).await.unwrap();
    assert_eq!(index_rows(&memory, "purple").await, (2, 2, 2));
    memory
        .forget(&Actor::user("u").unwrap(), "doomed")
        .await
        .unwrap();
    assert_eq!(index_rows(&memory, "purple").await, (1, 1, 1));
    assert_eq!(count(&memory, "SELECT count(*) FROM events").await, 1);
    assert_eq!(
        count(
            &memory,
            "SELECT count(*) FROM session_state WHERE session_id = 'doomed'"
        )
        .await,
        0
    );
    keyword_integrity(&memory).await;
    assert!(matches!(
        memory.recall(&Actor::Operator, "doomed", 5).await,
        Err(MemoryError::SessionNotFound(_))
    ));
    assert!(matches!(
        memory.forget(&Actor::Operator, "doomed").await,
        Err(MemoryError::SessionNotFound(_))
    ));
}

#[tokio::test]
async fn reserved_sessions_cannot_be_written_or_forgotten_directly() {
    let (_dir, memory) = fresh().await;
    let memory_session = SessionKind::memory_session("u");
    assert!(matches!(
        memory
            .append("u", &memory_session, &[NewEvent::new(Role::User, "x")])
            .await,
        Err(MemoryError::ReservedSession(_))
    ));
    assert!(matches!(
        memory.forget(&Actor::Operator, &memory_session).await,
        Err(MemoryError::ReservedSession(_))
    ));
}

#[tokio::test]
async fn jsonl_import_is_all_or_nothing_with_line_numbers() {
    let (_dir, memory) = fresh().await;
    let good = b"{\"role\":\"user\",\"content\":\"first\"}\n\n{\"role\":\"assistant\",\"content\":\"second\"}\n";
    assert_eq!(memory.append_jsonl("u", "s", good).await.unwrap(), [1, 2]);

    let cases: Vec<(&[u8], usize)> = vec![
        (
            b"{\"role\":\"user\",\"content\":\"ok\"}\n{\"role\":\"user\",\"content\":",
            2,
        ),
        (
            b"{\"role\":\"user\",\"content\":\"ok\"}\n{\"role\":\"robot\",\"content\":\"x\"}",
            2,
        ),
        (
            b"{\"role\":\"user\",\"content\":\"ok\"}\n\n{\"role\":\"user\",\"content\":\"  \"}",
            3,
        ),
        (
            b"{\"role\":\"user\",\"content\":\"ok\"}\n{\"role\":\"user\",\"content\":\"\xff\xfe\"}",
            2,
        ),
        (b"{\"role\":\"user\",\"content\":\"ok\",\"extra\":1}", 1),
    ];
    for (input, line) in cases {
        let err = memory.append_jsonl("u", "s", input).await.unwrap_err();
        assert!(
            err.to_string().starts_with(&format!("line {line}:")),
            "expected line {line}: {err}"
        );
    }
    assert!(memory.append_jsonl("u", "s", b"\n\n").await.is_err());
    assert_eq!(
        memory
            .recall(&Actor::Operator, "s", 100)
            .await
            .unwrap()
            .len(),
        2,
        "nothing half-written"
    );
    assert_eq!(count(&memory, "SELECT count(*) FROM chunks").await, 2);
}

#[tokio::test]
async fn bad_event_input_changes_nothing() {
    let (_dir, memory) = fresh().await;
    let mut bad_importance = NewEvent::new(Role::User, "x");
    bad_importance.importance = Some(1.5);
    let batches = [
        vec![NewEvent::new(Role::User, "")],
        vec![
            NewEvent::new(Role::User, "ok"),
            NewEvent::new(Role::User, "y".repeat(70_000)),
        ],
        vec![bad_importance],
    ];
    for batch in &batches {
        assert!(memory.append("u", "s", batch).await.is_err());
    }
    assert!(memory
        .append("", "s", &[NewEvent::new(Role::User, "x")])
        .await
        .is_err());
    assert!(memory
        .append("u", "", &[NewEvent::new(Role::User, "x")])
        .await
        .is_err());
    assert!("robot".parse::<Role>().is_err());
    assert_eq!(count(&memory, "SELECT count(*) FROM sessions").await, 0);
    assert_eq!(count(&memory, "SELECT count(*) FROM events").await, 0);
}

#[tokio::test]
async fn long_events_are_chunked_but_found_whole() {
    let (_dir, memory) = fresh().await;
    let filler = "The weather report mentioned clouds and mild wind. ".repeat(30);
    let text = format!("{filler} Finally: the zeppelin lands at dawn.");
    memory
        .append("u", "s", &[NewEvent::new(Role::User, text.clone())])
        .await
        .unwrap();
    assert!(count(&memory, "SELECT count(*) FROM chunks").await > 1);
    let hits = memory
        .search(&SearchRequest {
            user_id: "u".into(),
            query: "zeppelin".into(),
            session_id: Some("s".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(hits[0].text, text, "the whole event, not a fragment");
    assert_eq!(hits[0].sequence, Some(1));
    assert_eq!(
        hits.len(),
        1,
        "one hit per event, however many chunks matched"
    );
}

#[tokio::test]
async fn one_callers_failure_never_undoes_anothers_append() {
    let (_dir, memory) = fresh().await;
    memory
        .append("bob", "bobs", &[NewEvent::new(Role::User, "mine")])
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let memory = memory.clone();
        tasks.push(tokio::spawn(async move {
            // Every fourth caller tries Bob's session; they are queued with the others.
            let (user, session) = if i % 4 == 0 {
                ("eve", "bobs")
            } else {
                ("alice", "chat")
            };
            memory
                .append(
                    user,
                    session,
                    &[NewEvent::new(Role::User, format!("event {i}"))],
                )
                .await
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(err) => assert!(
                matches!(err, MemoryError::SessionOfOtherUser { .. }),
                "{err}"
            ),
        }
    }
    assert_eq!(ok, 30);
    assert_eq!(
        memory
            .recall(&Actor::user("alice").unwrap(), "chat", 100)
            .await
            .unwrap()
            .len(),
        30
    );
    assert_eq!(
        memory
            .recall(&Actor::user("bob").unwrap(), "bobs", 100)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(count(&memory, "SELECT count(*) FROM chunks").await, 31);
}
