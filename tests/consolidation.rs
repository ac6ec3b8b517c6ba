//! Rolling summaries, context assembly and the consolidation passes.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use nightshift::access::Actor;
use nightshift::app::open_memory;
use nightshift::consolidate::{Consolidator, Pass};
use nightshift::db::clock::ManualClock;
use nightshift::memory::{
    ContextRequest, Event, ExtractiveSummarizer, Memory, NewEvent, NewNote, Role, SearchRequest,
    SessionKey, Strategy, SummarizeOutcome, Summarizer, SummaryPolicy,
};
use tempfile::TempDir;

async fn setup() -> (TempDir, Memory, Arc<ManualClock>, Consolidator) {
    let dir = TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let app = common::app_with(&config, Some(clock.clone())).await;
    let memory = app.memory().clone();
    let consolidator = app.consolidator(Some("w".into()));
    (dir, memory, clock, consolidator)
}

fn turns(n: usize, words: usize) -> Vec<NewEvent> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            NewEvent::new(
                role,
                format!("turn {i}: {}", "lorem ipsum dolor ".repeat(words)),
            )
        })
        .collect()
}

fn small_policy() -> SummaryPolicy {
    SummaryPolicy {
        budget_tokens: 200,
        max_summary_chars: 100_000,
        ..Default::default()
    }
}

/// Condenses only once both summarizers have read the session (a barrier between reading
/// and writing): on every engine, however fast one of them is, both work from the same
/// state, and the second to write finds it stale.
struct SlowSummarizer(std::sync::Arc<tokio::sync::Barrier>);

#[async_trait]
impl Summarizer for SlowSummarizer {
    async fn condense(
        &self,
        previous: Option<&str>,
        events: &[Event],
    ) -> nightshift::memory::Result<String> {
        tokio::time::timeout(std::time::Duration::from_secs(30), self.0.wait())
            .await
            .expect("the other summarizer never read the session");
        ExtractiveSummarizer::default()
            .condense(previous, events)
            .await
    }
}

#[tokio::test]
async fn two_concurrent_summarizers_one_wins() {
    let (_dir, memory, _, _) = setup().await;
    memory.append("u", "s", &turns(20, 10)).await.unwrap();
    let policy = small_policy();
    let key = SessionKey::new("u", "s");
    let summarizer = SlowSummarizer(std::sync::Arc::new(tokio::sync::Barrier::new(2)));
    let (a, b) = tokio::join!(
        memory.summarize_session(&key, &policy, &summarizer),
        memory.summarize_session(&key, &policy, &summarizer)
    );
    let outcomes = [a.unwrap(), b.unwrap()];
    let written = outcomes
        .iter()
        .filter(|o| matches!(o, SummarizeOutcome::Written { .. }))
        .count();
    let stale = outcomes
        .iter()
        .filter(|o| matches!(o, SummarizeOutcome::Stale { .. }))
        .count();
    assert_eq!((written, stale), (1, 1), "{outcomes:?}");
    assert_eq!(
        memory
            .read_summary(&Actor::Operator, "s")
            .await
            .unwrap()
            .epoch,
        1
    );
}

/// Summarizes user `u`'s `session` until nothing is left to summarize.
async fn summarize_until_done(memory: &Memory, session: &str, policy: &SummaryPolicy) {
    let key = SessionKey::new("u", session);
    for _ in 0..100 {
        if let SummarizeOutcome::NotNeeded { .. } = memory
            .summarize_session(&key, policy, &ExtractiveSummarizer::default())
            .await
            .unwrap()
        {
            return;
        }
    }
    panic!("summarizing never settled");
}

