//! Notifications through the outbox to real HTTP servers on 127.0.0.1:0 shaped like each
//! channel's public API.

mod common;

use common::notify_bench::{channel, harness, json, Harness, Server};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Router;
use hmac::{Hmac, KeyInit, Mac};
use nightshift::access::Actor;
use nightshift::app::open_memory;
use nightshift::config::{ChannelKind, UserConfig};
use nightshift::db::clock::Clock;
use nightshift::notify::channels::Channels;
use nightshift::notify::outbox::Outbox;
use nightshift::notify::sender::Sender;
use nightshift::schedule::types::{NotifyPolicy, RunStatus};
use sha2::Sha256;

#[tokio::test]
async fn webhook_delivery_is_signed_and_marks_the_run_notified() {
    let (url, server) = Server::start().await;
    std::env::set_var("NS_TEST_WEBHOOK_SECRET", "s3cret");
    let h = harness(|c| {
        c.channels.insert(
            "hook".into(),
            channel(
                ChannelKind::Webhook,
                &format!("{url}/hook"),
                Some("NS_TEST_WEBHOOK_SECRET"),
            ),
        );
    })
    .await;
    let schedule = h.schedule(Some("hook:room-7"), NotifyPolicy::Always).await;
    let run_id = h
        .finish(&schedule, RunStatus::Succeeded, "All 3 servers healthy")
        .await;
    assert!(!h.notified(&run_id).await, "not notified before delivery");

    assert_eq!(h.sender().deliver_due().await.unwrap(), 1);
    assert!(h.notified(&run_id).await);
    let received = server.received();
    assert_eq!(received.len(), 1);
    let body = json(&received[0].body);
    assert_eq!(body["event"], "run.finished");
    assert_eq!(body["schedule_id"], schedule.schedule_id.as_str());
    assert_eq!(body["schedule_name"], "report");
    assert_eq!(body["run_id"], run_id.as_str());
    assert_eq!(body["user_id"], "alice");
    assert_eq!(body["status"], "succeeded");
    assert_eq!(body["output"], "All 3 servers healthy");
    assert_eq!(body["context"], "room-7");
    assert!(body["scheduled_for"].is_string() && body["summary"].is_string());
    // The signature is HMAC-SHA256 of the exact body.
    let mut mac = Hmac::<Sha256>::new_from_slice(b"s3cret").unwrap();
    mac.update(received[0].body.as_bytes());
    let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(
        received[0].headers["x-nightshift-signature"],
        expected.as_str()
    );
    assert_eq!(
        received[0].headers["idempotency-key"],
        format!("{run_id}:run").as_str()
    );
    // Nothing left to send.
    assert_eq!(h.sender().deliver_due().await.unwrap(), 0);
}

#[tokio::test]
async fn a_failing_channel_is_retried_and_delivers_exactly_once() {
    let (url, server) = Server::start().await;
    server.answer(|n| {
        if n == 1 {
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        } else {
            StatusCode::OK.into_response()
        }
    });
    let h = harness(|c| {
        c.channels
            .insert("hook".into(), channel(ChannelKind::Webhook, &url, None));
    })
    .await;
    let schedule = h.schedule(Some("hook"), NotifyPolicy::Always).await;
    let run_id = h.finish(&schedule, RunStatus::Succeeded, "ok").await;
    let sender = h.sender();
    sender.deliver_due().await.unwrap();
    assert!(!h.notified(&run_id).await);
    let pending = h.outbox().list(Some("pending"), 10).await.unwrap();
    assert_eq!(pending[0].attempts, 1);
    assert!(pending[0].last_error.as_deref().unwrap().contains("500"));
    // Not before its backoff…
    assert_eq!(sender.deliver_due().await.unwrap(), 0);
    // …and then once.
    h.clock.advance_ms(5_000);
    assert_eq!(sender.deliver_due().await.unwrap(), 1);
    h.clock.advance_ms(60_000);
    assert_eq!(sender.deliver_due().await.unwrap(), 0);
    assert!(h.notified(&run_id).await);
    assert_eq!(server.received().len(), 2);
    let keys: Vec<_> = server
        .received()
        .iter()
        .map(|r| r.headers["idempotency-key"].clone())
        .collect();
    assert_eq!(
        keys[0], keys[1],
        "the retry carries the same idempotency key"
    );
}

