//! A local database file whose write lock another process holds: writes wait for it (up to
//! `database.busy_timeout_ms`) without holding up the rest of the runtime.

mod common;

use nightshift::memory::NewNote;
use tempfile::TempDir;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_waiting_for_the_lock_do_not_stall_other_tasks() {
    if common::postgres::engine_is_postgres() {
        common::skip::skipped(
            "holds SQLite's file lock from a second connection; PostgreSQL's write lock is \
             tested in tests/postgres.rs",
        );
        return;
    }
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.database.busy_timeout_ms = 60_000;
    let app = common::app_with(&config, None).await;
    app.memory()
        .save_note(
            "u",
            &NewNote {
                content: "before the lock".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // Another "process": a connection of its own holding the write lock.
    let holder = libsql::Builder::new_local(dir.path().join("nightshift.db"))
        .build()
        .await
        .unwrap();
    let lock = holder.connect().unwrap();
    lock.execute("BEGIN IMMEDIATE", ()).await.unwrap();

    // More waiting writers than the runtime has workers.
    let writes: Vec<_> = (0..4)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move {
                let note = NewNote {
                    content: format!("waited {i}"),
                    ..Default::default()
                };
                app.memory().save_note("u", &note).await
            })
        })
        .collect();
    tokio::task::yield_now().await;
    // A read on a worker thread still gets done while they wait.
    let read = tokio::spawn({
        let app = app.clone();
        async move { app.memory().notes("u").await }
    });
    let notes = read.await.unwrap().unwrap();
    assert_eq!(notes.len(), 1);
    assert!(
        writes.iter().all(|w| !w.is_finished()),
        "the writes are still waiting for the lock"
    );
    lock.execute("COMMIT", ()).await.unwrap();
    for write in writes {
        write
            .await
            .unwrap()
            .expect("each write goes through once the lock is free");
    }
    assert_eq!(app.memory().notes("u").await.unwrap().len(), 5);
}
