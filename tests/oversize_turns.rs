//! A conversation turn over `memory.max_text_bytes` under `memory.oversize = "artifact"`:
//! stored cut to fit, its whole text kept as the user's artifact in the same session and
//! named in the marker; another user never sees it; over the artifact limits, or beside
//! a bad event, nothing at all is stored.

mod common;

use nightshift::access::Actor;
use nightshift::config::{Config, Oversize};
use nightshift::error::{ErrorKind, Kind};
use nightshift::memory::{NewEvent, Role};
use serde_json::json;
use tempfile::TempDir;

const MAX_TEXT: usize = 1_000;

fn artifact_policy(config: &mut Config) {
    config.memory.max_text_bytes = MAX_TEXT;
    config.memory.oversize = Oversize::Artifact;
}

/// A user turn with a pasted log between what they said before and after it.
fn pasted(lines: usize, tag: &str) -> String {
    let log: String = (0..lines)
        .map(|i| format!("{tag} 2026-03-0{} worker[{i}]: ok\n", i % 9 + 1))
        .collect();
    format!("I prefer green tea in the morning. Here is the log:\n{log}That was all of it.")
}

/// The artifact id a cut turn's marker names.
fn named_artifact(content: &str) -> String {
    let (_, after) = content
        .split_once("the whole turn is artifact ")
        .unwrap_or_else(|| panic!("no artifact named in {content:?}"));
    after.split_whitespace().next().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_long_turn_is_cut_and_its_whole_text_is_the_users_artifact() {
    let api = common::api::TestApi::start(artifact_policy).await;
    let alice = api.token(Some("alice")).await;
    let bob = api.token(Some("bob")).await;
    let whole = pasted(200, "alpha");
    assert!(whole.len() > 5 * MAX_TEXT);
    let reply = api
        .call(
            "POST",
            "/v1/sessions/chat/events",
            Some(&alice),
            Some(json!({"events": [
                {"role": "user", "content": "short and fine"},
                {"role": "user", "content": whole},
            ]})),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.body["sequences"], json!([1, 2]));

    let events = api
        .call("GET", "/v1/sessions/chat/events", Some(&alice), None)
        .await;
    let stored = events.body[1]["content"].as_str().unwrap().to_string();
    assert!(stored.len() <= MAX_TEXT, "{} bytes stored", stored.len());
    assert!(stored.starts_with("I prefer green tea in the morning."));
    assert!(stored.ends_with("That was all of it."));
    assert!(stored.contains(&format!("this turn was {} bytes", whole.len())));
    assert_eq!(events.body[0]["content"], "short and fine");

    // The whole text, byte for byte, as alice's artifact in the same session.
    let artifact_id = named_artifact(&stored);
    let content = api
        .client
        .get(format!("{}/v1/artifacts/{artifact_id}/content", api.base))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(content.status(), 200);
    assert_eq!(
        content.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(content.text().await.unwrap(), whole);
    let meta = api
        .call(
            "GET",
            &format!("/v1/artifacts/{artifact_id}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(meta.body["session_id"], "chat");
    assert_eq!(meta.body["name"], "turn.txt");

    // What the user said around the paste is searchable in the cut turn.
    let hits = api
        .app
        .memory()
        .search(&nightshift::memory::SearchRequest {
            user_id: "alice".into(),
            query: "green tea morning".into(),
            top_k: Some(10),
            session_id: Some("chat".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(hits.iter().any(|h| h.sequence == Some(2)), "{hits:?}");

    // Bob neither reads it nor learns it exists.
    for path in [
        format!("/v1/artifacts/{artifact_id}"),
        format!("/v1/artifacts/{artifact_id}/content"),
    ] {
        let reply = api.call("GET", &path, Some(&bob), None).await;
        assert_eq!(reply.status, 404, "{path}");
    }
    let listed = api
        .call("GET", "/v1/artifacts?session=chat", Some(&bob), None)
        .await;
    assert_eq!(listed.body, json!([]));

    // Forgetting the session takes the artifact with it.
    let forgot = api
        .call("DELETE", "/v1/sessions/chat", Some(&alice), None)
        .await;
    assert!(forgot.status < 300, "{}", forgot.status);
    let gone = api
        .call(
            "GET",
            &format!("/v1/artifacts/{artifact_id}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(gone.status, 404);
    api.stop().await;
}

/// Sessions, events and artifacts stored, and the artifact folder's files.
async fn stored(app: &nightshift::app::App) -> (i64, i64, i64, usize) {
    let files = app
        .artifacts()
        .folder()
        .map_or(0, |folder| walk(folder).len());
    (
        common::count(
            app.memory(),
            "SELECT count(*) FROM sessions WHERE kind != 'memory'",
        )
        .await,
        common::count(app.memory(), "SELECT count(*) FROM events").await,
        common::count(app.memory(), "SELECT count(*) FROM artifacts").await,
        files,
    )
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|entry| {
            let path = entry.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

#[tokio::test]
async fn over_the_artifact_limits_or_beside_a_bad_event_nothing_is_stored() {
    let dir = TempDir::new().unwrap();
    let one = pasted(200, "alpha");
    let mut config = common::config_in(&dir);
    artifact_policy(&mut config);
    // Room for one kept turn, not two; each in the folder.
    config.artifacts.inline_max_bytes = 1_024;
    config.artifacts.max_artifact_bytes = one.len() + 1_000;
    config.artifacts.max_bytes_per_user = (one.len() * 3 / 2) as u64;
    let app = common::app_with(&config, None).await;
    let memory = app.memory();
    let user = |content: &str| NewEvent::new(Role::User, content);

    // The second turn's artifact would pass the quota: neither is kept, nor the session,
    // nor a file.
    let err = memory
        .append("alice", "chat", &[user(&one), user(&pasted(200, "beta"))])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    let message = err.to_string();
    assert!(
        message.contains("could not be kept as an artifact"),
        "{message}"
    );
    assert!(message.contains("max_bytes_per_user"), "{message}");
    assert_eq!(stored(&app).await, (0, 0, 0, 0));

    // A bad event beside an over-long one: refused before any artifact is kept.
    let mut bad = user("fine text");
    bad.importance = Some(2.0);
    let err = memory
        .append("alice", "chat", &[user(&one), bad])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput);
    assert!(err.to_string().contains("importance"), "{err}");
    assert_eq!(stored(&app).await, (0, 0, 0, 0));

    // A JSONL import with a bad line: the line is named, and nothing is kept.
    let jsonl = format!(
        "{}\n{{\"role\": \"nobody\", \"content\": \"x\"}}\n",
        json!({"role": "user", "content": one})
    );
    let err = memory
        .append_jsonl("alice", "chat", jsonl.as_bytes())
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("line 2:"), "{err}");
    assert_eq!(stored(&app).await, (0, 0, 0, 0));

    // Two long lines past the quota: the second is named.
    let jsonl = format!(
        "{}\n\n{}\n",
        json!({"role": "user", "content": one}),
        json!({"role": "user", "content": pasted(200, "gamma")})
    );
    let err = memory
        .append_jsonl("alice", "chat", jsonl.as_bytes())
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("line 3:"), "{err}");
    assert!(err.to_string().contains("max_bytes_per_user"), "{err}");
    assert_eq!(stored(&app).await, (0, 0, 0, 0));

    // Alone it fits the quota, through the JSONL door too.
    let jsonl = format!("{}\n", json!({"role": "user", "content": one}));
    memory
        .append_jsonl("alice", "chat", jsonl.as_bytes())
        .await
        .unwrap();
    assert_eq!(stored(&app).await, (1, 1, 1, 1));
    let owner = Actor::user("alice").unwrap();
    let events = memory.recall(&owner, "chat", 10).await.unwrap();
    let artifact_id = named_artifact(&events[0].content);
    let (_, bytes) = app.artifacts().get(&owner, &artifact_id).await.unwrap();
    assert_eq!(bytes, one.as_bytes());

    // A run's transcript is only cut: never kept whole, never lost to the user's quota.
    memory
        .append_transcript("alice", "scheduled:sch-1", &[user(&pasted(300, "delta"))])
        .await
        .unwrap();
    let transcript = memory.recall(&owner, "scheduled:sch-1", 10).await.unwrap();
    assert!(transcript[0].content.contains("bytes cut"));
    assert!(!transcript[0].content.contains("artifact"));
    assert_eq!(stored(&app).await, (2, 2, 1, 1));
}

#[tokio::test]
async fn under_truncate_no_artifact_is_kept_and_under_refuse_the_turn_is_refused() {
    let dir = TempDir::new().unwrap();
    let long = pasted(200, "alpha");
    for (policy, kept) in [(Oversize::Truncate, true), (Oversize::Refuse, false)] {
        let mut config = common::config_in(&dir);
        config.memory.max_text_bytes = MAX_TEXT;
        config.memory.oversize = policy;
        let app = common::app_with(&config, None).await;
        let session = format!("chat-{policy}");
        let appended = app
            .memory()
            .append("alice", &session, &[NewEvent::new(Role::User, &long)])
            .await;
        assert_eq!(appended.is_ok(), kept, "{policy}: {appended:?}");
        if let Err(err) = appended {
            assert!(err.to_string().contains("max_text_bytes"), "{err}");
        }
        let events = app
            .memory()
            .recall(&Actor::user("alice").unwrap(), &session, 10)
            .await
            .unwrap_or_default();
        assert_eq!(events.len(), usize::from(kept));
        if let Some(event) = events.first() {
            assert!(event.content.contains("bytes cut"));
            assert!(!event.content.contains("artifact"), "{}", event.content);
        }
        assert_eq!(
            common::count(app.memory(), "SELECT count(*) FROM artifacts").await,
            0
        );
    }
}
