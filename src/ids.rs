//! Prefixed, time-ordered identifiers (`note-<uuidv7>`, …): sortable by creation time and
//! recognisable in logs by their prefix.

use uuid::Uuid;

/// A new identifier with the given prefix, e.g. `new_id("note")` → `note-0193…`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}-{}", Uuid::now_v7())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_and_time_ordered() {
        let a = new_id("note");
        let b = new_id("note");
        assert!(a.starts_with("note-"));
        assert!(a < b, "{a} should sort before {b}");
    }
}
