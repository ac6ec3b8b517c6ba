//! Whose turn answers a question: a speaker the query names, the user's own turn for a
//! question in the first person, and what a turn borrows from the turns beside it.

mod common;

use common::{config_in, count, fresh, memory_with, search_request as request};
use nightshift::app::open_memory;
use nightshift::memory::{Memory, NewEvent, Role};

/// Two people of one conversation: Bob's question names Ann and the trip, Ann's answer
/// only the trip. Asked what Ann said, search puts Ann's own turn first because the event
/// names its speaker; with `search.speaker_weight = 0` the keyword match on her name wins.
#[tokio::test]
async fn a_query_naming_a_speaker_prefers_that_speakers_turns() {
    let dir = tempfile::TempDir::new().unwrap();
    let turns = [
        NewEvent::new(
            Role::User,
            "Ann, how was the trip to Lisbon with Ann's sister?",
        )
        .named("Bob"),
        NewEvent::new(Role::User, "The trip to Lisbon was lovely, lots of tiles").named("Ann"),
        NewEvent::new(Role::User, "Unrelated: the boiler needs a service"),
    ];
    let query = "What did Ann say about the trip to Lisbon?";
    let mut first = Vec::new();
    for weight in [0.0, 1.0] {
        let mut config = config_in(&dir);
        config.database.path = dir
            .path()
            .join(format!("w{weight}.db"))
            .display()
            .to_string();
        config.search.speaker_weight = weight;
        let memory = open_memory(&config).await.unwrap();
        memory.append("u", "chat", &turns).await.unwrap();
        let hits = memory
            .search(&request("u", query, Some("chat")))
            .await
            .unwrap();
        first.push(hits[0].name.clone());
        // Another user never sees the turns, named or not.
        assert!(memory
            .search(&request("v", "Ann Lisbon", None))
            .await
            .unwrap()
            .is_empty());
    }
    assert_eq!(first, [Some("Bob".to_string()), Some("Ann".to_string())]);
}

/// A speaker's name is one line of text within 256 bytes: anything else is refused,
/// naming the field, and the batch it came in is not appended.
#[tokio::test]
async fn a_bad_speaker_name_is_refused_and_nothing_is_appended() {
    let (_dir, memory) = fresh().await;
    let too_long = "n".repeat(257);
    for bad in [
        "",
        "   ",
        "Ann\nBob",
        "A\u{0}nn",
        "\u{7}",
        too_long.as_str(),
    ] {
        let batch = [
            NewEvent::new(Role::User, "fine"),
            NewEvent::new(Role::User, "also fine").named(bad),
        ];
        let err = memory.append("u", "chat", &batch).await.unwrap_err();
        assert!(err.to_string().contains("event name"), "{bad:?}: {err}");
    }
    assert_eq!(count(&memory, "SELECT COUNT(*) FROM events").await, 0);
    // Any Unicode within the limit is a name, and it comes back as given.
    let name = "Zoë 张伟 🙂";
    memory
        .append(
            "u",
            "chat",
            &[NewEvent::new(Role::User, "hello").named(name)],
        )
        .await
        .unwrap();
    let events = memory
        .recall(&nightshift::access::Actor::user("u").unwrap(), "chat", 10)
        .await
        .unwrap();
    assert_eq!(events[0].name.as_deref(), Some(name));
}

/// "What is my dog called" is answered by the user's turn, not by the assistant's longer
/// answer that repeats it (the better keyword match): a query in the first person divides
/// the assistant's turns' scores by `1 + speaker_weight`.
#[tokio::test]
async fn a_first_person_query_prefers_the_users_turn_to_the_assistants_echo() {
    let turns = [
        NewEvent::new(
            Role::User,
            "We adopted a beagle called Biscuit. Dinner ideas?",
        ),
        NewEvent::new(
            Role::Assistant,
            "Since Biscuit the beagle keeps you busy: beagle-friendly quick dinners, so \
             Biscuit gets walked and you eat well. Biscuit and other beagles love routine.",
        ),
        // The weakest match, so that min-max normalisation does not zero the user's.
        NewEvent::new(
            Role::User,
            "Where is the biscuit tin? Also the laundry, the bins.",
        ),
    ];
    let mut first = Vec::new();
    for weight in [0.0, 2.0] {
        let (_dir, memory) = memory_with(|c| c.search.speaker_weight = weight).await;
        memory.append("u", "chat", &turns).await.unwrap();
        let hits = memory
            .search(&request(
                "u",
                "what is my beagle Biscuit like",
                Some("chat"),
            ))
            .await
            .unwrap();
        first.push(hits[0].role);
        // Not in the first person: the better match stays first.
        let hits = memory
            .search(&request(
                "u",
                "what is the beagle Biscuit like",
                Some("chat"),
            ))
            .await
            .unwrap();
        assert_eq!(hits[0].role, Some(Role::Assistant));
    }
    assert_eq!(first, [Some(Role::Assistant), Some(Role::User)]);
}

