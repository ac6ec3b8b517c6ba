//! Notifications' test bench: an HTTP server on 127.0.0.1:0 that records what each
//! channel sent and answers as a test says, and a harness that finishes runs of a
//! schedule on a manual clock and sends what they queued.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use nightshift::access::Actor;
use nightshift::config::{ChannelConfig, ChannelKind, Config};
use nightshift::db::clock::ManualClock;
use nightshift::memory::Memory;
use nightshift::notify::channels::Channels;
use nightshift::notify::outbox::Outbox;
use nightshift::notify::sender::Sender;
use nightshift::schedule::store::ScheduleStore;
use nightshift::schedule::types::{NewSchedule, NotifyPolicy, RunOutcome, RunStatus, Schedule};
use nightshift::schedule::Cadence;
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::Notify;

#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: String,
}

pub type Answer = Arc<dyn Fn(usize) -> Response + Send + Sync>;

#[derive(Clone)]
pub struct Server {
    received: Arc<Mutex<Vec<Received>>>,
    answer: Arc<Mutex<Answer>>,
}

async fn record(
    State(server): State<Server>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let n = {
        let mut received = server.received.lock().unwrap();
        received.push(Received {
            path: uri.path().to_string(),
            query: uri.query().map(str::to_string),
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        received.len()
    };
    let answer = server.answer.lock().unwrap().clone();
    answer(n)
}

impl Server {
    pub async fn start() -> (String, Server) {
        let server = Server {
            received: Arc::default(),
            answer: Arc::new(Mutex::new(Arc::new(|_| StatusCode::OK.into_response()))),
        };
        let app = Router::new().fallback(record).with_state(server.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{addr}"), server)
    }

    pub fn answer(&self, f: impl Fn(usize) -> Response + Send + Sync + 'static) {
        *self.answer.lock().unwrap() = Arc::new(f);
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

pub struct Harness {
    pub dir: TempDir,
    pub config: Config,
    pub clock: Arc<ManualClock>,
    pub memory: Memory,
    pub store: ScheduleStore,
}

pub fn channel(kind: ChannelKind, url: &str, secret_env: Option<&str>) -> ChannelConfig {
    ChannelConfig {
        url: Some(url.to_string()),
        secret_env: secret_env.map(Into::into),
        ..ChannelConfig::new(kind)
    }
}

pub async fn harness(tweak: impl FnOnce(&mut Config)) -> Harness {
    let dir = TempDir::new().unwrap();
    let mut config = super::config_in(&dir);
    config.notify.backoff_base_ms = 1_000;
    tweak(&mut config);
    config.validate().unwrap();
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let app = super::app_with(&config, Some(clock.clone())).await;
    let memory = app.memory().clone();
    let store = app.schedules().clone();
    Harness {
        dir,
        config,
        clock,
        memory,
        store,
    }
}

impl Harness {
    pub fn sender(&self) -> Sender {
        Sender {
            outbox: Outbox::new(self.memory.db().clone()),
            channels: Channels::from_config(&self.config.channels, Duration::from_secs(5)).unwrap(),
            config: self.config.notify.clone(),
            owner: "w".into(),
            clock: self.clock.clone(),
            wake: Arc::new(Notify::new()),
            changes: None,
            quiet: Default::default(),
            digests: None,
        }
    }

    pub fn outbox(&self) -> Outbox {
        Outbox::new(self.memory.db().clone())
    }

    pub async fn schedule(&self, channel: Option<&str>, notify: NotifyPolicy) -> Schedule {
        let mut new = NewSchedule::new(
            "alice",
            "daily report",
            Cadence::cron("0 9 * * *", "UTC").unwrap(),
        );
        new.name = Some("report".into());
        if let Some(channel) = channel {
            let (id, context) = nightshift::notify::router::split_channel(channel);
            new.channel_id = Some(id);
            new.channel_context_id = context;
        }
        new.notify = notify;
        self.store.create(&Actor::Operator, &new).await.unwrap()
    }

    /// Claims and finishes one occurrence of `schedule`; returns the run id.
    pub async fn finish(&self, schedule: &Schedule, status: RunStatus, output: &str) -> String {
        self.clock.advance_ms(1_000);
        self.store
            .run_now(&Actor::Operator, &schedule.schedule_id)
            .await
            .unwrap();
        let due = self
            .store
            .get(&Actor::Operator, &schedule.schedule_id)
            .await
            .unwrap();
        let claim = self.store.claim(&due, "w", 60_000).await.unwrap().unwrap();
        let outcome = RunOutcome {
            status: Some(status),
            output: (!output.is_empty()).then(|| output.to_string()),
            error: (!status.is_success()).then(|| "it broke".to_string()),
            ..Default::default()
        };
        assert!(self
            .store
            .finish(&claim, Some("w"), &outcome, 5)
            .await
            .unwrap());
        claim.run_id
    }

    pub async fn notified(&self, run_id: &str) -> bool {
        self.store
            .run(&Actor::Operator, run_id)
            .await
            .unwrap()
            .notified
    }
}

pub fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap()
}