#[tokio::test]
async fn incremental_summaries_cover_what_a_from_scratch_one_does() {
    let (_dir, memory, _, _) = setup().await;
    let policy = small_policy();
    let all = turns(60, 8);
    // Incrementally: ten turns at a time, summarizing after each batch.
    for batch in all.chunks(10) {
        memory.append("u", "incremental", batch).await.unwrap();
        summarize_until_done(&memory, "incremental", &policy).await;
    }
    // From scratch: everything, then summarize.
    memory.append("u", "scratch", &all).await.unwrap();
    summarize_until_done(&memory, "scratch", &policy).await;

    let a = memory
        .read_summary(&Actor::Operator, "incremental")
        .await
        .unwrap();
    let b = memory
        .read_summary(&Actor::Operator, "scratch")
        .await
        .unwrap();
    let lines = |s: &Option<String>| -> Vec<String> {
        s.as_deref()
            .unwrap()
            .lines()
            .map(|l| l.split("] ").nth(1).unwrap().to_string())
            .collect()
    };
    let covered_a: std::collections::BTreeSet<_> = lines(&a.summary).into_iter().collect();
    let covered_b: std::collections::BTreeSet<_> = lines(&b.summary).into_iter().collect();
    // Each covers its history in order with no gaps; the incremental one covers at least
    // everything the from-scratch one does.
    assert!(
        covered_b.is_subset(&covered_a),
        "incremental summary lost turns"
    );
    assert!(a.upper_sequence >= b.upper_sequence);
    let sequences: Vec<usize> = lines(&a.summary)
        .iter()
        .map(|l| {
            l.split(':')
                .nth(1)
                .unwrap()
                .trim()
                .trim_start_matches("turn ")
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(sequences, (0..sequences.len()).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_summary_cap_keeps_the_newest() {
    let (_dir, memory, _, _) = setup().await;
    let policy = SummaryPolicy {
        budget_tokens: 100,
        max_summary_chars: 600,
        ..Default::default()
    };
    for batch in turns(80, 6).chunks(8) {
        memory.append("u", "s", batch).await.unwrap();
        summarize_until_done(&memory, "s", &policy).await;
    }
    let state = memory.read_summary(&Actor::Operator, "s").await.unwrap();
    let summary = state.summary.unwrap();
    assert!(summary.chars().count() <= 600);
    assert!(!summary.contains("turn 0:"), "the oldest line is gone");
    let last = summary.lines().last().unwrap();
    let upper_turn = state.upper_sequence - 1;
    assert!(
        last.contains(&format!("turn {upper_turn}:")),
        "newest line kept: {last}"
    );
}

fn note_texts(notes: &[nightshift::memory::Note]) -> Vec<String> {
    let mut texts: Vec<String> = notes.iter().map(|n| n.content.clone()).collect();
    texts.sort();
    texts
}

#[tokio::test]
async fn facts_are_extracted_from_user_and_tool_turns_only() {
    let (_dir, memory, _, consolidator) = setup().await;
    memory
        .append(
            "alice",
            "chat",
            &[
                NewEvent::new(
                    Role::User,
                    "Hi! I prefer green tea in the morning. What's on today?",
                ),
                NewEvent::new(
                    Role::Assistant,
                    "I like coffee myself. My name is Assistant.",
                ),
                NewEvent::new(
                    Role::User,
                    "We decided to use Postgres for billing, and I usually cycle to work",
                ),
                NewEvent::new(Role::Tool, "profile lookup: My birthday is 4 May"),
            ],
        )
        .await
        .unwrap();
    let reports = consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    assert_eq!(reports[0].status, "succeeded");
    assert_eq!(reports[0].counts["facts_saved"], 4);
    let notes = memory.notes("alice").await.unwrap();
    assert_eq!(
        note_texts(&notes),
        [
            "I prefer green tea in the morning",
            "I usually cycle to work",
            "My birthday is 4 May",
            "We decided to use Postgres for billing"
        ]
    );
    assert!(notes
        .iter()
        .all(|n| n.source == "consolidation" && n.fact_key.is_some()));
    let categories: std::collections::BTreeSet<_> =
        notes.iter().map(|n| n.category.clone().unwrap()).collect();
    assert_eq!(
        categories.into_iter().collect::<Vec<_>>(),
        ["decision", "habit", "preference", "profile"]
    );
}

#[tokio::test]
async fn dedupe_supersede_and_tombstones() {
    let (_dir, memory, clock, consolidator) = setup().await;
    memory
        .save_note("alice", &NewNote::new("I prefer window seats"))
        .await
        .unwrap();
    memory
        .append(
            "alice",
            "a",
            &[NewEvent::new(
                Role::User,
                "I live in Lisbon. I prefer window seats.",
            )],
        )
        .await
        .unwrap();
    memory
        .append(
            "alice",
            "b",
            &[NewEvent::new(Role::User, "i live in   lisbon")],
        )
        .await
        .unwrap();
    consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    let notes = memory.notes("alice").await.unwrap();
    assert_eq!(
        note_texts(&notes),
        ["I live in Lisbon", "I prefer window seats"],
        "no duplicates"
    );

    // A changed fact supersedes the old one, which stays as history.
    clock.advance_ms(60_000);
    memory
        .append(
            "alice",
            "c",
            &[NewEvent::new(Role::User, "Big news: I moved to Porto")],
        )
        .await
        .unwrap();
    let report = consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    assert_eq!(report[0].counts["superseded"], 1);
    let notes = memory.notes("alice").await.unwrap();
    assert_eq!(
        note_texts(&notes),
        ["I moved to Porto", "I prefer window seats"]
    );
    let conn = memory.db().conn().await.unwrap();
    let history: i64 = nightshift::db::query_scalar(
        &conn,
        "SELECT count(*) FROM notes WHERE content = 'I live in Lisbon' AND superseded_by IS NOT NULL",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(history, 1);
    let hits = memory
        .search(&SearchRequest {
            user_id: "alice".into(),
            query: "where does alice live Lisbon".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(
        hits.iter().all(|h| !h.text.contains("Lisbon")),
        "superseded facts leave search: {hits:?}"
    );

    // A fact the user deleted is not learned again.
    let porto = notes.iter().find(|n| n.content.contains("Porto")).unwrap();
    memory.delete_note("alice", &porto.note_id).await.unwrap();
    memory
        .append(
            "alice",
            "d",
            &[NewEvent::new(Role::User, "I moved to Porto")],
        )
        .await
        .unwrap();
    let report = consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    assert_eq!(report[0].counts["tombstoned"], 1);
    assert!(memory
        .notes("alice")
        .await
        .unwrap()
        .iter()
        .all(|n| !n.content.contains("Porto")));
}

#[tokio::test]
async fn retention_expires_facts_and_idle_conversations() {
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.consolidation.fact_retention_days = 1;
    config.consolidation.conversation_retention_days = 30;
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let app = common::app_with(&config, Some(clock.clone())).await;
    let memory = app.memory().clone();
    let consolidator = app.consolidator(None);
    memory
        .append("u", "old", &[NewEvent::new(Role::User, "I hate olives")])
        .await
        .unwrap();
    memory
        .save_note("u", &NewNote::new("kept forever"))
        .await
        .unwrap();
    consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    assert_eq!(memory.notes("u").await.unwrap().len(), 2);

    clock.advance_ms(2 * 86_400_000);
    let report = consolidator.run(&[Pass::Expiry], None, None).await.unwrap();
    assert_eq!(report[0].counts["notes_expired"], 1);
    assert_eq!(
        note_texts(&memory.notes("u").await.unwrap()),
        ["kept forever"]
    );
    assert!(
        memory.recall(&Actor::Operator, "old", 5).await.is_ok(),
        "conversation kept within 30 days"
    );

    clock.advance_ms(31 * 86_400_000);
    memory
        .append("u", "fresh", &[NewEvent::new(Role::User, "hello")])
        .await
        .unwrap();
    consolidator.run(&[Pass::Expiry], None, None).await.unwrap();
    assert!(
        memory.recall(&Actor::Operator, "old", 5).await.is_err(),
        "idle conversation removed"
    );
    assert!(memory.recall(&Actor::Operator, "fresh", 5).await.is_ok());
    common::keyword_integrity(&memory).await;
}

#[tokio::test]
async fn running_consolidation_twice_changes_nothing_the_second_time() {
    let (_dir, memory, _, consolidator) = setup().await;
    for s in 0..5 {
        let mut events = turns(30, 10);
        events.push(NewEvent::new(
            Role::User,
            format!("I always water plant number {s} on Fridays"),
        ));
        memory.append("u", &format!("s{s}"), &events).await.unwrap();
    }
    let first = consolidator.run(&Pass::ALL, None, None).await.unwrap();
    assert!(first.iter().all(|r| r.status == "succeeded"), "{first:?}");
    let notes_after_first = memory.notes("u").await.unwrap();
    let summaries_first: Vec<_> = futures_summaries(&memory, 5).await;

    let second = consolidator.run(&Pass::ALL, None, None).await.unwrap();
    let by_pass = |pass: &str| {
        second
            .iter()
            .find(|r| r.pass == pass)
            .unwrap()
            .counts
            .clone()
    };
    assert_eq!(by_pass("facts").get("facts_saved"), None);
    assert_eq!(by_pass("summaries").get("summarized"), None);
    assert_eq!(memory.notes("u").await.unwrap(), notes_after_first);
    assert_eq!(futures_summaries(&memory, 5).await, summaries_first);

    let status = consolidator.status(100).await.unwrap();
    assert_eq!(status.len(), 2 * Pass::ALL.len());
}

async fn futures_summaries(memory: &Memory, n: usize) -> Vec<(i64, Option<String>)> {
    let mut out = Vec::new();
    for s in 0..n {
        let state = memory
            .read_summary(&Actor::Operator, &format!("s{s}"))
            .await
            .unwrap();
        out.push((state.epoch, state.summary));
    }
    out
}

#[tokio::test]
async fn a_pass_cut_short_is_finished_by_the_next() {
    let (_dir, memory, _, consolidator) = setup().await;
    for (s, thing) in [
        "green tea",
        "night trains",
        "jazz records",
        "early mornings",
    ]
    .iter()
    .enumerate()
    {
        memory
            .append(
                "u",
                &format!("s{s}"),
                &[NewEvent::new(Role::User, format!("I prefer {thing}"))],
            )
            .await
            .unwrap();
    }
    // "Crash" after the first session: the pass future is dropped mid-way.
    let first_done = Arc::new(tokio::sync::Notify::new());
    let signal = first_done.clone();
    let progress: nightshift::consolidate::Progress = Arc::new(move |_, done, _| {
        if done == 1 {
            signal.notify_one();
        }
    });
    tokio::select! {
        _ = consolidator.run(&[Pass::Facts], None, Some(progress)) => panic!("should have been cut short"),
        _ = first_done.notified() => {}
    }
    common::keyword_integrity(&memory).await;
    let partial = memory.notes("u").await.unwrap().len();
    assert!((1..4).contains(&partial), "{partial}");
    // Stopped means stopped: nothing of the pass goes on writing beside the next one.
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        memory.notes("u").await.unwrap().len(),
        partial,
        "the cut pass ran on"
    );

    consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    let notes = memory.notes("u").await.unwrap();
    assert_eq!(
        notes.len(),
        4,
        "finished, nothing twice: {:?}",
        note_texts(&notes)
    );
}

#[tokio::test]
async fn context_stays_within_budget_and_within_the_user() {
    let (_dir, memory, _, _) = setup().await;
    memory
        .save_note(
            "bob",
            &NewNote::new("Bob's salary is 90k and his wifi password is hunter2"),
        )
        .await
        .unwrap();
    memory
        .save_note(
            "alice",
            &NewNote::new("Alice's wifi password is correct-horse"),
        )
        .await
        .unwrap();
    let mut events = turns(30, 12);
    let mut salient = NewEvent::new(Role::User, "Remember: the launch is on March 3rd");
    salient.importance = Some(0.9);
    events.insert(2, salient);
    events.push(NewEvent::new(Role::User, "what is the wifi password?"));
    memory.append("alice", "chat", &events).await.unwrap();
    memory
        .summarize_session(
            &SessionKey::new("alice", "chat"),
            &small_policy(),
            &ExtractiveSummarizer::default(),
        )
        .await
        .unwrap();
    // Relevance uses vectors, which the background queue computes after the writes.
    memory.embed_pending(&|_, _| {}).await.unwrap();

    for budget in [1, 10, 50, 300, 2000, 8000] {
        for strategy in [
            Strategy::All,
            Strategy::BufferWindow,
            Strategy::TokenWindow,
            Strategy::SummaryBuffer,
        ] {
            let context = memory
                .context(&ContextRequest {
                    user_id: "alice".into(),
                    session_id: "chat".into(),
                    budget_tokens: Some(budget),
                    query: None,
                    strategy,
                })
                .await
                .unwrap();
            let used: usize = context.items.iter().map(|i| i.tokens).sum();
            assert_eq!(used, context.used_tokens);
            assert!(used <= budget.min(8000), "{strategy:?} {budget}: {used}");
            let text = context.render();
            assert!(
                !text.contains("hunter2") && !text.contains("90k"),
                "another user's memory leaked"
            );
        }
    }
    let full = memory
        .context(&ContextRequest {
            user_id: "alice".into(),
            session_id: "chat".into(),
            budget_tokens: Some(2000),
            query: None,
            strategy: Strategy::All,
        })
        .await
        .unwrap();
    let kinds: std::collections::BTreeSet<_> = full.items.iter().map(|i| i.kind).collect();
    assert!(
        kinds.contains("summary")
            && kinds.contains("recent")
            && kinds.contains("salient")
            && kinds.contains("relevant"),
        "{kinds:?}"
    );
    assert!(full.render().contains("correct-horse"));
    // Another user's session is not found.
    let err = memory
        .context(&ContextRequest {
            user_id: "bob".into(),
            session_id: "chat".into(),
            budget_tokens: None,
            query: None,
            strategy: Strategy::All,
        })
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        nightshift::memory::MemoryError::SessionNotFound(_)
    ));
}

#[tokio::test]
async fn one_worker_per_consolidation_window() {
    let (dir, _memory, _, a) = setup().await;
    let config = common::config_in(&dir);
    let b = common::app_with(&config, None)
        .await
        .consolidator(Some("b".into()));
    let window = 1_800_000_000_000;
    let (x, y) = tokio::join!(
        a.claim_window("consolidation", window, "a"),
        b.claim_window("consolidation", window, "b")
    );
    assert_eq!([x.unwrap(), y.unwrap()].iter().filter(|c| **c).count(), 1);
    assert!(a
        .claim_window("consolidation", window + 86_400_000, "a")
        .await
        .unwrap());
}

#[tokio::test]
async fn with_a_model_facts_and_summaries_come_from_it() {
    use axum::routing::post;
    use axum::{Json, Router};
    use serde_json::{json, Value};
    async fn complete(Json(body): Json<Value>) -> Json<Value> {
        let system = body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let content = if system.contains("JSON") {
            r#"[{"category": "preference", "key": "seat", "content": "Prefers aisle seats on long flights"}]"#.to_string()
        } else {
            "- The user talked about travel plans.".to_string()
        };
        Json(json!({"choices": [{"message": {"role": "assistant", "content": content}}]}))
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            Router::new().route("/v1/chat/completions", post(complete)),
        )
        .await
        .unwrap()
    });

    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.runtime.kind = nightshift::config::RuntimeKind::Openai;
    config.runtime.base_url = format!("http://{addr}/v1");
    config.runtime.model = "m".into();
    config.consolidation.summary_budget_tokens = 100;
    let app = common::app_with(&config, None).await;
    let memory = app.memory().clone();
    let consolidator = app.consolidator(None);
    let mut events = turns(12, 10);
    events.push(NewEvent::new(
        Role::User,
        "On long flights I always take the aisle",
    ));
    memory.append("u", "trip", &events).await.unwrap();
    consolidator
        .run(&[Pass::Summaries, Pass::Facts], None, None)
        .await
        .unwrap();
    let notes = memory.notes("u").await.unwrap();
    assert_eq!(note_texts(&notes), ["Prefers aisle seats on long flights"]);
    assert_eq!(notes[0].fact_key.as_deref(), Some("preference:seat"));
    let summary = memory
        .read_summary(&Actor::Operator, "trip")
        .await
        .unwrap()
        .summary
        .unwrap();
    assert!(summary.contains("travel plans"), "{summary}");
}

#[tokio::test]
async fn snapshots_rotate() {
    if common::postgres::engine_is_postgres() {
        // PostgreSQL is backed up with pg_dump (docs/scaling.md); the snapshot pass says
        // it skipped itself there.
        common::skip::skipped("snapshots are of a local database file; PostgreSQL uses pg_dump");
        return;
    }
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    let snapshots = dir.path().join("snaps");
    config.consolidation.snapshot_dir = Some(snapshots.display().to_string());
    config.consolidation.snapshot_keep = 2;
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let app = common::app_with(&config, Some(clock.clone())).await;
    let memory = app.memory().clone();
    memory
        .save_note("u", &NewNote::new("worth keeping"))
        .await
        .unwrap();
    let consolidator = app.consolidator(None);
    for _ in 0..3 {
        clock.advance_ms(1_000);
        let report = consolidator
            .run(&[Pass::Snapshot], None, None)
            .await
            .unwrap();
        assert_eq!(report[0].status, "succeeded", "{report:?}");
    }
    let mut files: Vec<_> = std::fs::read_dir(&snapshots)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    // A snapshot is a whole database.
    let mut copy = common::config_in(&dir);
    copy.database.path = files[1].display().to_string();
    let restored = open_memory(&copy).await.unwrap();
    assert_eq!(
        restored.notes("u").await.unwrap()[0].content,
        "worth keeping"
    );
}

/// Text whose byte length changes when its case does is read for facts as written, and
/// the pass succeeds.
#[tokio::test]
async fn facts_in_any_unicode_are_kept_as_written() {
    let (_dir, memory, _, consolidator) = setup().await;
    memory
        .append(
            "alice",
            "t2",
            &[NewEvent::new(
                Role::User,
                "Yes I’m sure I live in İstanbul near İzmir",
            )],
        )
        .await
        .unwrap();
    let reports = consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    assert_eq!(reports[0].status, "succeeded", "{:?}", reports[0].error);
    let notes = memory.notes("alice").await.unwrap();
    assert_eq!(note_texts(&notes), ["I live in İstanbul near İzmir"]);
}

/// An extractor that fails on one message: the pass is recorded failed, the passes after
/// it run, the other sessions' facts are kept, and after three tries the message is
/// skipped and reported, so consolidation goes on for good. A pass that panics is
/// recorded failed too.
#[tokio::test]
async fn one_bad_message_never_stops_consolidation_for_good() {
    struct Picky;
    #[async_trait]
    impl nightshift::consolidate::facts::FactExtractor for Picky {
        async fn extract(
            &self,
            text: &str,
            _instructions: Option<&str>,
        ) -> Result<nightshift::consolidate::facts::Extracted, String> {
            if text.contains("poison") {
                return Err("cannot read this one".into());
            }
            if text.contains("explode") {
                panic!("the extractor broke");
            }
            Ok(nightshift::consolidate::facts::Extracted {
                facts: nightshift::consolidate::facts::extract(text),
                usage: Default::default(),
            })
        }
    }
    let (_dir, memory, _, mut consolidator) = setup().await;
    consolidator.extractor = Arc::new(Picky);
    memory
        .append(
            "alice",
            "a-bad",
            &[
                NewEvent::new(Role::User, "I prefer green tea"),
                NewEvent::new(Role::User, "poison pill"),
                NewEvent::new(Role::User, "I usually cycle to work"),
            ],
        )
        .await
        .unwrap();
    memory
        .append(
            "alice",
            "b-good",
            &[NewEvent::new(Role::User, "My name is Ana")],
        )
        .await
        .unwrap();
    for attempt in 1..=2 {
        let reports = consolidator
            .run(&[Pass::Facts, Pass::Expiry], None, None)
            .await
            .unwrap();
        assert_eq!(reports[0].status, "failed", "attempt {attempt}");
        assert!(reports[0]
            .error
            .as_deref()
            .unwrap()
            .contains("cannot read this one"));
        assert_eq!(reports[1].status, "succeeded", "the next pass still runs");
    }
    // Third try: skipped and reported; the pass succeeds and goes past it.
    let reports = consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    assert_eq!(reports[0].status, "succeeded", "{:?}", reports[0].error);
    assert_eq!(reports[0].counts["events_skipped"], 1);
    assert_eq!(
        note_texts(&memory.notes("alice").await.unwrap()),
        [
            "I prefer green tea",
            "I usually cycle to work",
            "My name is Ana"
        ]
    );
    // Nothing left to try: the next pass is quiet.
    let reports = consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    assert_eq!(reports[0].status, "succeeded");
    assert!(reports[0].counts.get("events_skipped").is_none());

    // A pass that panics is recorded failed; the ones after it run, and nothing is left
    // recorded as running.
    memory
        .append(
            "alice",
            "c-boom",
            &[NewEvent::new(Role::User, "explode now")],
        )
        .await
        .unwrap();
    let reports = consolidator
        .run(&[Pass::Facts, Pass::Expiry], None, None)
        .await
        .unwrap();
    assert_eq!(reports[1].status, "succeeded");
    let running = common::count(
        &memory,
        "SELECT count(*) FROM maintenance_runs WHERE status = 'running'",
    )
    .await;
    assert_eq!(running, 0);
}

/// Snapshots carry the database's privacy: 0600 files in a 0700 folder, whatever the
/// process's umask; the database and its WAL are 0600 too.
#[cfg(unix)]
#[tokio::test]
async fn database_files_and_snapshots_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.database.path = dir.path().join("nested/data/n.db").display().to_string();
    let snapshots = dir.path().join("snaps");
    config.consolidation.snapshot_dir = Some(snapshots.display().to_string());
    let app = common::app_with(&config, None).await;
    app.memory()
        .save_note("u", &NewNote::new("private"))
        .await
        .unwrap();
    let reports = app
        .consolidator(None)
        .run(&[Pass::Snapshot], None, None)
        .await
        .unwrap();
    assert_eq!(reports[0].status, "succeeded", "{:?}", reports[0].error);
    assert_eq!(mode(&snapshots), 0o700);
    for entry in std::fs::read_dir(&snapshots).unwrap() {
        assert_eq!(mode(&entry.unwrap().path()), 0o600);
    }
    let db = dir.path().join("nested/data/n.db");
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(db.parent().unwrap()), 0o700);
    let wal = dir.path().join("nested/data/n.db-wal");
    if wal.exists() {
        assert_eq!(mode(&wal), 0o600);
    }
}

