//! Fact extraction an operator can steer: instructions (global, then the user's) reach the
//! model, facts outside `fact_categories` are left out and counted, a dry run writes
//! nothing, and the tokens and cost of the model's calls are recorded with the pass.

mod common;

use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::routing::post;
use axum::{Json, Router};
use nightshift::config::{RuntimeKind, UserConfig};
use nightshift::consolidate::{FactOutcome, Pass};
use nightshift::memory::{NewEvent, NewNote, Role};
use serde_json::{json, Value};
use tempfile::TempDir;

/// A fake OpenAI-compatible model that answers every extraction with the same facts and
/// usage, and keeps the prompts it was sent.
async fn model() -> (String, Arc<Mutex<Vec<String>>>) {
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let seen = prompts.clone();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let seen = seen.clone();
            async move {
                let prompt = body["messages"][1]["content"].as_str().unwrap_or_default();
                seen.lock().unwrap().push(prompt.to_string());
                let facts = json!([
                    {"category": "preference", "key": "tea", "content": "Prefers green tea"},
                    {"category": "habit", "key": "running", "content": "Runs every morning"}
                ]);
                Json(json!({
                    "choices": [{"message": {"role": "assistant", "content": facts.to_string()}}],
                    "usage": {"prompt_tokens": 120, "completion_tokens": 30}
                }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), prompts)
}

fn config_with_model(dir: &TempDir, url: &str) -> nightshift::config::Config {
    let mut config = common::config_in(dir);
    config.runtime.kind = RuntimeKind::Openai;
    config.runtime.base_url = url.to_string();
    config.runtime.model = "m".into();
    config.runtime.max_retries = 0;
    config.runtime.prompt_price_per_mtok = 1.0;
    config.runtime.completion_price_per_mtok = 2.0;
    config.consolidation.extraction_instructions = Some("Leave out anything about health.".into());
    config.consolidation.fact_categories = vec!["preference".into(), "profile".into()];
    config.users.insert(
        "alice".into(),
        UserConfig {
            extraction_instructions: Some("Alice's tea habits matter.".into()),
            ..Default::default()
        },
    );
    config
}

#[tokio::test]
async fn instructions_categories_and_cost_steer_and_record_the_facts_pass() {
    let (url, prompts) = model().await;
    let dir = TempDir::new().unwrap();
    let app = nightshift::app::App::open(&config_with_model(&dir, &url))
        .await
        .unwrap();
    let memory = app.memory();
    memory
        .append(
            "alice",
            "chat",
            &[NewEvent::new(Role::User, "I like green tea and I run")],
        )
        .await
        .unwrap();
    memory
        .append(
            "bob",
            "chat-b",
            &[NewEvent::new(Role::User, "I like green tea too")],
        )
        .await
        .unwrap();

    // A dry run: what would be stored, and nothing is.
    let consolidator = app.consolidator(None);
    let dry = consolidator.facts_dry_run(Some("alice")).await.unwrap();
    let outcomes: Vec<(&str, FactOutcome)> = dry
        .facts
        .iter()
        .map(|f| (f.content.as_str(), f.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("Prefers green tea", FactOutcome::Save),
            ("Runs every morning", FactOutcome::NotAllowed)
        ]
    );
    assert_eq!((dry.prompt_tokens, dry.completion_tokens), (120, 30));
    assert!((dry.cost - (120.0 * 1e-6 + 30.0 * 2e-6)).abs() < 1e-12);
    assert!(memory.notes("alice").await.unwrap().is_empty());
    // The global instructions, then the user's, reach the model; bob gets only the global.
    {
        let prompts = prompts.lock().unwrap();
        assert!(
            prompts[0].contains("Leave out anything about health.\n\nAlice's tea habits matter."),
            "{}",
            prompts[0]
        );
    }

    // The pass itself: the allowed fact stored, the other counted; usage recorded.
    let reports = consolidator.run(&[Pass::Facts], None, None).await.unwrap();
    let counts = &reports[0].counts;
    assert_eq!(counts["facts_saved"], 2, "{counts}");
    assert_eq!(counts["facts_not_allowed"], 2, "{counts}");
    assert_eq!(counts["prompt_tokens"], 240, "{counts}");
    assert_eq!(counts["completion_tokens"], 60, "{counts}");
    assert!((counts["cost"].as_f64().unwrap() - 2.0 * 0.00018).abs() < 1e-12);
    let alice: Vec<String> = memory
        .notes("alice")
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.content)
        .collect();
    assert_eq!(alice, ["Prefers green tea"]);
    let prompts = prompts.lock().unwrap();
    let bobs = prompts.iter().find(|p| p.contains("too")).unwrap();
    assert!(bobs.contains("Leave out anything about health.") && !bobs.contains("Alice"));
}

