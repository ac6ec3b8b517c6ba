//! The sender: claims due outbox messages with a lease (so two workers never send one
//! message at once), delivers them, and records the result — delivered, retried later
//! with backoff and jitter (or when the channel's Retry-After says), or a dead letter.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::channels::Channels;
use super::outbox::{Message, Outbox, OutboxError};
use crate::config::NotifyConfig;
use crate::db::clock::Clock;

/// Longest sleep without looking at the outbox again.
const MAX_SLEEP: Duration = Duration::from_secs(30);
/// Sleep after a pass that failed: a database that reads but refuses writes (a full disk)
/// shows a message due at once, and the sender must not retry its claim in a busy loop.
const FAILED_PASS_SLEEP: Duration = Duration::from_secs(1);

#[derive(Clone)]
pub struct Sender {
    pub outbox: Outbox,
    pub channels: Channels,
    pub config: NotifyConfig,
    pub owner: String,
    pub clock: Arc<dyn Clock>,
    /// Notified when a message was written by this process.
    pub wake: Arc<Notify>,
    /// Moves recorded memory changes into the outbox before each pass, when any user's
    /// changes go to a channel.
    pub changes: Option<super::changes::ChangeForwarder>,
    /// Users whose notifications wait out their quiet hours.
    pub quiet: super::quiet::QuietPolicy,
    /// Folds the lines of `notify = "digest"` schedules into messages when their time
    /// comes, before each pass.
    pub digests: Option<super::digest::DigestFolder>,
}

/// When to try again after `attempts` failures: exponential, with a jitter of ±50% that
/// is a fixed function of the message, so two workers never agree by accident.
fn backoff_ms(config: &NotifyConfig, message_id: &str, attempts: i64) -> i64 {
    let exp = config
        .backoff_base_ms
        .saturating_mul(1i64 << attempts.clamp(0, 30))
        .min(config.backoff_max_ms);
    let hash = blake3::hash(format!("{message_id}:{attempts}").as_bytes());
    let unit = u16::from_le_bytes([hash.as_bytes()[0], hash.as_bytes()[1]]) as f64 / 65_536.0;
    ((exp as f64) * (0.5 + unit)) as i64
}

impl Sender {
    fn lease_ms(&self) -> i64 {
        (self.config.timeout_secs as i64 * 4 + 30) * 1000
    }

