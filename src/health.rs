//! The worker's heartbeat, shared with whoever reports health: the scheduler loop marks
//! each tick, and readiness checks it ticked recently (a stuck loop is not ready).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

#[derive(Debug)]
pub struct Liveness {
    started: Instant,
    /// Milliseconds since `started` of the scheduler loop's last tick; -1 before the first.
    last_tick: AtomicI64,
}

impl Default for Liveness {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            last_tick: AtomicI64::new(-1),
        }
    }
}

impl Liveness {
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
