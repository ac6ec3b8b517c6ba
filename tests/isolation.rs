//! Isolation, generated over the doors so a new one cannot be missed (issue 46, item 1):
//! every API route with an id in its path (read from the OpenAPI document) and every MCP
//! tool with an id among its arguments (read from `tools/list`) is tried by bob with each
//! of alice's ids, and with ids that do not exist. His answers must be byte for byte those
//! of the missing ids (an id is replaced by a placeholder before comparing), and refused;
//! alice's data must be as it was afterwards. A route or tool this test does not know how
//! to call fails it, saying what to add.

mod common;

use std::collections::BTreeMap;

use common::api::TestApi;
use common::mcp::{call, connect, text};
use nightshift::access::Actor;
use nightshift::artifact::NewArtifact;
use nightshift::memory::{NewEvent, NewNote, Role};
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::Cadence;
use serde_json::{json, Value};

/// Alice's ids by the name routes and tools give them, and the missing ids bob tries.
struct Ids {
    alice: BTreeMap<&'static str, String>,
    missing: BTreeMap<&'static str, String>,
}

/// Path and argument names whose values name the caller's own entries (a session id, a
/// state key): there is no other user's to try, so bob's call names his own; alice's are
/// checked untouched at the end instead.
const OWN_NAMESPACE: &[&str] = &["session_id", "session", "key"];

/// Every id of alice's: a note (updated once, so it has a history), a schedule with a run
/// waiting for her approval of a call, an artifact, a session with a turn.
async fn alices_world(api: &TestApi) -> Ids {
    let app = &api.app;
    let note = app
        .memory()
        .save_note("alice", &NewNote::new("alice's locker code is 4711"))
        .await
        .unwrap()
        .note_id;
    app.memory()
        .update_note("alice", &note, "alice's locker code is 4711, really", None)
        .await
        .unwrap();
    app.memory()
        .append(
            "alice",
            "diary",
            &[NewEvent::new(Role::User, "alice's diary says 4711")],
        )
        .await
        .unwrap();
    let schedule = app
        .schedules()
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "alice",
                "water the plants",
                Cadence::Interval {
                    every_secs: 86_400,
                    anchor: 4_000_000_000_000,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap()
        .schedule_id;
    let conn = app.db().conn().await.unwrap();
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, output)
         VALUES ('run-a1', ?1, 1, 'waiting', 'alice secret output 4711')",
        [schedule.as_str()],
    )
    .await
    .unwrap();
    conn.execute(
        "INSERT INTO approvals (approval_id, run_id, schedule_id, user_id, tool_name,
         arguments, created_at, expires_at)
         VALUES ('apr-a1', 'run-a1', ?1, 'alice', 'memory_save', '{\"code\":4711}',
                 1, 9999999999999)",
        [schedule.as_str()],
    )
    .await
    .unwrap();
    let artifact = app
        .artifacts()
        .put(
            "alice",
            "diary",
            None,
            &NewArtifact {
                name: "locker.txt".into(),
                mime_type: "text/plain".into(),
                content: b"4711".to_vec(),
            },
        )
        .await
        .unwrap()
        .artifact_id;
    let alice = BTreeMap::from([
        ("note_id", note),
        ("schedule_id", schedule),
        ("run_id", "run-a1".to_string()),
        ("approval_id", "apr-a1".to_string()),
        ("artifact_id", artifact),
        ("session_id", "diary".to_string()),
        ("session", "diary".to_string()),
        ("key", "user:locker".to_string()),
    ]);
    let missing = alice
        .keys()
        .map(|name| (*name, format!("{}-missing", name.replace('_', "-"))))
        .collect();
    Ids { alice, missing }
}

/// `text` with every id of `ids` replaced by its name, so two answers compare by shape.
fn placeheld(text: &str, ids: &BTreeMap<&'static str, String>) -> String {
    let mut ids: Vec<_> = ids.iter().collect();
    // Longer first: an id that contains another is replaced whole.
    ids.sort_by_key(|(_, id)| std::cmp::Reverse(id.len()));
    ids.iter().fold(text.to_string(), |text, (name, id)| {
        text.replace(id.as_str(), &format!("<{name}>"))
    })
}

