//! Agent scope on real libSQL files: a note saved for (user, agent) is seen by that agent
//! alone, a note saved with no agent by all of the user's agents, and nothing crosses
//! between users. Checked through the library (search, listing, every note-id operation,
//! history, as-of, keys, index rebuild, export and import), the HTTP API, the CLI, and a
//! schedule whose runs act as an agent against a real runtime peer on 127.0.0.1:0.

mod common;

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::routing::post;
use axum::{Json, Router};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::error::{ErrorKind, Kind};
use nightshift::memory::{Memory, MemoryError, NewNote, SearchRequest};
use nightshift::portable::{ExportScope, ImportRequest};
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::Cadence;
use serde_json::{json, Value};
use tempfile::TempDir;

async fn app_in(dir: &TempDir) -> App {
    common::app_with(&common::config_in(dir), None).await
}

fn agent(memory: &Memory, name: Option<&str>) -> Memory {
    memory.as_agent(name).unwrap()
}

fn keyed(content: &str, key: &str) -> NewNote {
    NewNote {
        key: Some(key.into()),
        ..NewNote::new(content)
    }
}

/// The texts a search for `query` finds, sorted.
async fn found(memory: &Memory, user: &str, query: &str) -> Vec<String> {
    let mut texts: Vec<String> = memory
        .search(&SearchRequest {
            user_id: user.into(),
            query: query.into(),
            top_k: Some(20),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.text)
        .collect();
    texts.sort();
    texts
}

async fn listed(memory: &Memory, user: &str) -> Vec<String> {
    let mut texts: Vec<String> = memory
        .notes(user)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.content)
        .collect();
    texts.sort();
    texts
}

const SHARED: &str = "tea shared: Alice drinks green tea";
const PLANNER: &str = "tea planner: book tea meetings before noon";
const WRITER: &str = "tea writer: drafts about tea use British spelling";
const BOB_PLANNER: &str = "tea planner of bob: oolong only";

/// Alice's shared note, one note for each of her agents, and one of Bob's planner.
async fn seed(memory: &Memory) -> [String; 4] {
    let save = |who: Option<&'static str>, user: &'static str, text: &'static str| {
        let memory = agent(memory, who);
        async move {
            memory
                .save_note(user, &NewNote::new(text))
                .await
                .unwrap()
                .note_id
        }
    };
    [
        save(None, "alice", SHARED).await,
        save(Some("planner"), "alice", PLANNER).await,
        save(Some("writer"), "alice", WRITER).await,
        save(Some("planner"), "bob", BOB_PLANNER).await,
    ]
}

fn sorted(mut texts: Vec<&str>) -> Vec<String> {
    texts.sort();
    texts.into_iter().map(str::to_string).collect()
}

#[tokio::test]
async fn each_agent_sees_its_own_notes_and_the_shared_ones_never_another_agents() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let memory = app.memory();
    seed(memory).await;

    let planner = agent(memory, Some("planner"));
    let writer = agent(memory, Some("writer"));
    let shared = agent(memory, None);
    assert_eq!(
        found(&planner, "alice", "tea").await,
        sorted(vec![SHARED, PLANNER])
    );
    assert_eq!(
        found(&writer, "alice", "tea").await,
        sorted(vec![SHARED, WRITER])
    );
    // Without an agent: the shared notes only.
    assert_eq!(found(&shared, "alice", "tea").await, sorted(vec![SHARED]));
    // An agent of the same name of another user is another agent.
    assert_eq!(
        found(&planner, "bob", "tea").await,
        sorted(vec![BOB_PLANNER])
    );
    assert_eq!(found(&writer, "bob", "tea").await, Vec::<String>::new());

    // Listing and filtered listing agree with search.
    assert_eq!(
        listed(&planner, "alice").await,
        sorted(vec![SHARED, PLANNER])
    );
    assert_eq!(listed(&shared, "alice").await, sorted(vec![SHARED]));
    let filtered = writer
        .notes_matching("alice", &Default::default())
        .await
        .unwrap();
    assert_eq!(filtered.len(), 2);
    assert!(filtered
        .iter()
        .all(|n| n.agent_id.as_deref() != Some("planner")));
    assert_eq!(
        filtered
            .iter()
            .find(|n| n.content == WRITER)
            .and_then(|n| n.agent_id.as_deref()),
        Some("writer")
    );
}

