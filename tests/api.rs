//! The HTTP API against the real router on 127.0.0.1:0: every route with a valid token,
//! the documented errors, isolation between users (table-driven over every route, checked
//! in the database), limits, and the OpenAPI document against what the server does.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::time::Duration;

use common::api::TestApi;
use nightshift::db::clock::ManualClock;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_works_for_its_user() {
    let api = TestApi::start(|_| {}).await;
    let t = api.token(Some("alice")).await;
    let t = Some(t.as_str());

    // Notes.
    let saved = api
        .call(
            "POST",
            "/v1/notes",
            t,
            Some(json!({"text": "Alice drinks oolong tea", "tags": ["drinks"]})),
        )
        .await;
    assert_eq!(saved.status, 201, "{}", saved.body);
    let note_id = saved.body["note_id"].as_str().unwrap().to_string();
    let keyed = json!({"text": "home: Porto", "key": "home"});
    assert_eq!(
        api.call("POST", "/v1/notes", t, Some(keyed.clone()))
            .await
            .status,
        201
    );
    assert_eq!(
        api.call("POST", "/v1/notes", t, Some(keyed)).await.status,
        200,
        "replaced"
    );
    let notes = api.call("GET", "/v1/notes", t, None).await;
    assert_eq!(notes.status, 200);
    assert_eq!(notes.body.as_array().unwrap().len(), 2);
    let one = api
        .call("GET", &format!("/v1/notes/{note_id}"), t, None)
        .await;
    assert_eq!(one.body["content"], "Alice drinks oolong tea");
    let updated = api
        .call(
            "PATCH",
            &format!("/v1/notes/{note_id}"),
            t,
            Some(json!({"text": "Alice drinks rooibos"})),
        )
        .await;
    assert_eq!(updated.status, 200);
    assert_eq!(updated.body["content"], "Alice drinks rooibos");
    assert_eq!(updated.body["tags"], json!(["drinks"]), "tags kept");

    // Sessions.
    let appended = api
        .call(
            "POST",
            "/v1/sessions/chat-1/events",
            t,
            Some(json!({"events": [
                {"role": "user", "content": "I deployed billing on Friday"},
                {"role": "assistant", "content": "Noted."}
            ]})),
        )
        .await;
    assert_eq!(appended.status, 201, "{}", appended.body);
    assert_eq!(appended.body["sequences"], json!([1, 2]));
    let recalled = api
        .call("GET", "/v1/sessions/chat-1/events?limit=1", t, None)
        .await;
    assert_eq!(recalled.body.as_array().unwrap().len(), 1);
    assert_eq!(recalled.body[0]["sequence"], 2);
    let sessions = api.call("GET", "/v1/sessions", t, None).await;
    assert_eq!(sessions.body[0]["session_id"], "chat-1");
    let summary = api
        .call("GET", "/v1/sessions/chat-1/summary", t, None)
        .await;
    assert_eq!(summary.status, 200);
    let context = api
        .call(
            "POST",
            "/v1/sessions/chat-1/context",
            t,
            Some(json!({"budget": 100})),
        )
        .await;
    assert_eq!(context.status, 200, "{}", context.body);
    assert!(context.body["used_tokens"].as_u64().unwrap() <= 100);

    // Search.
    let found = api
        .call(
            "POST",
            "/v1/search",
            t,
            Some(json!({"query": "billing deploy", "session": "chat-1"})),
        )
        .await;
    assert_eq!(found.status, 200);
    assert_eq!(found.body["degraded"], false);
    assert!(found.body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["session_id"] == "chat-1"));

    // Schedules and runs.
    let added = api
        .call("POST", "/v1/schedules", t, Some(json!({"goal": "check mail", "when": "every weekday at 9am", "tz": "Europe/Lisbon"})))
        .await;
    assert_eq!(added.status, 201, "{}", added.body);
    let id = added.body["schedule_id"].as_str().unwrap().to_string();
    assert_eq!(added.body["user_id"], "alice");
    assert_eq!(added.body["next_runs"].as_array().unwrap().len(), 5);
    let listed = api.call("GET", "/v1/schedules", t, None).await;
    assert_eq!(listed.body["total"], 1);
    let shown = api
        .call("GET", &format!("/v1/schedules/{id}"), t, None)
        .await;
    assert_eq!(
        shown.body["description"],
        "at 09:00 on Monday to Friday (Europe/Lisbon)"
    );
    let paused = api
        .call(
            "POST",
            &format!("/v1/schedules/{id}/pause"),
            t,
            Some(json!({"note": "on holiday"})),
        )
        .await;
    assert_eq!(paused.body["status"], "paused");
    assert_eq!(paused.body["status_reason"], "on holiday");
    let again = api
        .call("POST", &format!("/v1/schedules/{id}/pause"), t, None)
        .await;
    assert_eq!(again.status, 200, "a pause without a body: {}", again.body);
    assert_eq!(
        api.call("POST", &format!("/v1/schedules/{id}/resume"), t, None)
            .await
            .body["status"],
        "active"
    );
    let conflict = api
        .call("POST", &format!("/v1/schedules/{id}/resume"), t, None)
        .await;
    assert_eq!(conflict.status, 409);
    assert_eq!(conflict.body["error"]["code"], "conflict");
    assert_eq!(
        api.call("POST", &format!("/v1/schedules/{id}/run-now"), t, None)
            .await
            .status,
        200
    );
    assert_eq!(
        api.call("GET", &format!("/v1/schedules/{id}/runs"), t, None)
            .await
            .body,
        json!([])
    );
    let unknown_run = api.call("GET", "/v1/runs/run-nope", t, None).await;
    assert_eq!(unknown_run.status, 404);

    // The CLI sees the same notes, byte for byte.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .env("NIGHTSHIFT_DB", &api.config.database.path)
        .env("NIGHTSHIFT_LISTEN", "")
        .args(["--json", "memory", "notes", "--user", "alice"])
        .output()
        .unwrap();
    let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    let http = api.call("GET", "/v1/notes", t, None).await;
    assert_eq!(cli, http.body);

    // Deletions.
    assert_eq!(
        api.call("DELETE", &format!("/v1/schedules/{id}"), t, None)
            .await
            .status,
        200
    );
    assert_eq!(
        api.call("DELETE", &format!("/v1/notes/{note_id}"), t, None)
            .await
            .status,
        200
    );
    assert_eq!(
        api.call("DELETE", "/v1/sessions/chat-1", t, None)
            .await
            .status,
        200
    );
    for path in [
        format!("/v1/schedules/{id}"),
        format!("/v1/notes/{note_id}"),
        "/v1/sessions/chat-1/summary".to_string(),
    ] {
        assert_eq!(api.call("GET", &path, t, None).await.status, 404, "{path}");
    }
}

