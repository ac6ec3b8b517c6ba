//! The chat and push services' channels — Discord, Teams (Workflows), Pushover, an Apprise
//! API server — through the outbox to HTTP servers on 127.0.0.1:0 that take each service's
//! documented request: what each sends, within the service's limits, and what each
//! service's refusals do to the message (a 4xx that will never succeed is dead at once, a
//! 429 waits its Retry-After, Apprise's 424 is retried).

mod common;

use std::collections::BTreeMap;

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use common::notify_bench::{channel, harness, json, Harness, Server};
use nightshift::config::{ChannelConfig, ChannelKind};
use nightshift::db::clock::Clock;
use nightshift::schedule::types::{NotifyPolicy, RunStatus};
use serde_json::json;

const PUSHOVER_USER: &str = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG";

/// A long output a model might write, with a mention that must ping nobody and a link
/// dressed as the run's.
fn long_output() -> String {
    format!(
        "@everyone look: [Open the run](https://evil.example) {}",
        "all green. ".repeat(600)
    )
}

async fn with_channel(id: &str, config: ChannelConfig) -> Harness {
    harness(|c| {
        c.server.public_url = Some("https://ns.example.org/".into());
        // Long outputs reach the channel whole: each cuts to its service's limits.
        c.notify.max_message_chars = 20_000;
        c.channels.insert(id.into(), config);
    })
    .await
}

#[tokio::test]
async fn discord_gets_one_embed_within_its_limits_into_the_thread() {
    let (url, server) = Server::start().await;
    let h = with_channel(
        "discord",
        channel(
            ChannelKind::Discord,
            &format!("{url}/api/webhooks/1/tok"),
            None,
        ),
    )
    .await;
    let schedule = h.schedule(Some("discord:42"), NotifyPolicy::Always).await;
    let run_id = h
        .finish(&schedule, RunStatus::Succeeded, &long_output())
        .await;
    h.finish(&schedule, RunStatus::Failed, "").await;
    assert_eq!(h.sender().deliver_due().await.unwrap(), 2);
    let received = server.received();
    assert_eq!(received.len(), 2);
    for r in &received {
        assert_eq!(r.path, "/api/webhooks/1/tok");
        assert_eq!(r.query.as_deref(), Some("thread_id=42"));
    }
    // The two go out at once: told apart by what they say, not by the order they came in.
    let bodies: Vec<_> = received.iter().map(|r| json(&r.body)).collect();
    let (ok, failed) = match bodies[0]["embeds"][0].get("description") {
        Some(_) => (&bodies[0], &bodies[1]),
        None => (&bodies[1], &bodies[0]),
    };
    let embed = &ok["embeds"][0];
    assert!(embed["title"].as_str().unwrap().starts_with("report"));
    let description = embed["description"].as_str().unwrap();
    assert_eq!(description.chars().count(), 4096);
    assert!(description.ends_with('…'));
    assert!(
        description.contains(r"\[Open the run\](https://evil.example)"),
        "{description}"
    );
    assert_eq!(
        embed["url"],
        format!("https://ns.example.org/v1/runs/{run_id}")
    );
    assert_eq!(ok["allowed_mentions"], json!({"parse": []}));
    assert_ne!(failed["embeds"][0]["color"], embed["color"]);
    assert!(h.notified(&run_id).await);
}

#[tokio::test]
async fn discords_refusals_are_dead_at_once_and_its_rate_limit_waits() {
    let (url, server) = Server::start().await;
    server.answer(|n| match n {
        1 => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "7")],
            r#"{"message": "You are being rate limited.", "retry_after": 6.5, "global": false}"#,
        )
            .into_response(),
        _ => (
            StatusCode::NOT_FOUND,
            // A server (or a proxy) that echoes what it was sent.
            r#"{"message": "Unknown Webhook", "code": 10015, "path": "/api/webhooks/1/s3cr3t-token"}"#,
        )
            .into_response(),
    });
    // The URL, which holds the webhook's token, kept as the channel's secret.
    let secret = format!("{url}/api/webhooks/1/s3cr3t-token");
    std::env::set_var("NS_TEST_DISCORD_URL", &secret);
    let mut config = channel(ChannelKind::Discord, "", Some("NS_TEST_DISCORD_URL"));
    config.url = None;
    let h = with_channel("discord", config).await;
    let schedule = h.schedule(Some("discord"), NotifyPolicy::Always).await;
    h.finish(&schedule, RunStatus::Succeeded, "done").await;
    let sender = h.sender();
    sender.deliver_due().await.unwrap();
    let pending = h.outbox().list(Some("pending"), 10).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].next_attempt_at, h.clock.now_ms() + 7_000);
    h.clock.advance_ms(7_000);
    sender.deliver_due().await.unwrap();
    // The webhook was deleted: no retry can help.
    let dead = h.outbox().list(Some("dead"), 10).await.unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].attempts, 2);
    let reason = dead[0].last_error.as_deref().unwrap();
    assert!(
        reason.contains("404") && reason.contains("Unknown Webhook"),
        "{reason}"
    );
    assert!(!reason.contains("s3cr3t-token"), "{reason}");
    assert_eq!(server.received()[0].path, "/api/webhooks/1/s3cr3t-token");
}