/// In a chat with an assistant, a question about the user is answered by the user's own
/// turns. The user's small talk between two of the assistant's replies that repeat the
/// topic borrows nothing from them, so it does not come before the turn where the user
/// said it (with lending, a reply lends to the turns on both sides of it). Between people,
/// where the turn after a match often holds its answer, the turns still borrow.
#[tokio::test]
async fn in_a_chat_with_an_assistant_the_users_turns_borrow_nothing_from_its_replies() {
    let said = "Before I forget: my sister Maren's wedding is in Porto, so I need \
                flights, a hotel near the river, and a suit that still fits.";
    let reply = "How lovely, your sister Maren's wedding! Tell Maren congratulations. For \
                 a sister's wedding in Porto, book flights early; wedding guests often \
                 stay by the river, and Maren's wedding day will be busy for you.";
    let more = "About the suit for your sister's wedding: have it fitted two weeks before \
                Maren's wedding, and tell the tailor it is for a wedding abroad.";
    let between = "Thanks. Different thing: my spreadsheet keeps showing an error.";
    let chat = |reply_role: Role| {
        let mut turns: Vec<NewEvent> = (0..6)
            .map(|i| {
                let role = if i % 2 == 0 { Role::User } else { reply_role };
                NewEvent::new(
                    role,
                    format!("Unrelated {i}: the bread, the taxes and a bike"),
                )
            })
            .collect();
        turns.extend([
            NewEvent::new(Role::User, said),
            NewEvent::new(reply_role, reply),
            NewEvent::new(Role::User, between),
            NewEvent::new(reply_role, more),
            NewEvent::new(Role::User, "Unrelated: what should I cook tonight?"),
        ]);
        turns
    };
    let query = "What did I tell you about my sister Maren's wedding?";
    // The user's turns among the hits, best first.
    let users_turns = |hits: Vec<nightshift::memory::SearchHit>| -> Vec<String> {
        hits.into_iter()
            .filter(|h| h.text == said || h.text == between)
            .map(|h| h.text)
            .collect()
    };
    // The same conversations in a store that lends (weight 1) and in one that does not.
    let (_lending_dir, lending) = memory_with(|c| c.search.neighbor_weight = 1.0).await;
    let (_alone_dir, alone) = memory_with(|c| c.search.neighbor_weight = 0.0).await;
    for memory in [&lending, &alone] {
        let chat_with_assistant = chat(Role::Assistant);
        memory
            .append("u", "chat", &chat_with_assistant)
            .await
            .unwrap();
        memory
            .append("u", "people", &chat(Role::User))
            .await
            .unwrap();
    }

    // About the user: the small talk scores only what it matches itself, as where
    // nothing is lent, and the turn where the user said it comes first.
    assert_eq!(
        score_of(&lending, "chat", query, between).await,
        score_of(&alone, "chat", query, between).await
    );
    let hits = lending
        .search(&request("u", query, Some("chat")))
        .await
        .unwrap();
    assert_eq!(users_turns(hits), [said, between]);
    // A question not about the user: the turns borrow from the replies as before.
    let not_about_the_user = "Maren's wedding in Porto";
    assert!(
        score_of(&lending, "chat", not_about_the_user, between).await
            > score_of(&alone, "chat", not_about_the_user, between).await
    );
    // The same turns between people: the small talk borrows from the two turns beside it
    // and comes first.
    assert!(
        score_of(&lending, "people", query, between).await
            > score_of(&alone, "people", query, between).await
    );
    let hits = lending
        .search(&request("u", query, Some("people")))
        .await
        .unwrap();
    assert_eq!(users_turns(hits), [between, said]);
}

/// The score of the hit in `session` whose text is `text`, searching for `query`.
async fn score_of(memory: &Memory, session: &str, query: &str, text: &str) -> f64 {
    let hits = memory
        .search(&request("u", query, Some(session)))
        .await
        .unwrap();
    let hit = hits.iter().find(|h| h.text == text);
    hit.unwrap_or_else(|| panic!("{text:?} not among {hits:?}"))
        .score
}