#[tokio::test]
async fn another_agents_note_is_not_found_by_any_note_operation() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let memory = app.memory();
    let [shared_id, planner_id, _, bob_id] = seed(memory).await;
    let planner = agent(memory, Some("planner"));
    for handle in [agent(memory, Some("writer")), agent(memory, None)] {
        let not_found = |result: Result<(), MemoryError>| {
            let err = result.expect_err("another agent's note must not be reachable");
            assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
        };
        not_found(handle.note("alice", &planner_id).await.map(drop));
        not_found(
            handle
                .update_note("alice", &planner_id, "overwritten", None)
                .await
                .map(drop),
        );
        not_found(handle.delete_note("alice", &planner_id).await);
        not_found(handle.note_history("alice", &planner_id).await.map(drop));
        let restore = handle.restore_note("alice", &planner_id, 1).await;
        assert_eq!(restore.unwrap_err().kind(), ErrorKind::NotFound);
    }
    // Another user's agent of the same name: not found either.
    assert_eq!(
        planner.note("alice", &bob_id).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    // Untouched, one version each.
    let kept = planner.note("alice", &planner_id).await.unwrap();
    assert_eq!(kept.content, PLANNER);
    assert_eq!(
        planner
            .note_history("alice", &planner_id)
            .await
            .unwrap()
            .len(),
        1
    );
    // An agent may change a shared note (it is every agent's); the note stays shared.
    let updated = planner
        .update_note(
            "alice",
            &shared_id,
            "tea shared: Alice drinks genmaicha",
            None,
        )
        .await
        .unwrap();
    assert_eq!(updated.agent_id, None);
    assert_eq!(
        agent(memory, Some("writer"))
            .note("alice", &shared_id)
            .await
            .unwrap()
            .content,
        "tea shared: Alice drinks genmaicha"
    );
}

#[tokio::test]
async fn a_key_names_one_note_per_user_and_agent() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let memory = app.memory();
    let shared = agent(memory, None);
    let planner = agent(memory, Some("planner"));
    let writer = agent(memory, Some("writer"));
    let a = shared
        .save_note("alice", &keyed("tz shared", "tz"))
        .await
        .unwrap();
    let b = planner
        .save_note("alice", &keyed("tz planner", "tz"))
        .await
        .unwrap();
    let c = writer
        .save_note("alice", &keyed("tz writer", "tz"))
        .await
        .unwrap();
    assert!(a.created && b.created && c.created);
    assert_ne!(a.note_id, b.note_id);
    assert_ne!(b.note_id, c.note_id);
    // Saving again under the key replaces that agent's note only.
    let again = planner
        .save_note("alice", &keyed("tz planner, corrected", "tz"))
        .await
        .unwrap();
    assert_eq!(
        (again.note_id.as_str(), again.created),
        (b.note_id.as_str(), false)
    );
    assert_eq!(
        shared.note("alice", &a.note_id).await.unwrap().content,
        "tz shared"
    );
    assert_eq!(
        writer.note("alice", &c.note_id).await.unwrap().content,
        "tz writer"
    );
    // Deleted and restored, a note comes back to its own agent and key.
    planner.delete_note("alice", &b.note_id).await.unwrap();
    let restored = planner.restore_note("alice", &b.note_id, 2).await.unwrap();
    assert_eq!(restored.agent_id.as_deref(), Some("planner"));
    assert_eq!(restored.content, "tz planner, corrected");
    assert_eq!(
        found(&writer, "alice", "corrected").await,
        Vec::<String>::new()
    );
    assert_eq!(
        found(&planner, "alice", "corrected").await,
        sorted(vec!["tz planner, corrected"])
    );
}

