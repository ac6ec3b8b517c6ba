//! A delivery from a `[sources.NAME]` sender, the operation behind
//! `POST /v1/sources/NAME`: verified by the source's scheme, read into an input, and one
//! trigger per schedule the source names, keyed by the sender's delivery id so a
//! redelivery starts nothing new. A refused delivery changes nothing.

use axum::http::HeaderMap;
use serde::Serialize;

use super::App;
use crate::access::Actor;
use crate::schedule::store::{Triggered, MAX_IDEMPOTENCY_KEY_BYTES};
use crate::sources::{self, Asked, SourceError};

/// What a delivery did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Received {
    pub source: String,
    /// The sender's id for the delivery, when its scheme gives one.
    pub delivery_id: Option<String>,
    /// One per schedule the source triggers; `deduplicated` when this delivery was seen
    /// before and started nothing new.
    pub runs: Vec<Triggered>,
    /// Slack's URL check: the challenge to answer (no run started).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
}

impl Received {
    /// Whether every trigger was one seen before (nothing new started).
    pub fn all_seen_before(&self) -> bool {
        !self.runs.is_empty() && self.runs.iter().all(|run| run.deduplicated)
    }
}

impl App {
    /// Receives a delivery of `body` with `headers` for source `name`.
    pub async fn receive_delivery(
        &self,
        name: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Received, SourceError> {
        let source = self.config.sources.get(name).ok_or(SourceError::NotFound)?;
        let verifier = sources::verifier(name, source)?;
        let now_secs = self.clock().now_ms().div_euclid(1000);
        let verified = verifier.verify(headers, body, now_secs)?;
        let mut received = Received {
            source: name.to_string(),
            delivery_id: verified.delivery_id.clone(),
            runs: Vec::new(),
            challenge: None,
        };
        let input = match sources::payload::read(source.verify, headers, body, &source.fields)? {
            Asked::Challenge(challenge) => {
                received.challenge = Some(challenge);
                return Ok(received);
            }
            Asked::Ping => return Ok(received),
            Asked::Run { input } => input,
        };
        let key = match &verified.delivery_id {
            Some(id) => {
                let key = format!("source:{name}:{id}");
                if key.len() > MAX_IDEMPOTENCY_KEY_BYTES || id.trim().is_empty() {
                    return Err(SourceError::bad_input(format!(
                        "the delivery id must be 1 to {} bytes",
                        MAX_IDEMPOTENCY_KEY_BYTES - name.len() - "source::".len()
                    )));
                }
                Some(key)
            }
            None => None,
        };
        // One trigger per schedule, each idempotent by the delivery: a delivery that fails
        // part way is completed by the sender's redelivery, without a second run of the
        // schedules it already started.
        for schedule_name in &source.schedules {
            let schedule_id = self
                .schedules
                .config_schedule_id(schedule_name)
                .await?
                .ok_or_else(|| SourceError::NotSynced(schedule_name.clone()))?;
            let triggered = self
                .schedules
                .trigger(&Actor::Operator, &schedule_id, Some(&input), key.as_deref())
                .await?;
            received.runs.push(triggered);
        }
        Ok(received)
    }
}
