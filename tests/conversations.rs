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

/// A session id names a session of one user: the same id under another user is another
/// session, written, read, searched and forgotten on its own, and nothing a user is
/// answered tells that the id is used by someone else (before this, appending to another
/// user's id was refused as "in use by another user").
#[tokio::test]
async fn sessions_belong_to_their_user() {
    let (_dir, memory) = fresh().await;
    let (alice, bob) = (Actor::user("alice").unwrap(), Actor::user("bob").unwrap());
    memory
        .append(
            "bob",
            "chat-1",
            &[NewEvent::new(Role::User, "my bank pin is 1234")],
        )
        .await
        .unwrap();
    // Before alice has one, bob's id is unknown to her, as any unknown id is.
    for err in [
        memory.recall(&alice, "chat-1", 10).await.unwrap_err(),
        memory.read_summary(&alice, "chat-1").await.unwrap_err(),
        memory.forget(&alice, "chat-1").await.unwrap_err(),
    ] {
        assert!(matches!(err, MemoryError::SessionNotFound(_)), "{err}");
    }
    let request = |user: &str| SearchRequest {
        user_id: user.into(),
        query: "bank pin".into(),
        session_id: Some("chat-1".into()),
        ..Default::default()
    };
    assert!(matches!(
        memory.search(&request("alice")).await,
        Err(MemoryError::SessionNotFound(_))
    ));
    // Appending under the same id makes alice's own session, from sequence 1.
    let sequences = memory
        .append(
            "alice",
            "chat-1",
            &[NewEvent::new(Role::User, "my bank is the blue one")],
        )
        .await
        .unwrap();
    assert_eq!(sequences, [1]);
    let texts = |events: Vec<nightshift::memory::Event>| {
        events.into_iter().map(|e| e.content).collect::<Vec<_>>()
    };
    assert_eq!(
        texts(memory.recall(&alice, "chat-1", 10).await.unwrap()),
        ["my bank is the blue one"]
    );
    assert_eq!(
        texts(memory.recall(&bob, "chat-1", 10).await.unwrap()),
        ["my bank pin is 1234"]
    );
    for (user, session) in [("alice", "chat-1"), ("bob", "chat-1")] {
        let listed = memory.sessions(user).await.unwrap();
        assert_eq!(listed.len(), 1, "{user}");
        assert_eq!(
            (listed[0].session_id.as_str(), listed[0].user_id.as_str()),
            (session, user)
        );
        assert_eq!(listed[0].last_sequence, 1);
    }
    let hits = memory.search(&request("alice")).await.unwrap();
    assert!(
        hits.iter().all(|h| !h.text.contains("1234")),
        "bob's words in alice's search: {hits:?}"
    );
    assert!(hits.iter().any(|h| h.text.contains("blue")), "{hits:?}");
    assert!(hits
        .iter()
        .all(|h| h.session_id.as_deref().is_none_or(|s| s == "chat-1")));
    // The operator names one of them with its user; the id alone is ambiguous.
    let err = memory
        .recall(&Actor::Operator, "chat-1", 10)
        .await
        .unwrap_err();
    assert!(
        matches!(err, MemoryError::SessionAmbiguous { users: 2, .. }),
        "{err}"
    );
    // Forgetting alice's leaves bob's whole.
    memory.forget(&alice, "chat-1").await.unwrap();
    assert!(matches!(
        memory.recall(&alice, "chat-1", 10).await,
        Err(MemoryError::SessionNotFound(_))
    ));
    assert_eq!(
        texts(memory.recall(&bob, "chat-1", 10).await.unwrap()),
        ["my bank pin is 1234"]
    );
    assert_eq!(
        texts(memory.recall(&Actor::Operator, "chat-1", 10).await.unwrap()),
        ["my bank pin is 1234"],
        "one user left with the id: the operator's id alone names it"
    );
    keyword_integrity(&memory).await;
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
            "SELECT count(*) FROM session_state WHERE session_id = 'u\u{1f}doomed'"
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

/// No user appends to a reserved id: a user's notes session (`memory:…`), an agent's
/// (`memory@…`), or a schedule's transcripts (`scheduled:…`, written by its runs only;
/// before, anyone could append there). Refused alike for the id's own user and any
/// other, whether the session exists or not, through either append, and nothing is
/// written.
#[tokio::test]
async fn no_user_appends_to_a_reserved_session() {
    let (_dir, memory) = fresh().await;
    memory
        .save_note("u", &nightshift::memory::NewNote::new("a note"))
        .await
        .unwrap();
    memory
        .as_agent(Some("helper"))
        .unwrap()
        .save_note("u", &nightshift::memory::NewNote::new("an agent's note"))
        .await
        .unwrap();
    memory
        .append_transcript(
            "u",
            &SessionKind::scheduled_session("sch-1"),
            &[NewEvent::new(Role::User, "the run's goal")],
        )
        .await
        .unwrap();
    let events_before = count(&memory, "SELECT count(*) FROM events").await;
    let sessions_before = count(&memory, "SELECT count(*) FROM sessions").await;
    let reserved = [
        SessionKind::memory_session("u"),
        SessionKind::memory_session("other"),
        SessionKind::notes_session("u", Some("helper")),
        SessionKind::notes_session("other", Some("helper")),
        "memory@anything".to_string(),
        SessionKind::scheduled_session("sch-1"),
        SessionKind::scheduled_session("sch-unknown"),
        "scheduled:".to_string(),
    ];
    for session in &reserved {
        for user in ["u", "other"] {
            let err = memory
                .append(user, session, &[NewEvent::new(Role::User, "squat")])
                .await
                .unwrap_err();
            assert!(
                matches!(err, MemoryError::ReservedSession(_)),
                "{user} {session}: {err}"
            );
            let line = br#"{"role":"user","content":"squat"}"#;
            let err = memory.append_jsonl(user, session, line).await.unwrap_err();
            assert!(
                matches!(err, MemoryError::ReservedSession(_)),
                "{user} {session}: {err}"
            );
        }
    }
    assert_eq!(
        count(&memory, "SELECT count(*) FROM events").await,
        events_before
    );
    assert_eq!(
        count(&memory, "SELECT count(*) FROM sessions").await,
        sessions_before
    );
    // The scheduler's own door takes a schedule's transcripts only.
    assert!(memory
        .append_transcript("u", "chat", &[NewEvent::new(Role::User, "x")])
        .await
        .is_err());
    assert!(memory
        .append_transcript(
            "u",
            &SessionKind::memory_session("u"),
            &[NewEvent::new(Role::User, "x")]
        )
        .await
        .is_err());
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
    // A broken row (a session key with another user in it: no write makes one) fails
    // the appends to it inside the writer, where they share a commit with the others.
    memory
        .db()
        .conn()
        .await
        .unwrap()
        .execute(
            "INSERT INTO sessions (session_id, user_id, kind, created_at, updated_at)
             VALUES ('eve\u{1f}bobs', 'mallory', 'conversation', 1, 1)",
            (),
        )
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let memory = memory.clone();
        tasks.push(tokio::spawn(async move {
            // Every fourth caller appends to the broken session; they are queued with
            // the others.
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
            Err(err) => assert!(matches!(err, MemoryError::Db(_)), "{err}"),
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
