//! Note filters (search and listing) and event windows (search and recall): each at its
//! edges, bounds inclusive, no other user's notes, bad input naming its field, and the
//! same fields through the CLI and the HTTP API.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use common::api::TestApi;
use common::{app_with, config_in};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::db::clock::ManualClock;
use nightshift::memory::{
    EventWindow, HitSource, MemoryError, NewEvent, NewNote, NoteFilter, Role, SearchRequest,
};
use serde_json::{json, Value};
use tempfile::TempDir;

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;

fn note(text: &str, tags: &[&str], key: Option<&str>, category: Option<&str>) -> NewNote {
    NewNote {
        tags: tags.iter().map(|t| t.to_string()).collect(),
        key: key.map(str::to_string),
        category: category.map(str::to_string),
        ..NewNote::new(text)
    }
}

/// Alice's notes, one a second from T0, one of them updated at T0 + 5 s; Bob's note
/// would match most filters; Alice's chat has turns at T0, T0 + 1 s and T0 + 2 s.
async fn world() -> (TempDir, App, Arc<ManualClock>) {
    let dir = TempDir::new().unwrap();
    let clock = ManualClock::starting_at(T0);
    let app = app_with(&config_in(&dir), Some(clock.clone())).await;
    let memory = app.memory();
    let notes = [
        note(
            "zebra alpha",
            &["red", "blue"],
            Some("proj/a"),
            Some("work"),
        ),
        note("zebra beta", &["red"], Some("proj_b"), Some("home")),
        NewNote {
            source: Some("consolidation".into()),
            ..note("zebra gamma", &["green"], None, None)
        },
        note("zebra delta", &[], Some("100%/x"), Some("work")),
    ];
    for n in &notes {
        memory.save_note("alice", n).await.unwrap();
        clock.advance_ms(1000);
    }
    memory
        .save_note(
            "bob",
            &note("zebra bob", &["red", "blue"], Some("proj/a"), Some("work")),
        )
        .await
        .unwrap();
    clock.advance_ms(1000); // T0 + 5 s
    let alpha = memory
        .notes("alice")
        .await
        .unwrap()
        .into_iter()
        .find(|n| n.content == "zebra alpha")
        .unwrap();
    memory
        .update_note("alice", &alpha.note_id, "zebra alpha", None)
        .await
        .unwrap();
    let turns: Vec<NewEvent> = (0..3)
        .map(|i| NewEvent {
            created_at: Some(T0 + i * 1000),
            ..NewEvent::new(Role::User, format!("zebra turn {i}"))
        })
        .collect();
    memory.append("alice", "chat", &turns).await.unwrap();
    (dir, app, clock)
}

fn sorted(mut texts: Vec<String>) -> Vec<String> {
    texts.sort();
    texts
}

/// The texts of Alice's notes the filter lists, and of the note hits a search finds.
async fn both(app: &App, filter: NoteFilter) -> Vec<String> {
    let listed = sorted(
        app.memory()
            .notes_matching("alice", &filter)
            .await
            .unwrap()
            .into_iter()
            .map(|n| n.content)
            .collect(),
    );
    let found = sorted(
        search(app, filter, EventWindow::default())
            .await
            .unwrap()
            .into_iter()
            .map(|(text, _)| text)
            .collect(),
    );
    assert_eq!(listed, found, "listing and search agree");
    listed
}