#[tokio::test]
async fn a_channel_down_across_a_restart_is_delivered_after_it_once() {
    // The channel's port, held from the start but not listening: a connection to it is
    // refused, and no other test can take the port before the channel comes back on it.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = socket.local_addr().unwrap();
    let h = harness(|c| {
        c.channels.insert(
            "hook".into(),
            channel(ChannelKind::Webhook, &format!("http://{addr}/hook"), None),
        );
    })
    .await;
    let schedule = h.schedule(Some("hook"), NotifyPolicy::Always).await;
    let run_id = h.finish(&schedule, RunStatus::Succeeded, "ok").await;
    h.sender().deliver_due().await.unwrap();
    assert!(!h.notified(&run_id).await);
    let error = h.outbox().list(Some("pending"), 1).await.unwrap()[0]
        .last_error
        .clone()
        .unwrap();
    assert!(error.contains("cannot reach"), "{error}");

    // "Restart": a new process opens the same database; the channel comes back.
    let listener = socket.listen(16).unwrap();
    let received = Arc::new(Mutex::new(0));
    let counter = received.clone();
    let app = Router::new().fallback(move || {
        let counter = counter.clone();
        async move {
            *counter.lock().unwrap() += 1;
            StatusCode::OK
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let memory = open_memory(&h.config)
        .await
        .unwrap()
        .with_clock(h.clock.clone());
    let restarted = Sender {
        outbox: Outbox::new(memory.db().clone()),
        ..h.sender()
    };
    h.clock.advance_ms(10_000);
    assert_eq!(restarted.deliver_due().await.unwrap(), 1);
    h.clock.advance_ms(60_000);
    restarted.deliver_due().await.unwrap();
    assert_eq!(*received.lock().unwrap(), 1);
    assert!(h.notified(&run_id).await);
    drop(h.dir);
}

#[tokio::test]
async fn expired_and_refused_messages_become_dead_letters_that_can_be_retried() {
    let (url, server) = Server::start().await;
    server.answer(|_| StatusCode::SERVICE_UNAVAILABLE.into_response());
    let h = harness(|c| {
        c.channels
            .insert("hook".into(), channel(ChannelKind::Webhook, &url, None));
        c.notify.ttl_normal_secs = 30;
    })
    .await;
    let schedule = h.schedule(Some("hook"), NotifyPolicy::Always).await;
    h.finish(&schedule, RunStatus::Succeeded, "ok").await;
    h.sender().deliver_due().await.unwrap();
    h.clock.advance_ms(31_000);
    h.sender().deliver_due().await.unwrap();
    let dead = h.outbox().list(Some("dead"), 10).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert!(
        dead[0].last_error.as_deref().unwrap().contains("expired"),
        "{:?}",
        dead[0].last_error
    );

    // A permanent refusal (400) is dead at once.
    server.answer(|_| (StatusCode::BAD_REQUEST, "bad payload").into_response());
    let run_id = h.finish(&schedule, RunStatus::Succeeded, "again").await;
    h.sender().deliver_due().await.unwrap();
    let dead = h.outbox().list(Some("dead"), 10).await.unwrap();
    assert_eq!(dead.len(), 2);
    let refused = dead
        .iter()
        .find(|m| m.run_id.as_deref() == Some(run_id.as_str()))
        .unwrap();
    assert!(refused.last_error.as_deref().unwrap().contains("400"));

    // Retried by hand once the channel is fixed.
    server.answer(|_| StatusCode::OK.into_response());
    let notify = nightshift::config::NotifyConfig::default();
    let retried = h
        .outbox()
        .retry(&refused.message_id, h.clock.now_ms(), &notify)
        .await
        .unwrap();
    assert_eq!((retried.status.as_str(), retried.attempts), ("pending", 0));
    assert_eq!(
        retried.expires_at,
        h.clock.now_ms() + notify.ttl_ms(&refused.priority),
        "a new lifetime as long as its priority's"
    );
    assert_eq!(h.sender().deliver_due().await.unwrap(), 1);
    assert!(h.notified(&run_id).await);
    assert!(
        h.outbox()
            .retry(&refused.message_id, h.clock.now_ms(), &notify)
            .await
            .is_err(),
        "only dead letters"
    );
}

#[tokio::test]
async fn policies_decide_what_is_sent() {
    let h = harness(|_| {}).await;
    let count = |h: &Harness| {
        let outbox = h.outbox();
        async move { outbox.list(None, 1000).await.unwrap().len() }
    };
    let on_failure = h.schedule(None, NotifyPolicy::OnFailure).await;
    h.finish(&on_failure, RunStatus::Succeeded, "fine").await;
    assert_eq!(count(&h).await, 0);
    h.finish(&on_failure, RunStatus::Failed, "").await;
    assert_eq!(count(&h).await, 1);

    let never = h.schedule(None, NotifyPolicy::Never).await;
    h.finish(&never, RunStatus::Failed, "").await;
    assert_eq!(count(&h).await, 1);

    let on_change = h.schedule(None, NotifyPolicy::OnChange).await;
    h.finish(&on_change, RunStatus::Succeeded, "3 new mails")
        .await;
    h.finish(&on_change, RunStatus::Succeeded, "3 new mails")
        .await;
    h.finish(&on_change, RunStatus::Succeeded, "5 new mails")
        .await;
    assert_eq!(count(&h).await, 3);

    let conditional = h.schedule(None, NotifyPolicy::Conditional).await;
    h.finish(&conditional, RunStatus::Succeeded, "nothing to report")
        .await;
    assert_eq!(count(&h).await, 3);
    h.finish(
        &conditional,
        RunStatus::Succeeded,
        "[NOTIFY] it will rain at 3pm",
    )
    .await;
    let messages = h.outbox().list(None, 1).await.unwrap();
    assert_eq!(messages[0].payload["output"], "it will rain at 3pm");
    // With no channel and no user default, messages go to the log, and are delivered there.
    assert_eq!(messages[0].channel_id, "log");
    h.sender().deliver_due().await.unwrap();
    assert_eq!(
        h.outbox().list(Some("pending"), 100).await.unwrap().len(),
        0
    );
}

#[tokio::test]
async fn repeated_failures_and_pausing_are_announced() {
    let (url, server) = Server::start().await;
    let h = harness(|c| {
        c.channels
            .insert("ops".into(), channel(ChannelKind::Slack, &url, None));
        c.users.insert(
            "alice".into(),
            UserConfig {
                default_channel: Some("ops".into()),
                ..Default::default()
            },
        );
    })
    .await;
    // No channel of its own: the user's default is used.
    let schedule = h.schedule(None, NotifyPolicy::Never).await;
    for _ in 0..5 {
        h.finish(&schedule, RunStatus::Failed, "").await;
    }
    let kinds: Vec<String> = h
        .outbox()
        .list(None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.kind)
        .collect();
    assert_eq!(kinds, ["paused", "failing"]);
    h.sender().deliver_due().await.unwrap();
    let texts: Vec<String> = server
        .received()
        .iter()
        .map(|r| json(&r.body)["text"].as_str().unwrap().to_string())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("failed 3 times in a row")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t.contains("was paused")), "{texts:?}");
}

#[tokio::test]
async fn telegram_splits_long_messages_and_targets_threads() {
    let (url, server) = Server::start().await;
    std::env::set_var("NS_TEST_TG_TOKEN", "123:abc");
    let h = harness(|c| {
        c.channels.insert(
            "tg".into(),
            channel(ChannelKind::Telegram, &url, Some("NS_TEST_TG_TOKEN")),
        );
        // Messages carry up to 10,000 characters of output here (3,500 by default).
        c.notify.max_message_chars = 10_000;
    })
    .await;
    server.answer(|_| axum::Json(serde_json::json!({"ok": true, "result": {}})).into_response());
    let schedule = h
        .schedule(Some("tg:-100200:42"), NotifyPolicy::Always)
        .await;
    let long = "weather report line\n".repeat(400);
    let run_id = h.finish(&schedule, RunStatus::Succeeded, &long).await;
    h.sender().deliver_due().await.unwrap();
    let received = server.received();
    assert_eq!(received.len(), 2, "8,000 characters are two messages");
    for r in &received {
        assert_eq!(r.path, "/bot123:abc/sendMessage");
        let body = json(&r.body);
        assert_eq!(body["chat_id"], "-100200");
        assert_eq!(body["message_thread_id"], 42);
        assert!(body["text"].as_str().unwrap().chars().count() <= 4096);
    }
    assert!(h.notified(&run_id).await);

    // A failure never shows the token, not even where the server's answer repeats it.
    server.answer(|_| {
        (
            StatusCode::TOO_MANY_REQUESTS,
            axum::Json(serde_json::json!({
                "ok": false,
                "description": "Too Many Requests: retry /bot123:abc/sendMessage after 7",
                "parameters": {"retry_after": 7}
            })),
        )
            .into_response()
    });
    h.finish(&schedule, RunStatus::Succeeded, "short").await;
    h.sender().deliver_due().await.unwrap();
    let pending = h.outbox().list(Some("pending"), 1).await.unwrap();
    let reason = pending[0].last_error.as_deref().unwrap();
    assert!(reason.contains("Too Many Requests"), "{reason}");
    assert!(!reason.contains("abc"), "{reason}");
    // Telegram's retry_after is honoured.
    assert_eq!(pending[0].next_attempt_at, h.clock.now_ms() + 7_000);
}

#[tokio::test]
async fn ntfy_uses_topic_and_priority() {
    let (url, server) = Server::start().await;
    let h = harness(|c| {
        c.channels
            .insert("push".into(), channel(ChannelKind::Ntfy, &url, None));
    })
    .await;
    let schedule = h.schedule(Some("push:alerts"), NotifyPolicy::Always).await;
    h.finish(&schedule, RunStatus::Succeeded, "backup done")
        .await;
    h.finish(&schedule, RunStatus::Failed, "").await;
    h.sender().deliver_due().await.unwrap();
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert!(received.iter().all(|r| r.path == "/alerts"));
    let priorities: Vec<_> = received
        .iter()
        .map(|r| r.headers["priority"].to_str().unwrap().to_string())
        .collect();
    assert!(
        priorities.contains(&"5".to_string()) && priorities.contains(&"3".to_string()),
        "{priorities:?}"
    );
    assert!(received.iter().any(|r| r.body.contains("backup done")));
}

#[test]
fn a_missing_secret_is_named_without_its_value() {
    let mut channels = std::collections::BTreeMap::new();
    channels.insert(
        "hook".to_string(),
        channel(
            ChannelKind::Webhook,
            "http://127.0.0.1:9",
            Some("NS_TEST_SURELY_UNSET"),
        ),
    );
    let err = Channels::from_config(&channels, Duration::from_secs(1))
        .err()
        .unwrap();
    assert!(err.to_string().contains("NS_TEST_SURELY_UNSET"));
}

/// Recording a run prunes the schedule's history to its newest `history_keep` runs, in the
/// transaction that records it.
#[tokio::test]
async fn recording_a_run_keeps_the_newest_history_keep_runs() {
    let h = harness(|c| c.scheduler.history_keep = 3).await;
    let schedule = h.schedule(None, NotifyPolicy::Never).await;
    let mut run_ids = Vec::new();
    for i in 0..5 {
        run_ids.push(
            h.finish(&schedule, RunStatus::Succeeded, &format!("run {i}"))
                .await,
        );
    }
    let kept: Vec<String> = h
        .store
        .runs(&Actor::Operator, &schedule.schedule_id, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|run| run.run_id)
        .collect();
    let newest: Vec<String> = run_ids.iter().rev().take(3).cloned().collect();
    assert_eq!(kept, newest);
}

/// With the API's public address configured, a message links to its run; the webhook's
/// JSON carries the link too.
#[tokio::test]
async fn a_message_links_to_its_run_when_the_api_is_public() {
    let (url, server) = Server::start().await;
    let h = harness(|c| {
        c.channels
            .insert("hook".into(), channel(ChannelKind::Webhook, &url, None));
        c.server.public_url = Some("https://ns.example.org/".into());
    })
    .await;
    let schedule = h.schedule(Some("hook"), NotifyPolicy::Always).await;
    let run_id = h.finish(&schedule, RunStatus::Succeeded, "all good").await;
    h.sender().deliver_due().await.unwrap();
    let received = server.received();
    let body = json(&received[0].body);
    assert_eq!(
        body["run_url"],
        format!("https://ns.example.org/v1/runs/{run_id}")
    );
    assert!(
        nightshift::notify::channels::render_text(&body).ends_with(&format!("/v1/runs/{run_id}"))
    );
}

/// `notify.max_pending_per_channel`: a channel may have exactly that many messages
/// waiting; the next one is kept as a dead letter naming the limit (not lost, not
/// queued), the run that wrote it is recorded as usual, other channels are not affected,
/// and once the channel catches up new messages queue again.
#[tokio::test]
async fn a_full_channel_outbox_keeps_new_messages_as_dead_letters() {
    let (url, server) = Server::start().await;
    let (other_url, _other) = Server::start().await;
    let h = harness(|c| {
        c.channels
            .insert("hook".into(), channel(ChannelKind::Webhook, &url, None));
        c.channels.insert(
            "other".into(),
            channel(ChannelKind::Webhook, &other_url, None),
        );
        c.notify.max_pending_per_channel = 2;
    })
    .await;
    let schedule = h.schedule(Some("hook"), NotifyPolicy::Always).await;
    let first = h.finish(&schedule, RunStatus::Succeeded, "one").await;
    h.finish(&schedule, RunStatus::Succeeded, "two").await;
    let pending = h.outbox().list(Some("pending"), 10).await.unwrap();
    assert_eq!(pending.len(), 2, "exactly the limit waits");

    let third = h.finish(&schedule, RunStatus::Succeeded, "three").await;
    let run = h.store.run(&Actor::Operator, &third).await.unwrap();
    assert_eq!(
        run.status,
        RunStatus::Succeeded,
        "the run is recorded as usual"
    );
    assert_eq!(h.outbox().list(Some("pending"), 10).await.unwrap().len(), 2);
    let dead = h.outbox().list(Some("dead"), 10).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].run_id.as_deref(), Some(third.as_str()));
    assert_eq!(dead[0].attempts, 0, "never tried");
    let reason = dead[0].last_error.as_deref().unwrap();
    assert!(
        reason.contains("`hook`")
            && reason.contains("2 messages")
            && reason.contains("notify.max_pending_per_channel"),
        "{reason}"
    );
    // Three messages in all: the one over the limit is kept, not dropped.
    assert_eq!(
        common::count(&h.memory, "SELECT count(*) FROM outbox").await,
        3
    );

    // Another channel has its own allowance.
    let elsewhere = h.schedule(Some("other"), NotifyPolicy::Always).await;
    h.finish(&elsewhere, RunStatus::Succeeded, "elsewhere")
        .await;
    let pending = h.outbox().list(Some("pending"), 10).await.unwrap();
    assert_eq!(pending.len(), 3);

    // The channel catches up: the two waiting are delivered, and there is room again.
    assert_eq!(h.sender().deliver_due().await.unwrap(), 3);
    assert!(h.notified(&first).await);
    assert!(!h.notified(&third).await, "the dead letter was not sent");
    assert_eq!(server.received().len(), 2);
    let fourth = h.finish(&schedule, RunStatus::Succeeded, "four").await;
    assert_eq!(h.sender().deliver_due().await.unwrap(), 1);
    assert!(h.notified(&fourth).await);
    // The dead letter can still be sent by hand.
    let notify = nightshift::config::NotifyConfig::default();
    h.outbox()
        .retry(&dead[0].message_id, h.clock.now_ms(), &notify)
        .await
        .unwrap();
    assert_eq!(h.sender().deliver_due().await.unwrap(), 1);
    assert!(h.notified(&third).await);
    assert_eq!(server.received().len(), 4);
}

