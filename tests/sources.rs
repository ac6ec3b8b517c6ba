//! Deliveries from outside (`[sources.NAME]`, `POST /v1/sources/NAME`) against the real API
//! on 127.0.0.1:0 and a manual clock: a signed delivery starts one run of each schedule
//! its source names, with the fields it picks as the input; the sender's redelivery
//! starts nothing new; a missing or wrong signature, a stale or future timestamp, an
//! unknown source, a body that cannot be an input are refused and change nothing.
//! Stripe's, Slack's and Standard Webhooks' deliveries are signed by the providers' own
//! libraries (scripts/sign_delivery.py); GitHub's by its documented scheme (its documented
//! example is checked in `sources::verify`).

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

use common::api::TestApi;
use hmac::{Hmac, KeyInit, Mac};
use nightshift::config::{Config, ScheduleSpec, SourceConfig, SourceVerify};
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::db::query_scalar;
use serde_json::{json, Value};
use sha2::Sha256;
use tempfile::TempDir;

/// 2027-01-15T08:00:00Z.
const START_MS: i64 = 1_800_000_000_000;
const NOW_SECS: i64 = START_MS / 1000;

const GITHUB_SECRET: &str = "It's a Secret to Everybody";
const STRIPE_SECRET: &str = "whsec_5f1b0e1c2d3a4b5c6d7e8f9a0b1c2d3e";
const SLACK_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const BEARER_SECRET: &str = "form-token-1f2e3d";

struct Setup {
    api: TestApi,
    clock: Arc<ManualClock>,
    secrets: TempDir,
}

fn schedule(name: &str, user: &str) -> ScheduleSpec {
    ScheduleSpec {
        name: Some(name.into()),
        user: Some(user.into()),
        goal: format!("Look at what {name} was sent"),
        triggered: true,
        ..Default::default()
    }
}

fn source(
    secrets: &TempDir,
    verify: SourceVerify,
    secret: &str,
    schedules: &[&str],
    fields: &[(&str, &str)],
) -> SourceConfig {
    let file = secrets.path().join(format!("{}.secret", verify.as_str()));
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    SourceConfig {
        verify,
        secret_env: None,
        secret_file: Some(file.display().to_string()),
        schedules: schedules.iter().map(|s| s.to_string()).collect(),
        fields: fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        tolerance_secs: 300,
    }
}

async fn setup(tweak: impl FnOnce(&mut Config)) -> Setup {
    let secrets = TempDir::new().unwrap();
    let clock = ManualClock::starting_at(START_MS);
    let mut sources = BTreeMap::new();
    sources.insert(
        "github".to_string(),
        source(
            &secrets,
            SourceVerify::Github,
            GITHUB_SECRET,
            &["triage", "audit"],
            &[
                ("repo", "/repository/full_name"),
                ("message", "/head_commit/message"),
            ],
        ),
    );
    sources.insert(
        "stripe".to_string(),
        source(
            &secrets,
            SourceVerify::Stripe,
            STRIPE_SECRET,
            &["triage"],
            &[("type", "/type"), ("amount", "/data/object/amount")],
        ),
    );
    sources.insert(
        "slack".to_string(),
        source(
            &secrets,
            SourceVerify::Slack,
            SLACK_SECRET,
            &["triage"],
            &[("text", "/event/text")],
        ),
    );
    sources.insert(
        "standard".to_string(),
        source(
            &secrets,
            SourceVerify::Standard,
            STANDARD_SECRET,
            &["triage"],
            &[],
        ),
    );
    sources.insert(
        "form".to_string(),
        source(
            &secrets,
            SourceVerify::Bearer,
            BEARER_SECRET,
            &["triage"],
            &[],
        ),
    );
    let api = TestApi::start_on(clock.clone() as Arc<dyn Clock>, |config| {
        config.schedules = vec![schedule("triage", "alice"), schedule("audit", "bob")];
        config.sources = sources;
        tweak(config);
    })
    .await;
    nightshift::schedule::sync::sync(api.app.schedules(), &api.config.schedules, "UTC")
        .await
        .unwrap();
    Setup {
        api,
        clock,
        secrets,
    }
}