async fn search(
    app: &App,
    filter: NoteFilter,
    window: EventWindow,
) -> Result<Vec<(String, HitSource)>, MemoryError> {
    let hits = app
        .memory()
        .search(&SearchRequest {
            user_id: "alice".into(),
            query: "zebra".into(),
            top_k: Some(20),
            session_id: Some("chat".into()),
            filter,
            window,
            ..Default::default()
        })
        .await?;
    Ok(hits.into_iter().map(|h| (h.text, h.source)).collect())
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn tags_all_any_and_none_combine() {
    let (_dir, app, _clock) = world().await;
    let f = |tags: &[&str], any: &[&str], none: &[&str]| NoteFilter {
        tags: strings(tags),
        any_tags: strings(any),
        no_tags: strings(none),
        ..Default::default()
    };
    assert_eq!(
        both(&app, f(&["red"], &[], &[])).await,
        ["zebra alpha", "zebra beta"]
    );
    assert_eq!(
        both(&app, f(&[], &["blue", "green"], &[])).await,
        ["zebra alpha", "zebra gamma"]
    );
    assert_eq!(
        both(&app, f(&[], &[], &["red"])).await,
        ["zebra delta", "zebra gamma"]
    );
    assert_eq!(
        both(&app, f(&["red"], &[], &["blue"])).await,
        ["zebra beta"]
    );
    assert_eq!(
        both(&app, f(&[], &["red", "green"], &["blue"])).await,
        ["zebra beta", "zebra gamma"]
    );
    // Excluding everything answers nothing, not an error.
    assert!(both(&app, f(&["red"], &["green"], &[])).await.is_empty());
    assert!(both(&app, f(&["nope"], &[], &[])).await.is_empty());
    // The request's own `tags` field counts as all-of too.
    let hits = app
        .memory()
        .search(&SearchRequest {
            user_id: "alice".into(),
            query: "zebra".into(),
            tags: strings(&["red"]),
            filter: f(&[], &[], &["blue"]),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.text.as_str()).collect::<Vec<_>>(),
        ["zebra beta"]
    );
}

#[tokio::test]
async fn category_key_prefix_and_source_are_exact() {
    let (_dir, app, _clock) = world().await;
    let f = |category: Option<&str>, prefix: Option<&str>, source: Option<&str>| NoteFilter {
        category: category.map(str::to_string),
        key_prefix: prefix.map(str::to_string),
        source: source.map(str::to_string),
        ..Default::default()
    };
    assert_eq!(
        both(&app, f(Some("work"), None, None)).await,
        ["zebra alpha", "zebra delta"]
    );
    assert!(both(&app, f(Some("Work"), None, None)).await.is_empty());
    assert!(both(&app, f(Some("wor"), None, None)).await.is_empty());
    assert_eq!(
        both(&app, f(None, Some("proj"), None)).await,
        ["zebra alpha", "zebra beta"]
    );
    // `_` and `%` are themselves, not LIKE's wildcards.
    assert_eq!(
        both(&app, f(None, Some("proj/"), None)).await,
        ["zebra alpha"]
    );
    assert_eq!(
        both(&app, f(None, Some("proj_"), None)).await,
        ["zebra beta"]
    );
    assert_eq!(
        both(&app, f(None, Some("100%"), None)).await,
        ["zebra delta"]
    );
    assert!(both(&app, f(None, Some("%"), None)).await.is_empty());
    assert!(both(&app, f(None, Some("PROJ"), None)).await.is_empty());
    assert_eq!(
        both(&app, f(None, Some("proj/a"), None)).await,
        ["zebra alpha"],
        "a whole key is its own prefix"
    );
    assert_eq!(
        both(&app, f(None, None, Some("consolidation"))).await,
        ["zebra gamma"]
    );
    assert_eq!(
        both(&app, f(None, None, Some("tool"))).await,
        ["zebra alpha", "zebra beta", "zebra delta"]
    );
    assert_eq!(
        both(&app, f(Some("work"), Some("proj"), Some("tool"))).await,
        ["zebra alpha"]
    );
}

#[tokio::test]
async fn instant_bounds_are_inclusive() {
    let (_dir, app, _clock) = world().await;
    let created = |after: Option<i64>, before: Option<i64>| NoteFilter {
        created_after: after,
        created_before: before,
        ..Default::default()
    };
    let updated = |after: Option<i64>, before: Option<i64>| NoteFilter {
        updated_after: after,
        updated_before: before,
        ..Default::default()
    };
    assert_eq!(
        both(&app, created(Some(T0 + 1000), None)).await,
        ["zebra beta", "zebra delta", "zebra gamma"]
    );
    assert_eq!(
        both(&app, created(None, Some(T0 + 1000))).await,
        ["zebra alpha", "zebra beta"]
    );
    assert_eq!(
        both(&app, created(Some(T0 + 1000), Some(T0 + 1000))).await,
        ["zebra beta"]
    );
    assert!(both(&app, created(Some(T0 + 1001), Some(T0 + 1999)))
        .await
        .is_empty());
    // Alpha was created at T0 and rewritten at T0 + 5 s.
    assert_eq!(
        both(&app, updated(Some(T0 + 5000), None)).await,
        ["zebra alpha"]
    );
    assert_eq!(
        both(&app, updated(None, Some(T0 + 4999))).await,
        ["zebra beta", "zebra delta", "zebra gamma"]
    );
    assert_eq!(
        both(&app, created(None, Some(T0))).await,
        ["zebra alpha"],
        "created_at stays when a note is rewritten"
    );
}

#[tokio::test]
async fn filters_never_reach_another_users_notes() {
    let (_dir, app, _clock) = world().await;
    let filter = NoteFilter {
        tags: strings(&["red", "blue"]),
        category: Some("work".into()),
        key_prefix: Some("proj/a".into()),
        ..Default::default()
    };
    assert_eq!(both(&app, filter.clone()).await, ["zebra alpha"]);
    let bobs = app.memory().notes_matching("bob", &filter).await.unwrap();
    assert_eq!(bobs.len(), 1);
    assert_eq!(bobs[0].content, "zebra bob");
    assert!(app
        .memory()
        .notes_matching("carol", &filter)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn event_windows_bound_conversation_hits_and_recall() {
    let (_dir, app, _clock) = world().await;
    let turns = |hits: Vec<(String, HitSource)>| {
        sorted(
            hits.into_iter()
                .filter(|(_, s)| *s == HitSource::Conversation)
                .map(|(t, _)| t)
                .collect(),
        )
    };
    let window = |since: Option<i64>, until: Option<i64>| EventWindow { since, until };
    let all = search(&app, NoteFilter::default(), window(None, None))
        .await
        .unwrap();
    assert_eq!(all.len(), 7, "four notes and three turns: {all:?}");
    let since = search(&app, NoteFilter::default(), window(Some(T0 + 1000), None))
        .await
        .unwrap();
    assert_eq!(turns(since.clone()), ["zebra turn 1", "zebra turn 2"]);
    assert_eq!(since.len(), 6, "notes are not bounded by the window");
    let exact = search(
        &app,
        NoteFilter::default(),
        window(Some(T0 + 1000), Some(T0 + 1000)),
    )
    .await
    .unwrap();
    assert_eq!(turns(exact), ["zebra turn 1"]);
    let until = search(&app, NoteFilter::default(), window(None, Some(T0 - 1)))
        .await
        .unwrap();
    assert!(turns(until).is_empty());
    // A note filter keeps to notes.
    let category = NoteFilter {
        category: Some("work".into()),
        ..Default::default()
    };
    assert!(turns(search(&app, category, window(None, None)).await.unwrap()).is_empty());

    let recall = |w: EventWindow, limit: usize| {
        let memory = app.memory().clone();
        async move {
            memory
                .recall_in(&Actor::user("alice").unwrap(), "chat", limit, &w)
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.content)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        recall(window(Some(T0 + 1000), None), 10).await,
        ["zebra turn 1", "zebra turn 2"]
    );
    assert_eq!(
        recall(window(None, Some(T0 + 1000)), 1).await,
        ["zebra turn 1"],
        "the last of those in the window"
    );
    assert!(recall(window(Some(T0 + 9000), None), 10).await.is_empty());
    // Another user's session stays not found, window or not.
    assert!(matches!(
        app.memory()
            .recall_in(
                &Actor::user("bob").unwrap(),
                "chat",
                10,
                &window(Some(T0), None)
            )
            .await,
        Err(MemoryError::SessionNotFound(_))
    ));
}

fn field_of(result: Result<impl std::fmt::Debug, MemoryError>) -> String {
    match result {
        Err(MemoryError::Input(e)) => e.field,
        other => panic!("expected bad input, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_filters_are_refused_naming_the_field() {
    let (_dir, app, _clock) = world().await;
    let cases: Vec<(NoteFilter, &str)> = vec![
        (
            NoteFilter {
                created_after: Some(T0 + 1),
                created_before: Some(T0),
                ..Default::default()
            },
            "created_after",
        ),
        (
            NoteFilter {
                updated_after: Some(T0 + 1),
                updated_before: Some(T0),
                ..Default::default()
            },
            "updated_after",
        ),
        (
            NoteFilter {
                created_before: Some(-1),
                ..Default::default()
            },
            "created_before",
        ),
        (
            NoteFilter {
                updated_after: Some(i64::MAX),
                ..Default::default()
            },
            "updated_after",
        ),
        (
            NoteFilter {
                category: Some("wo\u{1b}rk".into()),
                ..Default::default()
            },
            "category",
        ),
        (
            NoteFilter {
                category: Some(String::new()),
                ..Default::default()
            },
            "category",
        ),
        (
            NoteFilter {
                key_prefix: Some(String::new()),
                ..Default::default()
            },
            "key_prefix",
        ),
        (
            NoteFilter {
                any_tags: strings(&["ok", ""]),
                ..Default::default()
            },
            "any_tags",
        ),
        (
            NoteFilter {
                no_tags: strings(&["a\u{0}"]),
                ..Default::default()
            },
            "no_tags",
        ),
        (
            NoteFilter {
                tags: strings(&[" "]),
                ..Default::default()
            },
            "tags",
        ),
        (
            NoteFilter {
                source: Some("user".into()),
                ..Default::default()
            },
            "source",
        ),
    ];
    for (filter, field) in cases {
        assert_eq!(
            field_of(app.memory().notes_matching("alice", &filter).await),
            field,
            "{filter:?}"
        );
        assert_eq!(
            field_of(search(&app, filter.clone(), EventWindow::default()).await),
            field,
            "{filter:?}"
        );
    }
    let reversed = EventWindow {
        since: Some(T0 + 1),
        until: Some(T0),
    };
    assert_eq!(
        field_of(search(&app, NoteFilter::default(), reversed).await),
        "since"
    );
    assert_eq!(
        field_of(
            app.memory()
                .recall_in(&Actor::Operator, "chat", 10, &reversed)
                .await
        ),
        "since"
    );
    let out_of_range = EventWindow {
        since: None,
        until: Some(nightshift::input::MAX_INSTANT_MS + 1),
    };
    assert_eq!(
        field_of(search(&app, NoteFilter::default(), out_of_range).await),
        "until"
    );
}

#[test]
fn text_instants_read_dates_as_whole_days() {
    use nightshift::memory::parse_time;
    assert_eq!(parse_time("since", "2026-01-01", false).unwrap(), T0);
    assert_eq!(
        parse_time("until", "2026-01-01", true).unwrap(),
        T0 + 86_400_000 - 1
    );
    assert_eq!(
        parse_time("since", "2026-01-01T00:00:01Z", false).unwrap(),
        T0 + 1000
    );
    assert_eq!(parse_time("since", &T0.to_string(), false).unwrap(), T0);
    for bad in ["", "yesterday", "99999999999999999999", "1969-12-31", "-5"] {
        assert_eq!(
            parse_time("since", bad, false).unwrap_err().field,
            "since",
            "{bad}"
        );
    }
}

fn nightshift(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .current_dir(dir)
        .env_remove("NIGHTSHIFT_CONFIG")
        .env("NIGHTSHIFT_DB", dir.join("cli.db"))
        .env("NIGHTSHIFT_LISTEN", "127.0.0.1:0")
        .stdin(Stdio::null())
        .args(args)
        .output()
        .expect("run nightshift")
}

fn cli_json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = nightshift(dir, &all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn texts(value: &Value, list: &str, field: &str) -> Vec<String> {
    let items = if list.is_empty() { value } else { &value[list] };
    sorted(
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v[field].as_str().unwrap().to_string())
            .collect(),
    )
}

#[test]
fn cli_flags_filter_search_notes_and_recall() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    for args in [
        &[
            "--tag",
            "red",
            "--tag",
            "blue",
            "--key",
            "proj/a",
            "--category",
            "work",
            "zebra alpha",
        ][..],
        &["--tag", "red", "--key", "proj_b", "zebra beta"],
        &["--tag", "green", "zebra gamma"],
    ] {
        let mut all = vec!["memory", "save", "--user", "u"];
        all.extend_from_slice(args);
        assert!(nightshift(d, &all).status.success());
    }
    let notes = |extra: &[&str]| {
        let mut all = vec!["memory", "notes", "--user", "u"];
        all.extend_from_slice(extra);
        texts(&cli_json(d, &all), "", "content")
    };
    let search = |extra: &[&str]| {
        let mut all = vec!["memory", "search", "--user", "u"];
        all.extend_from_slice(extra);
        all.push("zebra");
        texts(&cli_json(d, &all), "hits", "text")
    };
    assert_eq!(notes(&[]).len(), 3);
    assert_eq!(
        notes(&["--any-tag", "blue", "--any-tag", "green"]),
        ["zebra alpha", "zebra gamma"]
    );
    assert_eq!(
        search(&["--tag", "red", "--no-tag", "blue"]),
        ["zebra beta"]
    );
    assert_eq!(search(&["--key-prefix", "proj_"]), ["zebra beta"]);
    assert_eq!(notes(&["--category", "work"]), ["zebra alpha"]);
    assert_eq!(notes(&["--source", "consolidation"]), Vec::<String>::new());
    assert_eq!(search(&["--source", "tool"]).len(), 3);
    assert_eq!(notes(&["--created-after", "2000-01-01"]).len(), 3);
    assert!(notes(&["--created-before", "2000-01-01"]).is_empty());
    assert!(search(&["--updated-after", "9999-12-31"]).is_empty());
    assert_eq!(
        notes(&[
            "--updated-after",
            "2000-01-01T00:00:00Z",
            "--updated-before",
            "9999-12-31"
        ])
        .len(),
        3
    );

    // Turns at fixed times, recalled and searched within a window.
    let events = d.join("events.jsonl");
    std::fs::write(
        &events,
        format!(
            "{}\n{}\n",
            json!({"role": "user", "content": "zebra early", "created_at": T0}),
            json!({"role": "user", "content": "zebra late", "created_at": T0 + 86_400_000})
        ),
    )
    .unwrap();
    let append = nightshift(
        d,
        &[
            "memory",
            "append",
            "--user",
            "u",
            "--session",
            "chat",
            "--file",
            events.to_str().unwrap(),
        ],
    );
    assert!(
        append.status.success(),
        "{}",
        String::from_utf8_lossy(&append.stderr)
    );
    let recall = |extra: &[&str]| {
        let mut all = vec!["memory", "recall", "--session", "chat"];
        all.extend_from_slice(extra);
        texts(&cli_json(d, &all), "", "content")
    };
    assert_eq!(recall(&[]).len(), 2);
    assert_eq!(recall(&["--since", "2026-01-02"]), ["zebra late"]);
    assert_eq!(recall(&["--until", "2026-01-01"]), ["zebra early"]);
    assert_eq!(
        search(&[
            "--session",
            "chat",
            "--since",
            "2026-01-02",
            "--no-tag",
            "x"
        ]),
        ["zebra alpha", "zebra beta", "zebra gamma"],
        "a note filter keeps to notes; the window to turns"
    );
    let hits = search(&["--session", "chat", "--until", "2026-01-01"]);
    assert!(hits.contains(&"zebra early".to_string()), "{hits:?}");
    assert!(!hits.contains(&"zebra late".to_string()), "{hits:?}");

    for (args, field) in [
        (
            &[
                "memory",
                "notes",
                "--user",
                "u",
                "--created-after",
                "yesterday",
            ][..],
            "created_after",
        ),
        (
            &[
                "memory",
                "notes",
                "--user",
                "u",
                "--created-after",
                "2026-01-02",
                "--created-before",
                "2026-01-01",
            ],
            "created_after",
        ),
        (
            &["memory", "search", "--user", "u", "--source", "user", "q"],
            "source",
        ),
        (
            &[
                "memory",
                "recall",
                "--session",
                "chat",
                "--since",
                "1969-01-01",
            ],
            "since",
        ),
    ] {
        let out = nightshift(d, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(field), "{args:?}: {err}");
    }
}

#[tokio::test]
async fn api_fields_filter_search_notes_and_events() {
    let api = TestApi::start(|_| {}).await;
    let token = api.token(Some("alice")).await;
    let t = Some(token.as_str());
    for body in [
        json!({"text": "zebra alpha", "tags": ["red", "blue"], "key": "proj/a", "category": "work"}),
        json!({"text": "zebra beta", "tags": ["red"], "key": "proj_b"}),
        json!({"text": "zebra gamma", "tags": ["green"]}),
    ] {
        assert!(api.call("POST", "/v1/notes", t, Some(body)).await.status < 300);
    }
    let bob = api.token(Some("bob")).await;
    let reply = api
        .call(
            "POST",
            "/v1/notes",
            Some(&bob),
            Some(json!({"text": "zebra bob", "tags": ["red"]})),
        )
        .await;
    assert!(reply.status < 300);

    let shared = &api;
    let search = |body: Value| async move {
        let reply = shared.call("POST", "/v1/search", t, Some(body)).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        texts(&reply.body, "hits", "text")
    };
    assert_eq!(
        search(json!({"query": "zebra", "tags": ["red"], "no_tags": ["blue"]})).await,
        ["zebra beta"]
    );
    assert_eq!(
        search(json!({"query": "zebra", "any_tags": ["green", "blue"], "category": "work"})).await,
        ["zebra alpha"]
    );
    assert_eq!(
        search(
            json!({"query": "zebra", "key_prefix": "proj", "source": "tool",
                      "created_after": "2000-01-01", "updated_before": "9999-12-31",
                      "since": "2000-01-01T00:00:00Z", "until": "253402300799999"})
        )
        .await,
        ["zebra alpha", "zebra beta"]
    );
    assert!(
        search(json!({"query": "zebra", "created_before": "2000-01-01"}))
            .await
            .is_empty()
    );

    let list = |query: &'static str| async move {
        let reply = shared
            .call("GET", &format!("/v1/notes{query}"), t, None)
            .await;
        assert_eq!(reply.status, 200, "{query}: {}", reply.body);
        texts(&reply.body, "", "content")
    };
    assert_eq!(list("").await.len(), 3);
    assert_eq!(
        list("?any_tags=green,blue").await,
        ["zebra alpha", "zebra gamma"]
    );
    assert_eq!(list("?tags=red&no_tags=blue").await, ["zebra beta"]);
    assert_eq!(list("?key_prefix=proj_&source=tool").await, ["zebra beta"]);
    assert!(list("?category=none").await.is_empty());
    assert_eq!(
        list("?created_after=2000-01-01&updated_after=2000-01-01")
            .await
            .len(),
        3
    );

    let events = json!({"events": [
        {"role": "user", "content": "zebra early", "created_at": T0},
        {"role": "user", "content": "zebra late", "created_at": T0 + 86_400_000},
    ]});
    let reply = api
        .call("POST", "/v1/sessions/chat/events", t, Some(events))
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let reply = api
        .call("GET", "/v1/sessions/chat/events?since=2026-01-02", t, None)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(texts(&reply.body, "", "content"), ["zebra late"]);
    let hits = search(json!({"query": "zebra", "session": "chat", "until": "2026-01-01"})).await;
    assert!(hits.contains(&"zebra early".to_string()) && !hits.contains(&"zebra late".to_string()));

    for (method, path, body, field) in [
        (
            "POST",
            "/v1/search",
            Some(
                json!({"query": "x", "created_after": "2026-01-02", "created_before": "2026-01-01"}),
            ),
            "created_after",
        ),
        (
            "POST",
            "/v1/search",
            Some(json!({"query": "x", "since": "soon"})),
            "since",
        ),
        (
            "POST",
            "/v1/search",
            Some(json!({"query": "x", "source": "run"})),
            "source",
        ),
        (
            "POST",
            "/v1/search",
            Some(json!({"query": "x", "any_tag": ["a"]})),
            "any_tag",
        ),
        ("GET", "/v1/notes?any_tags=a,,b", None, "any_tags"),
        ("GET", "/v1/notes?key_prefix=", None, "key_prefix"),
        ("GET", "/v1/notes?updated_before=-1", None, "updated_before"),
        ("GET", "/v1/notes?colour=red", None, "colour"),
        (
            "GET",
            "/v1/sessions/chat/events?since=2026-01-02&until=2026-01-01",
            None,
            "since",
        ),
    ] {
        let reply = api.call(method, path, t, body).await;
        assert_eq!(reply.status, 400, "{path}: {}", reply.body);
        assert!(
            reply.body.to_string().contains(field),
            "{path}: {}",
            reply.body
        );
    }
    api.stop().await;
}