/// A user at `memory.max_notes_per_user` does not fail the facts pass: the facts that do
/// not fit are skipped and counted (`facts_over_limit`), the pass succeeds and moves on,
/// and the next pass does not try them again.
#[tokio::test]
async fn facts_beyond_the_notes_limit_are_skipped_and_counted() {
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.memory.max_notes_per_user = 2;
    config.validate().unwrap();
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let app = common::app_with(&config, Some(clock.clone())).await;
    let memory = app.memory().clone();
    let consolidator = app.consolidator(Some("w".into()));
    memory
        .append(
            "alice",
            "chat",
            &[
                NewEvent::new(Role::User, "I prefer green tea in the morning."),
                NewEvent::new(Role::User, "We decided to use Postgres for billing"),
                NewEvent::new(Role::User, "I usually cycle to work"),
                NewEvent::new(Role::Tool, "profile lookup: My birthday is 4 May"),
            ],
        )
        .await
        .unwrap();
    let reports = consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    assert_eq!(reports[0].status, "succeeded", "{:?}", reports[0]);
    assert_eq!(reports[0].counts["facts_saved"], 2);
    assert_eq!(reports[0].counts["facts_over_limit"], 2);
    assert_eq!(memory.notes("alice").await.unwrap().len(), 2);

    // The next pass has nothing left to do and fails nothing.
    let reports = consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    assert_eq!(reports[0].status, "succeeded", "{:?}", reports[0]);
    assert!(reports[0].counts.get("facts_over_limit").is_none());
    assert!(reports[0].counts.get("sessions_failed").is_none());
    assert_eq!(memory.notes("alice").await.unwrap().len(), 2);
}
