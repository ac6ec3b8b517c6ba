//! Shared helpers: a memory store on a fresh database file in a temp dir.
#![allow(dead_code)]

pub mod sqld;

use nightshift::app::open_memory;
use nightshift::config::Config;
use nightshift::db::query_scalar;
use nightshift::memory::Memory;
use tempfile::TempDir;

pub fn config_in(dir: &TempDir) -> Config {
    let mut config = Config::default();
    config.database.path = dir.path().join("nightshift.db").display().to_string();
    config
}

pub async fn memory_in(dir: &TempDir) -> Memory {
    open_memory(&config_in(dir)).await.expect("open memory")
}

pub async fn fresh() -> (TempDir, Memory) {
    let dir = TempDir::new().unwrap();
    let memory = memory_in(&dir).await;
    (dir, memory)
}

pub async fn count(memory: &Memory, sql: &str) -> i64 {
    let conn = memory.db().conn().await.unwrap();
    query_scalar::<i64>(&conn, sql, ())
        .await
        .unwrap()
        .unwrap_or(0)
}

/// Fails unless the FTS index agrees with the chunks table exactly.
pub async fn fts_integrity(memory: &Memory) {
    let conn = memory.db().conn().await.unwrap();
    conn.execute(
        "INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')",
        (),
    )
    .await
    .expect("FTS index in sync with chunks");
}

/// Rows in the derived index, as (chunks, vectors, FTS matches for `term`).
pub async fn index_rows(memory: &Memory, term: &str) -> (i64, i64, i64) {
    (
        count(memory, "SELECT count(*) FROM chunks").await,
        count(memory, "SELECT count(*) FROM chunk_vectors").await,
        count(
            memory,
            &format!("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'text:{term}'"),
        )
        .await,
    )
}