#[tokio::test]
async fn as_of_and_history_keep_to_the_agent() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let memory = app.memory();
    seed(memory).await;
    let at = app.clock().now_ms() + 1;
    let texts = |versions: Vec<nightshift::memory::NoteVersion>| {
        let mut t: Vec<String> = versions.into_iter().map(|v| v.content).collect();
        t.sort();
        t
    };
    let planner = agent(memory, Some("planner"));
    assert_eq!(
        texts(planner.notes_as_of("alice", at).await.unwrap()),
        sorted(vec![SHARED, PLANNER])
    );
    assert_eq!(
        texts(agent(memory, None).notes_as_of("alice", at).await.unwrap()),
        sorted(vec![SHARED])
    );
    assert_eq!(
        texts(
            agent(memory, Some("writer"))
                .search_as_of("alice", "tea", at, 10)
                .await
                .unwrap()
        ),
        sorted(vec![SHARED, WRITER])
    );
}

#[tokio::test]
async fn rebuilding_the_index_and_a_round_trip_keep_each_agents_notes_its_own() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let memory = app.memory();
    seed(memory).await;
    memory.rebuild_index(&|_, _| {}).await.unwrap();
    let planner = agent(memory, Some("planner"));
    assert_eq!(
        found(&planner, "alice", "tea").await,
        sorted(vec![SHARED, PLANNER])
    );
    assert_eq!(
        found(&agent(memory, None), "alice", "tea").await,
        sorted(vec![SHARED])
    );

    // Export alice, import into an empty database: the same views there.
    let text = export_user(&app, "alice").await;
    assert!(text.contains("\"agent_id\":\"writer\""), "{text}");
    let other = TempDir::new().unwrap();
    let copy = app_in(&other).await;
    import_text(&copy, &other, &text).await.unwrap();
    let memory = copy.memory();
    assert_eq!(
        found(&agent(memory, Some("writer")), "alice", "tea").await,
        sorted(vec![SHARED, WRITER])
    );
    assert_eq!(
        found(&agent(memory, None), "alice", "tea").await,
        sorted(vec![SHARED])
    );
}

#[tokio::test]
async fn an_agent_id_is_checked_like_any_id() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    for bad in ["", " planner", "a\nb", "nul\0", &"x".repeat(300)] {
        let err = app.memory().as_agent(Some(bad)).err().expect(bad);
        assert_eq!(err.kind(), ErrorKind::BadInput);
        assert!(err.to_string().contains("agent id"), "{err}");
    }
    // A schedule's agent too, and nothing is created.
    let mut new = NewSchedule::new("alice", "goal", Cadence::cron("0 9 * * *", "UTC").unwrap());
    new.agent_id = Some("two\nlines".into());
    let err = app
        .schedules()
        .create(&Actor::Operator, &new)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput);
    assert!(err.to_string().contains("agent"), "{err}");
    assert_eq!(
        common::count(app.memory(), "SELECT count(*) FROM schedules").await,
        0
    );
}

