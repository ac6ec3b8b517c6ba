//! Export and import on real libSQL files: exact round trips, idempotence, conflicts,
//! truncation, confinement to one user, mem0 and Markdown input, and any bytes.

mod common;

use std::path::Path;

use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::artifact::NewArtifact;
use nightshift::memory::{NewEvent, NewNote, Role};
use nightshift::portable::{ExportScope, ImportFormat, ImportRequest, Portable, PortableError};
use proptest::prelude::*;
use tempfile::TempDir;

const AT: i64 = 1_700_000_000_000;

async fn app_in(dir: &TempDir) -> App {
    common::app_with(&common::config_in(dir), None).await
}

fn portable(app: &App) -> Portable {
    app.portable()
}

async fn export(app: &App, user: &str) -> Vec<u8> {
    let mut out = Vec::new();
    portable(app)
        .export(
            &Actor::Operator,
            &ExportScope::User(user.into()),
            AT,
            &mut out,
        )
        .await
        .expect("export");
    out
}

/// Every user's archive.
async fn export_all(app: &App) -> Vec<u8> {
    let mut out = Vec::new();
    portable(app)
        .export(&Actor::Operator, &ExportScope::All, AT, &mut out)
        .await
        .expect("export");
    out
}

fn request(path: &Path, format: Option<ImportFormat>, user: Option<&str>) -> ImportRequest {
    ImportRequest {
        path: path.to_path_buf(),
        format,
        user: user.map(str::to_string),
        dry_run: false,
    }
}

async fn sql(app: &App, statement: &str) {
    let conn = app.db().conn().await.unwrap();
    conn.execute(statement, ()).await.unwrap();
}

fn note(content: &str, key: Option<&str>) -> NewNote {
    NewNote {
        content: content.into(),
        tags: vec!["t1".into()],
        key: key.map(str::to_string),
        category: Some("fact".into()),
        source: None,
        fact_key: None,
        expires_at: None,
    }
}

fn event(role: Role, content: &str) -> NewEvent {
    NewEvent {
        role,
        content: content.into(),
        payload: Some(serde_json::json!({"tool": "x", "n": 1.25})),
        importance: Some(0.3),
        created_at: Some(AT),
        name: Some("Alice".into()),
    }
}

/// Notes (one updated twice, one superseded), a conversation, state, an artifact, a
/// schedule with runs; and some of bob's data that alice's export must never hold.
async fn populate(app: &App) {
    let memory = app.memory();
    memory
        .save_note("alice", &note("likes tea", Some("drink")))
        .await
        .unwrap();
    memory
        .save_note("alice", &note("likes green tea", Some("drink")))
        .await
        .unwrap();
    let old = memory
        .save_note("alice", &note("lives in Paris", None))
        .await
        .unwrap();
    let new = memory
        .save_note("alice", &note("lives in Lyon", None))
        .await
        .unwrap();
    sql(
        app,
        &format!(
            "UPDATE notes SET superseded_by = '{}' WHERE note_id = '{}'",
            new.note_id, old.note_id
        ),
    )
    .await;
    memory
        .append(
            "alice",
            "chat-1",
            &[
                event(Role::User, "hello"),
                event(Role::Assistant, "hi\nthere"),
            ],
        )
        .await
        .unwrap();
    memory
        .save_note("bob", &note("bob's secret", None))
        .await
        .unwrap();
    memory
        .append("bob", "chat-bob", &[event(Role::User, "bob here")])
        .await
        .unwrap();
    sql(
        app,
        "INSERT INTO state_entries (scope, scope_id, key, user_id, session_id, value_json,
         version, created_at, updated_at)
         VALUES ('user', 'alice', 'user:prefs', 'alice', NULL, '{\"a\": [1, 2]}', 7, 1, 2),
                ('session', 'alice\u{1f}chat-1', 'step', 'alice',
                 'alice\u{1f}chat-1', '3', 8, 1, 2)",
    )
    .await;
    let artifact = NewArtifact {
        name: "report.csv".into(),
        mime_type: "text/csv".into(),
        content: b"a,b\n1,2\n".to_vec(),
    };
    app.artifacts()
        .put("alice", "chat-1", None, &artifact)
        .await
        .unwrap();
    sql(
        app,
        "INSERT INTO schedules (schedule_id, user_id, name, goal, cadence_json, cadence_text,
         created_at, updated_at, next_run_at, max_cost, tools_json, approve_json)
         VALUES ('sch-1', 'alice', 'daily', 'summarise the news',
                 '{\"kind\":\"interval\",\"every_secs\":86400,\"anchor\":0,\"tz\":\"UTC\"}',
                 'every day', 10, 20, 30, 0.1, '[\"news__*\"]',
                 '[\"news__post_*\",\"memory_delete\",\"!news__post_draft\"]')",
    )
    .await;
    sql(
        app,
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, started_at,
         finished_at, output, cost)
         VALUES ('run-1', 'sch-1', 100, 'succeeded', 101, 102, 'done', 0.003),
                ('run-2', 'sch-1', 200, 'failed', 201, 202, NULL, 0)",
    )
    .await;
}

/// The archive `lines` with alice's first line of `kind` replaced by `edit` of it.
fn edit_first(lines: &[&str], kind: &str, edit: &dyn Fn(&mut serde_json::Value)) -> Vec<u8> {
    let mut out = Vec::new();
    let mut done = false;
    for line in lines {
        let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
        if !done && value["type"] == kind && value["user"] == "alice" {
            edit(&mut value);
            done = true;
        }
        out.extend(serde_json::to_vec(&value).unwrap());
        out.push(b'\n');
    }
    assert!(done, "no {kind} line");
    out
}

fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[tokio::test]
async fn round_trip_is_byte_identical_and_idempotent() {
    let (a, b, files) = (
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
    );
    let source = app_in(&a).await;
    populate(&source).await;
    let archive = export(&source, "alice").await;
    let text = String::from_utf8(archive.clone()).unwrap();
    for kind in [
        "session",
        "event",
        "summary",
        "note",
        "note_version",
        "state",
        "artifact",
        "schedule",
        "run",
    ] {
        assert!(
            text.contains(&format!("\"type\":\"{kind}\"")),
            "no {kind} in\n{text}"
        );
    }
    assert!(
        !text.contains("bob"),
        "bob's data in alice's export:\n{text}"
    );
    assert!(text.lines().last().unwrap().contains("\"end\""));
    assert!(
        text.contains("\"name\":\"Alice\""),
        "no speaker name in\n{text}"
    );

    // An archive written before events had names (no `name` field) and schedules approval
    // patterns (no `approve_json`) still imports: the events come in unnamed, the
    // schedule with no approval patterns.
    let older: String = text
        .lines()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
            if value["type"] == "event" {
                value.as_object_mut().unwrap().remove("name");
            }
            if value["type"] == "schedule" {
                value.as_object_mut().unwrap().remove("approve_json");
            }
            format!("{value}\n")
        })
        .collect();
    assert!(!older.contains("Alice"));
    let before_names = TempDir::new().unwrap();
    let unnamed = app_in(&before_names).await;
    let path = write(&files, "older.ndjson", older.as_bytes());
    portable(&unnamed)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    let reexported = String::from_utf8(export(&unnamed, "alice").await).unwrap();
    assert!(reexported.contains("\"name\":null") && !reexported.contains("Alice"));
    assert!(reexported.contains("\"approve_json\":null"), "{reexported}");
    assert!(
        text.contains(r#""approve_json":"[\"news__post_*\""#),
        "{text}"
    );

    let target = app_in(&b).await;
    let path = write(&files, "alice.ndjson", &archive);
    let report = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    assert_eq!(report.format, "nightshift");
    assert!(
        report.types.values().all(|t| t.conflicts.is_empty()),
        "{report:?}"
    );
    assert_eq!(report.types["note"].imported, 3);
    assert_eq!(
        export(&target, "alice").await,
        archive,
        "export → import → export differs"
    );
    // The schedule's tool and approval patterns came with it.
    let schedule = target
        .schedules()
        .get(&Actor::Operator, "sch-1")
        .await
        .unwrap();
    assert_eq!(schedule.tools, ["news__*"]);
    assert_eq!(
        schedule.approve,
        ["news__post_*", "memory_delete", "!news__post_draft"]
    );

    // The index was rebuilt: a search finds an imported note.
    let chunks = common::count(
        target.memory(),
        "SELECT count(*) FROM chunks WHERE user_id = 'alice'",
    )
    .await;
    assert!(chunks > 0);

    let again = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    assert!(again.changed_nothing(), "{again:?}");
    assert!(again
        .types
        .values()
        .all(|t| t.conflicts.is_empty() && t.already_present > 0));
    assert_eq!(export(&target, "alice").await, archive);
}

#[tokio::test]
async fn a_conflicting_note_is_reported_and_left_alone() {
    let (a, b, files) = (
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
    );
    let source = app_in(&a).await;
    populate(&source).await;
    let archive = export(&source, "alice").await;
    let target = app_in(&b).await;
    let path = write(&files, "a.ndjson", &archive);
    portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    sql(
        &target,
        "UPDATE notes SET content = 'changed here' WHERE content = 'lives in Lyon'",
    )
    .await;
    let report = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    assert_eq!(report.types["note"].conflicts.len(), 1, "{report:?}");
    let kept = common::count(
        target.memory(),
        "SELECT count(*) FROM notes WHERE content = 'changed here'",
    )
    .await;
    assert_eq!(kept, 1);
}

#[tokio::test]
async fn a_truncated_archive_imports_nothing_and_names_the_line() {
    let (a, b, files) = (
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
    );
    let source = app_in(&a).await;
    populate(&source).await;
    let archive = export(&source, "alice").await;
    let text = String::from_utf8(archive).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let target = app_in(&b).await;
    let without_end = lines[..lines.len() - 1].join("\n") + "\n";
    let cut = &text[..text.len() - 30];
    for (name, bytes) in [("no-end", without_end.as_str()), ("cut", cut)] {
        let path = write(&files, name, bytes.as_bytes());
        let err = portable(&target)
            .import(
                &Actor::Operator,
                &request(&path, Some(ImportFormat::Nightshift), None),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, PortableError::Line { .. }), "{name}: {err}");
        assert!(err.to_string().starts_with("line "), "{name}: {err}");
    }
    let unknown = text.replacen("\"type\":\"note\"", "\"type\":\"nope\"", 1);
    let path = write(&files, "unknown", unknown.as_bytes());
    let err = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unknown type"), "{err}");
    assert_eq!(
        common::count(target.memory(), "SELECT count(*) FROM notes").await,
        0
    );
    assert_eq!(
        common::count(target.memory(), "SELECT count(*) FROM sessions").await,
        0
    );
}

#[tokio::test]
async fn a_missing_file_is_not_found_in_every_format() {
    let a = TempDir::new().unwrap();
    let app = app_in(&a).await;
    let missing = a.path().join("no-such-archive");
    for format in [
        None,
        Some(ImportFormat::Nightshift),
        Some(ImportFormat::Mem0),
        Some(ImportFormat::Markdown),
    ] {
        let err = portable(&app)
            .import(&Actor::Operator, &request(&missing, format, Some("alice")))
            .await
            .unwrap_err();
        assert_eq!(
            nightshift::error::Kind::kind(&err),
            nightshift::error::ErrorKind::NotFound,
            "{format:?}: {err}"
        );
        assert!(err.to_string().contains("no-such-archive"), "{err}");
    }
}