#[tokio::test]
async fn teams_gets_an_adaptive_card_with_a_button_to_the_run() {
    let (url, server) = Server::start().await;
    // A Workflows webhook answers 202.
    server.answer(|_| StatusCode::ACCEPTED.into_response());
    let h = with_channel(
        "teams",
        channel(ChannelKind::Teams, &format!("{url}/workflows/abc"), None),
    )
    .await;
    let schedule = h.schedule(Some("teams"), NotifyPolicy::Always).await;
    let run_id = h
        .finish(&schedule, RunStatus::Succeeded, "Backups verified")
        .await;
    assert_eq!(h.sender().deliver_due().await.unwrap(), 1);
    let body = json(&server.received()[0].body);
    assert_eq!(body["type"], "message");
    let attachment = &body["attachments"][0];
    assert_eq!(
        attachment["contentType"],
        "application/vnd.microsoft.card.adaptive"
    );
    let card = &attachment["content"];
    assert_eq!(card["type"], "AdaptiveCard");
    assert_eq!(card["body"][0]["weight"], "Bolder");
    assert_eq!(card["body"][1]["text"], "Backups verified");
    assert_eq!(
        card["actions"][0]["url"],
        format!("https://ns.example.org/v1/runs/{run_id}")
    );
    assert!(h.notified(&run_id).await);
}

