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
