//! Fault injection at the HTTP peers (issue 26, item 2): agent runtimes (`http` and
//! `openai`) and notification channels (webhook, telegram, ntfy) played by raw sockets on
//! 127.0.0.1:0 that answer garbage, a gigabyte, a body that never ends, a reset mid-body,
//! headers and then nothing, or 429 forever. Every case ends in a clear run error or a
//! retried delivery; bodies are read up to their cap (the peer's written bytes say so), and
//! nothing is sent or recorded twice.

mod common;
#[path = "common/faults.rs"]
mod faults;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use faults::{ok, Fault, Framing, Peer, Request, WRITTEN_BOUND};

use nightshift::access::Actor;
use nightshift::config::{ChannelConfig, ChannelKind, RuntimeConfig, RuntimeKind};
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::memory::Memory;
use nightshift::notify::channels::Channels;
use nightshift::notify::outbox::{Message, Outbox};
use nightshift::notify::sender::Sender;
use nightshift::runtime::RuntimeError;
use nightshift::runtime::{AgentRuntime, GoalOutcome, GoalRequest, HttpRuntime, OpenAiRuntime};
use nightshift::schedule::store::ScheduleStore;
use nightshift::schedule::types::{NewSchedule, NotifyPolicy, RunOutcome, RunStatus};
use nightshift::schedule::Cadence;
use serde_json::{json, Value};

// ---- Runtimes ----

#[derive(Clone, Copy, Debug)]
enum Kind {
    Http,
    OpenAi,
}

const BOTH: [Kind; 2] = [Kind::Http, Kind::OpenAi];

fn runtime(
    kind: Kind,
    peer: &Peer,
    tweak: impl FnOnce(&mut RuntimeConfig),
) -> Box<dyn AgentRuntime> {
    let mut config = RuntimeConfig {
        timeout_secs: 1,
        max_retries: 2,
        max_response_bytes: 1 << 20,
        ..Default::default()
    };
    tweak(&mut config);
    match kind {
        Kind::Http => {
            config.kind = RuntimeKind::Http;
            config.url = format!("{}/goal", peer.url);
            Box::new(HttpRuntime::new(&config).unwrap())
        }
        Kind::OpenAi => {
            config.kind = RuntimeKind::Openai;
            config.base_url = format!("{}/v1", peer.url);
            config.model = "m".into();
            Box::new(OpenAiRuntime::new(&config).unwrap())
        }
    }
}

fn goal(max_turns: i64) -> GoalRequest {
    GoalRequest {
        run_id: "run-1".into(),
        schedule_id: "sch-1".into(),
        user_id: "u".into(),
        goal: "check the weather".into(),
        session_id: "scheduled:sch-1".into(),
        context: String::new(),
        max_turns,
        tools: Vec::new(),
        approve: Vec::new(),
        resume: None,
        max_cost: None,
        progress: Default::default(),
        memory_as_of: None,
        input: None,
        agent_id: None,
    }
}

/// Runs one goal against `fault` on every request; returns the outcome and the peer.
async fn run_against(
    kind: Kind,
    memory: &Memory,
    fault: Fault,
    tweak: impl FnOnce(&mut RuntimeConfig),
) -> (GoalOutcome, Peer) {
    let peer = Peer::start(move |_| fault.clone()).await;
    let outcome = runtime(kind, &peer, tweak).run_goal(&goal(4), memory).await;
    (outcome, peer)
}

/// The run's error, which must be a bad answer naming the peer and saying `needle`.
fn bad_answer(kind: Kind, outcome: &GoalOutcome, peer: &Peer, needle: &str) {
    let err = outcome
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("{kind:?}: no error"));
    assert!(
        matches!(err, RuntimeError::BadAnswer { .. }),
        "{kind:?}: {err}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&peer.url) && text.contains(needle),
        "{kind:?}: {text}"
    );
}

