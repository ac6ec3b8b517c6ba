//! Shared helpers: a memory store on a fresh database file in a temp dir.
#![allow(dead_code)]

pub mod api;
pub mod sqld;

use std::sync::Arc;

use nightshift::app::{open_memory, App, AppParts};
use nightshift::config::Config;
use nightshift::db::clock::Clock;
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

/// The whole app on `config`, stamping times with `clock` when given.
pub async fn app_with(config: &Config, clock: Option<Arc<dyn Clock>>) -> App {
    App::open_with(config, AppParts { clock })
        .await
        .expect("open the app")
}

/// Runs a worker on `app` until `done` holds or ten seconds pass, then stops it.
pub async fn worker_until(app: &App, done: impl Fn() -> bool) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn({
        let app = app.clone();
        async move {
            nightshift::worker::run(&app, async {
                let _ = stopped.await;
            })
            .await
        }
    });
    for _ in 0..200 {
        if done() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
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

/// How long a worker process may take to exit on SIGTERM before the test gives up on it:
/// its grace period plus the bounded last writes, with room for a loaded machine.
pub const EXIT_WITHIN: std::time::Duration = std::time::Duration::from_secs(120);

/// Sends SIGTERM and waits for the process to exit, at most [`EXIT_WITHIN`]: a worker that
/// hangs on shutdown fails the test (after SIGKILL) instead of hanging the test run.
pub fn terminate(child: &mut std::process::Child) -> std::process::ExitStatus {
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    wait_for_exit(child, EXIT_WITHIN)
        .unwrap_or_else(|| panic!("process {} did not exit on SIGTERM", child.id()))
}

/// Waits for the process to exit, polling, at most `limit`; on timeout kills it with
/// SIGKILL and returns None.
pub fn wait_for_exit(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> Option<std::process::ExitStatus> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().expect("poll the child") {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// A child process that is killed when the test lets go of it, also when the test panics
/// or times out, so no worker outlives its test.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn models() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
}

/// The fetched semantic model's configuration; fails (never skips) when it is missing.
pub fn semantic_config() -> nightshift::config::EmbeddingConfig {
    let config = nightshift::config::EmbeddingConfig {
        backend: nightshift::config::EmbeddingBackend::Fastembed,
        model_dir: models().join("all-MiniLM-L6-v2-int8"),
        onnxruntime: models().join("onnxruntime/libonnxruntime.so.1.31.1"),
        ..Default::default()
    };
    assert!(
        config.model_dir.join("model.onnx").is_file() && config.onnxruntime.is_file(),
        "the semantic model is missing: run scripts/fetch-model.sh (scripts/test.sh does)"
    );
    config
}

/// Turns with overlapping words, so the query is near many of them.
pub fn varied_turn(i: usize) -> String {
    let words = [
        "harbor", "lantern", "orchard", "copper", "meadow", "glacier", "violin", "saffron",
        "canyon", "ember", "willow", "quartz",
    ];
    format!(
        "turn {i}: {} {} {} and {}",
        words[i % 12],
        words[(i / 12) % 12],
        words[(i / 144) % 12],
        words[(i * 7) % 12]
    )
}
