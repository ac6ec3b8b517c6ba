//! Numbered parameters for an SQL `IN (…)` list, and how many ids one statement takes:
//! shared by every reader of chunks, notes and events by id.

/// Chunk ids read by one `IN (…)` statement (SQLite allows 32,766 parameters).
pub(super) const MAX_IDS_PER_STATEMENT: usize = 30_000;

/// The condition "`column` is user `?1`" for a read by id: the user is checked as an
/// expression, not a column. SQLite, with no statistics, would otherwise read through an
/// index on `user_id` (`chunks_by_user_time`, `notes_by_user`, `fact_evidence_by_user`)
/// every row of the user rather than each id by its key: a user of 50,000 chunks paid
/// about 6 ms a read for it.
pub(super) fn of_user(column: &str) -> String {
    format!("{column} || '' = ?1")
}

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