#[tokio::test]
async fn malformed_or_non_json_answers_fail_the_run_once_on_both_runtimes() {
    let (_dir, memory) = common::fresh().await;
    let garbage = [
        r#"{"output": "cut off"#.to_string(),
        "<html><body>502 Bad Gateway</body></html>".into(),
        String::new(),
        "[".repeat(100_000),
        "{\"output\": \"\u{fffd}\"} trailing".into(),
    ];
    for kind in BOTH {
        for body in &garbage {
            let (outcome, peer) = run_against(kind, &memory, ok(body.clone()), |_| {}).await;
            bad_answer(kind, &outcome, &peer, "not JSON");
            // A 200 is an answer: the runtime may have acted, so it is not asked again.
            assert_eq!(peer.requests().len(), 1, "{kind:?}");
        }
    }
    // JSON of the wrong shape says what was missing.
    for body in [r#"{"choices": "none"}"#, "[]", r#"{"choices": [{}]}"#] {
        let (outcome, peer) = run_against(Kind::OpenAi, &memory, ok(body), |_| {}).await;
        bad_answer(Kind::OpenAi, &outcome, &peer, "choices[0].message");
    }
}

#[tokio::test]
async fn a_gigabyte_answer_is_cut_at_max_response_bytes_with_any_framing() {
    let (_dir, memory) = common::fresh().await;
    for kind in BOTH {
        for framing in [Framing::Length, Framing::Chunked, Framing::Close] {
            let (outcome, peer) = run_against(kind, &memory, Fault::Huge(200, framing), |c| {
                c.timeout_secs = 60;
            })
            .await;
            bad_answer(kind, &outcome, &peer, "max_response_bytes");
            assert_eq!(peer.requests().len(), 1, "{kind:?} {framing:?}");
            // The client let go of the connection, after reading at most about its cap.
            peer.all_closed().await;
            let written = peer.written.load(Ordering::SeqCst);
            assert!(
                written < WRITTEN_BOUND,
                "{kind:?} {framing:?}: {written} bytes written"
            );
        }
    }
}

#[tokio::test]
async fn an_answer_that_never_ends_is_cut_by_the_timeout() {
    let (_dir, memory) = common::fresh().await;
    for kind in BOTH {
        let (outcome, peer) = run_against(kind, &memory, Fault::Trickle(200), |_| {}).await;
        bad_answer(kind, &outcome, &peer, "timed out");
        assert_eq!(peer.requests().len(), 1, "{kind:?}");
        peer.all_closed().await;
    }
}

#[tokio::test]
async fn a_connection_reset_mid_body_fails_the_run_and_one_before_any_answer_is_retried() {
    let (_dir, memory) = common::fresh().await;
    for kind in BOTH {
        let (outcome, peer) = run_against(kind, &memory, Fault::ResetMidBody(200), |_| {}).await;
        bad_answer(kind, &outcome, &peer, "could not be read");
        assert_eq!(
            peer.requests().len(),
            1,
            "{kind:?}: answered, so not asked again"
        );

        let (outcome, peer) = run_against(kind, &memory, Fault::ResetBeforeHeaders, |_| {}).await;
        let err = outcome.error.unwrap();
        assert!(
            matches!(err, RuntimeError::Unreachable { .. }),
            "{kind:?}: {err}"
        );
        assert!(err.to_string().contains(&peer.url), "{err}");
        assert_eq!(
            peer.requests().len(),
            3,
            "{kind:?}: max_retries 2, then the error"
        );
    }
}

#[tokio::test]
async fn a_429_storm_gives_up_after_max_retries() {
    let (_dir, memory) = common::fresh().await;
    for kind in BOTH {
        let busy = Fault::Answer(429, "", "slow down".into());
        let (outcome, peer) = run_against(kind, &memory, busy, |_| {}).await;
        let err = outcome.error.unwrap();
        assert!(
            matches!(err, RuntimeError::Status { status: 429, .. }),
            "{kind:?}: {err}"
        );
        assert!(err.to_string().contains("slow down"), "{err}");
        assert_eq!(
            peer.requests().len(),
            3,
            "{kind:?}: max_retries 2 means three requests"
        );
    }
}

