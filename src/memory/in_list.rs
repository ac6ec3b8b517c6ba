//! Numbered parameters for an SQL `IN (…)` list, and how many ids one statement takes:
//! shared by every reader of chunks, notes and events by id.

/// Chunk ids read by one `IN (…)` statement (SQLite allows 32,766 parameters).
pub(super) const MAX_IDS_PER_STATEMENT: usize = 30_000;

/// `?first, ?first+1, …`: `count` numbered parameters for an `IN (…)` list.
pub(super) fn placeholders(first: usize, count: usize) -> String {
    // `IN ()` is SQLite's empty list, which PostgreSQL does not read; `IN (NULL)` holds
    // for no row on both (every caller asks `IN`, never `NOT IN`).
    if count == 0 {
        return "NULL".to_string();
    }
    (first..first + count)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}