/// A schedule's approval patterns over HTTP: given at creation, shown, replaced by a
/// PATCH, cleared by `clear`; malformed ones are a 400 naming `approve` that changes
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedules_approval_patterns_round_trip_over_http() {
    let api = TestApi::start(|_| {}).await;
    let token = api.token(Some("alice")).await;
    let t = Some(token.as_str());
    let approve = json!(["files__write_*", "memory_delete", "!files__write_draft"]);
    let added = api
        .call(
            "POST",
            "/v1/schedules",
            t,
            Some(json!({"goal": "tidy", "every": "1h", "tools": ["files__*"], "approve": approve})),
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.body);
    assert_eq!(added.body["approve"], approve);
    assert_eq!(added.body["tools"], json!(["files__*"]));
    let path = format!(
        "/v1/schedules/{}",
        added.body["schedule_id"].as_str().unwrap()
    );
    let shown = api.call("GET", &path, t, None).await;
    assert_eq!(shown.body["approve"], approve);

    for (method, route, body) in [
        (
            "POST",
            "/v1/schedules",
            json!({"goal": "g", "every": "1h", "approve": ["files/*"]}),
        ),
        (
            "POST",
            "/v1/schedules",
            json!({"goal": "g", "every": "1h", "approve": ["!"]}),
        ),
        ("PATCH", path.as_str(), json!({"approve": ["a b"]})),
        ("PATCH", path.as_str(), json!({"approve": vec!["x"; 65]})),
        (
            "PATCH",
            path.as_str(),
            json!({"approve": ["*"], "clear": ["approve"]}),
        ),
    ] {
        let reply = api.call(method, route, t, Some(body.clone())).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.body);
        let message = reply.body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("approve"), "{body}: {message}");
    }
    assert_eq!(
        api.call("GET", &path, t, None).await.body,
        shown.body,
        "unchanged"
    );
    assert_eq!(
        api.call("GET", "/v1/schedules", t, None).await.body["total"],
        1
    );

    let patched = api
        .call("PATCH", &path, t, Some(json!({"approve": ["files__*"]})))
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["approve"], json!(["files__*"]));
    assert_eq!(
        patched.body["tools"],
        json!(["files__*"]),
        "tools untouched"
    );
    let cleared = api
        .call("PATCH", &path, t, Some(json!({"clear": ["approve"]})))
        .await;
    assert_eq!(cleared.status, 200, "{}", cleared.body);
    assert!(cleared.body.get("approve").is_none(), "{}", cleared.body);
    assert_eq!(
        cleared.body["tools"],
        json!(["files__*"]),
        "tools untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_json_error_naming_the_field() {
    let api = TestApi::start(|_| {}).await;
    let token = api.token(Some("alice")).await;
    let t = Some(token.as_str());
    for (method, path, body, status, needle) in [
        ("POST", "/v1/notes", json!({"text": ""}), 400, "empty"),
        // A note's text may hold anything; its tags, keys and categories no control
        // character.
        (
            "POST",
            "/v1/notes",
            json!({"text": "a\u{0}b", "tags": ["t\u{1b}[2J"]}),
            400,
            "tag",
        ),
        (
            "POST",
            "/v1/notes",
            json!({"text": "a\u{0}b", "key": "k\u{0}"}),
            400,
            "U+0000",
        ),
        ("POST", "/v1/notes", json!({"txt": "typo"}), 400, "txt"),
        (
            "POST",
            "/v1/search",
            json!({"query": "x", "top_k": 0}),
            400,
            "top_k",
        ),
        (
            "POST",
            "/v1/schedules",
            json!({"goal": "g", "every": "2305843009213693952s"}),
            400,
            "every",
        ),
        (
            "POST",
            "/v1/schedules",
            json!({"goal": "g", "every": "1h", "overlap": "skp"}),
            400,
            "skp",
        ),
        (
            "POST",
            "/v1/schedules",
            json!({"goal": "g"}),
            400,
            "exactly one",
        ),
        (
            "POST",
            "/v1/sessions/s/context",
            json!({"budget": 0}),
            404,
            "no session",
        ),
        (
            "POST",
            "/v1/sessions/s/events",
            json!({"events": []}),
            400,
            "none",
        ),
        (
            "POST",
            "/v1/sessions/s/events",
            json!({"events": [{"role": "robot", "content": "x"}]}),
            400,
            "robot",
        ),
    ] {
        let reply = api.call(method, path, t, Some(body.clone())).await;
        assert_eq!(reply.status, status, "{path} {body}: {}", reply.body);
        let message = reply.body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "{path} {body}: {message}");
    }
    // Not JSON at all.
    let raw = api
        .client
        .post(format!("{}/v1/notes", api.base))
        .bearer_auth(&token)
        .body("text=hello")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 415);
    assert_eq!(
        raw.json::<Value>().await.unwrap()["error"]["code"],
        "unsupported_media_type"
    );
    let limits = api.call("GET", "/v1/schedules?limit=0", t, None).await;
    assert_eq!(limits.status, 400);
    let unknown = api.call("GET", "/v1/nothing-here", t, None).await;
    assert_eq!(
        (unknown.status, unknown.body["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    let method = api.call("PUT", "/v1/search", t, None).await;
    assert_eq!(method.status, 405);
    assert_eq!(method.body["error"]["code"], "method_not_allowed");
    // Every answer carries a request id.
    assert!(method.headers.get("x-request-id").is_some());
}

/// No user appends to a reserved session id over the API: `memory:…` and `memory@…` (the
/// notes' pseudo-sessions) and `scheduled:…` (a schedule's transcripts, before open to
/// anyone) are 400 for every user, theirs or not, existing or not, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserved_session_ids_are_refused_to_every_user() {
    let api = TestApi::start(|_| {}).await;
    let (alice, bob) = (api.token(Some("alice")).await, api.token(Some("bob")).await);
    let (a, b) = (Some(alice.as_str()), Some(bob.as_str()));
    api.call("POST", "/v1/notes", a, Some(json!({"text": "a note"})))
        .await;
    let schedule = api
        .call(
            "POST",
            "/v1/schedules",
            a,
            Some(json!({"goal": "g", "every": "1h"})),
        )
        .await;
    let sch = schedule.body["schedule_id"].as_str().unwrap().to_string();
    let sessions = "SELECT count(*) FROM sessions";
    let before = common::count(api.app.memory(), sessions).await;
    let agents = nightshift::memory::SessionKind::notes_session("alice", Some("helper"));
    for id in [
        "memory:alice".to_string(),
        "memory:bob".to_string(),
        agents,
        "memory@x".to_string(),
        format!("scheduled:{sch}"),
        "scheduled:sch-nope".to_string(),
    ] {
        for token in [a, b] {
            let refused = api
                .call(
                    "POST",
                    &format!("/v1/sessions/{id}/events"),
                    token,
                    Some(json!({"events": [{"role": "user", "content": "squat"}]})),
                )
                .await;
            assert_eq!(refused.status, 400, "{id}: {}", refused.body);
            assert!(
                refused.body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("reserved"),
                "{id}: {}",
                refused.body
            );
        }
    }
    assert_eq!(common::count(api.app.memory(), sessions).await, before);
}

/// User B's token against each of user A's things, on every route: 404 exactly as for an
/// id that does not exist, and nothing changed in the database. A user token on an admin
/// route is 403; a revoked or expired token, or none, is 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_data_is_not_found_and_unchanged_on_every_route() {
    // Times come from a clock the test moves: a token's expiry is reached without a wait.
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let api = TestApi::start_on(clock.clone(), |_| {}).await;
    let alice = api.token(Some("alice")).await;
    let bob = api.token(Some("bob")).await;
    let a = Some(alice.as_str());
    let note = api
        .call(
            "POST",
            "/v1/notes",
            a,
            Some(json!({"text": "alice's secret"})),
        )
        .await;
    let note_id = note.body["note_id"].as_str().unwrap().to_string();
    api.call(
        "POST",
        "/v1/sessions/a-chat/events",
        a,
        Some(json!({"events": [{"role": "user", "content": "private"}]})),
    )
    .await;
    let schedule = api
        .call(
            "POST",
            "/v1/schedules",
            a,
            Some(json!({"goal": "g", "every": "1h"})),
        )
        .await;
    let sch = schedule.body["schedule_id"].as_str().unwrap().to_string();
    let snapshot = |api: &TestApi| {
        let memory = api.app.memory().clone();
        async move {
            let mut all = Vec::new();
            for sql in [
                "SELECT string_agg(note_id || content || updated_at, ',') FROM notes",
                "SELECT string_agg(session_id || sequence || content, ',') FROM events
                 WHERE session_id IN (SELECT session_id FROM sessions WHERE user_id = 'alice')",
                "SELECT string_agg(schedule_id || status || coalesce(CAST(next_run_at AS TEXT), '') || updated_at, ',') FROM schedules",
                "SELECT string_agg(session_id || last_sequence || updated_at, ',') FROM sessions
                 WHERE user_id = 'alice'",
                "SELECT string_agg(scope_id || key || value_json, ',') FROM state_entries WHERE user_id = 'alice'",
                "SELECT count(*) FROM artifacts WHERE user_id = 'alice'",
            ] {
                let conn = memory.db().conn().await.unwrap();
                let value: Option<String> = nightshift::db::query_scalar(&conn, &format!("SELECT CAST(({sql}) AS TEXT)"), ()).await.unwrap();
                all.push(value);
            }
            all
        }
    };
    // Time moves on, so a write bob's calls made would stamp a time of its own.
    clock.advance_ms(1_000);
    let before = snapshot(&api).await;
    let b = Some(bob.as_str());
    for (method, path, body) in [
        ("GET", format!("/v1/notes/{note_id}"), None),
        (
            "PATCH",
            format!("/v1/notes/{note_id}"),
            Some(json!({"text": "mine now"})),
        ),
        ("DELETE", format!("/v1/notes/{note_id}"), None),
        ("GET", "/v1/sessions/a-chat/events".to_string(), None),
        ("GET", "/v1/sessions/a-chat/summary".to_string(), None),
        (
            "POST",
            "/v1/sessions/a-chat/context".to_string(),
            Some(json!({})),
        ),
        ("DELETE", "/v1/sessions/a-chat".to_string(), None),
        ("GET", format!("/v1/schedules/{sch}"), None),
        (
            "PATCH",
            format!("/v1/schedules/{sch}"),
            Some(json!({"goal": "mine now"})),
        ),
        ("POST", format!("/v1/schedules/{sch}/pause"), None),
        ("POST", format!("/v1/schedules/{sch}/resume"), None),
        ("POST", format!("/v1/schedules/{sch}/run-now"), None),
        ("GET", format!("/v1/schedules/{sch}/runs"), None),
        ("DELETE", format!("/v1/schedules/{sch}"), None),
    ] {
        let theirs = api.call(method, &path, b, body.clone()).await;
        let missing_path = path
            .replace(&note_id, "note-nope")
            .replace(&sch, "sch-nope")
            .replace("a-chat", "no-chat");
        let missing = api.call(method, &missing_path, b, body).await;
        assert_eq!(theirs.status, 404, "{method} {path}: {}", theirs.body);
        assert_eq!(missing.status, 404, "{method} {missing_path}");
        assert_eq!(theirs.body["error"]["code"], missing.body["error"]["code"]);
    }
    // Appending under alice's session id makes bob's own session: answered as for an id
    // nobody uses, and alice's is untouched (before, this was 409 "in use by another
    // user", which told bob the id was taken).
    for id in ["a-chat", "b-new-chat"] {
        let append = api
            .call(
                "POST",
                &format!("/v1/sessions/{id}/events"),
                b,
                Some(json!({"events": [{"role": "user", "content": "hi"}]})),
            )
            .await;
        assert_eq!(append.status, 201, "{id}: {}", append.body);
        assert_eq!(
            append.body,
            json!({"session_id": id, "sequences": [1]}),
            "{id}"
        );
    }
    let bobs = api.call("GET", "/v1/sessions/a-chat/events", b, None).await;
    assert_eq!(bobs.status, 200);
    assert_eq!(bobs.body.as_array().unwrap().len(), 1);
    assert_eq!(bobs.body[0]["content"], "hi");
    let alices = api.call("GET", "/v1/sessions/a-chat/events", a, None).await;
    assert_eq!(alices.body.as_array().unwrap().len(), 1);
    assert_eq!(alices.body[0]["content"], "private");
    // State and artifacts under alice's session id go to bob's own session too, as for
    // an id nobody uses (before: 409).
    for id in ["a-chat", "b-state-chat"] {
        let set = api
            .call(
                "PUT",
                &format!("/v1/state/k?session={id}"),
                b,
                Some(json!({"value": "bob's"})),
            )
            .await;
        assert_eq!(set.status, 200, "{id}: {}", set.body);
        let got = api
            .call("GET", &format!("/v1/state/k?session={id}"), b, None)
            .await;
        assert_eq!(got.body["value"], "bob's");
        let stored = api
            .client
            .post(format!(
                "{}/v1/artifacts?session={id}&name=b.txt&type=text/plain",
                api.base
            ))
            .bearer_auth(&bob)
            .body("bob's file")
            .send()
            .await
            .unwrap();
        assert_eq!(stored.status(), 201, "{id}");
        let stored: Value = stored.json().await.unwrap();
        assert_eq!(stored["session_id"], id);
        assert_eq!(stored["user_id"], "bob");
    }
    let alices_state = api.call("GET", "/v1/state/k?session=a-chat", a, None).await;
    assert_eq!(alices_state.status, 404, "{}", alices_state.body);
    let alices_files = api
        .call("GET", "/v1/artifacts?session=a-chat", a, None)
        .await;
    assert_eq!(alices_files.body, json!([]));
    // Search and lists show bob nothing of alice's.
    let found = api
        .call(
            "POST",
            "/v1/search",
            b,
            Some(json!({"query": "secret private"})),
        )
        .await;
    assert_eq!(found.body["hits"], json!([]));
    assert_eq!(api.call("GET", "/v1/notes", b, None).await.body, json!([]));
    assert_eq!(
        api.call("GET", "/v1/schedules", b, None).await.body["total"],
        0
    );
    // A user token naming another user is refused, whatever the route.
    let named = api.call("GET", "/v1/notes?user=alice", b, None).await;
    assert_eq!(named.status, 403);
    let named = api.call("GET", "/v1/schedules?user=alice", b, None).await;
    assert_eq!(named.status, 403);
    assert_eq!(snapshot(&api).await, before, "nothing of alice's changed");

    // Admin routes: 403 for a user token, 200 for an admin's.
    let admin = api.token(None).await;
    for path in [
        "/v1/admin/outbox",
        "/v1/admin/workers",
        "/v1/admin/consolidation",
        "/v1/admin/db",
        "/v1/admin/status",
    ] {
        assert_eq!(api.call("GET", path, b, None).await.status, 403, "{path}");
        assert_eq!(
            api.call("GET", path, Some(&admin), None).await.status,
            200,
            "{path}"
        );
    }
    // An admin acts for a user it names.
    let as_alice = api
        .call("GET", "/v1/notes?user=alice", Some(&admin), None)
        .await;
    assert_eq!(as_alice.body.as_array().unwrap().len(), 1);
    let unnamed = api.call("GET", "/v1/notes", Some(&admin), None).await;
    assert_eq!(unnamed.status, 400);

    // No token, a made-up one, a revoked one, an expired one: 401 with WWW-Authenticate.
    let revoked = api
        .app
        .tokens()
        .create(&nightshift::tokens::NewToken {
            user_id: Some("carol".into()),
            name: None,
            expires_in_secs: None,
        })
        .await
        .unwrap();
    api.app
        .tokens()
        .revoke(&revoked.info.token_id)
        .await
        .unwrap();
    let expiring = api
        .app
        .tokens()
        .create(&nightshift::tokens::NewToken {
            user_id: Some("dave".into()),
            name: None,
            expires_in_secs: Some(1),
        })
        .await
        .unwrap();
    assert_eq!(
        api.call("GET", "/v1/notes", Some(&expiring.secret), None)
            .await
            .status,
        200
    );
    // One second on, the one-second token has expired (its expiry is not after now).
    clock.advance_ms(1_000);
    for token in [
        None,
        Some("nst_made-up"),
        Some("Bearer"),
        Some(revoked.secret.as_str()),
        Some(expiring.secret.as_str()),
    ] {
        let reply = api.call("GET", "/v1/notes", token, None).await;
        assert_eq!(reply.status, 401, "{token:?}");
        assert_eq!(
            reply.headers["www-authenticate"],
            "Bearer realm=\"nightshift\""
        );
        let text = reply.body.to_string();
        assert!(!text.contains(&revoked.secret), "a secret is never echoed");
    }
}