fn completion(message: Value) -> Fault {
    ok(json!({"choices": [{"message": message}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).to_string())
}

fn call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_are_told_to_the_model_and_the_run_goes_on() {
    let (_dir, memory) = common::fresh().await;
    let peer = Peer::start(|n| match n {
        1 => completion(json!({"role": "assistant", "content": null, "tool_calls": [
            call("c1", "rm_rf", "{}"),
            call("c2", "memory_save", "not json"),
            call("c3", "memory_save", r#"{"text": "wrong key"}"#),
            {"id": "c4"},
        ]})),
        _ => completion(json!({"role": "assistant", "content": "done anyway"})),
    })
    .await;
    let outcome = runtime(Kind::OpenAi, &peer, |_| {})
        .run_goal(&goal(4), &memory)
        .await;
    assert_eq!(outcome.error, None);
    assert_eq!(
        (outcome.output.as_str(), outcome.turn_count),
        ("done anyway", 2)
    );
    let second: Value = serde_json::from_str(&peer.requests()[1].body).unwrap();
    let results: Vec<(String, String)> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().into(),
                m["content"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected = [
        ("c1", "unknown tool `rm_rf`"),
        ("c2", "arguments are not JSON"),
        ("c3", "missing string argument `content`"),
        ("c4", "unknown tool ``"),
    ];
    assert_eq!(results.len(), expected.len(), "{results:?}");
    for ((id, content), (want_id, want)) in results.iter().zip(expected) {
        assert_eq!(id, want_id);
        let error = serde_json::from_str::<Value>(content).unwrap()["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(error.contains(want), "{id}: {error}");
    }
    assert!(
        memory.notes("u").await.unwrap().is_empty(),
        "nothing was saved"
    );
    // The transcript keeps each tool result.
    assert_eq!(
        outcome
            .transcript
            .iter()
            .filter(|e| e.content.contains("error"))
            .count(),
        4
    );
}

#[tokio::test]
async fn an_endless_tool_loop_stops_at_its_cap_with_each_write_done_once() {
    let (_dir, memory) = common::fresh().await;
    let saves = |n: usize| {
        completion(json!({"role": "assistant", "content": null, "tool_calls": [
            call(&format!("c{n}"), "memory_save", &json!({"content": format!("loop note {n}")}).to_string())]}))
    };
    // Capped by tool calls per run: the sixth call is refused before it runs.
    let peer = Peer::start(saves).await;
    let outcome = runtime(Kind::OpenAi, &peer, |c| c.max_tool_calls_per_run = 5)
        .run_goal(&goal(1000), &memory)
        .await;
    assert!(
        matches!(
            outcome.error,
            Some(RuntimeError::TooManyToolCalls {
                calls: 6,
                limit: 5,
                ..
            })
        ),
        "{:?}",
        outcome.error
    );
    assert_eq!(peer.requests().len(), 6);
    let mut notes: Vec<String> = memory
        .notes("u")
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.content)
        .collect();
    notes.sort();
    assert_eq!(
        notes,
        (1..=5)
            .map(|n| format!("loop note {n}"))
            .collect::<Vec<_>>()
    );

    // Capped by turns.
    let peer = Peer::start(saves).await;
    let outcome = runtime(Kind::OpenAi, &peer, |_| {})
        .run_goal(&goal(3), &memory)
        .await;
    assert_eq!(outcome.error, Some(RuntimeError::TooManyTurns { turns: 3 }));
    assert_eq!(peer.requests().len(), 3);
    assert_eq!(memory.notes("u").await.unwrap().len(), 8);
}

// ---- Channels ----

/// A database with one schedule per HTTP channel kind, all pointed at one peer, and a
/// sender whose deliveries time out after 1 s.
struct Channelled {
    _dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    store: ScheduleStore,
    outbox: Outbox,
    sender: Sender,
    /// Each schedule, with the path its messages reach at the peer.
    schedules: Vec<(String, &'static str)>,
}

async fn channelled(
    peer: &Peer,
    tweak: impl FnOnce(&mut nightshift::config::Config),
) -> Channelled {
    std::env::set_var("NS_FAULT_TG_TOKEN", "123:abc");
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.notify.backoff_base_ms = 1_000;
    config.notify.timeout_secs = 1;
    for (id, kind, path, secret) in [
        ("hook", ChannelKind::Webhook, "/hook", None),
        ("tg", ChannelKind::Telegram, "", Some("NS_FAULT_TG_TOKEN")),
        ("push", ChannelKind::Ntfy, "", None),
    ] {
        let url = Some(format!("{}{path}", peer.url));
        let secret_env = secret.map(Into::into);
        config.channels.insert(
            id.into(),
            ChannelConfig {
                url,
                secret_env,
                ..ChannelConfig::new(kind)
            },
        );
    }
    tweak(&mut config);
    config.validate().unwrap();
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let app = common::app_with(&config, Some(clock.clone())).await;
    let store = app.schedules().clone();
    let outbox = Outbox::new(app.memory().db().clone());
    let timeout = Duration::from_secs(config.notify.timeout_secs);
    let sender = Sender {
        outbox: outbox.clone(),
        channels: Channels::from_config(&config.channels, timeout).unwrap(),
        config: config.notify.clone(),
        owner: "w".into(),
        clock: clock.clone(),
        wake: Arc::default(),
        changes: None,
        quiet: Default::default(),
        digests: None,
    };
    let mut schedules = Vec::new();
    for (channel, path) in [
        ("hook", "/hook"),
        ("tg:-100200", "/bot123:abc/sendMessage"),
        ("push:alerts", "/alerts"),
    ] {
        let cadence = Cadence::cron("0 9 * * *", "UTC").unwrap();
        let mut new = NewSchedule::new("alice", "daily report", cadence);
        let (id, context) = nightshift::notify::router::split_channel(channel);
        (new.channel_id, new.channel_context_id, new.notify) =
            (Some(id), context, NotifyPolicy::Always);
        let schedule = store.create(&Actor::Operator, &new).await.unwrap();
        schedules.push((schedule.schedule_id, path));
    }
    Channelled {
        _dir: dir,
        clock,
        store,
        outbox,
        sender,
        schedules,
    }
}

impl Channelled {
    /// Finishes one run of each schedule, which puts one message per channel in the
    /// outbox; returns the run ids.
    async fn finish_runs(&self) -> Vec<String> {
        let mut runs = Vec::new();
        for (schedule_id, _) in &self.schedules {
            self.clock.advance_ms(1_000);
            self.store
                .run_now(&Actor::Operator, schedule_id)
                .await
                .unwrap();
            let due = self.store.get(&Actor::Operator, schedule_id).await.unwrap();
            let claim = self.store.claim(&due, "w", 60_000).await.unwrap().unwrap();
            let outcome = RunOutcome {
                status: Some(RunStatus::Succeeded),
                output: Some("all good".into()),
                ..Default::default()
            };
            assert!(self
                .store
                .finish(&claim, Some("w"), &outcome, 5)
                .await
                .unwrap());
            runs.push(claim.run_id);
        }
        runs
    }

    async fn messages(&self, status: &str) -> Vec<Message> {
        self.outbox.list(Some(status), 1000).await.unwrap()
    }

    async fn all_notified(&self, runs: &[String]) -> bool {
        for run_id in runs {
            if !self
                .store
                .run(&Actor::Operator, run_id)
                .await
                .unwrap()
                .notified
            {
                return false;
            }
        }
        true
    }

    /// Every channel's path was requested `times` times among `requests`, and the
    /// webhook's requests all carried one idempotency key.
    fn each_requested(&self, requests: &[Request], times: usize, what: &str) {
        for (_, path) in &self.schedules {
            let seen = requests.iter().filter(|r| r.path == *path).count();
            assert_eq!(seen, times, "{what}: {path} requested {seen} times");
        }
        let keys: std::collections::HashSet<_> = requests
            .iter()
            .filter(|r| r.path == "/hook")
            .map(|r| r.headers["idempotency-key"].clone())
            .collect();
        assert_eq!(keys.len(), 1, "{what}: {keys:?}");
    }
}

#[tokio::test]
async fn a_channel_failing_mid_answer_is_retried_later_and_delivered_once() {
    let peer = Peer::start(|_| ok("{}")).await;
    let h = channelled(&peer, |_| {}).await;
    for (fault, says) in [
        (Fault::HangBeforeHeaders, "timed out"),
        (Fault::HangAfterHeaders(503), "HTTP 503"),
        (Fault::Trickle(503), "HTTP 503"),
        (Fault::ResetBeforeHeaders, "cannot reach the channel"),
        (Fault::ResetMidBody(503), "HTTP 503"),
        (Fault::Huge(500, Framing::Chunked), "HTTP 500"),
        (
            Fault::Answer(502, "", "<html>bad gateway</html>".into()),
            "bad gateway",
        ),
    ] {
        let what = format!("{fault:?}");
        let first = peer.requests().len();
        // One failed attempt per channel, then the peer behaves.
        let failing = fault.clone();
        peer.set(move |n| {
            if n <= 3 {
                failing.clone()
            } else {
                ok(r#"{"ok": true}"#)
            }
        });
        let runs = h.finish_runs().await;
        assert_eq!(h.sender.deliver_due().await.unwrap(), 3, "{what}");
        peer.all_closed().await;
        let pending = h.messages("pending").await;
        assert_eq!(pending.len(), 3, "{what}: kept for a retry");
        for message in &pending {
            let error = message.last_error.clone().unwrap_or_default();
            assert!(
                message.attempts == 1 && error.contains(says),
                "{what}: {error}"
            );
        }
        assert!(!h.all_notified(&runs).await, "{what}");
        // Not again before its backoff…
        assert_eq!(h.sender.deliver_due().await.unwrap(), 0, "{what}");
        // …then once, and never after.
        h.clock.advance_ms(5_000);
        assert_eq!(h.sender.deliver_due().await.unwrap(), 3, "{what}");
        h.clock.advance_ms(3_600_000);
        assert_eq!(h.sender.deliver_due().await.unwrap(), 0, "{what}");
        assert!(h.all_notified(&runs).await, "{what}");
        assert!(h.messages("pending").await.is_empty(), "{what}");
        h.each_requested(&peer.requests()[first..], 2, &what);
        peer.all_closed().await;
        let written = peer.written.load(Ordering::SeqCst);
        assert!(written < WRITTEN_BOUND, "{what}: {written} bytes written");
    }
}

/// A 2xx status line is the channel's acceptance: the body after it is not read, so
/// neither a huge, endless, broken, hanging nor non-JSON body holds the sender, and the
/// message is not sent again.
#[tokio::test]
async fn a_channel_that_answered_200_has_the_message_whatever_its_body_does() {
    let peer = Peer::start(|_| ok("{}")).await;
    let h = channelled(&peer, |_| {}).await;
    for fault in [
        Fault::HangAfterHeaders(200),
        Fault::Trickle(200),
        Fault::ResetMidBody(200),
        Fault::Huge(200, Framing::Chunked),
        ok("<html>not json"),
    ] {
        let what = format!("{fault:?}");
        let first = peer.requests().len();
        let answer = fault.clone();
        peer.set(move |_| answer.clone());
        let runs = h.finish_runs().await;
        assert_eq!(h.sender.deliver_due().await.unwrap(), 3, "{what}");
        assert!(h.all_notified(&runs).await, "{what}");
        h.clock.advance_ms(3_600_000);
        assert_eq!(h.sender.deliver_due().await.unwrap(), 0, "{what}");
        h.each_requested(&peer.requests()[first..], 1, &what);
        peer.all_closed().await;
        let written = peer.written.load(Ordering::SeqCst);
        assert!(written < WRITTEN_BOUND, "{what}: {written} bytes written");
    }
}

#[tokio::test]
async fn a_429_storm_at_a_channel_is_retried_at_its_pace_then_kept_as_a_dead_letter() {
    let peer = Peer::start(|_| Fault::Answer(429, "retry-after: 2\r\n", "{}".into())).await;
    let h = channelled(&peer, |c| c.notify.max_attempts = 4).await;
    h.finish_runs().await;
    for attempt in 1..=4 {
        assert_eq!(
            h.sender.deliver_due().await.unwrap(),
            3,
            "attempt {attempt}"
        );
        // No second try before the channel's Retry-After.
        assert_eq!(
            h.sender.deliver_due().await.unwrap(),
            0,
            "attempt {attempt}"
        );
        if attempt < 4 {
            for message in h.messages("pending").await {
                assert_eq!(message.attempts, attempt);
                assert_eq!(message.next_attempt_at, h.clock.now_ms() + 2_000);
            }
        }
        h.clock.advance_ms(2_000);
    }
    let dead = h.messages("dead").await;
    assert_eq!(dead.len(), 3);
    assert!(dead
        .iter()
        .all(|m| m.attempts == 4 && m.last_error.as_deref().unwrap().contains("429")));
    h.clock.advance_ms(3_600_000);
    assert_eq!(h.sender.deliver_due().await.unwrap(), 0);
    h.each_requested(&peer.requests(), 4, "429 storm");
}