#[tokio::test]
async fn the_api_scopes_notes_and_search_by_the_agent_parameter() {
    let api = common::api::TestApi::start(|_| {}).await;
    let alice = api.token(Some("alice")).await;
    let saved = api
        .call(
            "POST",
            "/v1/notes?agent=planner",
            Some(&alice),
            Some(json!({"text": "tea planner via api"})),
        )
        .await;
    assert_eq!(saved.status, 201, "{:?}", saved.body);
    let id = saved.body["note_id"].as_str().unwrap().to_string();
    let shared = api
        .call(
            "POST",
            "/v1/notes",
            Some(&alice),
            Some(json!({"text": "tea shared via api"})),
        )
        .await;
    assert_eq!(shared.status, 201);

    let search = |agent: &'static str| {
        let api = &api;
        let alice = alice.clone();
        async move {
            let reply = api
                .call(
                    "POST",
                    &format!("/v1/search{agent}"),
                    Some(&alice),
                    Some(json!({"query": "tea"})),
                )
                .await;
            assert_eq!(reply.status, 200, "{:?}", reply.body);
            let mut texts: Vec<String> = reply.body["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["text"].as_str().unwrap().to_string())
                .collect();
            texts.sort();
            texts
        }
    };
    assert_eq!(
        search("?agent=planner").await,
        vec!["tea planner via api", "tea shared via api"]
    );
    assert_eq!(search("?agent=writer").await, vec!["tea shared via api"]);
    assert_eq!(search("").await, vec!["tea shared via api"]);

    for path in [
        format!("/v1/notes/{id}?agent=writer"),
        format!("/v1/notes/{id}"),
        format!("/v1/notes/{id}/history?agent=writer"),
    ] {
        let reply = api.call("GET", &path, Some(&alice), None).await;
        assert_eq!(reply.status, 404, "{path}: {:?}", reply.body);
    }
    let reply = api
        .call(
            "DELETE",
            &format!("/v1/notes/{id}?agent=writer"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(reply.status, 404);
    let reply = api
        .call(
            "GET",
            &format!("/v1/notes/{id}?agent=planner"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["agent_id"], "planner");
    let listed = api
        .call("GET", "/v1/notes?agent=planner", Some(&alice), None)
        .await;
    assert_eq!(listed.body.as_array().unwrap().len(), 2);
    // Another user never sees it, whatever agent they name.
    let bob = api.token(Some("bob")).await;
    let reply = api
        .call(
            "GET",
            &format!("/v1/notes/{id}?agent=planner"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(reply.status, 404);
    // A bad agent id is bad input naming it.
    let reply = api
        .call("GET", "/v1/notes?agent=%0A", Some(&alice), None)
        .await;
    assert_eq!(reply.status, 400);
    assert!(reply.body.to_string().contains("agent"), "{:?}", reply.body);
    api.stop().await;
}

#[test]
fn the_cli_takes_agent_on_notes_search_and_schedules() {
    let dir = TempDir::new().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_nightshift"))
            .current_dir(dir.path())
            .env_remove("NIGHTSHIFT_CONFIG")
            .env("NIGHTSHIFT_DB", dir.path().join("cli.db"))
            .stdin(Stdio::null())
            .arg("--json")
            .args(args)
            .output()
            .unwrap();
        let body: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (
            out.status.code(),
            body,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, saved, err) = run(&[
        "memory",
        "save",
        "--user",
        "alice",
        "--agent",
        "planner",
        "tea planner cli",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let id = saved["note_id"].as_str().unwrap().to_string();
    run(&["memory", "save", "--user", "alice", "tea shared cli"]);
    let (_, hits, _) = run(&[
        "memory", "search", "--user", "alice", "--agent", "writer", "tea",
    ]);
    let texts: Vec<&str> = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, vec!["tea shared cli"]);
    let (_, notes, _) = run(&["memory", "notes", "--user", "alice", "--agent", "planner"]);
    assert_eq!(notes.as_array().unwrap().len(), 2);
    let (code, _, err) = run(&["memory", "delete", "--user", "alice", &id]);
    assert_eq!(code, Some(3), "another scope's note is not found: {err}");
    let (code, _, err) = run(&["memory", "delete", "--user", "alice", "--agent", "", &id]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("agent id"), "{err}");
    let (code, _, _) = run(&[
        "memory", "delete", "--user", "alice", "--agent", "planner", &id,
    ]);
    assert_eq!(code, Some(0));

    let (code, schedule, err) = run(&[
        "schedule",
        "add",
        "--user",
        "alice",
        "--every",
        "1h",
        "--agent",
        "planner",
        "--goal",
        "plan the day",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(schedule["agent"], "planner");
    let schedule_id = schedule["schedule_id"].as_str().unwrap().to_string();
    let (code, edited, err) = run(&["schedule", "edit", &schedule_id, "--clear", "agent"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(edited.get("agent").is_none(), "{edited}");
}

/// Serves the http runtime's `/goal`, keeping each request.
async fn goal_peer() -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/goal", listener.local_addr().unwrap());
    let kept = seen.clone();
    let router = Router::new().route(
        "/goal",
        post(move |Json(body): Json<Value>| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push(body);
                Json(json!({"output": "planned"}))
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (url, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedules_runs_act_as_its_agent() {
    let (url, seen) = goal_peer().await;
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.runtime.kind = nightshift::config::RuntimeKind::Http;
    config.runtime.url = url;
    let app = common::app_with(&config, None).await;
    seed(app.memory()).await;
    let mut new = NewSchedule::new("alice", "tea", Cadence::cron("0 9 * * *", "UTC").unwrap());
    new.agent_id = Some("planner".into());
    let schedule = app
        .schedules()
        .create(&Actor::Operator, &new)
        .await
        .unwrap();
    assert_eq!(schedule.agent_id.as_deref(), Some("planner"));
    app.schedules()
        .run_now(&Actor::Operator, &schedule.schedule_id)
        .await
        .unwrap();
    common::worker_until(&app, || !seen.lock().unwrap().is_empty()).await;
    let request = seen.lock().unwrap().first().cloned().unwrap_or(Value::Null);
    assert_eq!(request["agent_id"], "planner", "{request}");
    let context = request["context"].as_str().unwrap();
    assert!(context.contains(PLANNER), "{context}");
    assert!(context.contains(SHARED), "{context}");
    assert!(!context.contains(WRITER), "{context}");
    assert!(!context.contains(BOB_PLANNER), "{context}");
}

async fn export_user(app: &App, user: &str) -> String {
    let mut archive = Vec::new();
    app.portable()
        .export(
            &Actor::Operator,
            &ExportScope::User(user.into()),
            1_700_000_000_000,
            &mut archive,
        )
        .await
        .unwrap();
    String::from_utf8(archive).unwrap()
}

async fn import_text(app: &App, dir: &TempDir, text: &str) -> Result<(), String> {
    let path = dir.path().join("archive.ndjson");
    std::fs::write(&path, text).unwrap();
    app.portable()
        .import(
            &Actor::Operator,
            &ImportRequest {
                path,
                format: None,
                user: None,
                dry_run: false,
            },
        )
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn ids_at_their_longest_survive_a_round_trip() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let (user, long_agent) = ("u".repeat(256), "a".repeat(256));
    agent(app.memory(), Some(&long_agent))
        .save_note(&user, &NewNote::new("tea for the longest agent"))
        .await
        .unwrap();
    agent(app.memory(), None)
        .save_note(&user, &NewNote::new("tea shared by the longest user"))
        .await
        .unwrap();
    let text = export_user(&app, &user).await;
    let other = TempDir::new().unwrap();
    let copy = app_in(&other).await;
    import_text(&copy, &other, &text).await.unwrap();
    assert_eq!(
        found(&agent(copy.memory(), Some(&long_agent)), &user, "tea").await,
        sorted(vec![
            "tea for the longest agent",
            "tea shared by the longest user"
        ])
    );
}

#[tokio::test]
async fn an_imported_note_is_indexed_for_its_own_agent_and_an_id_must_be_text() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    seed(app.memory()).await;
    let text = export_user(&app, "alice").await;
    // The planner's note handed to a new agent, sessions and all left as they were.
    let moved = text.replace("\"agent_id\":\"planner\"", "\"agent_id\":\"scout\"");
    let other = TempDir::new().unwrap();
    let copy = app_in(&other).await;
    import_text(&copy, &other, &moved).await.unwrap();
    assert_eq!(
        found(&agent(copy.memory(), Some("scout")), "alice", "tea").await,
        sorted(vec![SHARED, PLANNER])
    );
    assert_eq!(
        found(&agent(copy.memory(), Some("planner")), "alice", "tea").await,
        sorted(vec![SHARED])
    );
    // A number where an id goes is refused, and nothing is imported.
    let numbered = text.replace("\"agent_id\":\"writer\"", "\"agent_id\":5");
    let third = TempDir::new().unwrap();
    let empty = app_in(&third).await;
    let err = import_text(&empty, &third, &numbered).await.unwrap_err();
    assert!(err.contains("agent_id") && err.contains("string"), "{err}");
    assert_eq!(
        common::count(empty.memory(), "SELECT count(*) FROM notes").await,
        0
    );
}

#[tokio::test]
async fn the_notes_pseudo_sessions_answer_alike_whether_an_agent_exists_or_not() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    seed(app.memory()).await;
    let alice = Actor::user("alice").unwrap();
    let existing = nightshift::memory::SessionKind::notes_session("alice", Some("planner"));
    let missing = nightshift::memory::SessionKind::notes_session("alice", Some("nobody"));
    for session in [existing.as_str(), missing.as_str(), "memory:alice"] {
        let recall = app.memory().recall(&alice, session, 10).await.unwrap_err();
        let summary = app
            .memory()
            .read_summary(&alice, session)
            .await
            .unwrap_err();
        for err in [recall, summary] {
            assert!(
                matches!(err, MemoryError::ReservedSession(_)),
                "{session}: {err}"
            );
        }
    }
}
