//! A time named by an event the user told of, not by a date: "which book was I reading
//! before I moved?" reads the turns said before the move first, "after I moved" those
//! said after it; the event is found in the user's own conversation only.

mod common;

use common::{memory_with, search_request as request};
use nightshift::memory::{Memory, NewEvent, Role};

const DAY: i64 = 86_400_000;
const ASKED_AT: i64 = 1_781_708_400_000; // 2026-06-17T15:00:00Z

fn said(text: &str, days_ago: i64) -> NewEvent {
    let mut turn = NewEvent::new(Role::User, text);
    turn.created_at = Some(ASKED_AT - days_ago * DAY);
    turn
}

/// Two books read three months apart, a move between them, and small talk around each
/// (three turns apart, so that no turn lends another its score).
fn conversation() -> Vec<NewEvent> {
    let mut turns = Vec::new();
    for (text, days_ago) in [
        ("I'm reading Piranesi, a strange little book.", 90),
        (
            "We finally moved into the new flat across town this weekend.",
            60,
        ),
        ("I'm reading The Overstory, a long green book.", 30),
    ] {
        turns.push(said(text, days_ago));
        for filler in [
            "Bread and tax again",
            "Rain on the bins",
            "The post came late",
        ] {
            turns.push(said(filler, days_ago));
        }
    }
    turns
}

async fn first_hit(memory: &Memory, user: &str, query: &str) -> String {
    let mut asked = request(user, query, Some("chat"));
    asked.asked_at = Some(ASKED_AT);
    let hits = memory.search(&asked).await.unwrap();
    assert!(!hits.is_empty(), "{query}");
    hits[0].text.clone()
}

#[tokio::test]
async fn what_was_said_before_or_after_an_event_the_user_told_of_comes_first() {
    let (_dir, memory) = memory_with(|_| {}).await;
    memory.append("u", "chat", &conversation()).await.unwrap();
    let before = first_hit(&memory, "u", "Which book was I reading before I moved?").await;
    assert!(before.contains("Piranesi"), "{before}");
    let after = first_hit(&memory, "u", "After we moved, which book was I reading?").await;
    assert!(after.contains("Overstory"), "{after}");
    // Without the time preference (`time_weight = 0`) no event is read: the move itself
    // matches the whole question best.
    let (_dir, plain) = memory_with(|c| c.search.time_weight = 0.0).await;
    plain.append("u", "chat", &conversation()).await.unwrap();
    let first = first_hit(&plain, "u", "Which book was I reading before I moved?").await;
    assert!(first.contains("moved"), "{first}");
}

/// Context assembly searches by the user's last turn, the question itself, which names the
/// event word for word: that turn is not where the event was told. Nor is an event that
/// shares no word with anything said: the nearest vector is no event.
#[tokio::test]
async fn the_question_itself_and_unknown_events_name_no_time() {
    let (_dir, memory) = memory_with(|_| {}).await;
    // Were the question read as the event, nothing would be after it, and the move
    // would come first (as in the test above).
    let question = "After we moved, which book was I reading?";
    let mut turns = conversation();
    turns.push(said(question, 0));
    memory.append("u", "chat", &turns).await.unwrap();
    let mut asked = request("u", question, Some("chat"));
    asked.asked_at = Some(ASKED_AT);
    let hits = memory.search(&asked).await.unwrap();
    // The question matches itself best; after it, what it asks for.
    let first = hits.iter().find(|hit| hit.text != question).unwrap();
    assert!(first.text.contains("Overstory"), "{hits:?}");

    let (_dir, plain) = memory_with(|c| c.search.time_weight = 0.0).await;
    plain.append("u", "chat", &conversation()).await.unwrap();
    memory.append("w", "chat", &conversation()).await.unwrap();
    let unknown = "Which book was I reading before I got married?";
    assert_eq!(
        first_hit(&memory, "w", unknown).await,
        first_hit(&plain, "u", unknown).await
    );
}

/// A date in the query is read before an event: "thirty days ago" is when the newer book
/// was said, though "before I moved" would prefer the older one.
#[tokio::test]
async fn a_date_wins_over_an_event() {
    let (_dir, memory) = memory_with(|_| {}).await;
    memory.append("u", "chat", &conversation()).await.unwrap();
    let mut asked = request(
        "u",
        "Which book was I reading 30 days ago, before I moved?",
        Some("chat"),
    );
    asked.asked_at = Some(ASKED_AT);
    let hits: Vec<String> = memory
        .search(&asked)
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.text)
        .collect();
    let place = |book: &str| hits.iter().position(|text| text.contains(book));
    assert!(place("Overstory").is_some(), "{hits:?}");
    assert!(place("Overstory") < place("Piranesi"), "{hits:?}");
}

/// Another user's move, said before either book, is not the user's: were it read, "before
/// I moved" would find nothing of the user's before it and the newer book would come
/// first. Nor does another user's search learn of the user's turns.
#[tokio::test]
async fn an_event_is_read_from_the_users_own_conversation_only() {
    let (_dir, memory) = memory_with(|_| {}).await;
    memory.append("u", "chat", &conversation()).await.unwrap();
    let mut theirs = vec![said(
        "We finally moved into the new flat across town this weekend.",
        120,
    )];
    theirs.extend(
        ["Bread and tax again", "Rain on the bins"]
            .iter()
            .map(|t| said(t, 120)),
    );
    memory.append("v", "chat", &theirs).await.unwrap();
    let before = first_hit(&memory, "u", "Which book was I reading before I moved?").await;
    assert!(before.contains("Piranesi"), "{before}");
    let mut asked = request(
        "v",
        "Which book was I reading before I moved?",
        Some("chat"),
    );
    asked.asked_at = Some(ASKED_AT);
    for hit in memory.search(&asked).await.unwrap() {
        assert!(!hit.text.contains("book"), "another user's turn: {hit:?}");
    }
}

/// Cues with nothing after them, events that name nothing said, cues over and over: each
/// is an answer, never an error, and changes nothing.
#[tokio::test]
async fn any_event_a_user_names_is_a_safe_query() {
    let (_dir, memory) = memory_with(|_| {}).await;
    memory.append("u", "chat", &conversation()).await.unwrap();
    for query in [
        "before I",
        "before I moved?",
        "after we",
        "before I before I before I",
        "what before I \"; DROP TABLE events; --",
        "books after my 💥 NEAR(x",
        "until our *",
        "till I (",
    ] {
        let mut asked = request("u", query, Some("chat"));
        asked.asked_at = Some(ASKED_AT);
        let result = memory.search(&asked).await;
        assert!(result.is_ok(), "{query:?}: {result:?}");
        // The same without a session: no conversation, no event.
        assert!(memory.search(&request("u", query, None)).await.is_ok());
    }
    assert_eq!(
        common::count(&memory, "SELECT count(*) FROM events").await,
        12
    );
}
