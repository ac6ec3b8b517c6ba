//! What a pass reports: its counts by name, and its first error when it failed in part.
//! Below the passes and the scheduler of passes, which all use it.

use serde_json::{json, Map, Value};

pub(super) type Counts = Map<String, Value>;

/// A pass's counts, and its first error when it failed in part (the facts pass goes on
/// with the other sessions when one fails).
pub(super) struct PassOutcome {
    pub counts: Counts,
    pub error: Option<String>,
}

/// Adds `by` to the count `key` (absent counts are 0).
pub(super) fn bump(counts: &mut Counts, key: &str, by: i64) {
    let value = counts.get(key).and_then(Value::as_i64).unwrap_or(0) + by;
    counts.insert(key.to_string(), json!(value));
}
