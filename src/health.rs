//! The worker's heartbeat, shared with whoever reports health: the scheduler loop marks
//! each tick, and readiness checks it ticked recently (a stuck loop is not ready).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

#[derive(Debug)]
pub struct Liveness {
    started: Instant,
    /// Milliseconds since `started` of the scheduler loop's last tick; -1 before the first.
    last_tick: AtomicI64,
    /// Scheduler passes that failed in a row, and the last one's error: a loop that ticks
    /// but whose every pass fails schedules nothing, and is not ready.
    failed_passes: AtomicU64,
    last_failure: Mutex<Option<String>>,
    /// Scheduler passes finished, failed or not.
    passes: AtomicU64,
}

impl Default for Liveness {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            last_tick: AtomicI64::new(-1),
            failed_passes: AtomicU64::new(0),
            last_failure: Mutex::new(None),
            passes: AtomicU64::new(0),
        }
    }
}

impl Liveness {
    /// A scheduler pass finished.
    pub fn pass_succeeded(&self) {
        self.failed_passes.store(0, Ordering::Relaxed);
        self.passes.fetch_add(1, Ordering::Release);
    }

    /// A scheduler pass failed with `error`.
    pub fn pass_failed(&self, error: String) {
        self.failed_passes.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut last) = self.last_failure.lock() {
            *last = Some(error);
        }
        self.passes.fetch_add(1, Ordering::Release);
    }

    /// Scheduler passes finished since the worker started, failed or not.
    pub fn passes(&self) -> u64 {
        self.passes.load(Ordering::Acquire)
    }

    /// How many passes in a row failed, and the last one's error.
    pub fn failed_passes(&self) -> (u64, Option<String>) {
        let count = self.failed_passes.load(Ordering::Relaxed);
        let last = self.last_failure.lock().ok().and_then(|l| l.clone());
        (count, last.filter(|_| count > 0))
    }

    /// The scheduler loop is alive now.
    pub fn tick(&self) {
        self.last_tick
            .store(self.started.elapsed().as_millis() as i64, Ordering::Relaxed);
    }

    /// How long ago the loop last ticked; `None` if it never has (no worker runs here).
    pub fn since_last_tick(&self) -> Option<std::time::Duration> {
        let last = self.last_tick.load(Ordering::Relaxed);
        (last >= 0).then(|| {
            let now = self.started.elapsed().as_millis() as i64;
            std::time::Duration::from_millis((now - last).max(0) as u64)
        })
    }

    pub fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }
}