/// A user token may notify only through channels granted to it; a context is checked for
/// its channel's kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_schedule_notifies_only_through_granted_channels() {
    let api = TestApi::start(|c| {
        for (id, kind, url) in [
            ("push", "ntfy", None),
            ("ops", "webhook", Some("http://127.0.0.1:9/hook")),
        ] {
            c.channels.insert(
                id.into(),
                nightshift::config::ChannelConfig {
                    url: url.map(str::to_string),
                    ..nightshift::config::ChannelConfig::new(if kind == "ntfy" {
                        nightshift::config::ChannelKind::Ntfy
                    } else {
                        nightshift::config::ChannelKind::Webhook
                    })
                },
            );
        }
        c.users.insert(
            "alice".into(),
            nightshift::config::UserConfig {
                default_channel: None,
                channels: vec!["push".into()],
                ..Default::default()
            },
        );
    })
    .await;
    let t = api.token(Some("alice")).await;
    let t = Some(t.as_str());
    let ok = api
        .call(
            "POST",
            "/v1/schedules",
            t,
            Some(json!({"goal": "g", "every": "1h", "channel": "push:alerts"})),
        )
        .await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    let not_granted = api
        .call(
            "POST",
            "/v1/schedules",
            t,
            Some(json!({"goal": "g", "every": "1h", "channel": "ops"})),
        )
        .await;
    assert_eq!(not_granted.status, 400);
    assert!(not_granted.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not granted"));
    let bad_topic = api
        .call(
            "POST",
            "/v1/schedules",
            t,
            Some(json!({"goal": "g", "every": "1h", "channel": "push:../admin?x=1"})),
        )
        .await;
    assert_eq!(bad_topic.status, 400);
    assert!(bad_topic.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("ntfy topic"));
    let body_user = api
        .call(
            "POST",
            "/v1/schedules",
            t,
            Some(json!({"goal": "g", "every": "1h", "user": "mallory"})),
        )
        .await;
    assert_eq!(body_user.status, 400, "the user comes from the token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_answer_413_and_429() {
    let api = TestApi::start(|c| {
        c.server.max_body_bytes = 64 * 1024;
        c.server.rate_per_token = 1.0;
        c.server.rate_burst = 3;
    })
    .await;
    let t = api.token(Some("alice")).await;
    // A body announced larger than the limit is refused before it is sent whole: only the
    // headers and a little of it go out, and the answer comes back.
    let addr = api.base.trim_start_matches("http://").to_string();
    let answer = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            stream,
            "POST /v1/notes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {t}\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n{{\"text\": \""
        )
        .unwrap();
        let mut answer = vec![0u8; 4096];
        let n = stream.read(&mut answer).unwrap();
        String::from_utf8_lossy(&answer[..n]).into_owned()
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("too_large"), "{answer}");

    let other = api.token(Some("bob")).await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(
            api.call("GET", "/v1/notes", Some(&other), None)
                .await
                .status,
        );
    }
    let limited = api.call("GET", "/v1/notes", Some(&other), None).await;
    assert_eq!(statuses, [200, 200, 200]);
    assert_eq!(limited.status, 429);
    assert!(
        limited.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    assert_eq!(limited.body["error"]["code"], "rate_limited");
}

