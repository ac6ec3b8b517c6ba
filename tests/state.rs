//! Scoped key-value state on a real database file: each scope's visibility across users,
//! sessions and runs, compare-and-set under concurrent writers, `temp:` keys cleared at
//! a run's end and after a crash, the bounds, and the CLI and HTTP doors.

mod common;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::consolidate::Pass;
use nightshift::db::clock::{Clock, TokioClock};
use nightshift::memory::{Memory, NewEvent, Role};
use nightshift::runtime::{AgentRuntime, GoalOutcome, GoalRequest, RuntimeError};
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::Cadence;
use nightshift::state::{StateAccess, StateError, StateStore};
use nightshift::worker::{run_with, WorkerParts};
use serde_json::{json, Value};
use tempfile::TempDir;

async fn app_in(dir: &TempDir) -> App {
    App::open(&common::config_in(dir)).await.unwrap()
}

fn user(user: &str, session: Option<&str>) -> StateAccess {
    StateAccess::user(user, session.map(str::to_string))
}

fn not_found(result: Result<impl std::fmt::Debug, StateError>) {
    match result {
        Err(StateError::NotFound(_)) => {}
        other => panic!("expected not found, got {other:?}"),
    }
}

#[tokio::test]
async fn each_scope_is_seen_by_exactly_whom_it_belongs_to() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let state = app.state();
    let (s1, s2) = (user("alice", Some("s1")), user("alice", Some("s2")));

    state
        .set(&s1, "draft", &json!({"n": 1}), None)
        .await
        .unwrap();
    state
        .set(&s1, "user:theme", &json!("dark"), None)
        .await
        .unwrap();
    state
        .set(
            &StateAccess::operator(None, None),
            "app:motd",
            &json!("hello"),
            None,
        )
        .await
        .unwrap();

    // The session's key: in s1 only.
    assert_eq!(
        state.get(&s1, "draft").await.unwrap().value,
        json!({"n": 1})
    );
    not_found(state.get(&s2, "draft").await);
    // The user's key: in every session of alice's, and without one.
    assert_eq!(
        state.get(&s2, "user:theme").await.unwrap().value,
        json!("dark")
    );
    assert_eq!(
        state
            .get(&user("alice", None), "user:theme")
            .await
            .unwrap()
            .value,
        json!("dark")
    );
    // Bob sees none of alice's, by any path, even naming her session.
    let bob = user("bob", Some("s1"));
    not_found(state.get(&bob, "draft").await);
    not_found(state.get(&bob, "user:theme").await);
    not_found(state.delete(&bob, "user:theme", None).await);
    let bobs: Vec<String> = state
        .list(&bob, "")
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(bobs, ["app:motd"]);
    // Bob's session of the same id is his own: what he writes there is his alone, and
    // alice's is untouched (before, his write was refused as "in use by another user").
    state.set(&bob, "draft", &json!(2), None).await.unwrap();
    assert_eq!(state.get(&bob, "draft").await.unwrap().value, json!(2));
    assert_eq!(
        state.get(&s1, "draft").await.unwrap().value,
        json!({"n": 1})
    );
    // The app's key: read by everyone, written by the operator only.
    assert_eq!(
        state.get(&bob, "app:motd").await.unwrap().value,
        json!("hello")
    );
    let refused = state.set(&s1, "app:motd", &json!("mine"), None).await;
    assert!(
        matches!(refused, Err(StateError::AdminOnly(_))),
        "{refused:?}"
    );
    assert!(state.delete(&s1, "app:motd", None).await.is_err());
    assert_eq!(
        state.get(&s1, "app:motd").await.unwrap().value,
        json!("hello")
    );
    // Alice's list: her session's, her user's and the app's keys, by key.
    let keys: Vec<String> = state
        .list(&s1, "")
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(keys, ["app:motd", "draft", "user:theme"]);
    let users: Vec<String> = state
        .list(&s1, "user:")
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(users, ["user:theme"]);
    // Outside a run there are no temp keys, and a key without a prefix needs a session.
    assert!(matches!(
        state.set(&s1, "temp:x", &json!(1), None).await,
        Err(StateError::Scope(_))
    ));
    assert!(matches!(
        state.get(&user("alice", None), "draft").await,
        Err(StateError::Scope(_))
    ));
}

