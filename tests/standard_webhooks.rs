//! Webhook deliveries signed by the Standard Webhooks scheme (`signing = "standard"`),
//! checked by the scheme's official Python library in a receiver the test starts
//! (scripts/standard_webhook_receiver.py): each delivery verifies, a retry keeps its
//! `webhook-id` (so the receiver drops a redelivery) under a fresh timestamp, a replayed
//! and a stale delivery are refused by it, and a channel signing with the wrong secret is
//! refused and its message dead, not retried. A secret that is not a `whsec_…` one, or
//! `standard` without a secret, is refused when the channels are loaded.

mod common;

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use nightshift::access::Actor;
use nightshift::config::{ChannelConfig, ChannelKind, Config, WebhookSigning};
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::notify::channels::Channels;
use nightshift::notify::outbox::Outbox;
use nightshift::notify::sender::Sender;
use nightshift::schedule::types::{NewSchedule, NotifyPolicy, RunOutcome, RunStatus};
use nightshift::schedule::Cadence;
use serde_json::Value;
use tempfile::TempDir;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OTHER_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

/// The receiver, running; killed when dropped.
struct Receiver {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    /// `None` (after the skip line) without the library.
    fn start(dir: &TempDir, fail_first: u32) -> Option<Receiver> {
        let python = common::skip::installed(
            "NIGHTSHIFT_TEST_A2A_PYTHON",
            "the Python peers (the Standard Webhooks library)",
            "scripts/a2a-peers.sh",
        )?;
        let secret_file = dir.path().join("receiver-secret");
        std::fs::write(&secret_file, SECRET).unwrap();
        let log = dir.path().join("receiver.log");
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/standard_webhook_receiver.py"
        );
        let mut child = Command::new(python)
            .arg(script)
            .arg("--secret-file")
            .arg(&secret_file)
            .arg("--log")
            .arg(&log)
            .args(["--fail-first", &fail_first.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the receiver");
        let mut port = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        let port: u16 = port.trim().parse().expect("the receiver's port");
        Some(Receiver {
            child,
            url: format!("http://127.0.0.1:{port}/hook"),
            log,
        })
    }

    /// What it decided of each request, in order.
    fn seen(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

fn webhook(url: &str, secret_file: &std::path::Path) -> ChannelConfig {
    ChannelConfig {
        url: Some(url.to_string()),
        secret_file: Some(secret_file.display().to_string()),
        signing: Some(WebhookSigning::Standard),
        ..ChannelConfig::new(ChannelKind::Webhook)
    }
}

struct Harness {
    config: Config,
    clock: Arc<ManualClock>,
    app: nightshift::app::App,
}

impl Harness {
    async fn new(dir: &TempDir, channels: &[(&str, &str, &str)]) -> Harness {
        let mut config = common::config_in(dir);
        config.notify.backoff_base_ms = 1_000;
        for (id, url, secret) in channels {
            let file = dir.path().join(format!("{id}-secret"));
            std::fs::write(&file, secret).unwrap();
            config.channels.insert(id.to_string(), webhook(url, &file));
        }
        config.validate().unwrap();
        let clock = ManualClock::starting_at(nightshift::db::clock::now_ms());
        let app = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
        Harness { config, clock, app }
    }

    fn sender(&self) -> Sender {
        Sender {
            outbox: Outbox::new(self.app.db().clone()),
            channels: Channels::from_config(&self.config.channels, Duration::from_secs(5)).unwrap(),
            config: self.config.notify.clone(),
            owner: "w".into(),
            clock: self.clock.clone(),
            wake: Arc::new(tokio::sync::Notify::new()),
            changes: None,
            quiet: Default::default(),
            digests: None,
        }
    }

    /// A run of a schedule notifying `channel`, finished: its message is in the outbox.
    async fn finished_run(&self, channel: &str) {
        let store = self.app.schedules();
        let mut new = NewSchedule::new(
            "alice",
            "report",
            Cadence::cron("0 9 * * *", "UTC").unwrap(),
        );
        new.channel_id = Some(channel.to_string());
        new.notify = NotifyPolicy::Always;
        let schedule = store.create(&Actor::Operator, &new).await.unwrap();
        store
            .run_now(&Actor::Operator, &schedule.schedule_id)
            .await
            .unwrap();
        let due = store
            .get(&Actor::Operator, &schedule.schedule_id)
            .await
            .unwrap();
        let claim = store.claim(&due, "w", 60_000).await.unwrap().unwrap();
        let outcome = RunOutcome {
            status: Some(RunStatus::Succeeded),
            output: Some("all well".into()),
            ..Default::default()
        };
        assert!(store.finish(&claim, Some("w"), &outcome, 5).await.unwrap());
    }
}

#[tokio::test]
async fn deliveries_verify_with_the_official_library_and_a_retry_keeps_its_id() {
    let dir = TempDir::new().unwrap();
    let Some(receiver) = Receiver::start(&dir, 1) else {
        return;
    };
    let h = Harness::new(&dir, &[("hook", &receiver.url, SECRET)]).await;
    h.finished_run("hook").await;

    // The receiver verifies the first delivery, then answers 503: the sender retries.
    h.sender().deliver_due().await.unwrap();
    h.clock.advance_ms(60_000);
    assert_eq!(h.sender().deliver_due().await.unwrap(), 1);
    let seen = receiver.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for entry in &seen {
        assert_eq!(entry["verified"], true, "{entry}");
        let body: Value = serde_json::from_str(entry["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["status"], "succeeded");
        assert!(entry["headers"]["webhook-signature"]
            .as_str()
            .unwrap()
            .starts_with("v1,"));
    }
    assert_eq!(
        seen[0]["headers"]["webhook-id"], seen[1]["headers"]["webhook-id"],
        "a retry is the same message to the receiver"
    );
    assert_eq!(
        (seen[0]["status"].as_i64(), seen[1]["status"].as_i64()),
        (Some(503), Some(204))
    );

    // The accepted delivery sent again as it was: the receiver refuses the replay; sent
    // again ten minutes old (its timestamp moved back): the library refuses it as stale.
    let client = reqwest::Client::new();
    let resend = |timestamp_back: i64| {
        let mut request = client
            .post(&receiver.url)
            .body(seen[1]["body"].as_str().unwrap().to_string());
        for (name, value) in seen[1]["headers"].as_object().unwrap() {
            let value = value.as_str().unwrap().to_string();
            let value = if name == "webhook-timestamp" {
                (value.parse::<i64>().unwrap() - timestamp_back).to_string()
            } else {
                value
            };
            if name != "host" && name != "content-length" {
                request = request.header(name.as_str(), value);
            }
        }
        request.send()
    };
    assert_eq!(resend(0).await.unwrap().status(), 409);
    assert_eq!(resend(600).await.unwrap().status(), 401);
    let seen = receiver.seen();
    assert_eq!(seen[2]["replay"], true);
    assert_eq!(seen[3]["verified"], false);
    assert!(
        seen[3]["error"].as_str().unwrap().contains("too old"),
        "{}",
        seen[3]
    );
}

#[tokio::test]
async fn a_channel_signing_with_another_secret_is_refused_and_its_message_dead() {
    let dir = TempDir::new().unwrap();
    let Some(receiver) = Receiver::start(&dir, 0) else {
        return;
    };
    let h = Harness::new(&dir, &[("forged", &receiver.url, OTHER_SECRET)]).await;
    h.finished_run("forged").await;
    h.sender().deliver_due().await.unwrap();
    let seen = receiver.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["verified"], false);
    let dead = Outbox::new(h.app.db().clone())
        .list(Some("dead"), 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1, "a 401 will never succeed: dead at once");
    assert!(dead[0].last_error.as_deref().unwrap().contains("401"));
}

#[test]
fn a_secret_that_is_not_the_schemes_is_refused_when_channels_load() {
    let dir = TempDir::new().unwrap();
    for (secret, why) in [
        ("s3cret", "starts with `whsec_`"),
        ("whsec_not base64!", "not base64"),
        ("whsec_c2hvcnQ=", "bytes; the scheme takes 24 to 64"),
    ] {
        let file = dir.path().join("secret");
        std::fs::write(&file, secret).unwrap();
        let channels = [("hook".to_string(), webhook("http://127.0.0.1:9/", &file))].into();
        let Err(err) = Channels::from_config(&channels, Duration::from_secs(1)) else {
            panic!("the secret {secret:?} was taken");
        };
        let text = err.to_string();
        assert!(
            text.contains("channel `hook`") && text.contains(why),
            "{text}"
        );
        assert!(
            !text.contains(secret.trim_start_matches("whsec_")),
            "{text}"
        );
    }
    // `standard` without a secret, or on another kind of channel, fails the config check.
    let mut config = Config::default();
    let mut hook = webhook("http://127.0.0.1:9/", std::path::Path::new("x"));
    hook.secret_file = None;
    config.channels.insert("hook".into(), hook);
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("channels.hook.signing"), "{err}");
    let mut config = Config::default();
    let mut slack = webhook("http://127.0.0.1:9/", std::path::Path::new("x"));
    slack.kind = ChannelKind::Slack;
    config.channels.insert("room".into(), slack);
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("only a webhook channel signs"), "{err}");
}
