//! Memory change events at a real webhook sink on 127.0.0.1:0: each change to a user's
//! memory (note saved, updated, deleted, restored; session forgotten) arrives once per
//! idempotency key, signed, across a worker restart; users without a change channel send
//! none; two workers moving the same changes write one message each.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::Router;
use hmac::{Hmac, KeyInit, Mac};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::config::{ChannelConfig, ChannelKind, Config, UserConfig};
use nightshift::memory::{NewEvent, NewNote, Origin, Role};
use nightshift::notify::changes::ChangeForwarder;
use serde_json::Value;
use sha2::Sha256;
use tempfile::TempDir;

type Received = Arc<Mutex<Vec<(String, Value, String)>>>;

/// A webhook sink: (Idempotency-Key, body, signature) of each delivery.
async fn sink() -> (String, Received) {
    let received: Received = Arc::default();
    let seen = received.clone();
    let app = Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
        let seen = seen.clone();
        async move {
            let header = |name: &str| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string()
            };
            let body_text = String::from_utf8_lossy(&body).to_string();
            let mut mac = Hmac::<Sha256>::new_from_slice(b"s3cret").unwrap();
            mac.update(&body);
            let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
            assert_eq!(
                header("x-nightshift-signature"),
                expected,
                "unsigned or wrongly signed"
            );
            seen.lock().unwrap().push((
                header("idempotency-key"),
                serde_json::from_str(&body_text).unwrap(),
                body_text,
            ));
            axum::http::StatusCode::OK
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/changes"), received)
}

fn config(dir: &TempDir, url: &str) -> Config {
    std::env::set_var("NIGHTSHIFT_TEST_CHANGES_SECRET", "s3cret");
    let mut config = common::config_in(dir);
    config.channels.insert(
        "hook".into(),
        ChannelConfig {
            url: Some(url.to_string()),
            secret_env: Some("NIGHTSHIFT_TEST_CHANGES_SECRET".into()),
            ..ChannelConfig::new(ChannelKind::Webhook)
        },
    );
    // Alice's changes go to the hook; nobody else's (no global channel).
    config.users.insert(
        "alice".into(),
        UserConfig {
            memory_changes_channel: Some("hook".into()),
            ..Default::default()
        },
    );
    config.scheduler.change_check_ms = 100;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_change_arrives_once_per_key_across_a_worker_restart() {
    let (url, received) = sink().await;
    let dir = TempDir::new().unwrap();
    let config = config(&dir, &url);
    let app = App::open(&config).await.unwrap();
    let memory = app.memory().by(Origin::Api);
    let id = memory
        .save_note("alice", &NewNote::new("Alice likes green tea"))
        .await
        .unwrap()
        .note_id;
    memory
        .update_note("alice", &id, "Alice likes black tea", None)
        .await
        .unwrap();
    memory
        .save_note("bob", &NewNote::new("Bob's note goes nowhere"))
        .await
        .unwrap();
    let count = || received.lock().unwrap().len();
    common::worker_until(&app, || count() >= 2).await;
    assert_eq!(count(), 2);

    // While no worker runs, more changes wait in the database; a new process sends them.
    memory.delete_note("alice", &id).await.unwrap();
    memory.restore_note("alice", &id, 1).await.unwrap();
    memory
        .append("alice", "chat", &[NewEvent::new(Role::User, "hi")])
        .await
        .unwrap();
    memory
        .forget(&Actor::user("alice").unwrap(), "chat")
        .await
        .unwrap();
    drop(app);
    let app = App::open(&config).await.unwrap();
    common::worker_until(&app, || count() >= 5).await;

    // Sent in parallel, they may arrive in any order; the key's number is the order made.
    let mut received = received.lock().unwrap().clone();
    received.sort_by_key(|(key, _, _)| key.trim_start_matches("memory:").parse::<i64>().unwrap());
    let events: Vec<&str> = received
        .iter()
        .map(|(_, body, _)| body["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "note.created",
            "note.updated",
            "note.deleted",
            "note.restored",
            "session.forgotten"
        ]
    );
    let mut keys: HashMap<&str, usize> = HashMap::new();
    for (key, body, _) in &received {
        assert!(key.starts_with("memory:"), "{key}");
        *keys.entry(key.as_str()).or_default() += 1;
        assert_eq!(body["user_id"], "alice");
    }
    assert!(
        keys.values().all(|n| *n == 1),
        "a key arrived twice: {keys:?}"
    );
    assert_eq!(received[1].1["content"], "Alice likes black tea");
    assert_eq!(received[1].1["changed_by"], "api");
    assert_eq!(received[3].1["version"], 4);
    assert_eq!(received[4].1["session_id"], "chat");
    // Nothing is left waiting.
    assert_eq!(
        common::count(app.memory(), "SELECT count(*) FROM memory_changes").await,
        0
    );
}

#[tokio::test]
async fn two_workers_moving_the_same_changes_write_one_message_each() {
    let dir = TempDir::new().unwrap();
    let config = config(&dir, "http://127.0.0.1:9/unused");
    let app = App::open(&config).await.unwrap();
    for i in 0..50 {
        app.memory()
            .save_note("alice", &NewNote::new(format!("note {i}")))
            .await
            .unwrap();
    }
    let forwarder =
        || ChangeForwarder::from_config(app.db().clone(), app.router().clone(), &config).unwrap();
    let (a, b) = (forwarder(), forwarder());
    let (ra, rb) = tokio::join!(a.forward(1), b.forward(1));
    assert!(ra.unwrap() + rb.unwrap() >= 50);
    let memory = app.memory();
    assert_eq!(
        common::count(memory, "SELECT count(*) FROM outbox WHERE kind = 'memory'").await,
        50
    );
    assert_eq!(
        common::count(memory, "SELECT count(DISTINCT idempotency_key) FROM outbox").await,
        50
    );
    assert_eq!(
        common::count(memory, "SELECT count(*) FROM memory_changes").await,
        0
    );
    // No channel anywhere: nothing is recorded at all.
    let quiet_dir = TempDir::new().unwrap();
    let quiet = App::open(&common::config_in(&quiet_dir)).await.unwrap();
    quiet
        .memory()
        .save_note("alice", &NewNote::new("kept quiet"))
        .await
        .unwrap();
    assert_eq!(
        common::count(quiet.memory(), "SELECT count(*) FROM memory_changes").await,
        0
    );
}

#[test]
fn a_change_channel_that_is_not_configured_is_refused() {
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.notify.memory_changes_channel = Some("nowhere".into());
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("notify.memory_changes_channel"), "{err}");
    let mut config = common::config_in(&dir);
    config.users.insert(
        "alice".into(),
        UserConfig {
            memory_changes_channel: Some("nowhere:ctx".into()),
            ..Default::default()
        },
    );
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("users.alice.memory_changes_channel"), "{err}");
}

