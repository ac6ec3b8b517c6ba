//! Schema migrations: from empty, idempotent, refusing newer or altered schemas.

mod common;

use common::config_in;
use nightshift::app::{open_db, open_memory, AppError};
use nightshift::db::migrate::{self, latest_version};
use nightshift::db::{query_scalar, DbError};
use tempfile::TempDir;

#[tokio::test]
async fn migrates_from_empty_then_does_nothing() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let db = open_db(&config).await.unwrap();
    let before = migrate::status(&db).await.unwrap();
    assert!(before.iter().all(|m| m.applied_at.is_none()));
    assert!(matches!(
        migrate::ensure_current(&db).await,
        Err(DbError::NotMigrated(_))
    ));

    assert_eq!(
        migrate::migrate(&db).await.unwrap(),
        migrate::MIGRATIONS.len()
    );
    assert_eq!(migrate::migrate(&db).await.unwrap(), 0);
    migrate::ensure_current(&db).await.unwrap();
    let after = migrate::status(&db).await.unwrap();
    assert!(after.iter().all(|m| m.applied_at.is_some()));

    let conn = db.conn().await.unwrap();
    let mode: String = query_scalar(&conn, "PRAGMA journal_mode", ())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = query_scalar(&conn, "PRAGMA foreign_keys", ())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fk, 1);
}

#[tokio::test]
async fn creates_the_database_folder() {
    let dir = TempDir::new().unwrap();
    let mut config = config_in(&dir);
    config.database.path = dir
        .path()
        .join("deep/er/nightshift.db")
        .display()
        .to_string();
    open_memory(&config).await.unwrap();
    assert!(dir.path().join("deep/er/nightshift.db").exists());
}

#[tokio::test]
async fn refuses_a_database_from_a_newer_nightshift() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let db = open_db(&config).await.unwrap();
    migrate::migrate(&db).await.unwrap();
    let conn = db.conn().await.unwrap();
    conn.execute(
        "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?1, 'future', 'x', 0)",
        [latest_version() + 1],
    )
    .await
    .unwrap();
    drop(conn);
    let err = migrate::migrate(&db).await.unwrap_err();
    assert!(matches!(err, DbError::SchemaTooNew { .. }), "{err}");
    assert!(err.to_string().contains("newer"), "{err}");
    assert!(matches!(
        open_memory(&config).await,
        Err(AppError::Db(DbError::SchemaTooNew { .. }))
    ));
    assert!(migrate::status(&db).await.is_err());
}