/// A body for each API route that takes one, valid but for whose id it names.
fn body_for(method: &str, template: &str) -> Option<Value> {
    Some(match (method, template) {
        ("PATCH", "/v1/notes/{note_id}") => json!({"text": "bob was here"}),
        ("POST", "/v1/notes/{note_id}/restore") => json!({"version": 1}),
        ("PATCH", "/v1/schedules/{schedule_id}") => json!({"goal": "bob was here"}),
        ("POST", "/v1/schedules/{schedule_id}/backfill") => {
            json!({"from": "2020-01-01", "to": "2020-01-02"})
        }
        ("POST", "/v1/schedules/{schedule_id}/replay") => {
            json!({"from": "2020-01-01", "to": "2099-01-02"})
        }
        ("POST", "/v1/schedules/{schedule_id}/pause") => json!({"note": "bob was here"}),
        ("POST", "/v1/schedules/{schedule_id}/trigger") => json!({"input": "bob was here"}),
        ("POST", "/v1/approvals/{approval_id}/approve" | "/v1/approvals/{approval_id}/deny") => {
            json!({"reason": "bob was here"})
        }
        ("POST", "/v1/admin/users/{user_id}/purge") => json!({"dry_run": true}),
        ("POST", "/v1/sessions/{session_id}/events") => {
            json!({"events": [{"role": "user", "content": "bob was here"}]})
        }
        ("POST", "/v1/sessions/{session_id}/context") => json!({"budget": 100}),
        ("PUT", "/v1/state/{key}") => json!({"value": "bob was here"}),
        _ => return None,
    })
}

/// Every operation of the OpenAPI document with a path parameter: method, path template,
/// whether it takes a body.
fn id_taking_routes() -> Vec<(String, String, bool)> {
    let doc = serde_json::to_value(nightshift::api::openapi()).unwrap();
    let mut routes = Vec::new();
    for (template, operations) in doc["paths"].as_object().unwrap() {
        // A source is the operator's, reached by its sender's signature: no user's id is
        // in its path (tests/sources.rs tries it with every kind of wrong proof).
        if !template.contains('{') || template.starts_with("/v1/sources/") {
            continue;
        }
        for (method, operation) in operations.as_object().unwrap() {
            routes.push((
                method.to_uppercase(),
                template.clone(),
                operation.get("requestBody").is_some(),
            ));
        }
    }
    routes
}

/// `template` with each `{name}` replaced by `ids[name]` (percent-encoded).
fn fill(template: &str, ids: &BTreeMap<&'static str, String>) -> String {
    let mut path = template.to_string();
    while let Some(start) = path.find('{') {
        let end = path[start..].find('}').unwrap() + start;
        let name = &path[start + 1..end];
        let id = ids.get(name).unwrap_or_else(|| {
            panic!("route {template}: this test has no id for `{name}`; add one to alices_world")
        });
        let encoded: String = id
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        path.replace_range(start..=end, &encoded);
    }
    path
}

