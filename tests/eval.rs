//! `eval locomo` on a small LoCoMo-format file made here (the real dev set stays in
//! ../shared and is not copied into the project).

mod common;

use nightshift::access::Actor;
use nightshift::eval::locomo::{evaluate, EvalError};
use serde_json::json;

fn fixture() -> String {
    json!([{
        "sample_id": "t1",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat called Pixel last week"},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started learning the violin"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "My sister lives in Oslo"}
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "The violin recital is next Friday", "blip_caption": "a violin on a chair"},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Pixel knocked over my coffee again"}
            ]
        },
        "qa": [
            {"question": "What is the name of Ana's cat?", "evidence": ["D:1:1"], "category": 1},
            {"question": "Which instrument does Ben play?", "evidence": ["D1:2; D2:1"], "category": 4},
            {"question": "Where does Ana's sister live?", "evidence": ["D1:3"], "category": 2},
            {"question": "Adversarial question", "evidence": ["D1:1"], "category": 5},
            {"question": "No evidence at all", "evidence": [], "category": 3}
        ]
    }])
    .to_string()
}

#[tokio::test]
async fn recall_is_measured_through_ingest_and_search() {
    let (_dir, memory) = common::fresh().await;
    let report = evaluate(&memory, &fixture(), &[1, 5]).await.unwrap();
    assert_eq!(
        (
            report.conversations,
            report.turns,
            report.questions,
            report.skipped
        ),
        (1, 5, 3, 1)
    );
    assert_eq!(report.recall[&5], 1.0, "{report:?}");
    assert!(report.recall[&1] > 0.5);
    assert_eq!(
        report.per_category.keys().copied().collect::<Vec<_>>(),
        [1, 2, 4]
    );
    // Turns were stored through the real path, with the speaker and the session's date.
    let events = memory
        .recall(&Actor::user("locomo-t1").unwrap(), "locomo-t1", 10)
        .await
        .unwrap();
    assert_eq!(
        events[0].content,
        "Ana: I adopted a grey cat called Pixel last week"
    );
    assert_eq!(events[0].created_at, 1_683_554_160_000);
    assert!(events[3]
        .content
        .contains("[shares a photo: a violin on a chair]"));
}

#[tokio::test]
async fn malformed_files_are_refused_clearly() {
    let (_dir, memory) = common::fresh().await;
    for (text, needle) in [
        ("not json", "not valid JSON"),
        ("{}", "array"),
        (r#"[{"sample_id": "x"}]"#, "conversation"),
        (
            r#"[{"sample_id": "x", "conversation": {"session_1": [{"speaker": "A"}]}}]"#,
            "dia_id",
        ),
    ] {
        let err = evaluate(&memory, text, &[5]).await.unwrap_err();
        assert!(matches!(err, EvalError::Json(_) | EvalError::Format(_)));
        assert!(err.to_string().contains(needle), "{text}: {err}");
    }
    assert_eq!(
        common::count(&memory, "SELECT count(*) FROM events").await,
        0,
        "nothing half-written"
    );
}

/// A conversation with one turn over `memory.max_text_bytes` (a pasted log): under the
/// default `oversize = "refuse"` the turn is counted as refused and the rest is measured;
/// under `truncate` it is kept as its head and tail, and a question about what the user
/// said before the paste still finds it.
#[tokio::test]
async fn an_oversize_turn_is_refused_and_counted_or_kept_cut() {
    let paste = format!(
        "My favourite tea is a smoky lapsang. The build log follows:\n{}",
        "error: linker failed\n".repeat(5000)
    );
    let file = json!([{
        "sample_id": "t2",
        "conversation": {
            "speaker_a": "user", "speaker_b": "assistant",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "user", "dia_id": "D1:1", "text": paste},
                {"speaker": "assistant", "dia_id": "D1:2", "text": "The linker cannot find libssl."},
                {"speaker": "user", "dia_id": "D1:3", "text": "My sister lives in Oslo"}
            ]
        },
        "qa": [
            {"question": "Which tea does the user like?", "evidence": ["D1:1"], "category": 1},
            {"question": "Where does the user's sister live?", "evidence": ["D1:3"], "category": 1}
        ]
    }])
    .to_string();

    let dir = tempfile::TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.memory.max_text_bytes = 8 * 1024;
    let memory = nightshift::app::open_memory(&config).await.unwrap();
    let report = evaluate(&memory, &file, &[5]).await.unwrap();
    assert_eq!((report.turns, report.refused_turns), (2, 1));
    assert_eq!(report.recall[&5], 0.5, "{report:?}");

    let dir = tempfile::TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.memory.max_text_bytes = 8 * 1024;
    config.memory.oversize = nightshift::config::Oversize::Truncate;
    let memory = nightshift::app::open_memory(&config).await.unwrap();
    let report = evaluate(&memory, &file, &[5]).await.unwrap();
    assert_eq!((report.turns, report.refused_turns), (3, 0));
    assert_eq!(report.recall[&5], 1.0, "{report:?}");
    let events = memory
        .recall(&Actor::user("locomo-t2").unwrap(), "locomo-t2", 10)
        .await
        .unwrap();
    let kept = &events[0].content;
    assert!(kept.len() <= 8 * 1024, "{}", kept.len());
    assert!(kept.contains("smoky lapsang") && kept.contains("bytes cut"));
}