#[tokio::test]
async fn a_user_exports_only_themselves() {
    let a = TempDir::new().unwrap();
    let app = app_in(&a).await;
    populate(&app).await;
    let mut out = Vec::new();
    let alice = Actor::user("alice").unwrap();
    let err = portable(&app)
        .export(&alice, &ExportScope::User("bob".into()), AT, &mut out)
        .await;
    assert!(matches!(err, Err(PortableError::NotYours)));
    let err = portable(&app)
        .export(&alice, &ExportScope::All, AT, &mut out)
        .await;
    assert!(matches!(err, Err(PortableError::NotYours)));
    let mut all = Vec::new();
    let report = portable(&app)
        .export(&Actor::Operator, &ExportScope::All, AT, &mut all)
        .await
        .unwrap();
    assert_eq!(report.users, vec!["alice".to_string(), "bob".to_string()]);
}

#[tokio::test]
async fn mem0_and_markdown_become_notes_once() {
    let (a, files) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let app = app_in(&a).await;
    let item = |id: &str, text: &str| {
        serde_json::json!({"id": id, "memory": text, "user_id": "carol", "hash": "h",
            "metadata": {"tags": ["food"]}, "created_at": "2024-07-20T10:00:00.123456-07:00",
            "updated_at": null})
    };
    let bare = serde_json::json!([item("m1", "likes pizza")]);
    let wrapped =
        serde_json::json!({"results": [item("m1", "likes pizza"), item("m2", "has a cat")]});
    let bare = write(&files, "bare.json", bare.to_string().as_bytes());
    let wrapped = write(&files, "wrapped.json", wrapped.to_string().as_bytes());
    let p = portable(&app);
    let first = p
        .import(&Actor::Operator, &request(&bare, None, None))
        .await
        .unwrap();
    assert_eq!(
        (first.format.as_str(), first.types["note"].imported),
        ("mem0", 1)
    );
    let second = p
        .import(&Actor::Operator, &request(&wrapped, None, None))
        .await
        .unwrap();
    assert_eq!(
        (
            second.types["note"].imported,
            second.types["note"].already_present
        ),
        (1, 1)
    );
    let tags = common::count(
        app.memory(),
        "SELECT count(*) FROM notes WHERE note_id = 'mem0-m1'
        AND tags_json = '[\"food\"]' AND source = 'import' AND user_id = 'carol'",
    )
    .await;
    assert_eq!(tags, 1);

    let folder = files.path().join("md");
    std::fs::create_dir_all(folder.join("sub")).unwrap();
    std::fs::write(
        folder.join("a.md"),
        "---\ntags: [x, \"y\"]\nkey: k1\ncategory: pref\n---\nLikes hiking.\n",
    )
    .unwrap();
    std::fs::write(
        folder.join("sub/b.md"),
        "---\ntags:\n  - z\n---\nSecond note\n",
    )
    .unwrap();
    std::fs::write(folder.join("skip.txt"), "not a note").unwrap();
    let md = p
        .import(&Actor::Operator, &request(&folder, None, Some("dave")))
        .await
        .unwrap();
    assert_eq!(
        (md.format.as_str(), md.types["note"].imported),
        ("markdown", 2),
        "{md:?}"
    );
    let again = p
        .import(&Actor::Operator, &request(&folder, None, Some("dave")))
        .await
        .unwrap();
    assert!(again.changed_nothing(), "{again:?}");
    let front = common::count(
        app.memory(),
        "SELECT count(*) FROM notes WHERE note_id = 'md-a.md'
        AND key = 'k1' AND category = 'pref' AND tags_json = '[\"x\",\"y\"]'
        AND content = 'Likes hiking.'",
    )
    .await;
    assert_eq!(front, 1);
    let nested = common::count(
        app.memory(),
        "SELECT count(*) FROM notes WHERE note_id = 'md-sub/b.md' AND tags_json = '[\"z\"]'",
    )
    .await;
    assert_eq!(nested, 1);
    let no_user = p
        .import(&Actor::Operator, &request(&folder, None, None))
        .await;
    assert!(no_user.is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn any_bytes_are_an_error_naming_a_line_or_a_success(
        prefix in prop::bool::ANY,
        body in prop::collection::vec(any::<u8>(), 0..400),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (a, files) = (TempDir::new().unwrap(), TempDir::new().unwrap());
            let app = app_in(&a).await;
            let mut bytes = Vec::new();
            if prefix {
                bytes.extend_from_slice(b"{\"format\":\"nightshift-export\",\"version\":1,\"exported_at\":1,\"users\":[\"u\"]}\n");
            }
            bytes.extend_from_slice(&body);
            let path = write(&files, "any", &bytes);
            let result = portable(&app)
                .import(&Actor::Operator, &request(&path, Some(ImportFormat::Nightshift), None))
                .await;
            if let Err(err) = result {
                assert!(matches!(err, PortableError::Line { .. }), "{err}");
            }
        });
    }
}

#[tokio::test]
async fn the_api_exports_the_same_archive_to_its_owner_only() {
    let api = common::api::TestApi::start(|_| {}).await;
    populate(&api.app).await;
    let alice = api.token(Some("alice")).await;
    let admin = api.token(None).await;
    let get = |path: &str, token: &str| {
        api.client
            .get(format!("{}{path}", api.base))
            .bearer_auth(token)
            .send()
    };
    let reply = get("/v1/export", &alice).await.unwrap();
    assert_eq!(reply.status(), 200);
    assert_eq!(
        reply.headers()["content-type"].to_str().unwrap(),
        "application/x-ndjson"
    );
    let body = reply.text().await.unwrap();
    let header: serde_json::Value = serde_json::from_str(body.lines().next().unwrap()).unwrap();
    assert_eq!(header["users"], serde_json::json!(["alice"]));
    assert!(!body.contains("\"user\":\"bob\""));
    // The same bytes the CLI's export writes (but for the moment in the header).
    let cli = String::from_utf8(export(&api.app, "alice").await).unwrap();
    assert_eq!(
        body.lines().skip(1).collect::<Vec<_>>(),
        cli.lines().skip(1).collect::<Vec<_>>()
    );
    for (path, token, status) in [
        ("/v1/export?user=bob", &alice, 403),
        ("/v1/export?all=true", &alice, 403),
        ("/v1/export", &admin, 400),
        ("/v1/export?all=true&user=bob", &admin, 400),
        ("/v1/export?all=maybe", &admin, 400),
    ] {
        let reply = get(path, token).await.unwrap();
        assert_eq!(reply.status(), status, "{path}");
    }
    let all = get("/v1/export?all=true", &admin)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let header: serde_json::Value = serde_json::from_str(all.lines().next().unwrap()).unwrap();
    assert_eq!(header["users"], serde_json::json!(["alice", "bob"]));
    api.stop().await;
}

