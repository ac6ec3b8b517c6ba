//! `eval locomo` on a small LoCoMo-format file made here (the real dev set stays in
//! ../shared and is not copied into the project), and `eval chats` on a small chats file.

mod common;

use nightshift::access::Actor;
use nightshift::eval::locomo::evaluate;
use nightshift::eval::{chats, EvalError};
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
        report.per_category.keys().cloned().collect::<Vec<_>>(),
        ["1", "2", "4"]
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

fn chats_fixture() -> serde_json::Value {
    json!({
        "format": "nightshift-chats", "version": 1, "seed": 1,
        "chats": [{
            "id": "c1",
            "sessions": [
                {"date": "2026-03-02T09:15:00Z", "turns": [
                    {"id": "S1:1", "role": "user", "text": "Can you plan a week of dinners? We adopted a beagle called Biscuit, so I have little time."},
                    {"id": "S1:2", "role": "assistant", "text": "Since Biscuit keeps you busy, here are quick dinners: a lentil soup, a tray bake, a stir fry."}
                ]},
                {"date": "2026-03-20T18:00:00Z", "turns": [
                    {"id": "S2:1", "role": "user", "text": "From now on, please give every measurement in metric units."},
                    {"id": "S2:2", "role": "assistant", "text": "Understood: grams, litres and degrees Celsius from here on."}
                ]}
            ],
            "questions": [
                {"question": "What is my beagle called?", "kind": "fact", "evidence": ["S1:1"], "asked_at": "2026-04-01T10:00:00Z"},
                {"question": "Which units should measurements be in?", "kind": "instruction", "evidence": ["S2:1"], "asked_at": "2026-04-01T10:00:00Z"},
                {"question": "No evidence", "kind": "order", "evidence": [], "asked_at": "2026-04-01T10:00:00Z"}
            ]
        }]
    })
}

#[tokio::test]
async fn chats_are_stored_with_their_roles_and_times_and_scored_by_kind() {
    let (_dir, memory) = common::fresh().await;
    let report = chats::evaluate(&memory, &chats_fixture().to_string(), &[1, 2])
        .await
        .unwrap();
    assert_eq!(
        (
            report.conversations,
            report.turns,
            report.questions,
            report.skipped
        ),
        (1, 4, 2, 1)
    );
    assert_eq!(
        report.per_category.keys().cloned().collect::<Vec<_>>(),
        ["fact", "instruction"]
    );
    assert_eq!(report.recall[&2], 1.0, "{report:?}");
    let events = memory
        .recall(&Actor::user("chats-c1").unwrap(), "chats-c1", 10)
        .await
        .unwrap();
    assert_eq!(events.len(), 4);
    assert_eq!(events[0].role, nightshift::memory::Role::User);
    assert_eq!(events[1].role, nightshift::memory::Role::Assistant);
    assert_eq!(events[1].name, None, "the role is the voice: no name");
    // 2026-03-02T09:15:00Z, and the next turn a second later.
    assert_eq!(events[0].created_at, 1_772_442_900_000);
    assert_eq!(events[1].created_at, 1_772_442_901_000);
}

#[tokio::test]
async fn malformed_chats_are_refused_naming_what_is_wrong() {
    let (_dir, memory) = common::fresh().await;
    // Each case: where in the file (a JSON pointer), what goes there, what the error says.
    let cases = [
        ("/format", json!("locomo"), "nightshift-chats"),
        ("/version", json!(2), "version 2"),
        (
            "/chats/0/sessions/1/date",
            json!("March 20"),
            "`March 20` is not an RFC 3339 time",
        ),
        (
            "/chats/0/sessions/1/date",
            json!("2026-03-01T00:00:00Z"),
            "session 2 is not after",
        ),
        (
            "/chats/0/sessions/0/turns/0/role",
            json!("system"),
            "role `system`",
        ),
        (
            "/chats/0/questions/0/kind",
            json!("trivia"),
            "kind `trivia`",
        ),
        (
            "/chats/0/questions/0/evidence",
            json!(["S1:2"]),
            "evidence `S1:2` is not a user turn",
        ),
        (
            "/chats/0/questions/0/evidence",
            json!(["S9:9"]),
            "evidence `S9:9`",
        ),
        ("/chats/0/questions/0/asked_at", json!("soon"), "`soon`"),
        ("/chats", json!({}), "invalid type"),
    ];
    for (pointer, value, needle) in cases {
        let mut file = chats_fixture();
        *file.pointer_mut(pointer).unwrap() = value;
        let err = chats::evaluate(&memory, &file.to_string(), &[5])
            .await
            .unwrap_err();
        assert!(matches!(err, EvalError::Json(_) | EvalError::Format(_)));
        assert!(err.to_string().contains(needle), "{needle}: {err}");
    }
    assert_eq!(
        common::count(&memory, "SELECT count(*) FROM events").await,
        0,
        "nothing half-written"
    );
}

