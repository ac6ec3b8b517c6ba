//! The scheduler loop: sleep until the earliest due time, a local wake-up, or a change
//! made by another process; then recover runs whose worker vanished and claim what is due,
//! never more at once than `scheduler.max_concurrent`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::executor::Executor;
use super::systemd;
use crate::schedule::store::{NextWake, ScheduleStore, ALERT_CHECK_EVERY};
use crate::schedule::types::{Claim, RunOrigin};

/// Longest sleep without looking at the database again.
const MAX_SLEEP: Duration = Duration::from_secs(60);
/// Due rows a pass looks at in rounds that claim nothing before it waits for a change.
const MAX_PASSED_OVER: usize = 256;

pub struct Scheduler {
    pub store: ScheduleStore,
    pub executor: Arc<Executor>,
    /// Notified when this process changes something the loop should look at now.
    pub wake: Arc<Notify>,
    pub max_concurrent: usize,
    pub change_check: Duration,
    /// Marked on every tick, for readiness.
    pub liveness: Arc<crate::health::Liveness>,
    /// On PostgreSQL, woken when any process changes or triggers a schedule, so the loop
    /// need not wait for its next change check.
    pub changes: Option<crate::db::postgres::listen::Listener>,
}

/// Waits for `listener`'s next wake-up; never, without one.
async fn changed(listener: Option<&crate::db::postgres::listen::Listener>) {
    match listener {
        Some(listener) => listener.notified().notified().await,
        None => std::future::pending().await,
    }
}