/// A client that never finishes its request headers is dropped after
/// `server.header_read_timeout_secs` (on tokio's paused clock: no wall-clock wait).
#[tokio::test(start_paused = true)]
async fn a_client_that_never_finishes_its_headers_is_dropped() {
    if common::postgres::skip_on_paused_clock() {
        return;
    }
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let api = TestApi::start(|c| c.server.header_read_timeout_secs = 5).await;
    let mut stream = tokio::net::TcpStream::connect(api.base.trim_start_matches("http://"))
        .await
        .unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 256];
    let read = tokio::time::timeout(Duration::from_secs(60), stream.read(&mut buf)).await;
    match read {
        Ok(Ok(n)) => assert!(
            n == 0 || String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 408"),
            "{}",
            String::from_utf8_lossy(&buf[..n])
        ),
        Ok(Err(_)) => {}
        Err(_) => panic!("the connection was kept past the header timeout"),
    }
}

/// The OpenAPI document and the router agree both ways: every documented operation is
/// served (not answered "no such route"), and every (route, method, status) the server
/// answered in this test is documented for that route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_matches_the_router() {
    let api = TestApi::start(|_| {}).await;
    let admin = api.token(None).await;
    let user = api.token(Some("alice")).await;
    let doc = api.call("GET", "/v1/openapi.json", None, None).await;
    assert_eq!(doc.status, 200);
    assert_eq!(doc.body["openapi"], "3.1.0");
    let paths = doc.body["paths"].as_object().unwrap();
    let mut documented: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let statuses = op["responses"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            documented.insert((path.clone(), method.to_uppercase()), statuses);
        }
    }
    assert!(documented.len() >= 28, "{}", documented.len());
    for (path, method) in documented.keys() {
        let concrete = path
            .replace("{note_id}", "note-x")
            .replace("{session_id}", "s-x")
            .replace("{schedule_id}", "sch-x")
            .replace("{run_id}", "run-x")
            .replace("{message_id}", "msg-x")
            .replace("{artifact_id}", "art-x");
        let token = if path.starts_with("/v1/admin") {
            &admin
        } else {
            &user
        };
        let body = (method != "GET" && method != "DELETE").then(|| json!({}));
        let reply = api.call(method, &concrete, Some(token), body).await;
        let no_route = reply.status == 404 && reply.body["error"]["message"] == "no such route";
        assert!(
            !no_route && reply.status != 405,
            "{method} {path} is documented but not served"
        );
    }
    // What the server answered, by route template, from its own metrics.
    let metrics = reqwest::get(format!("{}/metrics", api.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let scrape =
        prometheus_parse::Scrape::parse(metrics.lines().map(|l| Ok(l.to_string()))).unwrap();
    let mut seen = 0;
    for sample in scrape
        .samples
        .iter()
        .filter(|s| s.metric == "nightshift_http_requests_total")
    {
        let route = sample.labels.get("route").unwrap().to_string();
        let method = sample.labels.get("method").unwrap().to_string();
        let status = sample.labels.get("status").unwrap().to_string();
        // Outside the document by design: no route at all, or a method the route has not.
        if route == "unmatched" || status == "405" {
            continue;
        }
        let statuses = documented
            .get(&(route.clone(), method.clone()))
            .unwrap_or_else(|| panic!("{method} {route} is served but not documented"));
        assert!(
            statuses.contains(&status),
            "{method} {route} answered {status}, not documented: {statuses:?}"
        );
        seen += 1;
    }
    assert!(seen >= 28, "{seen}");
}

/// Every closed vocabulary in the document lists the values on the wire: a schedule's
/// status is documented as `active`, as it is sent, not as the Rust variant `Active`.
#[test]
fn the_openapi_documents_enums_as_sent() {
    fn walk(value: &Value, at: &str, found: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                if let Some(Value::Array(values)) = object.get("enum") {
                    for v in values.iter().filter_map(Value::as_str) {
                        if v.chars().any(|c| c.is_ascii_uppercase()) {
                            found.push(format!("{at}: {v}"));
                        }
                    }
                }
                for (key, child) in object {
                    walk(child, &format!("{at}/{key}"), found);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, at, found)),
            _ => {}
        }
    }
    let doc = serde_json::to_value(nightshift::api::openapi()).unwrap();
    let mut found = Vec::new();
    walk(&doc, "", &mut found);
    assert!(found.is_empty(), "enum values not as sent: {found:#?}");
    let status = &doc["components"]["schemas"]["ScheduleStatus"]["enum"];
    assert_eq!(status, &json!(["active", "paused", "completed", "failed"]));
}