/// An order question's hits come back oldest first; its recall@k is still taken over the
/// k best, the set a caller asking for k gets. Here the evidence is the newer, better
/// match: told in time order it is second, yet it is the best one.
const ORDER_QUESTION: &str = "Which came first: adopting Biscuit the beagle or the pottery class?";

#[tokio::test]
async fn an_order_question_is_scored_over_its_best_hits_not_their_time_order() {
    let (_dir, memory) = common::fresh().await;
    let file = json!({
        "format": "nightshift-chats", "version": 1, "seed": 1,
        "chats": [{
            "id": "c2",
            "sessions": [
                {"date": "2026-01-05T09:00:00Z", "turns": [
                    {"id": "S1:1", "role": "user", "text": "Pottery sounds fun."}
                ]},
                {"date": "2026-02-05T09:00:00Z", "turns": [
                    {"id": "S2:1", "role": "user", "text": "We adopted Biscuit the beagle, and I started a pottery class."}
                ]}
            ],
            "questions": [
                {"question": ORDER_QUESTION,
                 "kind": "order", "evidence": ["S2:1"], "asked_at": "2026-03-01T10:00:00Z"}
            ]
        }]
    });
    let report = chats::evaluate(&memory, &file.to_string(), &[1, 2])
        .await
        .unwrap();
    assert_eq!(report.recall[&1], 1.0, "{report:?}");
    // The search itself tells both, the older first.
    let hits = memory
        .search(&nightshift::memory::SearchRequest {
            user_id: "chats-c2".into(),
            query: ORDER_QUESTION.into(),
            top_k: Some(2),
            session_id: Some("chats-c2".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].starts_with("Pottery"), "{texts:?}");
}

/// `nightshift eval chats FILE ARGS…` with the default (hash) settings, its scratch
/// database in `dir`.
fn eval_cli(dir: &std::path::Path, file: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .current_dir(dir)
        .env_remove("NIGHTSHIFT_CONFIG")
        .env("TMPDIR", dir)
        .args(["--json", "eval", "chats"])
        .arg(file)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn vary_scores_each_search_setting_over_one_ingest_and_refuses_a_bad_one_before_it() {
    let dir = tempfile::tempdir().unwrap();
    // The assistant's reply repeats the fact, and matches the question better than the
    // user's turn that is its evidence: only the first-person preference for
    // the user's own turns (`search.speaker_weight`) puts the evidence first. (A weaker
    // match, a month before, keeps min-max normalisation from zeroing the evidence.)
    let file = dir.path().join("chats.json");
    let chats = json!({
        "format": "nightshift-chats", "version": 1, "seed": 1,
        "chats": [{
            "id": "c3",
            "sessions": [{"date": "2026-02-02T09:15:00Z", "turns": [
                {"id": "S0:1", "role": "user", "text": "A long day: the vet, the post, rain, errands, a beagle book, the car, the bins."},
                {"id": "S0:2", "role": "assistant", "text": "That is a lot of errands."}
            ]}, {"date": "2026-03-02T09:15:00Z", "turns": [
                {"id": "S1:1", "role": "user", "text": "We adopted a beagle, and he is called Biscuit."},
                {"id": "S1:2", "role": "assistant", "text": "Your beagle is called Biscuit, a lovely name for a beagle."}
            ]}],
            "questions": [{"question": "What is my beagle called?", "kind": "fact",
                "evidence": ["S1:1"], "asked_at": "2026-04-01T10:00:00Z"}]
        }]
    });
    std::fs::write(&file, chats.to_string()).unwrap();
    let out = eval_cli(
        dir.path(),
        &file,
        &["--k", "1", "--vary", "search.speaker_weight=0,4"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stages: Vec<(String, f64)> = report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["stage"].as_str().unwrap().to_string(),
                s["recall@1"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        stages,
        [
            ("configured".to_string(), 1.0),
            ("search.speaker_weight = 0".to_string(), 0.0),
            ("search.speaker_weight = 4".to_string(), 1.0),
        ]
    );
    assert_eq!(report["turns"], 4, "one ingest, whatever the stages");

    // A bad setting is refused, naming it, before anything is stored.
    let leftovers = || std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(leftovers(), 1, "the scratch database went with the run");
    for (args, says) in [
        (
            &["--vary", "search.speaker_weigth=1"][..],
            "search.speaker_weigth",
        ),
        (
            &["--vary", "search.keyword_weight=1.5"][..],
            "search.keyword_weight",
        ),
        (
            &["--vary", "memory.chunk_chars=320"][..],
            "only `search.` keys",
        ),
        (&["--vary", "search.candidates=10"][..], "search.candidates"),
        (
            &["--ablate", "--vary", "search.time_weight=0"][..],
            "--ablate",
        ),
    ] {
        let out = eval_cli(dir.path(), &file, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && out.status.code() != Some(101),
            "{args:?}"
        );
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(leftovers(), 1, "{args:?} stored nothing");
    }
}