impl Setup {
    async fn deliver(&self, source: &str, headers: &[(&str, String)], body: &[u8]) -> (u16, Value) {
        let mut request = self
            .api
            .client
            .post(format!("{}/v1/sources/{source}", self.api.base))
            .body(body.to_vec());
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body)
    }

    async fn events(&self) -> i64 {
        let conn = self.api.app.db().conn().await.unwrap();
        query_scalar(&conn, "SELECT COUNT(*) FROM schedule_events", ())
            .await
            .unwrap()
            .unwrap()
    }

    /// The input of the newest event of config schedule `name`.
    async fn last_input(&self, name: &str) -> String {
        let schedule_id = self.config_schedule(name).await;
        let conn = self.api.app.db().conn().await.unwrap();
        query_scalar(
            &conn,
            "SELECT input FROM schedule_events WHERE schedule_id = ?1
             ORDER BY created_at DESC, event_id DESC LIMIT 1",
            [schedule_id.as_str()],
        )
        .await
        .unwrap()
        .unwrap()
    }

    async fn config_schedule(&self, name: &str) -> String {
        self.api
            .app
            .schedules()
            .config_schedule_id(name)
            .await
            .unwrap()
            .unwrap()
    }
}

fn github_headers(body: &[u8], delivery: &str, event: &str) -> Vec<(&'static str, String)> {
    let mut mac = Hmac::<Sha256>::new_from_slice(GITHUB_SECRET.as_bytes()).unwrap();
    mac.update(body);
    vec![
        (
            "X-Hub-Signature-256",
            format!("sha256={}", hex::encode(mac.finalize().into_bytes())),
        ),
        ("X-GitHub-Delivery", delivery.to_string()),
        ("X-GitHub-Event", event.to_string()),
        ("Content-Type", "application/json".to_string()),
    ]
}

const PUSH: &[u8] =
    br#"{"ref":"refs/heads/main","repository":{"full_name":"acme/api"},"head_commit":{"message":"Fix the login race"}}"#;

#[tokio::test]
async fn a_github_delivery_starts_one_run_of_each_schedule_once() {
    let s = setup(|_| {}).await;
    let headers = github_headers(PUSH, "d-1", "push");
    let (status, body) = s.deliver("github", &headers, PUSH).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["runs_started"], 2);
    assert_eq!(body["runs_seen_before"], 0);
    // The answer names no schedule, run or user: a sender's delivery log is not theirs.
    assert!(!body.to_string().contains("sch_") && !body.to_string().contains("alice"));
    let input: Value = serde_json::from_str(&s.last_input("triage").await).unwrap();
    assert_eq!(
        input,
        json!({"repo": "acme/api", "message": "Fix the login race"})
    );
    assert_eq!(s.last_input("audit").await, s.last_input("triage").await);
    assert_eq!(s.events().await, 2);

    // GitHub's redelivery, and the same body replayed under a new X-GitHub-Delivery
    // (GitHub signs neither that header nor a time): one event per schedule still.
    for delivery in ["d-1", "d-forged"] {
        let (status, again) = s
            .deliver("github", &github_headers(PUSH, delivery, "push"), PUSH)
            .await;
        assert_eq!(status, 200, "{again}");
        assert_eq!(again["runs_seen_before"], 2);
        assert_eq!(again["delivery_id"], body["delivery_id"]);
    }
    assert_eq!(s.events().await, 2);

    // Another event is another run.
    let next = br#"{"repository":{"full_name":"acme/api"},"head_commit":{"message":"Second"}}"#;
    let (status, _) = s
        .deliver("github", &github_headers(next, "d-2", "push"), next)
        .await;
    assert_eq!(status, 202);
    assert_eq!(s.events().await, 4);

    // The ping GitHub sends when a hook is made starts nothing.
    let ping = br#"{"zen":"Design for failure.","hook_id":1}"#;
    let (status, body) = s
        .deliver("github", &github_headers(ping, "d-3", "ping"), ping)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["runs_started"], 0);
    assert_eq!(s.events().await, 4);
}