    /// Runs until `stop`, delivering as messages come due.
    pub async fn run(&self, stop: CancellationToken, check: Duration) {
        loop {
            if let Some(changes) = &self.changes {
                if let Err(err) = changes.forward(self.clock.now_ms()).await {
                    tracing::warn!(%err, "cannot move memory changes into the outbox");
                }
            }
            if let Some(digests) = &self.digests {
                if let Err(err) = digests.fold(self.clock.now_ms()).await {
                    tracing::warn!(%err, "cannot fold digests into the outbox");
                }
            }
            let (sent, failed) = match self.deliver_due().await {
                Ok(n) => (n, false),
                Err(err) => {
                    tracing::warn!(%err, "outbox pass failed");
                    (0, true)
                }
            };
            if sent > 0 {
                continue;
            }
            let now = self.clock.now_ms();
            let wait = match self.outbox.next_due_at().await {
                Ok(Some(due)) => Duration::from_millis((due - now).max(0) as u64).min(MAX_SLEEP),
                _ => MAX_SLEEP,
            }
            // Another process may enqueue: look again at least this often.
            .min(check);
            let wait = if failed {
                wait.max(FAILED_PASS_SLEEP)
            } else {
                wait
            };
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep_until(Instant::now() + wait) => {}
                _ = self.wake.notified() => {}
            }
        }
    }

    /// One pass: claims what is due and delivers it. Returns how many were attempted (a
    /// message held for quiet hours is not: the pass after it would find it not due).
    pub async fn deliver_due(&self) -> Result<usize, OutboxError> {
        let now = self.clock.now_ms();
        let limit = (self.config.max_in_flight * 4) as i64;
        let messages = self
            .outbox
            .claim_due(&self.owner, now, self.lease_ms(), limit)
            .await?;
        let mut count = messages.len();
        let slots = Arc::new(Semaphore::new(self.config.max_in_flight));
        let mut tasks = JoinSet::new();
        for message in messages {
            if let Some(until) = self.quiet.hold_until(&message, now) {
                // Not sent and not an attempt: due again when the quiet hours end.
                if let Err(err) = self.outbox.hold(&message, &self.owner, until, now).await {
                    tracing::warn!(message_id = %message.message_id, %err, "cannot hold a message for quiet hours");
                }
                count -= 1;
                continue;
            }
            let permit = slots.clone().acquire_owned().await.expect("semaphore open");
            let sender = self.clone();
            tasks.spawn(async move {
                sender.deliver_one(message).await;
                drop(permit);
            });
        }
        while tasks.join_next().await.is_some() {}
        Ok(count)
    }

    async fn deliver_one(&self, message: Message) {
        use opentelemetry::context::FutureExt as _;
        use opentelemetry::KeyValue;
        let mut attributes = vec![
            KeyValue::new("nightshift.channel.id", message.channel_id.clone()),
            KeyValue::new("nightshift.message.id", message.message_id.clone()),
            KeyValue::new("nightshift.message.kind", message.kind.clone()),
            KeyValue::new("nightshift.message.attempt", message.attempts + 1),
        ];
        if let Some(run_id) = &message.run_id {
            attributes.push(KeyValue::new("nightshift.run.id", run_id.clone()));
        }
        let span = crate::traces::SpanScope::start_under(
            &opentelemetry::Context::new(),
            format!("deliver {}", message.channel_id),
            opentelemetry::trace::SpanKind::Producer,
            attributes,
        );
        let result = self
            .channels
            .deliver(&message)
            .with_context(span.context().clone())
            .await;
        if let Err(failure) = &result {
            span.fail("delivery", failure.reason.clone());
        }
        span.end();
        let now = self.clock.now_ms();
        crate::telemetry::delivery(
            &message.channel_id,
            if result.is_ok() {
                "delivered"
            } else {
                "failed"
            },
        );
        let recorded = match result {
            Ok(()) => self
                .outbox
                .delivered(&message, &self.owner, now)
                .await
                .map(|_| ()),
            Err(failure) => {
                let attempts = message.attempts + 1;
                let retry_at = now
                    + failure
                        .retry_after
                        .map(|d| d.as_millis() as i64)
                        .unwrap_or_else(|| {
                            backoff_ms(&self.config, &message.message_id, message.attempts)
                        });
                let dead = failure.permanent
                    || attempts >= self.config.max_attempts
                    || retry_at >= message.expires_at;
                if dead {
                    tracing::warn!(message_id = %message.message_id, channel = %message.channel_id, error = %failure.reason, "notification is a dead letter");
                } else {
                    tracing::info!(message_id = %message.message_id, channel = %message.channel_id, error = %failure.reason, "notification not delivered; will retry");
                }
                self.outbox
                    .failed(
                        &message,
                        &self.owner,
                        &failure.reason,
                        failure.progress,
                        retry_at,
                        dead.then_some(now),
                    )
                    .await
            }
        };
        if let Err(err) = recorded {
            // The lease runs out and the message is tried again: the channel sees the
            // same idempotency key.
            tracing::warn!(message_id = %message.message_id, %err, "cannot record a delivery");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_a_cap() {
        let config = NotifyConfig::default();
        let first = backoff_ms(&config, "m", 0);
        assert!((1_000..=3_000).contains(&first), "{first}");
        let later = backoff_ms(&config, "m", 5);
        assert!(later > first);
        assert!(backoff_ms(&config, "m", 40) <= config.backoff_max_ms * 3 / 2);
        assert_eq!(backoff_ms(&config, "m", 3), backoff_ms(&config, "m", 3));
    }
}