#[tokio::test]
async fn refuses_a_migration_applied_with_different_contents() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let db = open_db(&config).await.unwrap();
    migrate::migrate(&db).await.unwrap();
    let conn = db.conn().await.unwrap();
    conn.execute(
        "UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 1",
        (),
    )
    .await
    .unwrap();
    drop(conn);
    let err = migrate::migrate(&db).await.unwrap_err();
    assert!(
        matches!(err, DbError::ChecksumMismatch { version: 1, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn concurrent_migrators_apply_each_migration_once() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let config = config.clone();
        tasks.push(tokio::spawn(async move {
            let db = open_db(&config).await.unwrap();
            migrate::migrate(&db).await.unwrap()
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, migrate::MIGRATIONS.len());
}

#[tokio::test]
async fn rebuilding_the_schedules_table_keeps_schedules_runs_cascade_and_triggers() {
    let dir = TempDir::new().unwrap();
    let db = open_db(&config_in(&dir)).await.unwrap();
    migrate::migrate_to(&db, 11).await.unwrap();
    let conn = db.conn().await.unwrap();
    conn.execute(
        "INSERT INTO schedules (schedule_id, user_id, goal, cadence_json, overlap, created_at,
         updated_at, next_run_at, max_runs, runs_started, jitter_secs, next_nominal_at)
         VALUES ('sch-1', 'alice', 'g', '{\"kind\":\"once\",\"at\":5}', 'buffer_one', 1, 2, 5,
         3, 1, 60, 4)",
        (),
    )
    .await
    .unwrap();
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, output, due_at)
         VALUES ('run-1', 'sch-1', 4, 'succeeded', 'done', 7)",
        (),
    )
    .await
    .unwrap();
    drop(conn);
    assert_eq!(
        migrate::migrate(&db).await.unwrap() as i64,
        latest_version() - 11
    );

    let conn = db.conn().await.unwrap();
    let kept: String = query_scalar(
        &conn,
        "SELECT overlap || max_runs || runs_started || jitter_secs || next_nominal_at
         FROM schedules WHERE schedule_id = 'sch-1'",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(kept, "buffer_one31604");
    let run: String = query_scalar(
        &conn,
        "SELECT output || due_at FROM schedule_runs WHERE run_id = 'run-1'",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(run, "done7");
    // The runs table, rebuilt again by 0014: a run kept is the cadence's, and an
    // occurrence still has one run at most (a triggered run beside it is another).
    let origin: String = query_scalar(
        &conn,
        "SELECT origin FROM schedule_runs WHERE run_id = 'run-1'",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(origin, "cadence");
    assert!(conn
        .execute(
            "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status)
             VALUES ('run-2', 'sch-1', 4, 'succeeded')",
            (),
        )
        .await
        .is_err());
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, origin, event_id)
         VALUES ('run-3', 'sch-1', 4, 'succeeded', 'trigger', 'evt-1')",
        (),
    )
    .await
    .unwrap();
    // The new policies are accepted; the change counter still moves; deleting a schedule
    // still deletes its runs.
    let version = |conn| async move {
        query_scalar::<String>(
            conn,
            "SELECT value FROM meta WHERE key = 'schedules_version'",
            (),
        )
        .await
        .unwrap()
        .unwrap()
    };
    let before = version(&conn).await;
    conn.execute("UPDATE schedules SET overlap = 'cancel_other'", ())
        .await
        .unwrap();
    assert_ne!(version(&conn).await, before);
    conn.execute("DELETE FROM schedules WHERE schedule_id = 'sch-1'", ())
        .await
        .unwrap();
    let runs: i64 = query_scalar(&conn, "SELECT count(*) FROM schedule_runs", ())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(runs, 0);
}

/// An upgrade from the schema before the chunks lost their FTS5 table: the table and its
/// triggers go, stored keyword blocks are kept as blocks of words (field 0), and chunks
/// written before are found by the keyword index, stop words alone too, and can still be
/// deleted.
#[tokio::test]
async fn upgrading_drops_the_chunks_fts5_table_and_keeps_keyword_blocks() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let db = open_db(&config).await.unwrap();
    migrate::migrate_to(&db, 24).await.unwrap();
    let conn = db.conn().await.unwrap();
    for sql in [
        "INSERT INTO sessions (session_id, user_id, kind, created_at, updated_at, last_sequence)
         VALUES ('chat', 'u', 'conversation', 1, 1, 1)",
        "INSERT INTO events (session_id, sequence, role, content, importance, created_at)
         VALUES ('chat', 1, 'user', 'the copper lantern glows', 0.5, 1)",
        "INSERT INTO chunks (session_id, user_id, scope, text, content_hash, sequence_start,
                             sequence_end, created_at)
         VALUES ('chat', 'u', 's1', 'the copper lantern glows', 'h', 1, 1, 1)",
        // Not a block a packer writes: the chain ends there and the rows are read.
        "INSERT INTO keyword_blocks (session_id, after_chunk_id, last_chunk_id, removals,
                                     format, row_count, postings)
         VALUES ('chat', 0, 1, 0, 1, 1, x'00')",
    ] {
        conn.execute(sql, ()).await.unwrap();
    }
    drop(conn);
    migrate::migrate(&db).await.unwrap();
    let conn = db.conn().await.unwrap();
    assert_eq!(
        scalar_of(
            &conn,
            "SELECT count(*) FROM sqlite_master WHERE name LIKE 'chunks_fts%'"
        )
        .await,
        0
    );
    assert_eq!(
        scalar_of(
            &conn,
            "SELECT count(*) FROM keyword_blocks WHERE field = 0 AND format = 1"
        )
        .await,
        1
    );
    drop(conn);

    let memory = open_memory(&config).await.unwrap();
    for query in ["lanterns", "the"] {
        let hits = memory.keyword_leg("chat", query, 5).await.unwrap().unwrap();
        assert_eq!(hits.len(), 1, "{query:?}");
    }
    memory
        .forget(&nightshift::access::Actor::Operator, "chat")
        .await
        .unwrap();
    let conn = db.conn().await.unwrap();
    assert_eq!(scalar_of(&conn, "SELECT count(*) FROM chunks").await, 0);
    assert_eq!(
        scalar_of(&conn, "SELECT count(*) FROM keyword_blocks").await,
        0
    );
}

async fn scalar_of(conn: &nightshift::db::Conn, sql: &str) -> i64 {
    query_scalar::<i64>(conn, sql, ()).await.unwrap().unwrap()
}