/// A source's schedules take a delivery all or none: one paused refuses it for every
/// schedule, in words that name none of them; its secret unreadable is the operator's to
/// learn from the log, not the sender's.
#[tokio::test]
async fn a_delivery_is_taken_by_all_its_schedules_or_none() {
    let s = setup(|_| {}).await;
    let audit = s.config_schedule("audit").await;
    let operator = nightshift::access::Actor::Operator;
    s.api
        .app
        .schedules()
        .pause(&operator, &audit, None)
        .await
        .unwrap();
    let (status, answer) = s
        .deliver("github", &github_headers(PUSH, "d-1", "push"), PUSH)
        .await;
    assert_eq!(status, 409, "{answer}");
    assert!(!answer.to_string().contains(&audit), "{answer}");
    assert_eq!(s.events().await, 0, "triage did not take it alone");
    s.api
        .app
        .schedules()
        .resume(&operator, &audit)
        .await
        .unwrap();
    // The sender's retry now starts both.
    let (status, answer) = s
        .deliver("github", &github_headers(PUSH, "d-1", "push"), PUSH)
        .await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(s.events().await, 2);

    std::fs::remove_file(s.secrets.path().join("bearer.secret")).unwrap();
    let bearer = vec![("Authorization", format!("Bearer {BEARER_SECRET}"))];
    let (status, answer) = s.deliver("form", &bearer, b"hello").await;
    assert_eq!(status, 500, "{answer}");
    let text = answer.to_string();
    assert!(
        !text.contains("bearer.secret") && !text.contains("/tmp"),
        "{text}"
    );
    assert_eq!(s.events().await, 2);
}

/// A delivery that must be refused: source, headers, body, status, error code.
type Refusal<'a> = (&'a str, Vec<(&'a str, String)>, &'a [u8], u16, &'a str);

#[tokio::test]
async fn refused_deliveries_change_nothing() {
    let s = setup(|_| {}).await;
    let mut forged = github_headers(PUSH, "d-1", "push");
    forged[0].1 = format!("sha256={}", "0".repeat(64));
    let tampered = br#"{"repository":{"full_name":"acme/api"},"head_commit":{"message":"rm -rf"}}"#;
    let cases: Vec<Refusal> = vec![
        ("github", forged, PUSH, 401, "unauthenticated"),
        (
            "github",
            github_headers(PUSH, "d-1", "push"),
            tampered,
            401,
            "unauthenticated",
        ),
        ("github", vec![], PUSH, 401, "unauthenticated"),
        (
            "stripe",
            github_headers(PUSH, "d-1", "push"),
            PUSH,
            401,
            "unauthenticated",
        ),
        (
            "nowhere",
            github_headers(PUSH, "d-1", "push"),
            PUSH,
            404,
            "not_found",
        ),
        (
            "form",
            vec![("Authorization", "Bearer not-the-token".into())],
            b"{}",
            401,
            "unauthenticated",
        ),
    ];
    for (source, headers, body, status, code) in cases {
        let (got, answer) = s.deliver(source, &headers, body).await;
        assert_eq!(got, status, "{source}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{source}: {answer}");
        assert!(
            !answer.to_string().contains(GITHUB_SECRET)
                && !answer.to_string().contains(BEARER_SECRET),
            "{answer}"
        );
    }
    // A body that cannot be an input: too large for one (under the body limit), not
    // UTF-8, or not JSON where the source picks fields.
    let bearer = vec![("Authorization", format!("Bearer {BEARER_SECRET}"))];
    let (status, answer) = s.deliver("form", &bearer, &vec![b'x'; 70_000]).await;
    assert_eq!(status, 413, "{answer}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("fields"));
    let (status, _) = s.deliver("form", &bearer, b"\xff\xfe\xfd").await;
    assert_eq!(status, 400);
    let not_json = b"plain text";
    let (status, answer) = s
        .deliver("github", &github_headers(not_json, "d-9", "push"), not_json)
        .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(s.events().await, 0);
}

#[tokio::test]
async fn a_bearer_source_takes_an_idempotency_key_and_has_a_rate() {
    let s = setup(|config| {
        config.server.rate_per_token = 0.1;
        config.server.rate_burst = 3;
    })
    .await;
    let headers = vec![
        ("Authorization", format!("Bearer {BEARER_SECRET}")),
        ("Idempotency-Key", "signup-7".to_string()),
    ];
    // A stranger's forgeries do not spend the source's rate…
    for _ in 0..10 {
        let forged = vec![("Authorization", "Bearer guess".to_string())];
        assert_eq!(s.deliver("form", &forged, b"spam").await.0, 401);
    }
    let (status, body) = s.deliver("form", &headers, b"A new signup: ada").await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(s.last_input("triage").await, "A new signup: ada");
    let (status, again) = s.deliver("form", &headers, b"A new signup: ada").await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["runs_seen_before"], 1);
    // …the sender's own deliveries do: the burst of 3 is spent.
    let (status, answer) = s.deliver("form", &headers[..1], b"one more").await;
    assert_eq!(status, 202, "{answer}");
    let (status, answer) = s.deliver("form", &headers[..1], b"and more").await;
    assert_eq!(status, 429, "{answer}");
    assert_eq!(s.events().await, 2);
    // The rate is per source: another's signed delivery goes through.
    let (status, _) = s
        .deliver("github", &github_headers(PUSH, "d-1", "push"), PUSH)
        .await;
    assert_eq!(status, 202);
}

/// The headers `scripts/sign_delivery.py` makes with the provider's library; `None` (after
/// the skip line) without the Python peers.
fn signed_by_library(
    scheme: &str,
    secret: &str,
    at: i64,
    id: &str,
    body: &[u8],
) -> Option<Vec<(&'static str, String)>> {
    let python = common::skip::installed(
        "NIGHTSHIFT_TEST_A2A_PYTHON",
        "the Python peers (Stripe's and Slack's SDKs, the Standard Webhooks library)",
        "scripts/a2a-peers.sh",
    )?;
    let mut child = Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/sign_delivery.py"
        ))
        .args([scheme, secret, &at.to_string(), id])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "sign_delivery.py failed");
    let headers: BTreeMap<String, String> = serde_json::from_slice(&out.stdout).unwrap();
    let named = |name: &str| -> &'static str {
        match name {
            "Stripe-Signature" => "Stripe-Signature",
            "X-Slack-Request-Timestamp" => "X-Slack-Request-Timestamp",
            "X-Slack-Signature" => "X-Slack-Signature",
            "webhook-id" => "webhook-id",
            "webhook-timestamp" => "webhook-timestamp",
            "webhook-signature" => "webhook-signature",
            other => panic!("unexpected header {other}"),
        }
    };
    Some(
        headers
            .into_iter()
            .map(|(name, value)| (named(&name), value))
            .chain([("Content-Type", "application/json".to_string())])
            .collect(),
    )
}

