//! HTTP details shared by the runtime clients and the notification channels.

use std::time::Duration;

/// The wait a `Retry-After` header asks for, when it gives seconds.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}