#[tokio::test]
async fn a_consolidation_that_changed_a_users_notes_is_told_with_that_users_counts() {
    let dir = TempDir::new().unwrap();
    let config = config(&dir, "http://127.0.0.1:9/unused");
    let app = App::open(&config).await.unwrap();
    let expired = |text: &str| NewNote {
        expires_at: Some(1),
        ..NewNote::new(text)
    };
    for user in ["alice", "alice", "bob"] {
        app.memory()
            .save_note(user, &expired("gone by morning"))
            .await
            .unwrap();
    }
    let memory = app.memory();
    let finished = "SELECT count(*) FROM memory_changes WHERE event = 'consolidation.finished'";
    let consolidator = app.consolidator(None);
    consolidator
        .run(&[nightshift::consolidate::Pass::Expiry], None, None)
        .await
        .unwrap();
    assert_eq!(common::count(memory, finished).await, 1, "alice's only");
    let conn = app.db().conn().await.unwrap();
    let mut rows = conn
        .query(
            "SELECT user_id, payload_json FROM memory_changes
             WHERE event = 'consolidation.finished'",
            (),
        )
        .await
        .unwrap();
    let row = rows.next().await.unwrap().unwrap();
    assert_eq!(row.get::<String>(0).unwrap(), "alice");
    let payload: Value = serde_json::from_str(&row.get::<String>(1).unwrap()).unwrap();
    assert_eq!(payload["counts"]["notes_deleted"], 2, "{payload}");
    assert_eq!(payload["counts"]["notes_created"], 0, "{payload}");
    assert_eq!(payload["passes"], serde_json::json!(["expiry"]));
    drop(rows);
    // A run that changes nothing tells nobody.
    consolidator
        .run(&[nightshift::consolidate::Pass::Expiry], None, None)
        .await
        .unwrap();
    assert_eq!(common::count(memory, finished).await, 1);
}