#[tokio::test]
async fn stripe_deliveries_signed_by_stripes_library() {
    let s = setup(|_| {}).await;
    let event = br#"{"id":"evt_1QxYz","object":"event","type":"invoice.paid","data":{"object":{"amount":4200}}}"#;
    let Some(headers) = signed_by_library("stripe", STRIPE_SECRET, NOW_SECS, "", event) else {
        return;
    };
    let (status, body) = s.deliver("stripe", &headers, event).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["delivery_id"], "evt_1QxYz");
    let input: Value = serde_json::from_str(&s.last_input("triage").await).unwrap();
    assert_eq!(input, json!({"type": "invoice.paid", "amount": 4200}));
    // Stripe's retry of the same event an hour later, signed afresh: the same event.
    s.clock.advance_ms(3_600_000);
    let retry = signed_by_library("stripe", STRIPE_SECRET, NOW_SECS + 3600, "", event).unwrap();
    let (status, again) = s.deliver("stripe", &retry, event).await;
    assert_eq!(status, 200, "{again}");
    // The first signature, replayed an hour later, is stale.
    let (status, answer) = s.deliver("stripe", &headers, event).await;
    assert_eq!(status, 401, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("ago"));
    // Signed with another secret.
    let forged = signed_by_library("stripe", "whsec_other", NOW_SECS + 3600, "", event).unwrap();
    assert_eq!(s.deliver("stripe", &forged, event).await.0, 401);
    assert_eq!(s.events().await, 1);
}

