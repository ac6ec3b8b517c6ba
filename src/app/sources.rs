//! A delivery from a `[sources.NAME]` sender, the operations behind
//! `POST /v1/sources/NAME`, in two steps so a door can spend the source's rate only on a
//! delivery its sender signed: [`App::check_delivery`] verifies it by the source's scheme
//! and reads its input, changing nothing; [`App::start_delivery`] triggers every schedule
//! the source names in one transaction (all or none), keyed by the delivery so a
//! redelivery starts nothing new.

use axum::http::HeaderMap;
use serde::Serialize;

use super::App;
use crate::access::Actor;
use crate::sources::{self, Asked, SourceError};

/// Longest delivery id kept as a key (a sender's ids are far shorter).
const MAX_DELIVERY_ID_BYTES: usize = 128;

/// A delivery whose sender is proven, not yet acted on.
#[derive(Debug, Clone)]
pub struct Delivery {
    source: String,
    /// The source's schedules, by name, as the config read at the check names them.
    schedules: Vec<String>,
    delivery_id: Option<String>,
    asked: Asked,
}

/// What a delivery did. It names no schedule, run or user: a sender's delivery log is
/// read by people who need not be nightshift's users.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Received {
    pub source: String,
    /// What names the delivery, when its scheme gives it (for GitHub, its body's hash).
    pub delivery_id: Option<String>,
    /// Runs this delivery started, one per schedule of the source.
    pub runs_started: usize,
    /// Runs it did not start because this delivery was seen before.
    pub runs_seen_before: usize,
    /// Slack's URL check: the challenge to answer (no run started).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
}

impl App {
    /// Checks a delivery of `body` with `headers` for source `name`: the source exists,
    /// its sender signed it, and it reads as an input. Changes nothing.
    pub fn check_delivery(
        &self,
        name: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Delivery, SourceError> {
        let source = self.config.sources.get(name).ok_or(SourceError::NotFound)?;
        let verifier = sources::verifier(name, source)?;
        let now_secs = self.clock().now_ms().div_euclid(1000);
        let verified = verifier.verify(headers, body, now_secs)?;
        let asked = sources::payload::read(source.verify, headers, body, &source.fields)?;
        let delivery_id = match &asked {
            Asked::Run {
                delivery_id: Some(id),
                ..
            } => Some(id.clone()),
            _ => verified.delivery_id,
        };
        if let Some(id) = &delivery_id {
            if id.trim().is_empty()
                || id.len() > MAX_DELIVERY_ID_BYTES
                || id.contains(char::is_control)
            {
                return Err(SourceError::bad_input(format!(
                    "the delivery id must be 1 to {MAX_DELIVERY_ID_BYTES} bytes of one line"
                )));
            }
        }
        Ok(Delivery {
            source: name.to_string(),
            schedules: source.schedules.clone(),
            delivery_id,
            asked,
        })
    }

    /// Starts what a checked delivery asks for: a run of each of its source's schedules,
    /// all or none; one seen before (by its delivery id) starts nothing new.
    pub async fn start_delivery(&self, delivery: Delivery) -> Result<Received, SourceError> {
        let Delivery {
            source: name,
            schedules,
            delivery_id,
            asked,
        } = delivery;
        let mut received = Received {
            source: name.clone(),
            delivery_id: delivery_id.clone(),
            runs_started: 0,
            runs_seen_before: 0,
            challenge: None,
        };
        let input = match asked {
            Asked::Challenge(challenge) => {
                received.challenge = Some(challenge);
                return Ok(received);
            }
            Asked::Ping => return Ok(received),
            Asked::Run { input, .. } => input,
        };
        let mut schedule_ids = Vec::with_capacity(schedules.len());
        for schedule_name in &schedules {
            schedule_ids.push(
                self.schedules
                    .config_schedule_id(schedule_name)
                    .await?
                    .ok_or_else(|| SourceError::NotSynced(schedule_name.clone()))?,
            );
        }
        let ids: Vec<&str> = schedule_ids.iter().map(String::as_str).collect();
        // Their own namespace: a caller's idempotency key (`key:…`) cannot pre-empt one.
        let event_key = delivery_id.map(|id| format!("source:{name}:{id}"));
        let triggered = self
            .schedules
            .trigger_all(&Actor::Operator, &ids, Some(&input), event_key.as_deref())
            .await?;
        received.runs_seen_before = triggered.iter().filter(|t| t.deduplicated).count();
        received.runs_started = triggered.len() - received.runs_seen_before;
        Ok(received)
    }
}