fn form(body: &str) -> BTreeMap<String, String> {
    form_urlencoded::parse(body.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

#[tokio::test]
async fn pushover_sends_failures_as_emergencies_and_refusals_are_dead() {
    let (url, server) = Server::start().await;
    server.answer(|n| match n {
        1 | 2 => (
            StatusCode::OK,
            r#"{"status":1,"request":"5042853c-402d","receipt":"rLqVuqTRh62UzxtmqiaLzQmVcPgiCy"}"#,
        )
            .into_response(),
        _ => (
            StatusCode::BAD_REQUEST,
            r#"{"user":"invalid","errors":["user identifier is not a valid user, group, or subscribed user key"],"status":0,"request":"5042853c"}"#,
        )
            .into_response(),
    });
    std::env::set_var("NS_TEST_PUSHOVER_TOKEN", "azGDORePK8gMaC0QOYAMyEEuzJnyUi");
    let mut config = channel(
        ChannelKind::Pushover,
        &format!("{url}/1/messages.json"),
        Some("NS_TEST_PUSHOVER_TOKEN"),
    );
    config.priority = Some(2);
    let h = with_channel("push", config).await;
    let schedule = h
        .schedule(Some(&format!("push:{PUSHOVER_USER}")), NotifyPolicy::Always)
        .await;
    h.finish(&schedule, RunStatus::Succeeded, &long_output())
        .await;
    h.finish(&schedule, RunStatus::Failed, "").await;
    assert_eq!(h.sender().deliver_due().await.unwrap(), 2);
    let sent: Vec<_> = server.received().iter().map(|r| form(&r.body)).collect();
    let by_priority = |p: &str| sent.iter().find(|f| f["priority"] == p).unwrap();
    let calm = by_priority("0");
    assert_eq!(calm["token"], "azGDORePK8gMaC0QOYAMyEEuzJnyUi");
    assert_eq!(calm["user"], PUSHOVER_USER);
    assert_eq!(calm["priority"], "0");
    assert_eq!(calm["message"].chars().count(), 1024);
    assert!(calm["url"].starts_with("https://ns.example.org/v1/runs/"));
    let urgent = by_priority("2");
    assert_eq!(
        (urgent["retry"].as_str(), urgent["expire"].as_str()),
        ("60", "3600")
    );

    // Pushover refuses the key: dead at once, not retried for days.
    h.finish(&schedule, RunStatus::Succeeded, "again").await;
    h.sender().deliver_due().await.unwrap();
    let dead = h.outbox().list(Some("dead"), 10).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert!(dead[0].last_error.as_deref().unwrap().contains("400"));
}

#[tokio::test]
async fn a_context_the_service_cannot_take_is_refused_when_the_schedule_is_made() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.channels.insert(
        "push".into(),
        channel(ChannelKind::Pushover, "http://127.0.0.1:9/", None),
    );
    config.channels.insert(
        "discord".into(),
        channel(ChannelKind::Discord, "http://127.0.0.1:9/", None),
    );
    std::env::set_var("NS_TEST_PUSHOVER_TOKEN", "azGDORePK8gMaC0QOYAMyEEuzJnyUi");
    config.channels.get_mut("push").unwrap().secret_env = Some("NS_TEST_PUSHOVER_TOKEN".into());
    let app = common::app_with(&config, None).await;
    let operator = nightshift::access::Actor::Operator;
    for bad in [
        "push:short",
        "push:../../etc/passwd",
        &format!("push:{PUSHOVER_USER}x"),
        "discord:general",
        "discord:1/../2",
    ] {
        let spec = nightshift::config::ScheduleSpec {
            goal: "g".into(),
            every: Some("1h".into()),
            channel: Some(bad.to_string()),
            ..Default::default()
        };
        let err = app
            .add_schedule(&operator, "alice", &spec)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a"), "{bad}: {err}");
    }
    let spec = nightshift::config::ScheduleSpec {
        goal: "g".into(),
        every: Some("1h".into()),
        channel: Some(format!("push:{PUSHOVER_USER}")),
        ..Default::default()
    };
    app.add_schedule(&operator, "alice", &spec).await.unwrap();
}

#[tokio::test]
async fn apprise_gets_its_notify_request_and_a_partial_failure_is_retried() {
    let (url, server) = Server::start().await;
    server.answer(|n| {
        if n == 1 {
            // Apprise passed the message on, and one of its services failed.
            StatusCode::FAILED_DEPENDENCY.into_response()
        } else {
            StatusCode::OK.into_response()
        }
    });
    std::env::set_var("NS_TEST_APPRISE_TOKEN", "apprise-bearer");
    let h = with_channel(
        "apprise",
        channel(
            ChannelKind::Apprise,
            &format!("{url}/notify/ops"),
            Some("NS_TEST_APPRISE_TOKEN"),
        ),
    )
    .await;
    let schedule = h
        .schedule(Some("apprise:oncall"), NotifyPolicy::Always)
        .await;
    let run_id = h.finish(&schedule, RunStatus::Failed, "").await;
    let sender = h.sender();
    sender.deliver_due().await.unwrap();
    assert!(!h.notified(&run_id).await);
    let pending = h.outbox().list(Some("pending"), 10).await.unwrap();
    assert_eq!(pending.len(), 1, "a 424 is retried, not dead");
    h.clock.advance_ms(60_000);
    sender.deliver_due().await.unwrap();
    assert!(h.notified(&run_id).await);
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[1].path, "/notify/ops");
    assert_eq!(
        received[1].headers["authorization"],
        "Bearer apprise-bearer"
    );
    let body = json(&received[1].body);
    assert_eq!(body["type"], "failure");
    assert_eq!(body["tag"], "oncall");
    assert_eq!(body["format"], "text");
    assert!(body["title"].as_str().unwrap().starts_with("report"));
    assert!(body["body"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/v1/runs/{run_id}")));
}

/// A channel whose server cannot be reached, or does not speak TLS where the URL says
/// https, keeps its message waiting with the reason, to be tried again.
#[tokio::test]
async fn an_unreachable_or_tls_less_server_is_retried_with_its_reason() {
    let (plain, _server) = Server::start().await;
    // The same server, asked for TLS it does not speak.
    let tls_less = plain.replace("http://", "https://");
    // A port held but not listening: a connection to it is refused.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = format!("http://{}", held.local_addr().unwrap());
    drop(held);
    let h = harness(|c| {
        c.channels.insert(
            "tls".into(),
            channel(ChannelKind::Teams, &format!("{tls_less}/workflows/x"), None),
        );
        c.channels.insert(
            "down".into(),
            channel(
                ChannelKind::Discord,
                &format!("{refused}/api/webhooks/1/t"),
                None,
            ),
        );
    })
    .await;
    for id in ["tls", "down"] {
        let schedule = h.schedule(Some(id), NotifyPolicy::Always).await;
        h.finish(&schedule, RunStatus::Succeeded, "done").await;
    }
    h.sender().deliver_due().await.unwrap();
    let pending = h.outbox().list(Some("pending"), 10).await.unwrap();
    assert_eq!(pending.len(), 2, "{pending:?}");
    for message in &pending {
        let reason = message.last_error.as_deref().unwrap();
        assert!(reason.starts_with("cannot reach the channel"), "{reason}");
        assert_eq!(message.attempts, 1);
    }
}

/// What a model wrote reaches Slack as text: `<!channel>` and `<@U…>` are escaped, as
/// Slack's formatting rules ask, so the message pings nobody.
#[tokio::test]
async fn slack_gets_the_output_escaped() {
    let (url, server) = Server::start().await;
    let h = with_channel("ops", channel(ChannelKind::Slack, &url, None)).await;
    let schedule = h.schedule(Some("ops"), NotifyPolicy::Always).await;
    h.finish(
        &schedule,
        RunStatus::Succeeded,
        "<!channel> deploy & tell <@U123>",
    )
    .await;
    h.sender().deliver_due().await.unwrap();
    let text = json(&server.received()[0].body)["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("&lt;!channel&gt; deploy &amp; tell &lt;@U123&gt;"),
        "{text}"
    );
    assert!(!text.contains("<!channel>"));
}