#[tokio::test]
async fn bob_gets_from_every_route_and_tool_what_a_missing_id_gets() {
    let api = TestApi::start(|_| {}).await;
    let ids = alices_world(&api).await;
    let bob = api.token(Some("bob")).await;
    let alice = api.token(Some("alice")).await;
    let before: Vec<(String, Value)> = alices_reads(&api, &alice, &ids).await;
    // The admin routes name a user: bob's token is refused either way.
    let mut alice_ids = ids.alice.clone();
    alice_ids.insert("user_id", "alice".into());
    // (Her user id is in the path bob tries there; the comparison is by placeholder.)
    alice_ids.insert("message_id", "msg-a1".into());
    let mut missing_ids = ids.missing.clone();
    missing_ids.insert("user_id", "nobody".into());
    missing_ids.insert("message_id", "msg-missing".into());

    let routes = id_taking_routes();
    assert!(
        routes.len() >= 30,
        "the document lists {} such routes",
        routes.len()
    );
    let mut tried = 0;
    for (method, template, takes_body) in &routes {
        let body = match (takes_body, body_for(method, template)) {
            (true, None) => panic!(
                "{method} {template} takes a body this test does not know: add one to body_for"
            ),
            (_, body) => body,
        };
        let own = OWN_NAMESPACE
            .iter()
            .any(|name| template.contains(&format!("{{{name}}}")));
        let theirs = api
            .call(
                method,
                &fill(template, &alice_ids),
                Some(&bob),
                body.clone(),
            )
            .await;
        let text = theirs.body.to_string();
        assert!(
            !text.contains("4711") && !text.contains("alice"),
            "{method} {template} told bob of alice's data: {text}"
        );
        if own {
            // His own namespace: no answer about hers to compare; checked below that hers
            // is untouched.
            continue;
        }
        let missing = api
            .call(method, &fill(template, &missing_ids), Some(&bob), body)
            .await;
        assert!(
            theirs.status == 404 || theirs.status == 403,
            "{method} {template}: bob got {} {}",
            theirs.status,
            theirs.body
        );
        assert_eq!(
            (
                theirs.status,
                placeheld(&theirs.body.to_string(), &alice_ids)
            ),
            (
                missing.status,
                placeheld(&missing.body.to_string(), &missing_ids)
            ),
            "{method} {template}: alice's id answers unlike a missing one"
        );
        tried += 1;
    }
    assert!(tried >= 20, "only {tried} routes compared");

    // MCP: every tool with an id among its arguments.
    let client = connect(&api, &bob).await;
    let tools = client.list_all_tools().await.unwrap();
    let mut tried = 0;
    for tool in &tools {
        let schema = Value::Object((*tool.input_schema).clone());
        let properties = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let id_args: Vec<&str> = properties
            .keys()
            .map(String::as_str)
            .filter(|p| ids.alice.contains_key(p) && !OWN_NAMESPACE.contains(p))
            .collect();
        if id_args.is_empty() {
            continue;
        }
        let mut theirs_args = extra_args(&tool.name, &schema);
        let mut missing_args = theirs_args.clone();
        for arg in &id_args {
            theirs_args[*arg] = json!(ids.alice[arg]);
            missing_args[*arg] = json!(ids.missing[arg]);
        }
        let theirs = call(&client, &tool.name, theirs_args).await;
        let missing = call(&client, &tool.name, missing_args).await;
        assert_eq!(
            theirs.is_error,
            Some(true),
            "{}: bob was answered",
            tool.name
        );
        assert_eq!(
            placeheld(&text(&theirs), &ids.alice),
            placeheld(&text(&missing), &ids.missing),
            "{}: alice's id answers unlike a missing one",
            tool.name
        );
        tried += 1;
    }
    assert!(tried >= 12, "only {tried} tools compared");
    client.cancel().await.unwrap();

    // Nothing bob did reached alice's data.
    assert_eq!(alices_reads(&api, &alice, &ids).await, before);
}

/// The arguments a tool needs besides its ids; a required one this test does not know
/// fails it, saying what to add.
fn extra_args(tool: &str, schema: &Value) -> Value {
    let mut args = match tool {
        "memory_update" => json!({"text": "bob was here"}),
        "memory_restore" => json!({"version": 1}),
        "schedule_edit" => json!({"changes": {"goal": "bob was here"}}),
        "schedule_backfill" => json!({"from": "2020-01-01", "to": "2020-01-02"}),
        "schedule_trigger" => json!({"input": "bob was here"}),
        "approval_decide" => json!({"decision": "approve"}),
        _ => json!({}),
    };
    for required in schema["required"].as_array().into_iter().flatten() {
        let name = required.as_str().unwrap();
        if args.get(name).is_none() && !name.ends_with("_id") {
            panic!("tool {tool} requires `{name}`, which this test does not give: add it to extra_args");
        }
        if args.get(name).is_none() {
            args[name] = json!("");
        }
    }
    args
}

/// What alice reads of everything she has, to compare before and after bob.
async fn alices_reads(api: &TestApi, alice: &str, ids: &Ids) -> Vec<(String, Value)> {
    let mut reads = Vec::new();
    for path in [
        format!("/v1/notes/{}", ids.alice["note_id"]),
        format!("/v1/notes/{}/history", ids.alice["note_id"]),
        format!("/v1/schedules/{}", ids.alice["schedule_id"]),
        format!("/v1/schedules/{}/runs", ids.alice["schedule_id"]),
        format!("/v1/runs/{}", ids.alice["run_id"]),
        format!("/v1/approvals/{}", ids.alice["approval_id"]),
        format!("/v1/artifacts/{}", ids.alice["artifact_id"]),
        "/v1/sessions/diary/events".to_string(),
    ] {
        let reply = api.call("GET", &path, Some(alice), None).await;
        assert_eq!(reply.status, 200, "alice reads {path}: {}", reply.body);
        reads.push((path, reply.body));
    }
    reads
}
