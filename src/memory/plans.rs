//! The plans SQLite makes of search's reads by key. Each must read its rows by their
//! keys, never every row of the user through an index on `user_id`: the planner, with no
//! statistics to go by, prefers such an index when the user is named by column, and a
//! user of 50,000 chunks then paid for all of them on every search (twice, unseen by any
//! test of what search finds, as the results are the same).

use crate::db::{Db, DbOptions, DbTarget};

/// The details of SQLite's plan for `sql` over the current schema.
async fn plan(db: &Db, sql: &str) -> Vec<String> {
    let conn = db.conn().await.expect("a connection");
    let mut rows = conn
        .query(&format!("EXPLAIN QUERY PLAN {sql}"), ())
        .await
        .unwrap_or_else(|e| panic!("explaining {sql}: {e}"));
    let mut details = Vec::new();
    while let Some(row) = rows.next().await.expect("a plan row") {
        details.push(row.get::<String>(3).expect("a plan's detail"));
    }
    details
}

/// Asserts that `sql` reads `table` by the key `by` and reads no table by `user_id`.
async fn assert_by_key(db: &Db, sql: &str, table: &str, by: &str) {
    let details = plan(db, sql).await;
    assert!(
        details
            .iter()
            .any(|d| d.starts_with(&format!("SEARCH {table} ")) && d.contains(by)),
        "{table} is not read by {by}: {details:?}\n{sql}"
    );
    assert!(
        !details.iter().any(|d| d.contains("user_id=")),
        "a read by user: {details:?}\n{sql}"
    );
}

#[tokio::test]
async fn reads_by_key_never_read_all_of_a_users_rows() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let target = DbTarget::Local(dir.path().join("plans.db"));
    let db = Db::open(&target, DbOptions::default()).await.expect("open");
    crate::db::migrate::migrate(&db).await.expect("migrate");

    assert_by_key(&db, &super::fusion::targets_sql(3), "c", "(rowid=?)").await;
    assert_by_key(
        &db,
        &super::hydrate::notes_sql(3, ""),
        "notes",
        "(note_id=?)",
    )
    .await;
    assert_by_key(
        &db,
        &super::hydrate::events_sql(3, ""),
        "e",
        "(session_id=? AND sequence=?)",
    )
    .await;
    assert_by_key(
        &db,
        &super::evidence::evidence_sql(3),
        "fact_evidence",
        "(note_id=?)",
    )
    .await;
}
