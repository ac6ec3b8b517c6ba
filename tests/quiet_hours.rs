//! Quiet hours: a user's notifications that can wait are held until the window ends, in
//! the user's own zone, then sent once; urgent ones, memory change events and other
//! users' go at once.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::post;
use axum::Router;
use nightshift::config::{ChannelConfig, ChannelKind, Config, UserConfig};
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::db::Db;
use nightshift::notify::channels::Channels;
use nightshift::notify::outbox::{enqueue_in, NewMessage, Outbox, Priority};
use nightshift::notify::quiet::QuietPolicy;
use nightshift::notify::sender::Sender;
use serde_json::{json, Value};
use tempfile::TempDir;

/// A webhook receiver on 127.0.0.1 keeping each body's summary.
async fn receiver() -> (String, Arc<Mutex<Vec<String>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let kept = got.clone();
    let router = Router::new().route(
        "/hook",
        post(move |body: String| {
            let kept = kept.clone();
            async move {
                let body: Value = serde_json::from_str(&body).unwrap_or_default();
                let summary = body["summary"].as_str().unwrap_or_default().to_string();
                kept.lock().unwrap().push(summary);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (url, got)
}

/// A worker's sender on `db`, with the quiet hours of `config`.
fn sender(config: &Config, db: &Db, clock: &Arc<ManualClock>) -> Sender {
    Sender {
        outbox: Outbox::new(db.clone()),
        channels: Channels::from_config(&config.channels, Duration::from_secs(5)).unwrap(),
        config: config.notify.clone(),
        owner: "w".into(),
        clock: clock.clone(),
        wake: Arc::default(),
        changes: None,
        quiet: QuietPolicy::from_config(config),
        digests: None,
    }
}

#[tokio::test]
async fn a_users_quiet_hours_hold_what_can_wait_until_they_end() {
    let (url, got) = receiver().await;
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.channels.insert(
        "hook".into(),
        ChannelConfig {
            url: Some(url),
            ..ChannelConfig::new(ChannelKind::Webhook)
        },
    );
    // 22:00 to 07:00 in Lisbon (UTC+0 in January).
    config.users.insert(
        "alice".into(),
        UserConfig {
            timezone: Some("Europe/Lisbon".into()),
            quiet_hours: Some("22:00-07:00".into()),
            ..Default::default()
        },
    );
    config.validate().unwrap();
    // 2027-01-15 23:00 in Lisbon.
    let clock = ManualClock::starting_at(1_800_000_000_000 + 15 * 3_600_000);
    let app = common::app_with(&config, Some(clock.clone())).await;
    let db = app.memory().db().clone();

    let plan = common::notify_plan("hook", 100);
    let conn = db.conn().await.unwrap();
    let tx = conn.write_tx().await.unwrap();
    for (user, kind, priority, summary) in [
        ("alice", "run", Priority::Normal, "alice's report"),
        ("alice", "run", Priority::High, "alice's run failed"),
        ("alice", "memory", Priority::Normal, "alice's note changed"),
        ("bob", "run", Priority::Normal, "bob's report"),
    ] {
        let run_id = format!("run-{summary}");
        let message = NewMessage {
            kind,
            run_id: Some(&run_id),
            schedule_id: Some("sch-x"),
            user_id: user,
            priority,
            payload: json!({"summary": summary}),
        };
        enqueue_in(&tx, &plan, message, clock.now_ms())
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    drop(conn);

    let sender = sender(&config, &db, &clock);
    sender.deliver_due().await.unwrap();
    let mut sent = got.lock().unwrap().clone();
    sent.sort();
    assert_eq!(
        sent,
        ["alice's note changed", "alice's run failed", "bob's report"]
    );

    // Held, not failed: due at 07:00, no attempt counted; the hour it had to live (the
    // plan's) was not spent waiting.
    let held = Outbox::new(db.clone())
        .list(Some("pending"), 10)
        .await
        .unwrap();
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].next_attempt_at, clock.now_ms() + 8 * 3_600_000);
    assert_eq!(held[0].attempts, 0);

    clock.advance_ms(8 * 3_600_000 - 1);
    sender.deliver_due().await.unwrap();
    assert_eq!(got.lock().unwrap().len(), 3, "sent before the window ended");
    clock.advance_ms(1);
    sender.deliver_due().await.unwrap();
    let sent = got.lock().unwrap().clone();
    assert_eq!(sent.len(), 4);
    assert_eq!(sent[3], "alice's report");
    sender.deliver_due().await.unwrap();
    assert_eq!(got.lock().unwrap().len(), 4, "sent twice");
}

/// A window or a zone that cannot be read is refused by the config check, naming it.
#[test]
fn bad_quiet_hours_or_zones_name_the_key() {
    let dir = TempDir::new().unwrap();
    for (window, zone, key) in [
        ("22:00-25:00", None, "users.alice.quiet_hours"),
        ("all night", None, "users.alice.quiet_hours"),
        ("22:00-07:00", Some("Mars/Olympus"), "users.alice.timezone"),
        ("", None, "users.alice.quiet_hours"),
    ] {
        let mut config = common::config_in(&dir);
        config.users.insert(
            "alice".into(),
            UserConfig {
                timezone: zone.map(Into::into),
                quiet_hours: Some(window.into()),
                ..Default::default()
            },
        );
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains(key), "{window}: {err}");
    }
}

/// A channel's quiet hours (a shared room nobody reads at night) hold what it carries that
/// can wait, whoever it is for; the user's own window, when later, wins.
#[tokio::test]
async fn a_channels_quiet_hours_hold_what_it_carries() {
    let (url, got) = receiver().await;
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    for (id, quiet) in [("room", Some("22:00-06:00")), ("hook", None)] {
        config.channels.insert(
            id.into(),
            ChannelConfig {
                url: Some(url.clone()),
                quiet_hours: quiet.map(Into::into),
                ..ChannelConfig::new(ChannelKind::Webhook)
            },
        );
    }
    config.users.insert(
        "alice".into(),
        UserConfig {
            quiet_hours: Some("21:00-07:30".into()),
            ..Default::default()
        },
    );
    config.validate().unwrap();
    // 2027-01-15 23:00 UTC.
    let clock = ManualClock::starting_at(1_800_000_000_000 + 15 * 3_600_000);
    let app = common::app_with(&config, Some(clock.clone())).await;
    let db = app.memory().db().clone();
    let conn = db.conn().await.unwrap();
    let tx = conn.write_tx().await.unwrap();
    for (channel, user, summary) in [
        ("room", "bob", "bob in the room"),
        ("hook", "bob", "bob on the hook"),
        ("room", "alice", "alice in the room"),
    ] {
        let run_id = format!("run-{summary}");
        let message = NewMessage {
            kind: "run",
            run_id: Some(&run_id),
            schedule_id: Some("sch-x"),
            user_id: user,
            priority: Priority::Normal,
            payload: json!({"summary": summary}),
        };
        let plan = common::notify_plan(channel, 100);
        enqueue_in(&tx, &plan, message, clock.now_ms())
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    drop(conn);

    let sender = sender(&config, &db, &clock);
    sender.deliver_due().await.unwrap();
    assert_eq!(*got.lock().unwrap(), ["bob on the hook"]);
    let mut held: Vec<(String, i64)> = Outbox::new(db.clone())
        .list(Some("pending"), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.user_id, m.next_attempt_at - clock.now_ms()))
        .collect();
    held.sort();
    // Bob waits for the room (06:00), alice for herself (07:30, the later).
    assert_eq!(
        held,
        [
            ("alice".to_string(), 8 * 3_600_000 + 1_800_000),
            ("bob".to_string(), 7 * 3_600_000)
        ]
    );
}
