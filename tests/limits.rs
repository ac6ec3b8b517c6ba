//! Bounded inputs (issue 26, item 4): each limit on what grows with a user's data is
//! taken at exactly its value, and refused one past it with an error naming the limit and
//! its key, with nothing changed. The limits checked elsewhere are listed in
//! docs/reliability.md with their tests.

mod common;

use nightshift::access::Actor;
use nightshift::app::open_memory;
use nightshift::config::Config;
use nightshift::error::{ErrorKind, Kind};
use nightshift::memory::{MemoryError, NewEvent, Role};
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::{Cadence, ScheduleError};
use tempfile::TempDir;

fn config(dir: &TempDir, tweak: impl FnOnce(&mut Config)) -> Config {
    let mut config = common::config_in(dir);
    tweak(&mut config);
    config.validate().expect("a valid configuration");
    config
}

/// One JSONL line of exactly `len` bytes (without its newline).
fn line(len: usize) -> String {
    let shape = |n: usize| format!("{{\"role\":\"user\",\"content\":\"{}\"}}", "x".repeat(n));
    let base = shape(0).len();
    let line = shape(len - base);
    assert_eq!(line.len(), len);
    line
}

fn events(n: usize) -> Vec<NewEvent> {
    (0..n)
        .map(|i| NewEvent::new(Role::User, format!("event {i}")))
        .collect()
}

#[tokio::test]
async fn events_per_append_are_capped_at_the_limit() {
    let dir = TempDir::new().unwrap();
    let memory = open_memory(&config(&dir, |c| c.memory.max_batch_events = 5))
        .await
        .unwrap();
    let stored = memory.append("u", "s", &events(5)).await.unwrap();
    assert_eq!(stored, [1, 2, 3, 4, 5], "exactly the limit is stored");

    let err = memory.append("u", "s", &events(6)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput);
    let text = err.to_string();
    assert!(
        text.contains("6 in one append") && text.contains("limit of 5"),
        "{text}"
    );
    assert!(text.contains("memory.max_batch_events"), "{text}");

    // The same through a JSONL import: the line that goes over is named.
    let jsonl = (0..6).map(|_| line(40)).collect::<Vec<_>>().join("\n");
    let err = memory
        .append_jsonl("u", "s", jsonl.as_bytes())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, MemoryError::Jsonl(ref e) if e.line == 6),
        "{text}"
    );
    assert!(text.contains("memory.max_batch_events"), "{text}");
    assert_eq!(
        common::count(&memory, "SELECT count(*) FROM events").await,
        5,
        "nothing of the refused appends was stored"
    );
}

#[tokio::test]
async fn jsonl_input_is_capped_in_bytes_and_per_line() {
    let dir = TempDir::new().unwrap();
    let memory = open_memory(&config(&dir, |c| {
        c.memory.max_import_bytes = 4096;
        c.memory.max_import_line_bytes = 1024;
    }))
    .await
    .unwrap();

    // Lines of exactly the line limit, an input of exactly the input limit.
    let at_limit = format!(
        "{}\n{}\n{}\n{}",
        line(1024),
        line(1024),
        line(1024),
        line(1021)
    );
    assert_eq!(at_limit.len(), 4096);
    let stored = memory
        .append_jsonl("u", "s", at_limit.as_bytes())
        .await
        .unwrap();
    assert_eq!(stored.len(), 4);

    // One byte more in all: refused before a line is read.
    let over = format!("{at_limit}\n");
    let err = memory
        .append_jsonl("u", "s", over.as_bytes())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput);
    let text = err.to_string();
    assert!(
        text.contains("4097 bytes") && text.contains("memory.max_import_bytes"),
        "{text}"
    );

    // One line a byte over the line limit: refused naming its line, the good lines before
    // it not stored either.
    let long_line = format!("{}\n\n{}\n{}", line(100), line(1025), line(100));
    let err = memory
        .append_jsonl("u", "s", long_line.as_bytes())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput);
    let text = err.to_string();
    assert!(
        matches!(err, MemoryError::Jsonl(ref e) if e.line == 3),
        "{text}"
    );
    assert!(
        text.starts_with("line 3:")
            && text.contains("1025 bytes")
            && text.contains("limit of 1024 bytes")
            && text.contains("memory.max_import_line_bytes"),
        "{text}"
    );
    assert_eq!(
        common::count(&memory, "SELECT count(*) FROM events").await,
        4,
        "nothing of the refused inputs was stored"
    );
}

