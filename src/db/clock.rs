//! Time. Stored time is UTC unix milliseconds; everything that stamps or compares times
//! asks a [`Clock`], so tests can hold time still or move it by hand.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};

pub trait Clock: Send + Sync {
    /// Now, as UTC unix milliseconds.
    fn now_ms(&self) -> i64;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// A clock that only moves when told to.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    pub fn starting_at(ms: i64) -> Arc<Self> {
        Arc::new(Self {
            now: AtomicI64::new(ms),
        })
    }

    pub fn advance_ms(&self, ms: i64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// Wall-clock time that moves with tokio's clock: it starts at the wall clock and then
/// advances exactly as `tokio::time::Instant` does. Under `tokio::time::pause()` tests move
/// it by advancing tokio time, and the scheduler's sleeps and its notion of "now" agree.
#[derive(Debug, Clone)]
pub struct TokioClock {
    start_ms: i64,
    start: tokio::time::Instant,
}

impl TokioClock {
    pub fn starting_at(ms: i64) -> Arc<Self> {
        Arc::new(Self {
            start_ms: ms,
            start: tokio::time::Instant::now(),
        })
    }
}

impl Clock for TokioClock {
    fn now_ms(&self) -> i64 {
        self.start_ms + self.start.elapsed().as_millis() as i64
    }
}

/// The wall clock, read directly (for stamps no test needs to control).
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// Renders stored UTC milliseconds as RFC 3339, for output at the edges only.
pub fn to_rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
        .unwrap_or_else(|| ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_utc_millis() {
        assert_eq!(to_rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(to_rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::starting_at(1_000);
        assert_eq!(clock.now_ms(), 1_000);
        clock.advance_ms(500);
        assert_eq!(clock.now_ms(), 1_500);
    }
}
