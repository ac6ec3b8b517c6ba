//! The `email` channel against a real SMTP server the test starts (aiosmtpd, pinned;
//! scripts/smtp_receiver.py), which parses each message it takes: a run's message arrives
//! from the configured sender to the context's address, logged in, with its summary as the
//! subject, a plain-text and an HTML part (escaped) and the run's link, under a Message-ID
//! made from its idempotency key. A refused login and a refused recipient are dead at
//! once; a server out of reach is tried again. Bad settings are named by the config check.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::peer::PythonPeer;
use nightshift::config::{ChannelConfig, ChannelKind, Config};
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::notify::channels::Channels;
use nightshift::notify::outbox::{enqueue_in, Message, NewMessage, NotifyPlan, Outbox, Priority};
use nightshift::notify::sender::Sender;
use serde_json::json;
use tempfile::TempDir;

const USER: &str = "robot@example.org";
const PASSWORD: &str = "s3cret-pass";
const REFUSED: &str = "nobody@example.org";

fn email(url: String, password_file: &std::path::Path) -> ChannelConfig {
    ChannelConfig {
        url: Some(url),
        secret_file: Some(password_file.display().to_string()),
        from: Some("Nightshift <nightshift@example.org>".into()),
        ..ChannelConfig::new(ChannelKind::Email)
    }
}

/// A config with `mail` (the server, the right password), `wrong` (the wrong one) and
/// `away` (a port nothing listens on).
fn config(dir: &TempDir, port: u16) -> Config {
    let mut config = common::config_in(dir);
    let right = dir.path().join("right");
    let wrong = dir.path().join("wrong");
    std::fs::write(&right, PASSWORD).unwrap();
    std::fs::write(&wrong, "not-it").unwrap();
    let url = |port: u16| format!("smtp://robot%40example.org@127.0.0.1:{port}?tls=none");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    config
        .channels
        .insert("mail".into(), email(url(port), &right));
    config
        .channels
        .insert("wrong".into(), email(url(port), &wrong));
    config
        .channels
        .insert("away".into(), email(url(closed), &right));
    config.validate().unwrap();
    config
}

/// A worker's sender on `db`, giving up on a channel after `timeout`.
fn sender(
    config: &Config,
    db: &nightshift::db::Db,
    clock: &Arc<ManualClock>,
    timeout: Duration,
) -> Sender {
    Sender {
        outbox: Outbox::new(db.clone()),
        channels: Channels::from_config(&config.channels, timeout).unwrap(),
        config: config.notify.clone(),
        owner: "w".into(),
        clock: clock.clone(),
        wake: Arc::default(),
        changes: None,
        quiet: Default::default(),
        digests: None,
    }
}

fn plan(channel: &str, context: &str) -> NotifyPlan {
    let mut plan = common::notify_plan(channel, 100);
    plan.channel_context_id = Some(context.into());
    plan
}

