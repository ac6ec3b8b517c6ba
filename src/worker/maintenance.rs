//! The worker's maintenance job: the overnight consolidation at its cron time (one worker
//! per window, whoever claims it first), and, in between, rolling summaries for sessions
//! that have gone quiet.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::consolidate::{Consolidator, Pass};
use crate::schedule::Cadence;

/// How often quiet sessions are looked for.
const QUIET_CHECK: Duration = Duration::from_secs(60);

pub async fn run(consolidator: Arc<Consolidator>, worker_id: String, stop: CancellationToken) {
    let config = consolidator.config.clone();
    let cadence = match Cadence::cron(&config.cron, &config.timezone) {
        Ok(c) => c,
        Err(err) => {
            tracing::error!(%err, "consolidation disabled: bad consolidation.cron");
            return;
        }
    };
    let clock = consolidator.memory.clock().clone();
    let mut next = cadence.next_after(clock.now_ms());
    let quiet_ms = config.quiet_minutes * 60_000;
    loop {
        let now = clock.now_ms();
        let until_next = next.map_or(QUIET_CHECK, |n| {
            Duration::from_millis((n - now).max(0) as u64)
        });
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep_until(Instant::now() + until_next.min(QUIET_CHECK)) => {}
        }
        let now = clock.now_ms();
        match next {
            Some(window) if now >= window => {
                next = cadence.next_after(window.max(now));
                match consolidator
                    .claim_window("consolidation", window, &worker_id)
                    .await
                {
                    Ok(true) => {
                        tracing::info!("starting the overnight consolidation");
                        if let Err(err) = consolidator.run(&Pass::ALL, None, None).await {
                            tracing::error!(%err, "consolidation failed");
                        }
                    }
                    Ok(false) => tracing::info!("another worker runs this consolidation window"),
                    Err(err) => tracing::warn!(%err, "cannot claim the consolidation window"),
                }
            }
            _ => {
                // Catch sessions that went quiet since the last check (with some overlap).
                let window = QUIET_CHECK.as_millis() as i64 * 2;
                if let Err(err) = consolidator.summarize_quiet(quiet_ms, window).await {
                    tracing::warn!(%err, "cannot summarize quiet sessions");
                }
            }
        }
    }
}
