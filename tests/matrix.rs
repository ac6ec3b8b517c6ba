//! The Matrix channel against a real homeserver: Synapse, started by the test with a
//! throwaway config (scripts/synapse_server.py, installed pinned by
//! scripts/matrix-peer.sh). A run's message lands in the room as the bot's event, plain
//! and as escaped HTML; sent again (an answer lost), it is still one event, the
//! transaction id being the message's; a room the bot is not in, or a token the server
//! does not know, is a dead letter at once.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::notify_bench::{channel, harness};
use nightshift::config::ChannelKind;
use nightshift::notify::channels::Channels;
use nightshift::schedule::types::{NotifyPolicy, RunStatus};
use serde_json::Value;
use tempfile::TempDir;

/// Synapse, running; killed when dropped.
struct Homeserver {
    child: Child,
    url: String,
    token: String,
    room: String,
    _dir: TempDir,
}

impl Drop for Homeserver {
    fn drop(&mut self) {
        // SIGTERM: the wrapper stops its Synapse on the way out.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

impl Homeserver {
    /// `None` (after the skip line) without Synapse installed.
    fn start() -> Option<Self> {
        let python = common::skip::installed(
            "NIGHTSHIFT_TEST_SYNAPSE_PYTHON",
            "Synapse, the reference Matrix homeserver",
            "scripts/matrix-peer.sh",
        )?;
        let dir = TempDir::new().unwrap();
        let mut child = Command::new(python)
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/scripts/synapse_server.py"
            ))
            .arg("--dir")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ready: Value = serde_json::from_str(&line).unwrap_or_else(|_| {
            let log =
                std::fs::read_to_string(dir.path().join("synapse.stderr")).unwrap_or_default();
            panic!("synapse did not start: {line}\n{log}")
        });
        Some(Self {
            child,
            url: ready["url"].as_str().unwrap().to_string(),
            token: ready["token"].as_str().unwrap().to_string(),
            room: ready["room"].as_str().unwrap().to_string(),
            _dir: dir,
        })
    }

    /// The room's messages, oldest first.
    async fn messages(&self) -> Vec<Value> {
        let url = format!(
            "{}/_matrix/client/v3/rooms/{}/messages?dir=b&limit=100",
            self.url,
            self.room.replace('!', "%21").replace(':', "%3A")
        );
        let answer: Value = reqwest::Client::new()
            .get(url)
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut events: Vec<Value> = answer["chunk"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "m.room.message")
            .cloned()
            .collect();
        events.reverse();
        events
    }
}

#[tokio::test]
async fn runs_reach_the_room_once_and_refusals_are_dead_letters() {
    let Some(hs) = Homeserver::start() else {
        return;
    };
    std::env::set_var("NS_TEST_MATRIX_TOKEN", &hs.token);
    std::env::set_var("NS_TEST_MATRIX_WRONG_TOKEN", "syt_not_a_token");
    let h = harness(|c| {
        c.server.public_url = Some("https://ns.example.org/".into());
        c.channels.insert(
            "matrix".into(),
            channel(ChannelKind::Matrix, &hs.url, Some("NS_TEST_MATRIX_TOKEN")),
        );
        c.channels.insert(
            "stranger".into(),
            channel(
                ChannelKind::Matrix,
                &hs.url,
                Some("NS_TEST_MATRIX_WRONG_TOKEN"),
            ),
        );
    })
    .await;
    let schedule = h
        .schedule(Some(&format!("matrix:{}", hs.room)), NotifyPolicy::Always)
        .await;
    let run_id = h
        .finish(
            &schedule,
            RunStatus::Succeeded,
            "<b>3 servers</b> & all healthy",
        )
        .await;
    assert_eq!(h.sender().deliver_due().await.unwrap(), 1);
    assert!(h.notified(&run_id).await);
    let events = hs.messages().await;
    assert_eq!(events.len(), 1, "{events:?}");
    let content = &events[0]["content"];
    assert_eq!(content["msgtype"], "m.text");
    let body = content["body"].as_str().unwrap();
    assert!(body.contains("<b>3 servers</b> & all healthy"), "{body}");
    assert!(body.ends_with(&format!("/v1/runs/{run_id}")), "{body}");
    let html = content["formatted_body"].as_str().unwrap();
    assert!(
        html.contains("&lt;b&gt;3 servers&lt;/b&gt; &amp; all healthy"),
        "{html}"
    );

    // The answer was lost, say, and the message is sent again: the homeserver knows the
    // transaction, and the room still has one event.
    let delivered = h.outbox().list(Some("delivered"), 10).await.unwrap();
    let channels =
        Channels::from_config(&h.config.channels, std::time::Duration::from_secs(10)).unwrap();
    channels.deliver(&delivered[0]).await.unwrap();
    assert_eq!(hs.messages().await.len(), 1);

    // A room the bot is not in, and a token the server does not know: dead at once.
    let elsewhere = h
        .schedule(
            Some("matrix:!NotARoomTheBotIsIn:localhost"),
            NotifyPolicy::Always,
        )
        .await;
    h.finish(&elsewhere, RunStatus::Succeeded, "lost").await;
    let stranger = h
        .schedule(Some(&format!("stranger:{}", hs.room)), NotifyPolicy::Always)
        .await;
    h.finish(&stranger, RunStatus::Succeeded, "lost too").await;
    h.sender().deliver_due().await.unwrap();
    let dead = h.outbox().list(Some("dead"), 10).await.unwrap();
    assert_eq!(dead.len(), 2, "{dead:?}");
    for message in &dead {
        assert_eq!(message.attempts, 1);
        let reason = message.last_error.as_deref().unwrap();
        assert!(reason.contains("HTTP 4"), "{reason}");
        assert!(!reason.contains(&hs.token), "{reason}");
    }
    assert_eq!(hs.messages().await.len(), 1);
}