#[tokio::test]
async fn a_dry_run_judges_against_what_the_user_has() {
    let dir = TempDir::new().unwrap();
    let app = nightshift::app::App::open(&common::config_in(&dir))
        .await
        .unwrap();
    let memory = app.memory();
    memory
        .save_note("alice", &NewNote::new("I prefer green tea"))
        .await
        .unwrap();
    memory
        .append(
            "alice",
            "chat",
            &[NewEvent::new(
                Role::User,
                "I prefer green tea. My name is Ana.",
            )],
        )
        .await
        .unwrap();
    let dry = app.consolidator(None).facts_dry_run(None).await.unwrap();
    let outcomes: Vec<FactOutcome> = dry.facts.iter().map(|f| f.outcome).collect();
    assert_eq!(
        outcomes,
        [FactOutcome::Duplicate, FactOutcome::Save],
        "{dry:?}"
    );
    assert_eq!((dry.prompt_tokens, dry.cost), (0, 0.0));
    // Nothing moved: the pass still reads the event afterwards.
    let reports = app
        .consolidator(None)
        .run(&[Pass::Facts], None, None)
        .await
        .unwrap();
    assert_eq!(reports[0].counts["facts_saved"], 1, "{}", reports[0].counts);
}

#[test]
fn the_cli_dry_run_writes_nothing_and_bad_settings_are_refused() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("x.db");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_nightshift"))
            .args(args)
            .env("NIGHTSHIFT_DB", &db)
            .env_remove("NIGHTSHIFT_CONFIG")
            .output()
            .unwrap()
    };
    let out = run(&[
        "memory",
        "append",
        "--user",
        "alice",
        "--session",
        "c",
        "--role",
        "user",
        "My name is Ana",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["--json", "consolidate", "--pass", "facts", "--dry-run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dry: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(dry["facts"][0]["outcome"], "save");
    let notes = run(&["--json", "memory", "notes", "--user", "alice"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&notes.stdout).unwrap(),
        json!([])
    );
    let out = run(&["consolidate", "--pass", "summaries", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pass facts"));

    for (text, key) in [
        (
            "[consolidation]\nfact_categories = [\"gossip\"]\n",
            "consolidation.fact_categories",
        ),
        (
            "[consolidation]\nfact_categories = []\n",
            "consolidation.fact_categories",
        ),
        (
            "[consolidation]\nextraction_instructions = \"a\\u0000b\"\n",
            "consolidation.extraction_instructions",
        ),
        (
            "[users.alice]\nextraction_instructions = \"\"\n",
            "users.alice.extraction_instructions",
        ),
    ] {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let out = run(&["config", "check", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(4), "{text}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(key),
            "{text}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test]
async fn the_summaries_pass_records_what_its_model_used() {
    let (url, _) = model().await;
    let dir = TempDir::new().unwrap();
    let mut config = config_with_model(&dir, &url);
    config.consolidation.summary_budget_tokens = 100;
    config.consolidation.summary_min_turns = 2;
    let app = nightshift::app::App::open(&config).await.unwrap();
    let turns: Vec<NewEvent> = (0..6)
        .map(|i| {
            NewEvent::new(
                Role::User,
                format!("turn {i}: {}", "long words ".repeat(20)),
            )
        })
        .collect();
    app.memory().append("alice", "chat", &turns).await.unwrap();
    let reports = app
        .consolidator(None)
        .run(&[Pass::Summaries], None, None)
        .await
        .unwrap();
    let counts = &reports[0].counts;
    assert_eq!(counts["summarized"], 1, "{counts}");
    // One model call: its usage, priced as configured.
    assert_eq!(counts["prompt_tokens"], 120, "{counts}");
    assert_eq!(counts["completion_tokens"], 30, "{counts}");
    assert!(
        (counts["cost"].as_f64().unwrap() - 0.00018).abs() < 1e-12,
        "{counts}"
    );
}
