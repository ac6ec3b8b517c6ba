//! Shared helpers: a memory store on a fresh database file in a temp dir.
#![allow(dead_code)]

pub mod api;
pub mod bm25_reference;
pub mod browser;
pub mod mcp;
pub mod model;
pub mod notify_bench;
pub mod peer;
pub mod postgres;
pub mod runs;
pub mod skip;
pub mod sqld;

use std::sync::Arc;

use nightshift::app::{open_memory, App, AppParts};
use nightshift::config::Config;
use nightshift::db::clock::Clock;
use nightshift::db::query_scalar;
use nightshift::memory::{Memory, SessionKey};
use tempfile::TempDir;

/// The default config on a database of the test's own: a file in `dir`, or under
/// `NIGHTSHIFT_TEST_ENGINE=postgres` a fresh PostgreSQL database, with the artifacts'
/// folder where a file's would be (`dir/artifacts`), as an operator sets `[artifacts] dir`
/// to a folder every worker shares.
pub fn config_in(dir: &TempDir) -> Config {
    let mut config = Config::default();
    if postgres::engine_is_postgres() {
        config.database.path = postgres::database_for(dir.path());
        config.artifacts.dir = Some(dir.path().join("artifacts").display().to_string());
    } else {
        config.database.path = dir.path().join("nightshift.db").display().to_string();
    }
    config
}

/// Where `config_in(dir)` puts the database, for a child process's `--db`.
pub fn database_in(dir: &TempDir) -> String {
    config_in(dir).database.path
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

/// A search of `user`'s memory for `query`, ten hits, in `session` when given.
pub fn search_request(
    user: &str,
    query: &str,
    session: Option<&str>,
) -> nightshift::memory::SearchRequest {
    nightshift::memory::SearchRequest {
        user_id: user.into(),
        query: query.into(),
        top_k: Some(10),
        session_id: session.map(Into::into),
        tags: Vec::new(),
        ..Default::default()
    }
}

/// A store of its own with `set` applied to the default configuration.
pub async fn memory_with(set: impl FnOnce(&mut Config)) -> (TempDir, Memory) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = config_in(&dir);
    set(&mut config);
    let memory = open_memory(&config).await.unwrap();
    (dir, memory)
}

pub async fn count(memory: &Memory, sql: &str) -> i64 {
    let conn = memory.db().conn().await.unwrap();
    query_scalar::<i64>(&conn, sql, ())
        .await
        .unwrap()
        .unwrap_or(0)
}

/// Fails unless every session's keyword index, as a search loads it, holds exactly the
/// session's chunk rows and ranks them as bm25 computed from those rows does, for queries
/// made of the session's own texts: the index is derived, and this is its integrity check.
pub async fn keyword_integrity(memory: &Memory) {
    let conn = memory.db().conn().await.unwrap();
    let mut rows = conn
        .query("SELECT session_id FROM sessions", ())
        .await
        .unwrap();
    let mut sessions: Vec<String> = Vec::new();
    while let Some(row) = rows.next().await.unwrap() {
        sessions.push(row.get(0).unwrap());
    }
    drop(rows);
    for session in sessions {
        let mut rows = conn
            .query(
                "SELECT text FROM chunks WHERE session_id = ?1 ORDER BY chunk_id LIMIT 8",
                [session.as_str()],
            )
            .await
            .unwrap();
        // A query of stop words alone reads the stop words' index.
        let mut queries: Vec<String> = vec!["integrity".into(), "the it was".into()];
        while let Some(row) = rows.next().await.unwrap() {
            queries.push(row.get(0).unwrap());
        }
        drop(rows);
        let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
        let key = SessionKey::stored(session.clone());
        let exhaustive = memory
            .keyword_leg_exhaustive(&key, &queries, 1_000)
            .await
            .unwrap();
        for (query, want) in queries.iter().zip(exhaustive) {
            let got = memory.keyword_leg(&key, query, 1_000).await.unwrap();
            assert_eq!(got, want, "session {session:?}, query {query:?}");
        }
        let held = memory.cached_keywords(&key).map_or(0, |c| c.rows);
        let held_stop_words = memory.cached_stop_words(&key).map_or(0, |c| c.rows);
        let stored: i64 = query_scalar(
            &conn,
            "SELECT count(*) FROM chunks WHERE session_id = ?1",
            [session.as_str()],
        )
        .await
        .unwrap()
        .unwrap_or(0);
        assert_eq!(
            held as i64, stored,
            "session {session:?}: keyword index rows"
        );
        assert_eq!(
            held_stop_words as i64, stored,
            "session {session:?}: stop words' index rows"
        );
    }
}

/// Rows in the derived index, as (chunks, vectors, chunks the keyword leg finds for
/// `term` over every session).
pub async fn index_rows(memory: &Memory, term: &str) -> (i64, i64, i64) {
    let conn = memory.db().conn().await.unwrap();
    let mut rows = conn
        .query("SELECT session_id FROM sessions", ())
        .await
        .unwrap();
    let mut found = 0;
    while let Some(row) = rows.next().await.unwrap() {
        let session = SessionKey::stored(row.get(0).unwrap());
        let hits = memory.keyword_leg(&session, term, 100_000).await.unwrap();
        found += hits.map_or(0, |h| h.len()) as i64;
    }
    (
        count(memory, "SELECT count(*) FROM chunks").await,
        count(memory, "SELECT count(*) FROM chunk_vectors").await,
        found,
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

/// An outbox plan for the channel `channel_id`, as a worker makes one from its config:
/// messages live an hour, at most `max_pending` wait.
pub fn notify_plan(channel_id: &str, max_pending: i64) -> nightshift::notify::outbox::NotifyPlan {
    nightshift::notify::outbox::NotifyPlan {
        channel_id: channel_id.into(),
        channel_context_id: None,
        marker: "[NOTIFY]".into(),
        failure_notice_after: 3,
        max_message_chars: 3500,
        public_url: None,
        ttl_ms: [3_600_000; 3],
        max_pending_per_channel: max_pending,
        digest_at: nightshift::time_of_day::DailyTime::MORNING_UTC,
    }
}

/// Waits until `check` holds, looking every 25 ms for 10 s, for what another task or
/// process does in real time (a worker's run, a server's answer); fails naming `what`.
pub async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..400 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("never: {what}");
}