#[tokio::test]
async fn forgetting_a_session_takes_its_state_and_leaves_the_users() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let state = app.state();
    let s1 = user("alice", Some("s1"));
    state.set(&s1, "draft", &json!("x"), None).await.unwrap();
    state
        .set(&s1, "user:keep", &json!(true), None)
        .await
        .unwrap();
    app.memory()
        .forget(&Actor::user("alice").unwrap(), "s1")
        .await
        .unwrap();
    not_found(state.get(&s1, "draft").await);
    assert_eq!(
        common::count(
            app.memory(),
            "SELECT count(*) FROM state_entries WHERE session_id = 'alice\u{1f}s1'"
        )
        .await,
        0
    );
    assert_eq!(
        state.get(&s1, "user:keep").await.unwrap().value,
        json!(true)
    );
}

#[tokio::test]
async fn compare_and_set_lets_one_of_two_racing_writers_win() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let state = app.state().clone();
    let alice = user("alice", None);
    let first = state
        .set(&alice, "user:n", &json!(0), Some(0))
        .await
        .unwrap();
    // A second create of the same key with "must not exist" loses.
    assert!(matches!(
        state.set(&alice, "user:n", &json!(9), Some(0)).await,
        Err(StateError::VersionMismatch { .. })
    ));
    // Two writers who read the same version: one wins, the other is told to read again.
    let (one, two) = (json!(1), json!(2));
    let a = state.set(&alice, "user:n", &one, Some(first.version));
    let b = state.set(&alice, "user:n", &two, Some(first.version));
    let (a, b) = tokio::join!(a, b);
    assert_eq!(
        [a.is_ok(), b.is_ok()].iter().filter(|ok| **ok).count(),
        1,
        "{a:?} {b:?}"
    );
    // Many writers incrementing with read, compare-and-set, retry: no increment lost.
    let alice = Arc::new(alice);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (state, alice) = (state.clone(), alice.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                loop {
                    let now = state.get(&alice, "user:counter").await;
                    let (n, version) = match now {
                        Ok(entry) => (entry.value.as_i64().unwrap(), entry.version),
                        Err(_) => (0, 0),
                    };
                    match state
                        .set(&alice, "user:counter", &json!(n + 1), Some(version))
                        .await
                    {
                        Ok(_) => break,
                        Err(StateError::VersionMismatch { .. }) => continue,
                        Err(err) => panic!("{err}"),
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(
        state.get(&alice, "user:counter").await.unwrap().value,
        json!(80)
    );
    // Deleting and setting again never brings back a version seen before.
    let before = state.get(&alice, "user:n").await.unwrap().version;
    state.delete(&alice, "user:n", Some(before)).await.unwrap();
    let again = state
        .set(&alice, "user:n", &json!(0), Some(0))
        .await
        .unwrap();
    assert!(again.version > before);
    assert!(state
        .set(&alice, "user:n", &json!(5), Some(before))
        .await
        .is_err());
}

#[tokio::test]
async fn values_and_key_counts_are_bounded() {
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.memory.max_state_value_bytes = 100;
    config.memory.max_state_keys = 3;
    let app = App::open(&config).await.unwrap();
    let state = app.state();
    let alice = user("alice", None);
    // 100 bytes of JSON exactly: a 98-character string and its quotes.
    state
        .set(&alice, "user:big", &json!("x".repeat(98)), None)
        .await
        .unwrap();
    let err = state
        .set(&alice, "user:big", &json!("x".repeat(99)), None)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("memory.max_state_value_bytes"),
        "{err}"
    );
    assert_eq!(
        state.get(&alice, "user:big").await.unwrap().value,
        json!("x".repeat(98))
    );
    state.set(&alice, "user:b", &json!(1), None).await.unwrap();
    state.set(&alice, "user:c", &json!(1), None).await.unwrap();
    let err = state
        .set(&alice, "user:d", &json!(1), None)
        .await
        .unwrap_err();
    assert!(matches!(err, StateError::TooManyKeys { .. }), "{err}");
    assert!(err.to_string().contains("memory.max_state_keys"), "{err}");
    // A key already there can still change; another user has room of their own.
    state.set(&alice, "user:c", &json!(2), None).await.unwrap();
    state
        .set(&user("bob", None), "user:d", &json!(1), None)
        .await
        .unwrap();
}

/// A runtime that writes state the way the runtime's tools do, and fails when the goal
/// says so.
struct StateRuntime {
    memory: Memory,
}

#[async_trait]
impl AgentRuntime for StateRuntime {
    async fn run_goal(&self, request: &GoalRequest, _memory: &Memory) -> GoalOutcome {
        let state = StateStore::new(self.memory.clone());
        let access = StateAccess::run(&request.user_id, &request.session_id, &request.run_id);
        // Another run's temp key is never visible here (this run's earlier attempt's is:
        // a retry is the same run).
        let leaked = state
            .get(&access, "temp:step")
            .await
            .is_ok_and(|entry| entry.value != json!(request.run_id));
        state
            .set(&access, "temp:step", &json!(request.run_id), None)
            .await
            .unwrap();
        state
            .set(&access, "user:runs", &json!(request.run_id), None)
            .await
            .unwrap();
        let error = if leaked {
            Some(RuntimeError::Reported("saw another run's temp key".into()))
        } else if request.goal.contains("fail") {
            Some(RuntimeError::Reported("told to fail".into()))
        } else {
            None
        };
        GoalOutcome {
            transcript: vec![NewEvent::new(Role::Assistant, "done")],
            output: "done".into(),
            turn_count: 1,
            error,
            ..Default::default()
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_runs_temp_keys_end_with_it_whatever_its_outcome() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let clock: Arc<dyn Clock> = TokioClock::starting_at(1_800_000_000_000);
    let app = common::app_with(&config, Some(clock.clone())).await;
    for goal in ["succeed", "fail"] {
        let now = clock.now_ms();
        let schedule = NewSchedule::new(
            "alice",
            goal,
            Cadence::Interval {
                every_secs: 60,
                anchor: now + 60_000,
                tz: "UTC".into(),
            },
        );
        app.schedules()
            .create(&Actor::Operator, &schedule)
            .await
            .unwrap();
    }
    let runtime = Arc::new(StateRuntime {
        memory: app.memory().clone(),
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker_app = app.clone();
    let worker = tokio::spawn(async move {
        let parts = WorkerParts {
            runtime: Some(runtime),
            worker_id: Some("w".into()),
        };
        run_with(&worker_app, parts, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    tokio::time::sleep(Duration::from_secs(5 * 60 + 30)).await;
    stop.send(()).unwrap();
    worker.await.unwrap();

    let memory = app.memory();
    let runs = common::count(memory, "SELECT count(*) FROM schedule_runs").await;
    assert!(runs >= 4, "only {runs} runs");
    assert_eq!(
        common::count(
            memory,
            "SELECT count(*) FROM schedule_runs WHERE status = 'failed'
             AND error LIKE '%another run%'"
        )
        .await,
        0,
        "a run saw another run's temp key"
    );
    for status in ["failed", "succeeded"] {
        let n = common::count(
            memory,
            &format!("SELECT count(*) FROM schedule_runs WHERE status = '{status}'"),
        )
        .await;
        assert!(n >= 2, "{n} {status} runs");
    }
    // Every run, failed or not, left no temp key; the user's key stays.
    assert_eq!(
        common::count(
            memory,
            "SELECT count(*) FROM state_entries WHERE scope = 'temp'"
        )
        .await,
        0
    );
    let kept = app
        .state()
        .get(&user("alice", None), "user:runs")
        .await
        .unwrap();
    assert!(kept.value.as_str().unwrap().starts_with("run"));
}

#[tokio::test]
async fn the_expiry_pass_clears_what_a_crashed_run_left() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let schedule = app
        .schedules()
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "alice",
                "goal",
                Cadence::Interval {
                    every_secs: 3600,
                    anchor: 4_000_000_000_000,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap();
    // Two runs as a crash leaves them: one still running (its lease not yet out), one
    // marked interrupted by recovery, each with a temp key.
    let conn = app.db().conn().await.unwrap();
    for (run, status, at) in [("run_live", "running", 1), ("run_dead", "interrupted", 2)] {
        conn.execute(
            "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status)
             VALUES (?1, ?2, ?3, ?4)",
            libsql::params![run, schedule.schedule_id.as_str(), at, status],
        )
        .await
        .unwrap();
        let access = StateAccess::run("alice", "s", run);
        app.state()
            .set(&access, "temp:step", &json!(run), None)
            .await
            .unwrap();
    }
    let reports = app
        .consolidator(None)
        .run(&[Pass::Expiry], None, None)
        .await
        .unwrap();
    assert_eq!(reports[0].counts["temp_state_cleared"], json!(1));
    let live = StateAccess::run("alice", "s", "run_live");
    assert_eq!(
        app.state().get(&live, "temp:step").await.unwrap().value,
        json!("run_live")
    );
    not_found(
        app.state()
            .get(&StateAccess::run("alice", "s", "run_dead"), "temp:step")
            .await,
    );
}

fn cli(dir: &TempDir, args: &[&str]) -> (i32, Value, String) {
    let db = common::database_in(dir);
    let out = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .arg("--json")
        .args(args)
        .env("NIGHTSHIFT_DB", &db)
        .env_remove("NIGHTSHIFT_CONFIG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn the_cli_sets_reads_and_refuses_with_the_right_exit_codes() {
    let dir = TempDir::new().unwrap();
    let (code, set, err) = cli(
        &dir,
        &[
            "state",
            "set",
            "--user",
            "alice",
            "--session",
            "s1",
            "plan",
            r#"{"step": 2}"#,
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(set["scope"], "session");
    let version = set["version"].as_i64().unwrap().to_string();
    let (code, got, _) = cli(
        &dir,
        &["state", "get", "--user", "alice", "--session", "s1", "plan"],
    );
    assert_eq!((code, got["value"].clone()), (0, json!({"step": 2})));
    // Bad JSON, a key with a control character, a negative version: bad input (2).
    for args in [
        vec!["state", "set", "--user", "alice", "user:x", "not json"],
        vec!["state", "set", "--user", "alice", "user:x\u{7}", "1"],
        vec![
            "state",
            "set",
            "--user",
            "alice",
            "--expect-version",
            "-1",
            "user:x",
            "1",
        ],
        vec!["state", "set", "--user", "alice", "app:x", "1"],
        vec!["state", "get", "--user", "alice", "temp:x"],
    ] {
        let (code, _, err) = cli(&dir, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{err}");
    }
    // Another user's session key: not found (3); a stale version: conflict (5).
    let (code, _, _) = cli(
        &dir,
        &["state", "get", "--user", "bob", "--session", "s1", "plan"],
    );
    assert_eq!(code, 3);
    let (code, _, _) = cli(
        &dir,
        &[
            "state",
            "set",
            "--user",
            "alice",
            "--session",
            "s1",
            "--expect-version",
            "0",
            "plan",
            "1",
        ],
    );
    assert_eq!(code, 5);
    let (code, _, err) = cli(
        &dir,
        &[
            "state",
            "delete",
            "--user",
            "alice",
            "--session",
            "s1",
            "--expect-version",
            &version,
            "plan",
        ],
    );
    assert_eq!(code, 0, "{err}");
    // The operator writes app keys; a user reads them.
    assert_eq!(cli(&dir, &["state", "set", "app:motd", r#""hi""#]).0, 0);
    let (code, list, _) = cli(&dir, &["state", "list", "--user", "bob"]);
    assert_eq!(code, 0);
    assert_eq!(list["entries"][0]["key"], "app:motd");
}

#[tokio::test]
async fn the_api_keeps_each_token_to_its_own_state() {
    let api = common::api::TestApi::start(|_| {}).await;
    let alice = api.token(Some("alice")).await;
    let bob = api.token(Some("bob")).await;
    let admin = api.token(None).await;

    let put = |token: &str, path: &str, body: Value| {
        let (token, path) = (token.to_string(), path.to_string());
        let api = &api;
        async move { api.call("PUT", &path, Some(&token), Some(body)).await }
    };
    let set = put(&alice, "/v1/state/user:theme", json!({"value": "dark"})).await;
    assert_eq!(set.status, 200, "{}", set.body);
    let version = set.body["version"].as_i64().unwrap();
    // Bob does not see it, and cannot reach it by naming alice.
    let got = api
        .call("GET", "/v1/state/user:theme", Some(&bob), None)
        .await;
    assert_eq!(got.status, 404);
    let got = api
        .call("GET", "/v1/state/user:theme?user=alice", Some(&bob), None)
        .await;
    assert_eq!(got.status, 403);
    // An admin names the user; writes app keys, which a user token cannot.
    let got = api
        .call("GET", "/v1/state/user:theme?user=alice", Some(&admin), None)
        .await;
    assert_eq!(got.body["value"], "dark");
    assert_eq!(
        put(&alice, "/v1/state/app:motd", json!({"value": 1}))
            .await
            .status,
        403,
        "a user's token has no right to app state: 403, as docs/api.md says of a wrong scope"
    );
    let deleted = api
        .call("DELETE", "/v1/state/app:motd", Some(&alice), None)
        .await;
    assert_eq!(deleted.status, 403, "{}", deleted.body);
    assert_eq!(
        put(&admin, "/v1/state/app:motd", json!({"value": 1}))
            .await
            .status,
        200
    );
    let list = api.call("GET", "/v1/state", Some(&bob), None).await;
    assert_eq!(list.body["entries"].as_array().unwrap().len(), 1);
    // Compare-and-set: a stale version is 409; the current one wins.
    let stale = put(
        &alice,
        "/v1/state/user:theme",
        json!({"value": "light", "expected_version": version + 100}),
    )
    .await;
    assert_eq!(stale.status, 409, "{}", stale.body);
    let fresh = put(
        &alice,
        "/v1/state/user:theme",
        json!({"value": "light", "expected_version": version}),
    )
    .await;
    assert_eq!(fresh.status, 200, "{}", fresh.body);
    // A body that is not the documented shape is refused, naming what was wrong.
    let bad = put(&alice, "/v1/state/user:theme", json!({"valu": 1})).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let deleted = api
        .call("DELETE", "/v1/state/user:theme", Some(&alice), None)
        .await;
    assert_eq!(deleted.status, 200);
    api.stop().await;
}

/// A version says nothing of what other users write (the report's D15): each scope
/// instance counts its own writes, so alice's next version follows her last whatever bob
/// wrote meanwhile, in his user state or his sessions'; an archive's versions move the
/// counter of their own scope past them.
#[tokio::test]
async fn versions_count_each_scopes_own_writes() {
    let dir = TempDir::new().unwrap();
    let app = app_in(&dir).await;
    let state = app.state().clone();
    let alice = user("alice", None);
    let first = state
        .set(&alice, "user:probe", &json!(1), None)
        .await
        .unwrap();
    for i in 0..5 {
        let bob = user("bob", Some("chat"));
        state
            .set(&bob, &format!("user:k{i}"), &json!(i), None)
            .await
            .unwrap();
        state
            .set(&bob, &format!("s{i}"), &json!(i), None)
            .await
            .unwrap();
    }
    let second = state
        .set(&alice, "user:probe", &json!(2), None)
        .await
        .unwrap();
    assert_eq!(second.version, first.version + 1);

    // Imported at version 900, the key's next write is past it.
    let mut archive = Vec::new();
    app.portable()
        .export(
            &nightshift::access::Actor::Operator,
            &nightshift::portable::ExportScope::User("alice".into()),
            1,
            &mut archive,
        )
        .await
        .unwrap();
    let text = String::from_utf8(archive).unwrap().replace(
        &format!("\"version\":{}", second.version),
        "\"version\":900",
    );
    let other = TempDir::new().unwrap();
    let copy = app_in(&other).await;
    let path = other.path().join("alice.ndjson");
    std::fs::write(&path, text).unwrap();
    copy.portable()
        .import(
            &nightshift::access::Actor::Operator,
            &nightshift::portable::ImportRequest {
                path,
                format: None,
                user: None,
                dry_run: false,
            },
        )
        .await
        .unwrap();
    let copied = copy.state().clone();
    assert_eq!(copied.get(&alice, "user:probe").await.unwrap().version, 900);
    let next = copied
        .set(&alice, "user:probe", &json!(3), Some(900))
        .await
        .unwrap();
    assert_eq!(next.version, 901);
}