#[tokio::test]
async fn slack_deliveries_signed_by_slacks_library() {
    let s = setup(|_| {}).await;
    let check = br#"{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
    let Some(headers) = signed_by_library("slack", SLACK_SECRET, NOW_SECS, "", check) else {
        return;
    };
    let (status, body) = s.deliver("slack", &headers, check).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["challenge"],
        "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    );
    assert_eq!(s.events().await, 0);

    let event = br#"{"type":"event_callback","event_id":"Ev08MFMKH6","event":{"type":"app_mention","text":"<@U1> summarise the incident"}}"#;
    let headers = signed_by_library("slack", SLACK_SECRET, NOW_SECS, "", event).unwrap();
    let (status, body) = s.deliver("slack", &headers, event).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["delivery_id"], "Ev08MFMKH6");
    // Slack's retry: signed again a minute later, the same event id.
    s.clock.advance_ms(60_000);
    let mut retry = signed_by_library("slack", SLACK_SECRET, NOW_SECS + 60, "", event).unwrap();
    retry.push(("X-Slack-Retry-Num", "1".to_string()));
    let (status, again) = s.deliver("slack", &retry, event).await;
    assert_eq!(status, 200, "{again}");
    // Signed ten minutes from now: refused.
    let future = signed_by_library("slack", SLACK_SECRET, NOW_SECS + 660, "", event).unwrap();
    assert_eq!(s.deliver("slack", &future, event).await.0, 401);
    assert_eq!(s.events().await, 1);
}

#[tokio::test]
async fn standard_webhooks_deliveries_signed_by_the_schemes_library() {
    let s = setup(|_| {}).await;
    let body = br#"{"type":"user.created","data":{"id":"u_1"}}"#;
    let Some(headers) = signed_by_library("standard", STANDARD_SECRET, NOW_SECS, "msg_2Lq", body)
    else {
        return;
    };
    let (status, answer) = s.deliver("standard", &headers, body).await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(s.last_input("triage").await, String::from_utf8_lossy(body));
    let (status, _) = s.deliver("standard", &headers, body).await;
    assert_eq!(status, 200);
    s.clock.advance_ms(301_000);
    let (status, _) = s.deliver("standard", &headers, body).await;
    assert_eq!(status, 401);
    assert_eq!(s.events().await, 1);
}

#[test]
fn a_source_config_that_cannot_work_is_refused_by_name() {
    let base = r#"
[[schedules]]
name = "triage"
user = "alice"
goal = "g"
triggered = true
"#;
    let cases = [
        (
            "[sources.gh]\nverify = \"github\"\nschedules = [\"triage\"]\n",
            "sources.gh.secret_file",
        ),
        (
            "[sources.gh]\nverify = \"github\"\nsecret_env = \"S\"\nschedules = [\"nope\"]\n",
            "sources.gh.schedules",
        ),
        (
            "[sources.gh]\nverify = \"github\"\nsecret_env = \"S\"\nschedules = []\n",
            "sources.gh.schedules",
        ),
        (
            "[sources.gh]\nverify = \"github\"\nsecret_env = \"S\"\nschedules = [\"triage\"]\nfields = { a = \"repo\" }\n",
            "sources.gh.fields.a",
        ),
        (
            "[sources.\"a b\"]\nverify = \"github\"\nsecret_env = \"S\"\nschedules = [\"triage\"]\n",
            "sources.a b",
        ),
        (
            "[sources.gh]\nverify = \"github\"\nsecret_env = \"S\"\nsecret_file = \"f\"\nschedules = [\"triage\"]\n",
            "sources.gh.secret_env",
        ),
        (
            "[sources.gh]\nverify = \"github\"\nsecret_env = \"S\"\nschedules = [\"triage\"]\ntolerance_secs = 0\n",
            "sources.gh.tolerance_secs",
        ),
    ];
    for (section, key) in cases {
        let text = format!("{base}{section}");
        match Config::from_toml(&text) {
            Err(nightshift::config::ConfigError::Invalid { key: got, .. }) => {
                assert_eq!(got, key, "{section}")
            }
            other => panic!("{section}: {other:?}"),
        }
    }
    let unknown = format!(
        "{base}[sources.gh]\nverify = \"gitlab\"\nsecret_env = \"S\"\nschedules = [\"triage\"]\n"
    );
    assert!(Config::from_toml(&unknown).is_err());
}
