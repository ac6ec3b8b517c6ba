//! A user's profile in the context an agent is given: their standing facts (the notes
//! with a category the `facts` pass keeps) offered first, in the profile's order, within
//! their share of the budget; a superseded fact replaced by the new one (the old one as of
//! before); another user's, another agent's and uncategorised notes left out.

mod common;

use std::sync::Arc;

use nightshift::db::clock::{Clock, ManualClock};
use nightshift::memory::{ContextRequest, Memory, NewEvent, NewNote, Role, Strategy};
use tempfile::TempDir;

const START: i64 = 1_800_000_000_000;

fn fact(text: &str, category: &str) -> NewNote {
    NewNote {
        category: Some(category.into()),
        source: Some("consolidation".into()),
        ..NewNote::new(text)
    }
}

fn request(budget: usize) -> ContextRequest {
    ContextRequest {
        user_id: "alice".into(),
        session_id: "chat".into(),
        budget_tokens: Some(budget),
        query: Some("what should I cook tonight".into()),
        strategy: Strategy::All,
    }
}

/// The context's profile items' texts, in order.
async fn profile_of(memory: &Memory, request: &ContextRequest, at: Option<i64>) -> Vec<String> {
    let context = match at {
        Some(at) => memory.context_as_of(request, at).await.unwrap(),
        None => memory.context(request).await.unwrap(),
    };
    let first_other = context.items.iter().position(|i| i.kind != "profile");
    let profile: Vec<String> = context
        .items
        .iter()
        .filter(|i| i.kind == "profile")
        .map(|i| i.text.clone())
        .collect();
    assert!(
        first_other.is_none_or(|at| at == profile.len()),
        "the profile comes first: {:?}",
        context.items
    );
    profile
}

#[tokio::test]
async fn the_profile_comes_first_in_its_order_and_as_the_facts_now_stand() {
    let clock = ManualClock::starting_at(START);
    let dir = TempDir::new().unwrap();
    let app = common::app_with(
        &common::config_in(&dir),
        Some(clock.clone() as Arc<dyn Clock>),
    )
    .await;
    let memory = app.memory().clone();
    memory
        .append(
            "alice",
            "chat",
            &[NewEvent::new(Role::User, "what should I cook tonight")],
        )
        .await
        .unwrap();
    let tea = memory
        .save_note("alice", &fact("Alice prefers green tea", "preference"))
        .await
        .unwrap()
        .note_id;
    clock.advance_ms(1_000);
    memory
        .save_note("alice", &fact("Alice runs on Sunday mornings", "habit"))
        .await
        .unwrap();
    memory
        .save_note("alice", &fact("Alice is a nurse in Leeds", "profile"))
        .await
        .unwrap();
    memory
        .save_note("alice", &NewNote::new("Shopping list: eggs, flour"))
        .await
        .unwrap();
    // A category of the user's own is no fact of the profile.
    memory
        .save_note("alice", &fact("Quarterly report due Friday", "work"))
        .await
        .unwrap();
    memory
        .save_note("bob", &fact("Bob is allergic to peanuts", "profile"))
        .await
        .unwrap();
    memory
        .as_agent(Some("chef"))
        .unwrap()
        .save_note("alice", &fact("Alice cooks vegetarian", "preference"))
        .await
        .unwrap();

    let profile = profile_of(&memory, &request(2000), None).await;
    assert_eq!(
        profile,
        [
            "Alice is a nurse in Leeds",
            "Alice prefers green tea",
            "Alice runs on Sunday mornings"
        ]
    );
    let context = memory.context(&request(2000)).await.unwrap();
    assert!(context.render().starts_with("About the user:\n- ["));
    // The chef agent sees its own facts beside the shared ones.
    let chef = memory.as_agent(Some("chef")).unwrap();
    let profile = profile_of(&chef, &request(2000), None).await;
    assert_eq!(profile[1], "Alice cooks vegetarian", "{profile:?}");

    // A fact that changes is replaced: the new one now, the old one as of before.
    let before = clock.now_ms();
    clock.advance_ms(60_000);
    memory
        .supersede_note(
            "alice",
            &tea,
            &fact("Alice has given up tea for coffee", "preference"),
        )
        .await
        .unwrap();
    let now = profile_of(&memory, &request(2000), None).await;
    assert!(now.contains(&"Alice has given up tea for coffee".to_string()));
    assert!(!now.contains(&"Alice prefers green tea".to_string()));
    let then = profile_of(&memory, &request(2000), Some(before)).await;
    assert!(
        then.contains(&"Alice prefers green tea".to_string()),
        "{then:?}"
    );
    assert!(!then.contains(&"Alice has given up tea for coffee".to_string()));

    // The profile takes at most its share of a small budget: what fits, in its order.
    for budget in [1, 12, 40, 100] {
        let context = memory.context(&request(budget)).await.unwrap();
        let profile: usize = context
            .items
            .iter()
            .filter(|i| i.kind == "profile")
            .map(|i| i.tokens)
            .sum();
        assert!(profile <= budget * 15 / 100, "{budget}: {profile}");
        assert!(context.used_tokens <= budget);
    }
    let small = profile_of(&memory, &request(100), None).await;
    assert_eq!(
        small.first().map(String::as_str),
        Some("Alice is a nurse in Leeds")
    );

    // A fact the user just said word for word stays their turn, once.
    memory
        .append(
            "alice",
            "chat",
            &[NewEvent::new(Role::User, "Alice runs on Sunday mornings")],
        )
        .await
        .unwrap();
    let context = memory.context(&request(2000)).await.unwrap();
    let saying: Vec<&str> = context
        .items
        .iter()
        .filter(|i| i.text == "Alice runs on Sunday mornings")
        .map(|i| i.kind)
        .collect();
    assert_eq!(saying, ["recent"], "{:?}", context.items);
    let used: usize = context.items.iter().map(|i| i.tokens).sum();
    assert_eq!(used, context.used_tokens);
    // Other strategies are the conversation's alone.
    for strategy in [
        Strategy::BufferWindow,
        Strategy::TokenWindow,
        Strategy::SummaryBuffer,
    ] {
        let context = memory
            .context(&ContextRequest {
                strategy,
                ..request(2000)
            })
            .await
            .unwrap();
        assert!(context.items.iter().all(|i| i.kind != "profile"));
    }
}