impl Scheduler {
    /// Runs until `stop` fires. Runs it starts are tracked by `tracker`; `hard_stop` makes
    /// them give up.
    pub async fn run(
        &self,
        stop: CancellationToken,
        hard_stop: CancellationToken,
        tracker: TaskTracker,
    ) {
        let permits = Arc::new(Semaphore::new(self.max_concurrent));
        let mut ticker = tokio::time::interval(self.change_check);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut seen_version = self.store.version().await.unwrap_or(0);
        let lease = Duration::from_millis(self.executor.lease_ms() as u64);
        // When the database was last out of reach, as the change check (a one-row read,
        // which a busy writer does not fail) saw it. Every lease runs out while the
        // database is away, the live ones too: after it comes back, their holders get a
        // full lease to renew them or record their results before anyone takes over, so a
        // run that finished during the outage is recorded, not run a second time.
        let mut last_db_error: Option<Instant> = None;
        // The earliest lease expiry the last look found, and when it looked.
        let mut leases_seen: Option<(Instant, Option<i64>)> = None;
        // When runs gone late and schedules gone silent were last looked for.
        let mut alerts_checked = Instant::now();
        loop {
            let may_recover = last_db_error.is_none_or(|at| at.elapsed() >= lease)
                && self.a_lease_may_have_expired(leases_seen, lease);
            self.liveness.tick();
            let blocked = match self
                .pass(&permits, may_recover, &stop, &hard_stop, &tracker)
                .await
            {
                Ok(blocked) => {
                    self.liveness.pass_succeeded();
                    blocked
                }
                Err(err) => {
                    tracing::error!(%err, "scheduler pass failed; retrying");
                    self.liveness.pass_failed(err.to_string());
                    true
                }
            };
            let (deadline, next) = self.next_deadline(blocked).await;
            leases_seen = next.map(|next| (Instant::now(), next.lease_expiry));
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep_until(deadline) => break,
                    _ = self.wake.notified() => break,
                    _ = changed(self.changes.as_ref()) => {
                        // Seen now: the next change check need not look again.
                        if let Ok(version) = self.store.version().await {
                            seen_version = version;
                        }
                        break;
                    }
                    _ = ticker.tick() => {
                        systemd::watchdog();
                        self.liveness.tick();
                        if alerts_checked.elapsed() >= ALERT_CHECK_EVERY {
                            alerts_checked = Instant::now();
                            if let Err(err) = self.store.check_alerts().await {
                                tracing::warn!(%err, "cannot look for late or silent schedules");
                            }
                        }
                        match self.store.version().await {
                            Ok(version) if version != seen_version => {
                                seen_version = version;
                                break;
                            }
                            Ok(_) => {}
                            Err(err) => {
                                last_db_error = Some(Instant::now());
                                tracing::warn!(%err, "cannot check for schedule changes");
                            }
                        }
                    }
                }
            }
        }
    }

    /// When to look again: the earliest due time or lease expiry. While due work waits for
    /// a free slot, finishing runs wake the loop, so only a slow fallback is set. Also
    /// returns what the database said (`None` when it could not say).
    async fn next_deadline(&self, blocked: bool) -> (Instant, Option<NextWake>) {
        let now_ms = self.store.clock().now_ms();
        let fallback = if blocked {
            Duration::from_secs(1)
        } else {
            MAX_SLEEP
        };
        let mut wake_ms = now_ms + fallback.as_millis() as i64;
        let next = self.store.next_wake().await.ok();
        if let Some(next) = &next {
            if let Some(due) = next.due_at.filter(|_| !blocked) {
                wake_ms = wake_ms.min(due);
            }
            if let Some(expiry) = next.lease_expiry {
                // A lease is taken over once it has expired, just after its expiry time.
                wake_ms = wake_ms.min(expiry + 1);
            }
        }
        let deadline = Instant::now() + Duration::from_millis((wake_ms - now_ms).max(0) as u64);
        (deadline, next)
    }

    /// Whether recovery has anything to look for: skipped (one read less a pass) while the
    /// earliest lease the last look found has not expired and that look is recent. A
    /// lease taken since then runs a whole `lease` from when it was taken, so within half
    /// a lease of the look none can have expired, with room for other machines' clocks.
    fn a_lease_may_have_expired(
        &self,
        leases_seen: Option<(Instant, Option<i64>)>,
        lease: Duration,
    ) -> bool {
        let Some((seen_at, earliest)) = leases_seen else {
            return true;
        };
        seen_at.elapsed() >= lease / 2
            || earliest.is_some_and(|expiry| expiry < self.store.clock().now_ms())
    }

    /// One pass; returns true when due work was left waiting (no free slot, or buffered
    /// behind a running run).
    async fn pass(
        &self,
        permits: &Arc<Semaphore>,
        may_recover: bool,
        stop: &CancellationToken,
        hard_stop: &CancellationToken,
        tracker: &TaskTracker,
    ) -> Result<bool, crate::schedule::ScheduleError> {
        let worker = &self.executor.worker_id;
        let lease_ms = self.executor.lease_ms();
        if may_recover {
            for claim in self.store.recover_expired(worker, lease_ms).await? {
                // Recovered runs were already running: they go ahead even when slots are
                // full.
                self.spawn(claim, None, hard_stop, tracker);
            }
        }
        // Runs someone asked to stop, among those this worker holds (a read each pass
        // only while it runs any).
        if self.executor.runs_any() {
            for (run_id, by) in self.store.cancels_requested(worker).await? {
                if self.executor.cancel(&run_id) {
                    tracing::info!(%run_id, %by, "stopping a run someone cancelled");
                }
            }
        }
        // Runs whose approval was answered (or ran out of time) first: they started long
        // ago, and a person may be waiting on them.
        let free_slots = permits.available_permits();
        for claim in self
            .store
            .resume_answered(worker, lease_ms, free_slots)
            .await?
        {
            let permit = permits.clone().try_acquire_owned().ok();
            self.spawn(claim, permit, hard_stop, tracker);
        }
        // Events next: a trigger or a chain waits on nothing else, and there are few.
        if !self.claim_events(permits, hard_stop, tracker).await? {
            return Ok(true);
        }
        let mut round = 0u64;
        // Due rows looked at in rounds that claimed nothing.
        let mut passed_over = 0;
        loop {
            round += 1;
            // A worker behind on a backlog always finds more due work: a stop must not
            // wait for the backlog to drain.
            if stop.is_cancelled() {
                return Ok(false);
            }
            // No free slot: a finishing run frees one and wakes the loop.
            let free_slots = permits.available_permits();
            if free_slots == 0 {
                return Ok(true);
            }
            // Only the rows this worker would look at: the due list is the largest read a
            // pass makes, every pass (all of a schedule's columns, on a server serialized
            // row by row).
            let now = self.store.clock().now_ms();
            let limit = spread_window(free_slots);
            let due = self.store.due(now, limit as i64).await?;
            if due.is_empty() {
                return Ok(false);
            }
            let mut claimed_any = false;
            let draw = (now as u64).wrapping_add(round);
            let start = spread_offset(worker, draw, free_slots, due.len());
            for schedule in due[start..].iter().chain(&due[..start]) {
                if stop.is_cancelled() {
                    return Ok(false);
                }
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    return Ok(true);
                };
                match self.store.claim(schedule, worker, lease_ms).await? {
                    Some(claim) => {
                        claimed_any = true;
                        self.spawn(claim, Some(permit), hard_stop, tracker);
                    }
                    // Lost the race, skipped by policy, or buffered: the slot stays free.
                    None => drop(permit),
                }
            }
            if !claimed_any && due.len() == limit && passed_over < MAX_PASSED_OVER {
                // Every row looked at was taken by another worker or moved on by its
                // policy, and more are due: look at the next ones. Bounded: through a
                // replica that has not yet pulled other workers' claims, the same rows
                // come back until it does, each a lost claim at the server.
                passed_over += due.len();
                continue;
            }
            if !claimed_any {
                // Whatever is still due is waiting behind a running run.
                let still_due = self.store.due(self.store.clock().now_ms(), 1).await?;
                return Ok(!still_due.is_empty());
            }
        }
    }

    /// Claims the events waiting for a run (triggers, chains, backfills) while slots are
    /// free; false when no free slot is left.
    async fn claim_events(
        &self,
        permits: &Arc<Semaphore>,
        hard_stop: &CancellationToken,
        tracker: &TaskTracker,
    ) -> Result<bool, crate::schedule::ScheduleError> {
        let free_slots = permits.available_permits();
        if free_slots == 0 {
            return Ok(false);
        }
        let events = self
            .store
            .due_events(spread_window(free_slots) as i64)
            .await?;
        for event in events {
            let Ok(permit) = permits.clone().try_acquire_owned() else {
                return Ok(false);
            };
            match self
                .store
                .claim_event(&event, &self.executor.worker_id, self.executor.lease_ms())
                .await?
            {
                Some(claim) => self.spawn(claim, Some(permit), hard_stop, tracker),
                // Taken by another worker, or its schedule has a run going: it waits.
                None => drop(permit),
            }
        }
        Ok(true)
    }

    fn spawn(
        &self,
        claim: Claim,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
        hard_stop: &CancellationToken,
        tracker: &TaskTracker,
    ) {
        // How late the occurrence starts, from when it was due: its time moved by the
        // schedule's jitter (a recovered one: from when it was first due).
        // A triggered or chained run: from when its event came. A backfilled occurrence
        // was due long ago on purpose, and is not counted.
        let due = match claim.origin {
            // A resumed run started long ago; it waited for a person, not for a slot.
            _ if claim.resume.is_some() => None,
            // A rerun repeats a past occurrence on purpose, as a backfill does.
            _ if claim.parent_run_id.is_some() => None,
            RunOrigin::Cadence => Some(claim.schedule.due_at(claim.scheduled_for)),
            RunOrigin::Trigger | RunOrigin::Chain => Some(claim.scheduled_for),
            RunOrigin::Backfill => None,
        };
        if let Some(due) = due {
            let late = self.store.clock().now_ms() - due;
            crate::telemetry::run_started(Duration::from_millis(late.max(0) as u64));
        }
        let executor = self.executor.clone();
        let wake = self.wake.clone();
        let hard_stop = hard_stop.clone();
        tracker.spawn(async move {
            executor.execute(claim, hard_stop).await;
            drop(permit);
            // A slot is free and a buffered occurrence may be waiting.
            wake.notify_one();
        });
    }
}