/// An archive of every user: bob with one note, zed with three notes and a 100 KiB
/// artifact (over the 64 KiB kept inline).
async fn limits_archive(dir: &TempDir) -> (Vec<u8>, Vec<u8>) {
    let source = app_in(dir).await;
    let memory = source.memory();
    memory
        .save_note("bob", &note("bob's only note", None))
        .await
        .unwrap();
    for n in 0..3 {
        memory
            .save_note("zed", &note(&format!("zed's note number {n}"), None))
            .await
            .unwrap();
    }
    let big: Vec<u8> = (0..100 * 1024u32).map(|i| (i % 251) as u8).collect();
    let artifact = NewArtifact {
        name: "big.bin".into(),
        mime_type: "application/octet-stream".into(),
        content: big.clone(),
    };
    source
        .artifacts()
        .put("zed", "chat-z", None, &artifact)
        .await
        .unwrap();
    let all = export_all(&source).await;
    (all, big)
}

#[tokio::test]
async fn an_import_keeps_each_users_limits_and_the_artifact_folder() {
    let (a, files) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let (archive, big) = limits_archive(&a).await;
    let path = write(&files, "all.ndjson", &archive);

    // Over memory.max_notes_per_user: zed's transaction is refused whole, bob (before zed
    // in the archive) stays imported and searchable, and the error names both.
    let b = TempDir::new().unwrap();
    let mut config = common::config_in(&b);
    config.memory.max_notes_per_user = 2;
    let target = common::app_with(&config, None).await;
    let err = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PortableError::OverLimit { user, imported_before, .. }
            if user == "zed" && imported_before == &["bob".to_string()]),
        "{err:?}"
    );
    assert_eq!(
        nightshift::error::Kind::kind(&err),
        nightshift::error::ErrorKind::Conflict
    );
    let message = err.to_string();
    assert!(
        message.contains("memory.max_notes_per_user (2)"),
        "{message}"
    );
    assert!(message.contains("imported before it: bob"), "{message}");
    let m = target.memory();
    assert_eq!(
        common::count(m, "SELECT count(*) FROM notes WHERE user_id = 'zed'").await,
        0
    );
    assert_eq!(
        common::count(m, "SELECT count(*) FROM artifacts WHERE user_id = 'zed'").await,
        0
    );
    assert_eq!(
        common::count(m, "SELECT count(*) FROM chunks WHERE user_id = 'bob'").await,
        1,
        "bob's committed note was not indexed"
    );

    // Over artifacts.max_bytes_per_user (with what zed stored already): refused by that
    // limit's name, zed's own bytes untouched.
    let c = TempDir::new().unwrap();
    let mut config = common::config_in(&c);
    config.artifacts.max_artifact_bytes = 100 * 1024;
    config.artifacts.max_bytes_per_user = 100 * 1024;
    let target = common::app_with(&config, None).await;
    let small = NewArtifact {
        name: "small.txt".into(),
        mime_type: "text/plain".into(),
        content: b"ten bytes!".to_vec(),
    };
    target
        .artifacts()
        .put("zed", "chat-other", None, &small)
        .await
        .unwrap();
    let err = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("artifacts.max_bytes_per_user"),
        "{err}"
    );
    assert_eq!(
        common::count(target.memory(), "SELECT count(*) FROM artifact_contents").await,
        1
    );

    // One artifact over artifacts.max_artifact_bytes: its line is named, nothing written.
    let e = TempDir::new().unwrap();
    let mut config = common::config_in(&e);
    config.artifacts.max_artifact_bytes = 64 * 1024;
    let target = common::app_with(&config, None).await;
    let err = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PortableError::Line { reason, .. }
            if reason.contains("artifacts.max_artifact_bytes (65536)")),
        "{err}"
    );
    assert_eq!(
        common::count(target.memory(), "SELECT count(*) FROM notes").await,
        0,
        "checked before anything is written, bob included"
    );

    // Within the limits: the large content goes to the folder as a put would place it,
    // reads back whole, and the round trip stays byte-identical.
    let d = TempDir::new().unwrap();
    let target = app_in(&d).await;
    let report = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    assert_eq!(report.types["artifact"].imported, 1);
    assert_eq!(
        common::count(
            target.memory(),
            "SELECT count(*) FROM artifact_contents WHERE in_folder = 1 AND data IS NULL"
        )
        .await,
        1
    );
    let hash = blake3::hash(&big).to_hex().to_string();
    let folder = target
        .artifacts()
        .folder()
        .expect("a folder beside the file");
    assert!(folder.join(&hash[..2]).join(&hash).is_file());
    let listed = target
        .artifacts()
        .list(&Actor::Operator, "zed", None)
        .await
        .unwrap();
    let (_, bytes) = target
        .artifacts()
        .get(&Actor::Operator, &listed[0].artifact_id)
        .await
        .unwrap();
    assert_eq!(bytes, big);
    let again = export_all(&target).await;
    assert_eq!(again, archive);

    // A row the database refuses while writing zed (a session in neither the archive nor
    // the database) rolls zed back and names bob, committed before.
    let text = String::from_utf8(archive.clone()).unwrap();
    let orphan: String = text
        .lines()
        .map(|line| {
            if line.contains("\"type\":\"artifact\"") {
                line.replace("\"session_id\":\"chat-z\"", "\"session_id\":\"nowhere\"")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let path = write(&files, "orphan.ndjson", orphan.as_bytes());
    let f = TempDir::new().unwrap();
    let target = app_in(&f).await;
    let err = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("no session `nowhere`")
            && message.ends_with("the users before it were: bob"),
        "{message}"
    );
    let m = target.memory();
    assert_eq!(
        common::count(m, "SELECT count(*) FROM notes WHERE user_id = 'zed'").await,
        0
    );
    assert_eq!(
        common::count(m, "SELECT count(*) FROM notes WHERE user_id = 'bob'").await,
        1
    );
}

#[tokio::test]
async fn the_api_imports_an_archive_for_the_operator_as_the_cli_does() {
    let source_dir = TempDir::new().unwrap();
    let source = app_in(&source_dir).await;
    populate(&source).await;
    let alice_archive = export(&source, "alice").await;
    let all_archive = export_all(&source).await;

    let api = common::api::TestApi::start(|_| {}).await;
    let alice = api.token(Some("alice")).await;
    let admin = api.token(None).await;
    let post = |path: &str, token: &str, body: Vec<u8>| {
        api.client
            .post(format!("{}{path}", api.base))
            .bearer_auth(token)
            .header("content-type", "application/x-ndjson")
            .body(body)
            .send()
    };
    let notes = || common::count(api.app.memory(), "SELECT count(*) FROM notes");
    // An archive restores stored rows as they are: a user token may not, even its own.
    for path in [
        "/v1/import",
        "/v1/import?dry_run=true",
        "/v1/import?format=mem0",
    ] {
        let reply = post(path, &alice, alice_archive.clone()).await.unwrap();
        assert_eq!(reply.status(), 403, "{path}");
    }
    assert_eq!(notes().await, 0);
    // Content of no known format says so of the body: not the server's temp path, not a
    // command-line flag alone.
    let reply = post("/v1/import", &admin, b"just some words".to_vec())
        .await
        .unwrap();
    assert_eq!(reply.status(), 400);
    let message = reply.text().await.unwrap();
    assert!(
        message.contains("the request body")
            && message.contains("?format=")
            && !message.contains("/tmp"),
        "{message}"
    );
    // A truncated archive names its line and writes nothing.
    let cut = alice_archive[..alice_archive.len() - 20].to_vec();
    let reply = post("/v1/import", &admin, cut).await.unwrap();
    assert_eq!(reply.status(), 400);
    let message = reply.text().await.unwrap();
    assert!(message.contains("line"), "{message}");
    assert_eq!(notes().await, 0);
    // A dry run counts and writes nothing; Markdown is the CLI's.
    let reply = post("/v1/import?dry_run=true", &admin, alice_archive.clone())
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    let report: serde_json::Value = reply.json().await.unwrap();
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["types"]["note"]["imported"], 3);
    assert_eq!(notes().await, 0);
    let reply = post("/v1/import?format=markdown", &admin, alice_archive.clone())
        .await
        .unwrap();
    assert_eq!(reply.status(), 400);

    // Every user's archive: imported, then exported back byte for byte.
    let reply = post("/v1/import", &admin, all_archive.clone())
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    let report: serde_json::Value = reply.json().await.unwrap();
    assert_eq!(report["types"]["note"]["imported"], 4);
    assert_eq!(export(&api.app, "alice").await, alice_archive);
    let again: serde_json::Value = post("/v1/import", &admin, all_archive)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again["types"]["note"]["imported"], 0);

    // mem0 items for the user the operator names, whatever user_id they carry.
    let mem0 = serde_json::json!({"results": [{
        "id": "m-1", "memory": "Prefers window seats", "user_id": "bob",
        "metadata": null, "created_at": "2026-01-02T03:04:05Z", "updated_at": null
    }]});
    let reply = post(
        "/v1/import?format=mem0&user=carol",
        &admin,
        serde_json::to_vec(&mem0).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(reply.status(), 200);
    assert_eq!(
        common::count(
            api.app.memory(),
            "SELECT count(*) FROM notes WHERE user_id = 'carol' AND note_id = 'mem0-m-1'"
        )
        .await,
        1
    );
    api.stop().await;
}

