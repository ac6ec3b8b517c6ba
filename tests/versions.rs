//! Note versions and erasure on a real database file: every change keeps a version with
//! who and when (update, consolidation's supersede, delete, restore), a deleted note stays
//! restorable until its retention ends, and purging a user leaves nothing of them, table
//! by table, while nothing of anyone else is touched.

mod common;

use std::sync::Arc;

use nightshift::access::Actor;
use nightshift::app::purge::purge_user;
use nightshift::app::App;
use nightshift::artifact::NewArtifact;
use nightshift::consolidate::Pass;
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::memory::{MemoryError, NewEvent, NewNote, NoteChange, Origin, Role, SearchRequest};
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::Cadence;
use nightshift::state::StateAccess;
use nightshift::tokens::NewToken;
use serde_json::json;
use tempfile::TempDir;

const START: i64 = 1_800_000_000_000;

async fn app_at(dir: &TempDir) -> (App, Arc<ManualClock>) {
    let clock = ManualClock::starting_at(START);
    let app = common::app_with(
        &common::config_in(dir),
        Some(clock.clone() as Arc<dyn Clock>),
    )
    .await;
    (app, clock)
}

async fn found(app: &App, user: &str, query: &str) -> Vec<String> {
    app.memory()
        .search(&SearchRequest {
            user_id: user.into(),
            query: query.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.text)
        .collect()
}

#[tokio::test]
async fn every_change_keeps_a_version_with_who_and_when() {
    let dir = TempDir::new().unwrap();
    let (app, clock) = app_at(&dir).await;
    let memory = app.memory();
    let saved = memory
        .by(Origin::Cli)
        .save_note("alice", &NewNote::new("Alice drinks green tea"))
        .await
        .unwrap();
    let id = saved.note_id;
    clock.advance_ms(1000);
    memory
        .by(Origin::Api)
        .update_note("alice", &id, "Alice drinks black tea", None)
        .await
        .unwrap();
    clock.advance_ms(1000);
    let newer = memory
        .by(Origin::Consolidation("facts"))
        .supersede_note("alice", &id, &NewNote::new("Alice drinks oolong now"))
        .await
        .unwrap();
    clock.advance_ms(1000);
    // Superseded: out of search, in history.
    assert!(!found(&app, "alice", "black tea")
        .await
        .iter()
        .any(|t| t.contains("black")));
    let restored = memory
        .by(Origin::Mcp)
        .restore_note("alice", &id, 1)
        .await
        .unwrap();
    assert_eq!(restored.content, "Alice drinks green tea");
    assert_eq!(restored.superseded_by, None);
    assert_eq!(restored.created_at, START);
    assert!(found(&app, "alice", "green tea")
        .await
        .contains(&"Alice drinks green tea".to_string()));
    clock.advance_ms(1000);
    memory
        .by(Origin::Run("run-7".into()))
        .delete_note("alice", &id)
        .await
        .unwrap();

    let history = memory.note_history("alice", &id).await.unwrap();
    let seen: Vec<(i64, NoteChange, &str, i64, &str)> = history
        .iter()
        .map(|v| {
            (
                v.version,
                v.change,
                v.changed_by.as_str(),
                v.changed_at,
                v.content.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                1,
                NoteChange::Created,
                "cli",
                START,
                "Alice drinks green tea"
            ),
            (
                2,
                NoteChange::Updated,
                "api",
                START + 1000,
                "Alice drinks black tea"
            ),
            (
                3,
                NoteChange::Superseded,
                "consolidation:facts",
                START + 2000,
                "Alice drinks black tea"
            ),
            (
                4,
                NoteChange::Restored,
                "mcp",
                START + 3000,
                "Alice drinks green tea"
            ),
            (
                5,
                NoteChange::Deleted,
                "run:run-7",
                START + 4000,
                "Alice drinks green tea"
            ),
        ]
    );
    // The consolidation's new note has its own history.
    let other = memory.note_history("alice", &newer.note_id).await.unwrap();
    assert_eq!(other[0].changed_by, "consolidation:facts");
    // Deleted: gone from search and notes, still restorable.
    assert!(found(&app, "alice", "green tea").await.is_empty());
    assert!(memory.note("alice", &id).await.is_err());
    memory.restore_note("alice", &id, 2).await.unwrap();
    assert_eq!(
        found(&app, "alice", "black tea").await,
        ["Alice drinks black tea"]
    );
    // Another user: the note and its versions do not exist.
    for result in [
        memory.note_history("bob", &id).await.map(|_| ()),
        memory.restore_note("bob", &id, 1).await.map(|_| ()),
    ] {
        assert!(
            matches!(
                result,
                Err(MemoryError::NoteNotFound(_)) | Err(MemoryError::VersionNotFound { .. })
            ),
            "{result:?}"
        );
    }
    assert!(matches!(
        memory.restore_note("alice", &id, 99).await,
        Err(MemoryError::VersionNotFound { .. })
    ));
}

#[tokio::test]
async fn a_restore_never_takes_a_key_another_note_holds() {
    let dir = TempDir::new().unwrap();
    let (app, _) = app_at(&dir).await;
    let memory = app.memory();
    let mut keyed = NewNote::new("Standup at 9");
    keyed.key = Some("standup".into());
    let first = memory.save_note("alice", &keyed).await.unwrap().note_id;
    memory.delete_note("alice", &first).await.unwrap();
    keyed.content = "Standup at 10".into();
    let second = memory.save_note("alice", &keyed).await.unwrap().note_id;
    assert_ne!(first, second);
    let refused = memory.restore_note("alice", &first, 1).await;
    assert!(
        matches!(refused, Err(MemoryError::KeyTaken { .. })),
        "{refused:?}"
    );
    assert!(memory.note("alice", &first).await.is_err());
    assert_eq!(
        memory.note("alice", &second).await.unwrap().content,
        "Standup at 10"
    );
}

#[tokio::test]
async fn a_deleted_notes_versions_last_until_the_retention_ends() {
    let dir = TempDir::new().unwrap();
    let (app, clock) = app_at(&dir).await;
    let memory = app.memory();
    let id = memory
        .save_note("alice", &NewNote::new("temporary thought"))
        .await
        .unwrap()
        .note_id;
    let kept = memory
        .save_note("alice", &NewNote::new("kept thought"))
        .await
        .unwrap()
        .note_id;
    memory.delete_note("alice", &id).await.unwrap();
    let expiry = |app: &App| {
        let consolidator = app.consolidator(None);
        async move { consolidator.run(&[Pass::Expiry], None, None).await.unwrap() }
    };
    clock.advance_ms(29 * 86_400_000);
    let report = expiry(&app).await;
    assert_eq!(report[0].counts["note_versions_purged"], json!(0));
    assert_eq!(memory.note_history("alice", &id).await.unwrap().len(), 2);
    clock.advance_ms(2 * 86_400_000);
    let report = expiry(&app).await;
    assert_eq!(report[0].counts["note_versions_purged"], json!(2));
    assert!(memory.note_history("alice", &id).await.is_err());
    assert!(memory.restore_note("alice", &id, 1).await.is_err());
    // A note that still exists keeps its history.
    assert_eq!(memory.note_history("alice", &kept).await.unwrap().len(), 1);
}

/// Rows of `user` in every table that holds a user's data.
async fn rows_of(app: &App, user: &str) -> Vec<(&'static str, i64)> {
    let tables: [(&str, &str); 21] = [
        ("sessions", "SELECT count(*) FROM sessions WHERE user_id = ?1"),
        ("events", "SELECT count(*) FROM events e JOIN sessions s USING (session_id) WHERE s.user_id = ?1"),
        ("session_state", "SELECT count(*) FROM session_state st JOIN sessions s USING (session_id) WHERE s.user_id = ?1"),
        ("notes", "SELECT count(*) FROM notes WHERE user_id = ?1"),
        ("note_versions", "SELECT count(*) FROM note_versions WHERE user_id = ?1"),
        ("note_tombstones", "SELECT count(*) FROM note_tombstones WHERE user_id = ?1"),
        ("fact_evidence", "SELECT count(*) FROM fact_evidence WHERE user_id = ?1"),
        ("chunks", "SELECT count(*) FROM chunks WHERE user_id = ?1"),
        ("keyword_blocks", "SELECT count(*) FROM keyword_blocks WHERE session_id IN (SELECT session_id FROM sessions WHERE user_id = ?1)"),
        ("vector_blocks", "SELECT count(*) FROM vector_blocks WHERE session_id IN (SELECT session_id FROM sessions WHERE user_id = ?1)"),
        ("chunk_vectors", "SELECT count(*) FROM chunk_vectors WHERE chunk_id IN (SELECT chunk_id FROM chunks WHERE user_id = ?1)"),
        ("state_entries", "SELECT count(*) FROM state_entries WHERE user_id = ?1"),
        ("artifacts", "SELECT count(*) FROM artifacts WHERE user_id = ?1"),
        ("macros", "SELECT count(*) FROM macros WHERE user_id = ?1"),
        ("schedules", "SELECT count(*) FROM schedules WHERE user_id = ?1"),
        ("schedule_runs", "SELECT count(*) FROM schedule_runs r JOIN schedules s USING (schedule_id) WHERE s.user_id = ?1"),
        ("approvals", "SELECT count(*) FROM approvals WHERE user_id = ?1"),
        ("outbox", "SELECT count(*) FROM outbox WHERE user_id = ?1"),
        ("api_tokens", "SELECT count(*) FROM api_tokens WHERE user_id = ?1"),
        ("macro_triggers", "SELECT count(*) FROM macro_triggers WHERE user_id = ?1"),
        ("macro_cursors", "SELECT count(*) FROM macro_cursors WHERE user_id = ?1"),
    ];
    let conn = app.db().conn().await.unwrap();
    let mut out = Vec::new();
    for (table, sql) in tables {
        let n: i64 = nightshift::db::query_scalar(&conn, sql, [user])
            .await
            .unwrap()
            .unwrap_or(0);
        out.push((table, n));
    }
    out
}

async fn fill(app: &App, user: &str) {
    let memory = app.memory();
    let word = format!("{user}word");
    let id = memory
        .save_note(user, &NewNote::new(format!("a note with {word}")))
        .await
        .unwrap()
        .note_id;
    memory
        .update_note(user, &id, &format!("an updated note with {word}"), None)
        .await
        .unwrap();
    let gone = memory
        .save_note(user, &NewNote::new(format!("deleted {word}")))
        .await
        .unwrap()
        .note_id;
    memory.delete_note(user, &gone).await.unwrap();
    let session = format!("{user}-chat");
    memory
        .append(
            user,
            &session,
            &[NewEvent::new(Role::User, format!("hello {word}"))],
        )
        .await
        .unwrap();
    memory.embed_pending(&|_, _| {}).await.unwrap();
    app.state()
        .set(
            &StateAccess::user(user, Some(session.clone())),
            "draft",
            &json!(1),
            None,
        )
        .await
        .unwrap();
    app.state()
        .set(
            &StateAccess::user(user, None),
            "user:tz",
            &json!("UTC"),
            None,
        )
        .await
        .unwrap();
    app.artifacts()
        .put(
            user,
            &session,
            None,
            &NewArtifact {
                name: "r.txt".into(),
                mime_type: "text/plain".into(),
                content: format!("{user} report").into_bytes(),
            },
        )
        .await
        .unwrap();
    let schedule = app
        .schedules()
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                user,
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
    // A run waiting for the user's approval of a call.
    let conn = app.db().conn().await.unwrap();
    let run_id = format!("run-{user}");
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status)
         VALUES (?1, ?2, 1, 'waiting')",
        [run_id.as_str(), schedule.schedule_id.as_str()],
    )
    .await
    .unwrap();
    conn.execute(
        "INSERT INTO approvals (approval_id, run_id, schedule_id, user_id, tool_name,
         arguments, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, 'memory_save', '{}', 1, 2)",
        [
            format!("apr-{user}").as_str(),
            run_id.as_str(),
            schedule.schedule_id.as_str(),
            user,
        ],
    )
    .await
    .unwrap();
    app.tokens()
        .create(&NewToken {
            user_id: Some(user.into()),
            name: None,
            expires_in_secs: None,
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn purging_a_user_leaves_nothing_of_them_and_touches_no_one_else() {
    let dir = TempDir::new().unwrap();
    let (app, _) = app_at(&dir).await;
    fill(&app, "alice").await;
    fill(&app, "bob").await;
    let bob_before = rows_of(&app, "bob").await;
    let alice_before = rows_of(&app, "alice").await;
    for table in [
        "sessions",
        "events",
        "notes",
        "note_versions",
        "note_tombstones",
        "chunks",
        "chunk_vectors",
        "state_entries",
        "artifacts",
        "schedules",
        "schedule_runs",
        "approvals",
        "api_tokens",
    ] {
        let n = alice_before.iter().find(|(t, _)| *t == table).unwrap().1;
        assert!(n > 0, "the set-up left no {table} for alice");
    }

    // A dry run counts and removes nothing.
    let dry = purge_user(app.db(), &Actor::Operator, "alice", true)
        .await
        .unwrap();
    assert!(!dry.purged);
    assert_eq!(dry.removed["notes"], 1);
    assert_eq!(rows_of(&app, "alice").await, alice_before);
    // A user purges only themselves.
    assert!(
        purge_user(app.db(), &Actor::user("bob").unwrap(), "alice", false)
            .await
            .is_err()
    );

    let purged = purge_user(app.db(), &Actor::user("alice").unwrap(), "alice", false)
        .await
        .unwrap();
    assert!(purged.purged);
    // The note's two versions and the deleted note's two.
    assert_eq!(purged.removed["note_versions"], 4);
    for (table, n) in rows_of(&app, "alice").await {
        assert_eq!(n, 0, "{table} still holds alice's rows");
    }
    assert_eq!(rows_of(&app, "bob").await, bob_before);
    common::keyword_integrity(app.memory()).await;
    assert_eq!(
        found(&app, "bob", "bobword").await,
        ["an updated note with bobword"]
    );
    assert!(found(&app, "alice", "aliceword").await.is_empty());
}

#[tokio::test]
async fn the_api_serves_history_and_restore_and_keeps_purge_to_admins() {
    let api = common::api::TestApi::start(|_| {}).await;
    let alice = api.token(Some("alice")).await;
    let bob = api.token(Some("bob")).await;
    let admin = api.token(None).await;
    let saved = api
        .call(
            "POST",
            "/v1/notes",
            Some(&alice),
            Some(json!({"text": "first words"})),
        )
        .await;
    let id = saved.body["note_id"].as_str().unwrap().to_string();
    api.call(
        "PATCH",
        &format!("/v1/notes/{id}"),
        Some(&alice),
        Some(json!({"text": "second words"})),
    )
    .await;
    let history = api
        .call(
            "GET",
            &format!("/v1/notes/{id}/history"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(history.status, 200);
    assert_eq!(history.body[1]["changed_by"], "api");
    assert_eq!(
        api.call("GET", &format!("/v1/notes/{id}/history"), Some(&bob), None)
            .await
            .status,
        404
    );
    let restored = api
        .call(
            "POST",
            &format!("/v1/notes/{id}/restore"),
            Some(&alice),
            Some(json!({"version": 1})),
        )
        .await;
    assert_eq!(restored.status, 200, "{}", restored.body);
    assert_eq!(restored.body["content"], "first words");
    let bad = api
        .call(
            "POST",
            &format!("/v1/notes/{id}/restore"),
            Some(&alice),
            Some(json!({"version": 0})),
        )
        .await;
    assert_eq!(bad.status, 400);
    let refused = api
        .call(
            "POST",
            "/v1/admin/users/alice/purge",
            Some(&alice),
            Some(json!({})),
        )
        .await;
    assert_eq!(refused.status, 403);
    let purged = api
        .call(
            "POST",
            "/v1/admin/users/alice/purge",
            Some(&admin),
            Some(json!({})),
        )
        .await;
    assert_eq!(purged.status, 200, "{}", purged.body);
    assert_eq!(purged.body["removed"]["notes"], 1);
    // Alice's token went with her.
    assert_eq!(
        api.call("GET", "/v1/notes", Some(&alice), None)
            .await
            .status,
        401
    );
    api.stop().await;
}

#[tokio::test]
async fn as_of_answers_with_the_notes_as_they_were_then() {
    let dir = TempDir::new().unwrap();
    let (app, clock) = app_at(&dir).await;
    let memory = app.memory();
    let id = memory
        .save_note("alice", &NewNote::new("Alice drinks green tea"))
        .await
        .unwrap()
        .note_id;
    clock.advance_ms(1000);
    memory
        .update_note("alice", &id, "Alice drinks black tea", None)
        .await
        .unwrap();
    clock.advance_ms(1000);
    let other = memory
        .save_note("alice", &NewNote::new("Alice walks to work"))
        .await
        .unwrap()
        .note_id;
    memory.delete_note("alice", &id).await.unwrap();
    memory
        .save_note("bob", &NewNote::new("Bob drinks tea"))
        .await
        .unwrap();

    let texts = |versions: Vec<nightshift::memory::NoteVersion>| -> Vec<String> {
        versions.into_iter().map(|v| v.content).collect()
    };
    // Each edge: before anything, the first moment of each version, and after the delete.
    assert!(memory
        .notes_as_of("alice", START - 1)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        texts(memory.notes_as_of("alice", START).await.unwrap()),
        ["Alice drinks green tea"]
    );
    assert_eq!(
        texts(memory.notes_as_of("alice", START + 999).await.unwrap()),
        ["Alice drinks green tea"]
    );
    assert_eq!(
        texts(memory.notes_as_of("alice", START + 1000).await.unwrap()),
        ["Alice drinks black tea"]
    );
    assert_eq!(
        texts(memory.notes_as_of("alice", START + 2000).await.unwrap()),
        ["Alice walks to work"]
    );
    // Search: the words of then, not of now; never another user's.
    let then = memory
        .search_as_of("alice", "green tea", START + 500, 5)
        .await
        .unwrap();
    assert_eq!(texts(then), ["Alice drinks green tea"]);
    assert!(memory
        .search_as_of("alice", "green", START + 1500, 5)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        texts(
            memory
                .search_as_of("alice", "black", START + 1500, 5)
                .await
                .unwrap()
        ),
        ["Alice drinks black tea"]
    );
    assert!(memory
        .search_as_of("alice", "tea", START + 2500, 5)
        .await
        .unwrap()
        .is_empty());
    let now = memory
        .search_as_of("alice", "walks", START + 2500, 5)
        .await
        .unwrap();
    assert_eq!(now[0].note_id, other);
    assert!(memory
        .search_as_of("bob", "green", START + 500, 5)
        .await
        .unwrap()
        .is_empty());
    // Bad input is refused naming it.
    assert!(memory.notes_as_of("alice", -1).await.is_err());
    assert!(memory
        .search_as_of("alice", "a\u{0}b", START, 5)
        .await
        .is_err());
    assert!(memory
        .search_as_of("alice", "!!!", START, 5)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn as_of_through_the_api() {
    let api = common::api::TestApi::start(|_| {}).await;
    let alice = api.token(Some("alice")).await;
    let saved = api
        .call(
            "POST",
            "/v1/notes",
            Some(&alice),
            Some(json!({"text": "the meeting is on Monday"})),
        )
        .await;
    let id = saved.body["note_id"].as_str().unwrap().to_string();
    let history = api
        .call(
            "GET",
            &format!("/v1/notes/{id}/history"),
            Some(&alice),
            None,
        )
        .await;
    let first = history.body[0]["changed_at"].as_i64().unwrap();
    api.call(
        "PATCH",
        &format!("/v1/notes/{id}"),
        Some(&alice),
        Some(json!({"text": "the meeting moved to Friday"})),
    )
    .await;
    let history = api
        .call(
            "GET",
            &format!("/v1/notes/{id}/history"),
            Some(&alice),
            None,
        )
        .await;
    let second = history.body[1]["changed_at"].as_i64().unwrap();
    // Both writes may share a millisecond; then only the newest version is "as of" it.
    if second > first {
        let then = api
            .call(
                "GET",
                &format!("/v1/versions?as_of={first}"),
                Some(&alice),
                None,
            )
            .await;
        assert_eq!(then.status, 200, "{}", then.body);
        assert_eq!(then.body[0]["content"], "the meeting is on Monday");
        let found = api
            .call(
                "POST",
                "/v1/search",
                Some(&alice),
                Some(json!({"query": "Monday", "as_of": first.to_string()})),
            )
            .await;
        assert_eq!(found.status, 200, "{}", found.body);
        assert_eq!(found.body["hits"][0]["text"], "the meeting is on Monday");
        assert!(found.body["degraded_reason"]
            .as_str()
            .unwrap()
            .contains("as of"));
    }
    let now = api
        .call(
            "GET",
            &format!("/v1/versions?as_of={second}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(now.body[0]["content"], "the meeting moved to Friday");
    let before = api
        .call("GET", "/v1/versions?as_of=2000-01-01", Some(&alice), None)
        .await;
    assert_eq!(before.body, json!([]));
    // Not combined with filters; a bad instant is named.
    let mixed = api
        .call(
            "POST",
            "/v1/search",
            Some(&alice),
            Some(json!({"query": "meeting", "as_of": "2030-01-01", "tags": ["x"]})),
        )
        .await;
    assert_eq!(mixed.status, 400, "{}", mixed.body);
    assert!(mixed.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("as_of"));
    let bad = api
        .call(
            "GET",
            "/v1/versions?as_of=yesterday-ish",
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("as_of"));
    api.stop().await;
}

#[test]
fn as_of_on_the_command_line() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("x.db");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_nightshift"))
            .arg("--json")
            .args(args)
            .env("NIGHTSHIFT_DB", &db)
            .env_remove("NIGHTSHIFT_CONFIG")
            .output()
            .unwrap()
    };
    assert!(
        run(&["memory", "save", "--user", "alice", "Alice lives in Porto"])
            .status
            .success()
    );
    let past = run(&[
        "memory",
        "notes",
        "--user",
        "alice",
        "--as-of",
        "2000-01-01",
    ]);
    assert!(past.status.success());
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&past.stdout).unwrap(),
        json!([])
    );
    let later = run(&[
        "memory",
        "search",
        "--user",
        "alice",
        "--as-of",
        "2999-01-01",
        "Porto",
    ]);
    assert!(
        later.status.success(),
        "{}",
        String::from_utf8_lossy(&later.stderr)
    );
    let found: serde_json::Value = serde_json::from_slice(&later.stdout).unwrap();
    assert_eq!(found["hits"][0]["text"], "Alice lives in Porto");
    let mixed = run(&[
        "memory",
        "notes",
        "--user",
        "alice",
        "--as-of",
        "2999-01-01",
        "--tag",
        "x",
    ]);
    assert_eq!(mixed.status.code(), Some(2));
}