/// Rows of the due list per free slot that workers spread their claims over.
const SPREAD_PER_SLOT: usize = 8;

/// The first rows of the due list a worker with `free_slots` looks at in a round.
fn spread_window(free_slots: usize) -> usize {
    free_slots.max(1) * SPREAD_PER_SLOT
}

/// Where in the due list this worker starts claiming, drawn from `draw` (different every
/// round of claims). Workers reading the same list and all racing for its first rows lose
/// most claims to each other, and on a server each lost claim is a write transaction: so
/// each starts at a point of its own within the first [`SPREAD_PER_SLOT`] rows per free
/// slot. Drawn anew each round, not fixed per worker: with a fixed start, the rows before
/// it would wait for as long as a backlog lasts (a worker with one free slot took the
/// same position every round); drawn, every row near the front is soon taken, and a lone
/// worker still takes its rows from the front of the list, if not strictly in order.
fn spread_offset(worker_id: &str, draw: u64, free_slots: usize, due: usize) -> usize {
    let window = spread_window(free_slots).min(due);
    if window <= 1 {
        return 0;
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(worker_id.as_bytes());
    hasher.update(&draw.to_le_bytes());
    let hash = hasher.finalize();
    let value = u64::from_le_bytes(hash.as_bytes()[..8].try_into().expect("8 bytes"));
    (value % window as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::spread_offset;

    #[test]
    fn workers_start_at_different_rows_within_the_window() {
        let starts: std::collections::HashSet<usize> = (0..20)
            .map(|i| spread_offset(&format!("wrk-{i}"), 7, 4, 256))
            .collect();
        assert!(starts.len() > 5, "{starts:?}");
        assert!(starts.iter().all(|s| *s < 32));
        assert_eq!(spread_offset("wrk-1", 7, 4, 1), 0);
        assert_eq!(spread_offset("wrk-1", 7, 4, 0), 0);
    }

    #[test]
    fn one_worker_starts_at_every_row_of_the_window_over_rounds() {
        // One free slot: the window is the first eight rows, and over rounds every one of
        // them, the earliest included, is where the worker starts.
        let starts: std::collections::HashSet<usize> = (0..200)
            .map(|round| spread_offset("wrk-1", round, 1, 256))
            .collect();
        assert_eq!(starts, (0..8).collect());
    }
}