/// Lines that would hurt another user, or break later reads, are refused in the first
/// pass (nothing written) or are conflicts; a row the database refuses after another
/// user committed names that user.
#[tokio::test]
async fn hostile_lines_are_refused_before_anything_is_written() {
    let (a, b, files) = (
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
    );
    let source = app_in(&a).await;
    populate(&source).await;
    let all = export_all(&source).await;
    let text = String::from_utf8(all).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let target = app_in(&b).await;
    let bob_note = target
        .memory()
        .save_note("bob", &note("bob's own", None))
        .await
        .unwrap()
        .note_id;

    // Replaces alice's first line of `kind` by `edit` of it.
    let with = |kind: &str, edit: &dyn Fn(&mut serde_json::Value)| edit_first(&lines, kind, edit);
    let bob_note_for = bob_note.clone();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "tags that are not JSON",
            with("note", &|v| v["tags_json"] = "not json".into()),
            "is not JSON",
        ),
        (
            "a payload that is not JSON",
            with("event", &|v| v["payload_json"] = "{{{".into()),
            "is not JSON",
        ),
        (
            "user state in bob's scope",
            with("state", &|v| {
                if v["scope"] == "user" {
                    v["scope_id"] = "bob".into();
                } else {
                    v["scope_id"] = "chat-bob".into();
                }
            }),
            "scope_id",
        ),
        (
            "a version past 2^53",
            with("note_version", &|v| v["version"] = i64::MAX.into()),
            "whole number",
        ),
        (
            "a speaker's name that is a number",
            with("event", &|v| v["name"] = 5.into()),
            "must be a string or null",
        ),
        (
            "a speaker's name of two lines",
            with("event", &|v| v["name"] = "Ann\nBob".into()),
            "control character",
        ),
        (
            "a speaker's name over 256 bytes",
            with("event", &|v| v["name"] = "n".repeat(257).into()),
            "over the limit of 256 bytes",
        ),
        (
            "a blank speaker's name",
            with("event", &|v| v["name"] = "  ".into()),
            "is empty",
        ),
        (
            "approval patterns that are not patterns",
            with("schedule", &|v| v["approve_json"] = r#"["news/*"]"#.into()),
            "approve",
        ),
        (
            "approval patterns that are not a list",
            with("schedule", &|v| v["approve_json"] = r#"{"news": 1}"#.into()),
            "approval patterns",
        ),
        (
            "too many approval patterns",
            with("schedule", &|v| {
                v["approve_json"] = serde_json::to_string(&vec!["x"; 65]).unwrap().into()
            }),
            "approve",
        ),
        (
            "bytes that are not base64",
            with("artifact", &|v| v["content_base64"] = "!!!".into()),
            "not base64",
        ),
        (
            "bytes of another hash",
            with("artifact", &|v| v["content_base64"] = "YWJj".into()),
            "hash and size",
        ),
    ];
    for (name, archive, expected) in cases {
        let path = write(&files, "hostile.ndjson", &archive);
        let err = portable(&target)
            .import(&Actor::Operator, &request(&path, None, None))
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, PortableError::Line { .. }) && message.contains(expected),
            "{name}: {message}"
        );
        assert!(
            message.ends_with("nothing was imported"),
            "{name}: {message}"
        );
        assert_eq!(
            common::count(
                target.memory(),
                "SELECT count(*) FROM notes WHERE user_id = 'alice'"
            )
            .await,
            0,
            "{name}"
        );
    }
    // A user named twice in the header is refused on line 1.
    let twice = text.replacen(
        "\"users\":[\"alice\",\"bob\"]",
        "\"users\":[\"alice\",\"bob\",\"alice\"]",
        1,
    );
    assert_ne!(twice, text);
    let path = write(&files, "twice.ndjson", twice.as_bytes());
    let err = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("named twice"), "{err}");
    // A user for an archive would be ignored: refused instead.
    let path = write(&files, "plain.ndjson", text.as_bytes());
    let err = portable(&target)
        .import(&Actor::Operator, &request(&path, None, Some("carol")))
        .await
        .unwrap_err();
    assert!(matches!(err, PortableError::Input(_)), "{err}");

    // A version of bob's note in alice's lines is a conflict, bob's history untouched.
    let archive = with("note_version", &|v| {
        v["note_id"] = bob_note_for.clone().into()
    });
    let path = write(&files, "version.ndjson", &archive);
    let report = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    assert_eq!(
        report.types["note_version"].conflicts.len(),
        1,
        "{report:?}"
    );
    let versions = format!(
        "SELECT count(*) FROM note_versions WHERE note_id = '{bob_note}' AND user_id = 'bob'"
    );
    assert_eq!(common::count(target.memory(), &versions).await, 1);
    let others = format!(
        "SELECT count(*) FROM note_versions WHERE note_id = '{bob_note}' AND user_id <> 'bob'"
    );
    assert_eq!(common::count(target.memory(), &others).await, 0);
}