/// What a channel answers is read only as far as it matters: a success is taken at its
/// status line, its body never read (one that never ends holds nothing up); an error's
/// body is read up to 16 KiB (a longer one is left unread) and its reason kept short.
#[tokio::test]
async fn channel_answers_are_read_only_up_to_their_limit() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Answers every request with `head`, then a chunked body of `x` that never ends; also
    /// returns the count of body bytes it managed to write.
    async fn endless(head: &'static str) -> (String, Arc<AtomicU64>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let written = Arc::new(AtomicU64::new(0));
        let counter = written.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let written = counter.clone();
                tokio::spawn(async move {
                    // The request: its head, then as many bytes as it says it has.
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    let body_start = loop {
                        let n = socket.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        seen.extend_from_slice(&buf[..n]);
                        if let Some(i) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                    };
                    let head_text = String::from_utf8_lossy(&seen[..body_start]).to_lowercase();
                    let length: usize = head_text
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    let mut have = seen.len() - body_start;
                    while have < length {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => have += n,
                        }
                    }
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let chunk = format!("2000\r\n{}\r\n", "x".repeat(0x2000));
                    while socket.write_all(chunk.as_bytes()).await.is_ok() {
                        written.fetch_add(chunk.len() as u64, Ordering::SeqCst);
                    }
                });
            }
        });
        (format!("http://{addr}/hook"), written)
    }

    let (ok, ok_written) = endless("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").await;
    let (failing, failing_written) =
        endless("HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n").await;
    let h = harness(|c| {
        c.channels
            .insert("ok".into(), channel(ChannelKind::Webhook, &ok, None));
        c.channels.insert(
            "failing".into(),
            channel(ChannelKind::Webhook, &failing, None),
        );
    })
    .await;
    let to_ok = h.schedule(Some("ok"), NotifyPolicy::Always).await;
    let to_failing = h.schedule(Some("failing"), NotifyPolicy::Always).await;
    let delivered = h.finish(&to_ok, RunStatus::Succeeded, "fine").await;
    h.finish(&to_failing, RunStatus::Succeeded, "fine too")
        .await;

    assert_eq!(h.sender().deliver_due().await.unwrap(), 2);
    // Neither endless body was read on (until the 5 s delivery timeout, say): each server
    // wrote at most what the sockets' buffers hold before the client let go, far below
    // what a client reading on would have taken.
    for (what, written) in [("success", &ok_written), ("error", &failing_written)] {
        let written = written.load(Ordering::SeqCst);
        assert!(written < 64 << 20, "{what}: {written} body bytes written");
    }
    assert!(h.notified(&delivered).await);
    let pending = h.outbox().list(Some("pending"), 10).await.unwrap();
    assert_eq!(pending.len(), 1, "the failed delivery waits for its retry");
    let reason = pending[0].last_error.as_deref().unwrap();
    assert!(reason.starts_with("HTTP 500"), "{reason}");
    assert!(reason.chars().count() <= 300, "{} characters", reason.len());
}