/// `/metrics` is Prometheus text and carries the documented series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_as_prometheus_text() {
    let api = TestApi::start(|_| {}).await;
    api.call("GET", "/healthz", None, None).await;
    let response = reqwest::get(format!("{}/metrics", api.base)).await.unwrap();
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = response.text().await.unwrap();
    // Every line a comment, blank, or `name{labels} value`.
    let sample = regex_like_sample();
    for line in text.lines() {
        assert!(
            line.is_empty() || line.starts_with('#') || sample(line),
            "not Prometheus text: {line}"
        );
    }
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let names: BTreeSet<&str> = scrape.samples.iter().map(|s| s.metric.as_str()).collect();
    for name in [
        "nightshift_http_requests_total",
        "nightshift_due_backlog",
        "nightshift_leases_held",
        "nightshift_outbox_messages",
        "nightshift_embedding_queue_depth",
        "nightshift_uptime_seconds",
        "nightshift_build_info",
    ] {
        assert!(names.contains(name), "{name} missing: {names:?}");
    }
    // Every family has its help text (promtool's "no help text"; scripts/metrics-lint.sh
    // runs promtool itself on a busier worker's /metrics).
    let families: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(!families.is_empty());
    for family in families {
        let help = format!("# HELP {family} ");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&help) && l.len() > help.len()),
            "{family} has no help text"
        );
    }
}

/// `name{k="v",…} value` with a number for value, as the exposition format has it.
fn regex_like_sample() -> impl Fn(&str) -> bool {
    |line: &str| {
        let Some((series, value)) = line.rsplit_once(' ') else {
            return false;
        };
        let name_end = series.find('{').unwrap_or(series.len());
        let name = &series[..name_end];
        let name_ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        let labels_ok = name_end == series.len() || series.ends_with('}');
        let value_ok = value.parse::<f64>().is_ok() || ["+Inf", "-Inf", "NaN"].contains(&value);
        name_ok && labels_ok && value_ok
    }
}