/// A user's archive, edited, buys nothing the API would refuse (the hardening report's
/// D1–D4, D8, D9): each edited line is refused naming its line and field, and nothing of
/// it is written; the schedule limit holds after an import.
#[tokio::test]
async fn an_edited_archive_gets_no_more_than_the_write_paths_give() {
    let (a, b, files) = (
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
    );
    let source = app_in(&a).await;
    populate(&source).await;
    let text = String::from_utf8(export(&source, "alice").await).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut config = common::config_in(&b);
    config.scheduler.max_per_user = 1;
    let target = common::app_with(&config, None).await;
    let bob = target
        .schedules()
        .create(
            &Actor::Operator,
            &nightshift::schedule::types::NewSchedule::new(
                "bob",
                "bob's digest",
                nightshift::schedule::Cadence::Interval {
                    every_secs: 3600,
                    anchor: AT,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap()
        .schedule_id;

    // Alice's archive with her first line of `kind` edited.
    let with = |kind: &str, edit: &dyn Fn(&mut serde_json::Value)| edit_first(&lines, kind, edit);
    // Alice's archive with one more session line, after her others.
    let with_session = |id: &str, kind: &str| -> Vec<u8> {
        let mut out = Vec::new();
        let last_session = lines
            .iter()
            .rposition(|l| l.contains(r#""type":"session""#))
            .unwrap();
        for (i, line) in lines.iter().enumerate() {
            let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
            if value["type"] == "end" {
                value["lines"] = (value["lines"].as_u64().unwrap() + 1).into();
            }
            out.extend(serde_json::to_vec(&value).unwrap());
            out.push(b'\n');
            if i == last_session {
                let mut extra = value.clone();
                extra["session_id"] = id.into();
                extra["kind"] = kind.into();
                extra["last_sequence"] = 0.into();
                out.extend(serde_json::to_vec(&extra).unwrap());
                out.push(b'\n');
            }
        }
        out
    };
    let bob_for = bob.clone();
    let bobs_transcripts = format!("scheduled:{bob}");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "another user's schedule's transcripts",
            with_session(&bobs_transcripts, "scheduled"),
            "another user's schedule's transcripts",
        ),
        (
            "a conversation that says it holds notes",
            with_session("chat-9", "memory"),
            "field `kind` must be `conversation`",
        ),
        (
            "notes that say they are a conversation",
            with_session("memory:alice", "conversation"),
            "field `kind` must be `memory`",
        ),
        (
            "a fraction in an integer column (D1)",
            with("schedule", &|v| v["max_attempts"] = 2.5.into()),
            "field `max_attempts` must be a whole number",
        ),
        (
            "a number past i64 in an integer column (D1)",
            with("schedule", &|v| v["max_attempts"] = 1e300.into()),
            "field `max_attempts` must be a whole number",
        ),
        (
            "text in an integer column",
            with("schedule", &|v| v["timeout_secs"] = "soon".into()),
            "field `timeout_secs` must be a whole number",
        ),
        (
            "a fraction in a note's time (D1)",
            with("note", &|v| v["created_at"] = 1_795_737_000_000.5.into()),
            "field `created_at` must be a whole number",
        ),
        (
            "a number in a text column",
            with("schedule", &|v| v["goal"] = 5.into()),
            "field `goal` must be a string",
        ),
        (
            "a cadence of no known kind (D2)",
            with("schedule", &|v| {
                v["cadence_json"] = r#"{"kind":"bogus"}"#.into()
            }),
            "cadence",
        ),
        (
            "skipped dates of another shape (D2)",
            with("schedule", &|v| v["skip_json"] = r#"{"x":1}"#.into()),
            "cannot be read back",
        ),
        (
            "a notify policy of no known name (D2)",
            with("schedule", &|v| v["notify"] = "bogus".into()),
            "cannot be read back",
        ),
        (
            "following another user's schedule (D3)",
            with("schedule", &|v| {
                v["after_schedule_id"] = bob_for.clone().into();
                v["after_on"] = "succeeded".into();
            }),
            "no schedule",
        ),
        (
            "following itself (D4)",
            with("schedule", &|v| {
                v["after_schedule_id"] = v["schedule_id"].clone();
                v["after_on"] = "succeeded".into();
            }),
            "cannot follow itself",
        ),
        (
            "every second, under the minimum interval (D9)",
            with("schedule", &|v| {
                v["cadence_json"] =
                    r#"{"kind":"interval","every_secs":1,"anchor":0,"tz":"UTC"}"#.into()
            }),
            "under the minimum",
        ),
        (
            "a channel nobody configured (D9)",
            with("schedule", &|v| v["channel_id"] = "secret-ops".into()),
            "no channel `secret-ops`",
        ),
        (
            "more attempts than the write paths allow (D9)",
            with("schedule", &|v| v["max_attempts"] = 500.into()),
            "max_attempts",
        ),
        (
            "app state from a user's archive (D9)",
            with("state", &|v| {
                v["scope"] = "app".into();
                v["scope_id"] = "".into();
            }),
            "app and temp state are not imported",
        ),
        (
            "a state value over the limit (D9)",
            with("state", &|v| {
                v["value_json"] = format!("\"{}\"", "x".repeat(70_000)).into()
            }),
            "memory.max_state_value_bytes",
        ),
        (
            "another user's notes session (D8)",
            with("session", &|v| v["session_id"] = "memory:carol".into()),
            "another user's notes",
        ),
    ];
    for (name, archive, expected) in cases {
        let path = write(&files, "edited.ndjson", &archive);
        let err = portable(&target)
            .import(&Actor::Operator, &request(&path, None, None))
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, PortableError::Line { .. }) && message.contains(expected),
            "{name}: {message}"
        );
        assert!(
            message.ends_with("nothing was imported"),
            "{name}: {message}"
        );
        for table in ["notes", "schedules", "state_entries", "sessions"] {
            let sql = format!("SELECT count(*) FROM {table} WHERE user_id = 'alice'");
            assert_eq!(
                common::count(target.memory(), &sql).await,
                0,
                "{name}: {table}"
            );
        }
    }
    // The archive as exported imports; one schedule more than the user's limit is
    // refused whole.
    let path = write(&files, "plain.ndjson", text.as_bytes());
    portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    let second = with("schedule", &|v| {
        v["schedule_id"] = "sch-2".into();
    });
    let path = write(&files, "second.ndjson", &second);
    let err = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap_err();
    assert!(
        matches!(err, PortableError::OverLimit { .. }) && err.to_string().contains("1"),
        "{err}"
    );
    assert_eq!(
        common::count(
            target.memory(),
            "SELECT count(*) FROM schedules WHERE user_id = 'alice'"
        )
        .await,
        1
    );
    // A notes session of another user's agent (its id is the hash of their user and
    // agent, so it can be computed) in alice's lines is alice's own (sessions are keyed
    // by their user): carol holds no session, and her agent can still save notes.
    let carols = nightshift::memory::SessionKind::notes_session("carol", Some("scout"));
    let mut squat: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let end = squat.pop().unwrap();
    let count: u64 = serde_json::from_str::<serde_json::Value>(&end).unwrap()["lines"]
        .as_u64()
        .unwrap();
    squat.push(
        serde_json::json!({"type": "session", "user": "alice", "session_id": carols,
            "user_id": "alice", "kind": "memory", "title": null, "created_at": AT,
            "updated_at": AT, "last_sequence": 0})
        .to_string(),
    );
    squat.push(serde_json::json!({"type": "end", "lines": count + 1}).to_string());
    let path = write(&files, "squat.ndjson", (squat.join("\n") + "\n").as_bytes());
    portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    let held = "SELECT count(*) FROM sessions WHERE user_id = 'carol'";
    assert_eq!(common::count(target.memory(), held).await, 0);
    target
        .memory()
        .as_agent(Some("scout"))
        .unwrap()
        .save_note("carol", &note("carol's scout note", None))
        .await
        .unwrap();
}

/// Two users with a session of the same id (before, the second user's append was refused
/// as "in use by another user"): the archive names both by the id alone, never by how
/// they are stored, and restores both apart, byte for byte; one user's archive restores
/// beside another user's session of that id, as a session of its own, with no conflict.
#[tokio::test]
async fn sessions_of_one_id_under_two_users_round_trip_apart() {
    let (a, b, c, files) = (
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
    );
    let source = app_in(&a).await;
    for user in ["alice", "bob"] {
        source
            .memory()
            .append(user, "chat", &[event(Role::User, &format!("{user} said"))])
            .await
            .unwrap();
        source
            .state()
            .set(
                &nightshift::state::StateAccess::user(user, Some("chat".into())),
                "step",
                &serde_json::json!(user),
                None,
            )
            .await
            .unwrap();
        let artifact = NewArtifact {
            name: format!("{user}.txt"),
            mime_type: "text/plain".into(),
            content: user.as_bytes().to_vec(),
        };
        source
            .artifacts()
            .put(user, "chat", None, &artifact)
            .await
            .unwrap();
    }
    let all = export_all(&source).await;
    let text = String::from_utf8(all.clone()).unwrap();
    assert!(!text.contains("\\u001f"), "a stored key in\n{text}");
    for kind in ["session", "event", "summary", "state", "artifact"] {
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(&format!("\"type\":\"{kind}\"")))
            .filter(|l| l.contains("\"session_id\":\"chat\""))
            .collect();
        assert_eq!(lines.len(), 2, "{kind} lines of chat in\n{text}");
    }
    assert_eq!(
        text.matches("\"scope_id\":\"chat\"").count(),
        2,
        "session state is scoped by the id in\n{text}"
    );

    let target = app_in(&b).await;
    let path = write(&files, "all.ndjson", &all);
    let report = portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    assert!(
        report.types.values().all(|t| t.conflicts.is_empty()),
        "{report:?}"
    );
    assert_eq!(export_all(&target).await, all, "export → import → export");
    for user in ["alice", "bob"] {
        let actor = Actor::user(user).unwrap();
        let events = target.memory().recall(&actor, "chat", 10).await.unwrap();
        assert_eq!(events.len(), 1, "{user}");
        assert_eq!(events[0].content, format!("{user} said"));
        let step = target
            .state()
            .get(
                &nightshift::state::StateAccess::user(user, Some("chat".into())),
                "step",
            )
            .await
            .unwrap();
        assert_eq!(step.value, serde_json::json!(user));
        // The import indexed each user's own session.
        let hits = target
            .memory()
            .search(&nightshift::memory::SearchRequest {
                user_id: user.into(),
                query: "said".into(),
                session_id: Some("chat".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(
            hits.iter().map(|h| h.text.as_str()).collect::<Vec<_>>(),
            [format!("{user} said")],
            "{user}"
        );
    }

    // Alice's archive beside bob's session of the same id: imported, not a conflict.
    let beside = app_in(&c).await;
    beside
        .memory()
        .append("bob", "chat", &[event(Role::User, "bob's own")])
        .await
        .unwrap();
    let path = write(&files, "alice.ndjson", &export(&source, "alice").await);
    let report = portable(&beside)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    assert!(
        report.types.values().all(|t| t.conflicts.is_empty()),
        "{report:?}"
    );
    assert_eq!(report.types["event"].imported, 1, "{report:?}");
    let recall = |user: &str| {
        let (memory, actor) = (beside.memory().clone(), Actor::user(user).unwrap());
        async move {
            memory
                .recall(&actor, "chat", 10)
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.content)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(recall("alice").await, ["alice said"]);
    assert_eq!(recall("bob").await, ["bob's own"]);
}

/// `text`, an archive, with one more session line (a copy of its last, under `id` and
/// `kind`) and its end line counting it.
fn with_extra_session(text: &str, id: &str, kind: &str) -> Vec<u8> {
    let lines: Vec<&str> = text.lines().collect();
    let last_session = lines
        .iter()
        .rposition(|l| l.contains(r#""type":"session""#))
        .unwrap();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
        if value["type"] == "end" {
            value["lines"] = (value["lines"].as_u64().unwrap() + 1).into();
        }
        out.extend(serde_json::to_vec(&value).unwrap());
        out.push(b'\n');
        if i == last_session {
            value["session_id"] = id.into();
            value["kind"] = kind.into();
            value["last_sequence"] = 0.into();
            out.extend(serde_json::to_vec(&value).unwrap());
            out.push(b'\n');
        }
    }
    out
}

/// An archive holding another user's predictable reserved ids (D8: an agent's notes
/// session, named by a hash of the user and the agent) squats no one: the session is the
/// importing user's own, and the other user's notes, shared and the agent's, are saved
/// and found as if it did not exist.
#[tokio::test]
async fn an_archives_reserved_ids_squat_no_one() {
    let (a, b, files) = (
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
        TempDir::new().unwrap(),
    );
    let source = app_in(&a).await;
    populate(&source).await;
    let text = String::from_utf8(export(&source, "alice").await).unwrap();
    let carols_agent = nightshift::memory::SessionKind::notes_session("carol", Some("helper"));
    let archive = with_extra_session(&text, &carols_agent, "memory");
    let target = app_in(&b).await;
    let path = write(&files, "alice.ndjson", &archive);
    portable(&target)
        .import(&Actor::Operator, &request(&path, None, None))
        .await
        .unwrap();
    let helper = target.memory().as_agent(Some("helper")).unwrap();
    helper
        .save_note("carol", &note("carol's helper note", None))
        .await
        .unwrap();
    target
        .memory()
        .save_note("carol", &note("carol's shared note", None))
        .await
        .unwrap();
    let hits = helper
        .search(&nightshift::memory::SearchRequest {
            user_id: "carol".into(),
            query: "carol note".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    texts.sort();
    assert_eq!(texts, ["carol's helper note", "carol's shared note"]);
    assert_eq!(
        common::count(
            target.memory(),
            "SELECT count(*) FROM chunks WHERE user_id = 'carol'
             AND session_id NOT LIKE 'carol\u{1f}%'"
        )
        .await,
        0
    );
}