#[tokio::test]
async fn a_runs_message_arrives_as_an_email_and_refusals_are_dead_at_once() {
    let dir = TempDir::new().unwrap();
    let args = [
        "--user",
        USER,
        "--password",
        PASSWORD,
        "--refuse-rcpt",
        REFUSED,
    ];
    let Some(receiver) = PythonPeer::start(
        &dir,
        "smtp_receiver.py",
        "the Python peers (aiosmtpd)",
        &args,
    ) else {
        return;
    };
    let config = config(&dir, receiver.port);
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let app = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    let db = app.memory().db().clone();
    let conn = db.conn().await.unwrap();
    let tx = conn.write_tx().await.unwrap();
    for (run, channel, to) in [
        ("run-1", "mail", "alice@example.org"),
        ("run-2", "wrong", "alice@example.org"),
        ("run-3", "mail", REFUSED),
        ("run-4", "away", "alice@example.org"),
    ] {
        let message = NewMessage {
            kind: "run",
            run_id: Some(run),
            schedule_id: Some("sch-1"),
            user_id: "alice",
            priority: Priority::Normal,
            payload: json!({
                "summary": "weather: <rain> & wind at 3pm",
                "output": "<b>rain</b> & wind\nat 3pm",
                "run_url": format!("https://n.example/v1/runs/{run}"),
            }),
        };
        enqueue_in(&tx, &plan(channel, to), message, clock.now_ms())
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    drop(conn);
    let sender = sender(&config, &db, &clock, Duration::from_secs(5));
    sender.deliver_due().await.unwrap();

    let mail = receiver.lines();
    assert_eq!(mail.len(), 1, "{mail:?}");
    let got = &mail[0];
    assert_eq!(got["authenticated"], true);
    assert_eq!(got["mail_from"], "nightshift@example.org");
    assert_eq!(got["rcpt_tos"], json!(["alice@example.org"]));
    assert_eq!(got["from"], "Nightshift <nightshift@example.org>");
    assert_eq!(got["subject"], "weather: <rain> & wind at 3pm");
    assert_eq!(got["content_type"], "multipart/alternative");
    // Line ends as the parser gives them (SMTP's are CRLF).
    let text = got["text"].as_str().unwrap().replace("\r\n", "\n");
    assert!(text.contains("<b>rain</b> & wind\nat 3pm"), "{text}");
    assert!(text.contains("https://n.example/v1/runs/run-1"), "{text}");
    let html = got["html"].as_str().unwrap().replace("\r\n", "\n");
    assert!(
        html.contains("&lt;b&gt;rain&lt;/b&gt; &amp; wind"),
        "{html}"
    );
    assert!(
        html.contains(r#"<a href="https://n.example/v1/runs/run-1">"#),
        "{html}"
    );
    let id = blake3::hash(b"run-1:run").to_hex();
    assert_eq!(got["message_id"], format!("<{}@nightshift>", &id[..32]));

    let all: Vec<Message> = Outbox::new(db.clone()).list(None, 10).await.unwrap();
    let by_run = |run: &str| {
        all.iter()
            .find(|m| m.run_id.as_deref() == Some(run))
            .unwrap()
    };
    assert_eq!(by_run("run-1").status, "delivered");
    let wrong = by_run("run-2");
    assert_eq!(wrong.status, "dead", "{wrong:?}");
    assert!(
        wrong
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("535"),
        "{wrong:?}"
    );
    let refused = by_run("run-3");
    assert_eq!(refused.status, "dead", "{refused:?}");
    assert!(
        refused
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("550"),
        "{refused:?}"
    );
    let away = by_run("run-4");
    assert_eq!(away.status, "pending", "{away:?}");
    assert_eq!(away.attempts, 1);
    assert!(away.next_attempt_at > clock.now_ms());
}

/// An email channel's settings are checked when the config is, each named.
#[test]
fn bad_email_settings_name_the_key() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("pw");
    for (tweak, key, says) in [
        (
            Box::new(|c: &mut ChannelConfig| c.from = None) as Box<dyn Fn(&mut ChannelConfig)>,
            "channels.mail.from",
            "needs from",
        ),
        (
            Box::new(|c: &mut ChannelConfig| c.from = Some("not an address".into())),
            "channels.mail.from",
            "not an address",
        ),
        (
            Box::new(|c: &mut ChannelConfig| c.url = Some("https://mail.example.org".into())),
            "channels.mail.url",
            "not an SMTP URL",
        ),
        (
            Box::new(|c: &mut ChannelConfig| c.url = None),
            "channels.mail.url",
            "needs a url",
        ),
        (
            Box::new(|c: &mut ChannelConfig| c.url = Some("smtp://me:pw@mail.example.org".into())),
            "channels.mail.url",
            "secret_env",
        ),
    ] {
        let mut config = common::config_in(&dir);
        let mut channel = email("smtp://mail.example.org".into(), &file);
        tweak(&mut channel);
        config.channels.insert("mail".into(), channel);
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains(key) && err.contains(says), "{err}");
    }
    // A sender on another kind of channel is a mistake worth naming.
    let mut config = common::config_in(&dir);
    config.channels.insert(
        "hook".into(),
        ChannelConfig {
            url: Some("http://127.0.0.1:9/hook".into()),
            from: Some("a@example.org".into()),
            ..ChannelConfig::new(ChannelKind::Webhook)
        },
    );
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("channels.hook.from"), "{err}");
    // The recipient is a channel context: one address.
    use nightshift::notify::channels::check_context;
    assert!(check_context(ChannelKind::Email, "alice@example.org").is_ok());
    for bad in ["alice", "a@b.org, c@d.org", "Alice <a@b.org>", ""] {
        assert!(check_context(ChannelKind::Email, bad).is_err(), "{bad}");
    }
}

/// A server that takes the connection and then says nothing holds no pass of the sender:
/// the exchange is given up after the channels' timeout and tried again later.
#[tokio::test]
async fn a_server_that_stalls_is_given_up_on_and_tried_again() {
    let dir = TempDir::new().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let mut config = common::config_in(&dir);
    let file = dir.path().join("pw");
    std::fs::write(&file, PASSWORD).unwrap();
    config.channels.insert(
        "mail".into(),
        email(format!("smtp://127.0.0.1:{port}?tls=none"), &file),
    );
    config.validate().unwrap();
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let app = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    let db = app.memory().db().clone();
    let conn = db.conn().await.unwrap();
    let tx = conn.write_tx().await.unwrap();
    let message = NewMessage {
        kind: "run",
        run_id: Some("run-1"),
        schedule_id: Some("sch-1"),
        user_id: "alice",
        priority: Priority::Normal,
        payload: json!({"summary": "report"}),
    };
    enqueue_in(
        &tx,
        &plan("mail", "alice@example.org"),
        message,
        clock.now_ms(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    drop(conn);
    let sender = sender(&config, &db, &clock, Duration::from_secs(1));
    sender.deliver_due().await.unwrap();
    let all = Outbox::new(db).list(None, 10).await.unwrap();
    assert_eq!(all[0].status, "pending", "{all:?}");
    assert_eq!(all[0].attempts, 1);
    assert!(
        all[0]
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("took more than 1 s"),
        "{all:?}"
    );
    held.abort();
}