#[tokio::test]
async fn schedules_per_user_are_capped_at_the_limit() {
    let dir = TempDir::new().unwrap();
    let app = common::app_with(&config(&dir, |c| c.scheduler.max_per_user = 2), None).await;
    let store = app.schedules();
    let new = |user: &str| {
        NewSchedule::new(
            user,
            "daily report",
            Cadence::cron("0 9 * * *", "UTC").unwrap(),
        )
    };
    let first = store.create(&Actor::Operator, &new("alice")).await.unwrap();
    let second = store.create(&Actor::Operator, &new("alice")).await.unwrap();
    // A paused schedule still counts.
    store
        .pause(&Actor::Operator, &second.schedule_id, None)
        .await
        .unwrap();

    let err = store
        .create(&Actor::Operator, &new("alice"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ScheduleError::TooMany { limit: 2, .. }),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("scheduler.max_per_user"), "{err}");
    let count = common::count(
        app.memory(),
        "SELECT count(*) FROM schedules WHERE user_id = 'alice'",
    )
    .await;
    assert_eq!(count, 2, "nothing was added");
    // Another user is not affected; a deleted schedule makes room.
    store.create(&Actor::Operator, &new("bob")).await.unwrap();
    store
        .delete(&Actor::Operator, &first.schedule_id)
        .await
        .unwrap();
    store.create(&Actor::Operator, &new("alice")).await.unwrap();
}

/// The limits checked inside a write transaction (notes per user; messages waiting per
/// channel, counted in the statement that writes the message) hold on a libSQL server as
/// on a file.
#[tokio::test]
async fn the_notes_and_outbox_limits_hold_on_a_libsql_server() {
    use nightshift::memory::NewNote;
    use nightshift::notify::outbox::{enqueue_in, NewMessage, Outbox, Priority};

    let Some(sqld) = common::sqld::Sqld::start() else {
        return;
    };
    let mut config = sqld.config();
    config.memory.max_notes_per_user = 2;
    config.validate().unwrap();
    let memory = open_memory(&config).await.unwrap();
    for i in 0..2 {
        memory
            .save_note("alice", &NewNote::new(format!("note {i}")))
            .await
            .unwrap();
    }
    let err = memory
        .save_note("alice", &NewNote::new("note 2"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, MemoryError::TooManyNotes { limit: 2, .. }),
        "{err}"
    );
    assert_eq!(memory.notes("alice").await.unwrap().len(), 2);

    let plan = common::notify_plan("hook", 2);
    let conn = memory.db().conn().await.unwrap();
    let now = memory.clock().now_ms();
    // Four writes, one of them a repeat of the first (its idempotency key).
    for run in ["run-1", "run-2", "run-3", "run-1"] {
        let tx = conn.write_tx().await.unwrap();
        let message = NewMessage {
            kind: "run",
            run_id: Some(run),
            schedule_id: Some("sch-x"),
            user_id: "alice",
            priority: Priority::Normal,
            payload: serde_json::json!({"summary": run}),
        };
        enqueue_in(&tx, &plan, message, now).await.unwrap();
        tx.commit().await.unwrap();
    }
    let outbox = Outbox::new(memory.db().clone());
    let pending = outbox.list(Some("pending"), 10).await.unwrap();
    let dead = outbox.list(Some("dead"), 10).await.unwrap();
    assert_eq!(pending.len(), 2);
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].run_id.as_deref(), Some("run-3"));
    assert!(dead[0]
        .last_error
        .as_deref()
        .unwrap()
        .contains("notify.max_pending_per_channel"));
}
