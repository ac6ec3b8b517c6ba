//! The one place that reads the wall clock. Time is stored as UTC unix milliseconds.

use chrono::{DateTime, SecondsFormat, Utc};

/// Now, as UTC unix milliseconds.
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
}
