//! What only the PostgreSQL engine does, on the test cluster (scripts/postgres-cluster.sh):
//! a change made by one process wakes a worker in another at once (LISTEN/NOTIFY), a
//! transaction dropped midway frees the write lock, and a URL or password that cannot be
//! used is refused with a clear error. The rest of the suite runs on PostgreSQL too, with
//! `NIGHTSHIFT_TEST_ENGINE=postgres` (scripts/test.sh does both runs).

mod common;

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::post;
use axum::{Json, Router};
use nightshift::access::Actor;
use nightshift::config::Config;
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::Cadence;
use serde_json::{json, Value};
use tempfile::TempDir;

/// A runtime answering every goal at once, counting the calls.
async fn runtime() -> (String, Arc<Mutex<usize>>) {
    let calls = Arc::new(Mutex::new(0));
    let counted = calls.clone();
    let router = Router::new().route(
        "/goal",
        post(move |Json(_): Json<Value>| {
            let counted = counted.clone();
            async move {
                *counted.lock().unwrap() += 1;
                Json(json!({"output": "done"}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/goal", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (url, calls)
}

/// Waits up to `limit` for `check`, polling.
async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check()
}

/// A worker whose change check is a minute apart runs a schedule another process
/// triggers well before that: the trigger's notification wakes it. (Without it the
/// worker, idle with nothing due, would look again only after the minute.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trigger_from_another_process_wakes_an_idle_worker() {
    let Some(url) = common::postgres::database_or_skip() else {
        return;
    };
    let (runtime_url, calls) = runtime().await;
    let mut config = Config::default();
    config.database.path = url;
    config.runtime.kind = nightshift::config::RuntimeKind::Http;
    config.runtime.url = runtime_url;
    config.scheduler.change_check_ms = 60_000;
    config.consolidation.enabled = false;
    // Two apps, each with connections of its own: the worker's, and the other process's.
    let worker_app = common::app_with(&config, None).await;
    let other = common::app_with(&config, None).await;
    let new = NewSchedule::new(
        "alice",
        "on demand",
        Cadence::Triggered { tz: "UTC".into() },
    );
    let schedule = other
        .schedules()
        .create(&Actor::Operator, &new)
        .await
        .unwrap();

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn({
        let app = worker_app.clone();
        async move {
            nightshift::worker::run(&app, async {
                let _ = stopped.await;
            })
            .await
        }
    });
    // Its first pass, and the one its listener's first connection asks for: after them
    // it is idle, with nothing due for a minute.
    let liveness = worker_app.liveness().clone();
    assert!(
        eventually(Duration::from_secs(20), || liveness.passes() >= 2).await,
        "the worker never made its first passes"
    );
    let passes_before = liveness.passes();

    other
        .schedules()
        .trigger(&Actor::Operator, &schedule.schedule_id, Some("now"), None)
        .await
        .unwrap();
    let ran = eventually(Duration::from_secs(20), || *calls.lock().unwrap() == 1).await;
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
    assert!(
        ran,
        "the triggered run did not start: the worker was not woken (passes {passes_before} \
         before the trigger, {} after)",
        liveness.passes()
    );
}

/// A write transaction dropped without a commit (its task failed or was stopped) rolls
/// back and frees the write lock: the next write goes through, and the dropped one left
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_dropped_midway_rolls_back_and_frees_the_write_lock() {
    let Some(url) = common::postgres::database_or_skip() else {
        return;
    };
    let mut config = Config::default();
    config.database.path = url;
    let app = common::app_with(&config, None).await;
    let db = app.memory().db().clone();
    {
        let conn = db.conn().await.unwrap();
        let tx = conn.write_tx().await.unwrap();
        tx.execute(
            "INSERT INTO calendars (name, dates_json) VALUES ('dropped', '[]')",
            (),
        )
        .await
        .unwrap();
        // Dropped here, inside the transaction.
    }
    let next = tokio::time::timeout(Duration::from_secs(20), async {
        let conn = db.conn().await.unwrap();
        conn.execute(
            "INSERT INTO calendars (name, dates_json) VALUES ('next', '[]')",
            (),
        )
        .await
    })
    .await
    .expect("the next write waited on a lock the dropped transaction kept");
    assert_eq!(next.unwrap(), 1);
    let names: Vec<String> = {
        let conn = db.conn().await.unwrap();
        let mut rows = conn
            .query("SELECT name FROM calendars ORDER BY name", ())
            .await
            .unwrap();
        let mut names = Vec::new();
        while let Some(row) = rows.next().await.unwrap() {
            names.push(row.get(0).unwrap());
        }
        names
    };
    assert_eq!(names, ["next"]);
}

fn nightshift(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nightshift"));
    command
        .args(args)
        .env_remove("NIGHTSHIFT_DB")
        .env_remove("NIGHTSHIFT_CONFIG");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

/// A password written into the URL is refused before anything is opened, and the
/// error does not repeat it: a URL is seen in the process list and in logs.
#[test]
fn a_password_in_the_url_is_refused_without_repeating_it() {
    let out = nightshift(
        &[
            "--db",
            "postgresql://nightshift:hunter2-secret@127.0.0.1:1/db",
            "db",
            "status",
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("password_file"), "{stderr}");
    assert!(
        !stderr.contains("hunter2"),
        "the password was repeated: {stderr}"
    );
}

/// A server that does not answer is a clear error naming it (exit 1, never a panic).
#[test]
fn an_unreachable_server_is_a_clear_error() {
    let out = nightshift(
        &[
            "--db",
            "postgresql://nightshift@127.0.0.1:1/db",
            "db",
            "status",
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot open database postgresql://nightshift@127.0.0.1:1/db"),
        "{stderr}"
    );
}

/// A password variable that is not set, or a password file that cannot be read, is a
/// configuration error naming the setting.
#[test]
fn a_password_that_cannot_be_read_names_its_setting() {
    let dir = TempDir::new().unwrap();
    let config = dir.path().join("nightshift.toml");
    std::fs::write(
        &config,
        "[database]\npath = \"postgresql://nightshift@127.0.0.1:1/db\"\n\
         password_env = \"NIGHTSHIFT_TEST_NO_SUCH_PASSWORD\"\n",
    )
    .unwrap();
    let out = nightshift(&["--config", config.to_str().unwrap(), "db", "status"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("database.password_env names NIGHTSHIFT_TEST_NO_SUCH_PASSWORD"),
        "{stderr}"
    );

    std::fs::write(
        &config,
        "[database]\npath = \"postgresql://nightshift@127.0.0.1:1/db\"\n\
         password_file = \"/nonexistent/password\"\n",
    )
    .unwrap();
    let out = nightshift(&["--config", config.to_str().unwrap(), "db", "status"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("cannot read database.password_file /nonexistent/password"),
        "{stderr}"
    );
}

/// The cluster's TLS certificate (scripts/postgres-cluster.sh makes one).
fn cluster_ca() -> String {
    std::env::var("NIGHTSHIFT_TEST_POSTGRES_CA").expect(
        "NIGHTSHIFT_TEST_POSTGRES_CA names the cluster's certificate: start the cluster \
         with scripts/postgres-cluster.sh",
    )
}

/// The database at `url`, opened as nightshift opens it (not migrated).
async fn open(url: &str) -> nightshift::db::Db {
    let target = nightshift::db::DbTarget::parse(url).unwrap();
    nightshift::db::Db::open(&target, Default::default())
        .await
        .unwrap()
}

/// Whether the connection `url` opens is encrypted, as the server sees it.
async fn encrypted(url: &str) -> i64 {
    let db = open(url).await;
    let conn = db.conn().await.unwrap();
    nightshift::db::query_scalar::<i64>(
        &conn,
        "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
        (),
    )
    .await
    .unwrap()
    .expect("pg_stat_ssl has a row for each connection")
}

/// `sslmode=verify-full` with the server's CA as `sslrootcert` (libpq's way, as a managed
/// offering's URL writes it) encrypts every connection; without it, none is.
#[tokio::test]
async fn a_url_asking_for_tls_gets_an_encrypted_connection() {
    let Some(url) = common::postgres::database_or_skip() else {
        return;
    };
    let ca = cluster_ca();
    let ca = percent_encoding::utf8_percent_encode(&ca, percent_encoding::NON_ALPHANUMERIC);
    let tls_url = format!("{url}?sslmode=verify-full&sslrootcert={ca}");
    assert_eq!(encrypted(&tls_url).await, 1, "{tls_url}");
    assert_eq!(encrypted(&url).await, 0, "{url}");
}

/// A server whose certificate nobody named vouches for (here: one it made itself, checked
/// against the system's roots) is refused, saying so, before anything is sent to it.
#[test]
fn a_certificate_nobody_vouched_for_is_refused() {
    let Some(url) = common::postgres::database_or_skip() else {
        return;
    };
    let out = nightshift(
        &["--db", &format!("{url}?sslmode=require"), "db", "status"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot open database"), "{stderr}");
    assert!(stderr.to_lowercase().contains("certificate"), "{stderr}");
}

/// A URL that names no host, or a TLS option nightshift does not offer, is a
/// configuration error naming what is wrong (exit 4), not the driver's words.
#[test]
fn a_postgres_url_missing_its_host_or_asking_too_much_is_named() {
    for (url, says) in [
        ("postgres://", "names no host"),
        (
            "postgresql://u@127.0.0.1:1/db?sslmode=require&sslcert=/c.pem",
            "client certificates are not supported",
        ),
        (
            "postgresql://u@127.0.0.1:1/db?sslmode=maybe",
            "sslmode `maybe`",
        ),
    ] {
        let out = nightshift(&["--db", url, "db", "status"], &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{url}: {stderr}");
        assert!(stderr.contains(says), "{url}: {stderr}");
    }
}

/// A throwaway cluster of its own (scripts/postgres-cluster.sh), for a test that stops
/// the server; removed when dropped.
struct OwnCluster {
    url: String,
    dir: String,
    _scratch: TempDir,
}

const CLUSTER_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/postgres-cluster.sh");

impl OwnCluster {
    fn start() -> Self {
        let scratch = TempDir::new().unwrap();
        // TMPDIR: the script's note of its current cluster stays the suite's.
        let out = Command::new(CLUSTER_SCRIPT)
            .arg("start")
            .env("TMPDIR", scratch.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let value = |name: &str| {
            stdout
                .lines()
                .find_map(|line| line.strip_prefix(&format!("export {name}='")))
                .and_then(|rest| rest.strip_suffix('\''))
                .unwrap_or_else(|| panic!("{name} not in {stdout}"))
                .to_string()
        };
        Self {
            url: value("NIGHTSHIFT_TEST_POSTGRES_URL"),
            dir: value("NIGHTSHIFT_TEST_POSTGRES_DIR"),
            _scratch: scratch,
        }
    }

    fn server(&self, what: &str) {
        let out = Command::new(CLUSTER_SCRIPT)
            .args([what, &self.dir])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = Command::new(CLUSTER_SCRIPT)
            .args(["stop", &self.dir])
            .output();
    }
}

/// A command started while the server is down (restarting, failing over) asks again until
/// it is back, and goes through, rather than failing at once; the write is there after.
#[test]
fn a_command_started_while_the_server_is_down_waits_for_it() {
    if common::postgres::database_or_skip().is_none() {
        return;
    }
    let cluster = OwnCluster::start();
    let db = ["--db", cluster.url.as_str()];
    let migrated = nightshift(&[&db[..], &["db", "migrate"]].concat(), &[]);
    assert!(migrated.status.success(), "{migrated:?}");

    cluster.server("down");
    let add = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .args(db)
        .args([
            "--json",
            "schedule",
            "add",
            "--user",
            "u",
            "--goal",
            "while down",
        ])
        .args(["--every", "1h"])
        .env_remove("NIGHTSHIFT_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The command is under way, finding no server, before it comes back.
    std::thread::sleep(Duration::from_millis(1500));
    cluster.server("up");
    let out = add.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let added: Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed = nightshift(
        &[&db[..], &["--json", "schedule", "list", "--user", "u"]].concat(),
        &[],
    );
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains(added["schedule_id"].as_str().unwrap()),
        "{listed}"
    );
}

/// On PostgreSQL a worker's outbox claim locks the messages it takes (`FOR UPDATE SKIP
/// LOCKED`) rather than taking the write lock: it goes on while another writer holds
/// that lock, and a second claim meanwhile takes none of the first claim's messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_claims_lock_their_own_messages_and_wait_for_no_writer() {
    use nightshift::notify::outbox::{enqueue_in, NewMessage, Outbox, Priority};
    let Some(url) = common::postgres::database_or_skip() else {
        return;
    };
    let db = open(&url).await;
    nightshift::db::migrate::migrate(&db).await.unwrap();
    let plan = common::notify_plan("hook", 10_000);
    let now = 1_000_000;
    let conn = db.conn().await.unwrap();
    let tx = conn.write_tx().await.unwrap();
    for i in 0..10 {
        let message = NewMessage {
            kind: "run",
            run_id: Some(&format!("run-{i}")),
            schedule_id: Some("sch-x"),
            user_id: "u",
            priority: Priority::Normal,
            payload: json!({"summary": format!("message {i}")}),
        };
        enqueue_in(&tx, &plan, message, now).await.unwrap();
    }
    tx.commit().await.unwrap();
    drop(conn);

    let holder = common::postgres::WriteLockHolder::hold(&url).await;
    let outbox = Outbox::new(db.clone());
    let first = tokio::time::timeout(
        Duration::from_secs(20),
        outbox.claim_due("worker-a", now, 60_000, 4),
    )
    .await
    .expect("the claim waited behind the writer holding the write lock")
    .unwrap();
    let second = outbox
        .claim_due("worker-b", now, 60_000, 100)
        .await
        .unwrap();
    holder.release().await;
    assert_eq!(first.len(), 4);
    assert_eq!(second.len(), 6, "the second claim takes the rest");
    let taken: std::collections::HashSet<_> = first
        .iter()
        .chain(&second)
        .map(|m| m.message_id.clone())
        .collect();
    assert_eq!(taken.len(), 10, "a message was claimed twice");
}

/// PostgreSQL aborts a transaction at its first failed statement and answers its COMMIT
/// with a silent ROLLBACK: the commit is refused, saying so, and nothing of it is
/// stored. A second transaction begun on a connection already in one is refused, as
/// SQLite refuses it (PostgreSQL would only warn, and end the first halfway).
#[tokio::test]
async fn a_transaction_with_a_failed_statement_is_not_reported_committed() {
    let Some(url) = common::postgres::database_or_skip() else {
        return;
    };
    let db = open(&url).await;
    let conn = db.conn().await.unwrap();
    conn.execute("CREATE TABLE probe (x BIGINT NOT NULL)", ())
        .await
        .unwrap();

    let tx = conn.write_tx().await.unwrap();
    assert!(
        conn.write_tx().await.is_err(),
        "a nested transaction was begun"
    );
    tx.execute("INSERT INTO probe VALUES (1)", ())
        .await
        .unwrap();
    assert!(tx
        .execute("INSERT INTO probe VALUES (NULL)", ())
        .await
        .is_err());
    let err = tx
        .commit()
        .await
        .expect_err("the commit of an aborted transaction");
    assert!(err.to_string().contains("rolled back"), "{err}");
    let stored = nightshift::db::query_scalar::<i64>(&conn, "SELECT count(*) FROM probe", ())
        .await
        .unwrap();
    assert_eq!(stored, Some(0));

    // The connection goes on as new.
    let tx = conn.write_tx().await.unwrap();
    tx.execute("INSERT INTO probe VALUES (2)", ())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let stored = nightshift::db::query_scalar::<i64>(&conn, "SELECT count(*) FROM probe", ())
        .await
        .unwrap();
    assert_eq!(stored, Some(1));
}

/// A schedule's claim locks that schedule's row alone: it goes through while another
/// process holds the write lock, passes over (without waiting) a schedule whose row
/// another transaction holds, and moves no change counter, so it wakes no other worker
/// (a change made by a person still does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_claims_lock_their_own_row_and_wait_for_no_writer() {
    use nightshift::db::clock::{Clock, ManualClock};
    let Some(url) = common::postgres::database_or_skip() else {
        return;
    };
    let mut config = Config::default();
    config.database.path = url.clone();
    config.consolidation.enabled = false;
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let app = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    let store = app.schedules();
    let spec = nightshift::spec::ScheduleSpec {
        goal: "check the queue".into(),
        every: Some("1m".into()),
        ..Default::default()
    };
    let mut ids = Vec::new();
    for _ in 0..2 {
        let s = app
            .add_schedule(&Actor::Operator, "alice", &spec)
            .await
            .unwrap();
        ids.push(s.schedule_id);
    }
    clock.advance_ms(61_000);
    let due = |id: &str| {
        let id = id.to_string();
        let store = store.clone();
        async move { store.get(&Actor::Operator, &id).await.unwrap() }
    };
    let version_before = store.version().await.unwrap();

    // Another process holds the write lock: the claim does not wait for it.
    let holder = common::postgres::WriteLockHolder::hold(&url).await;
    let first = tokio::time::timeout(
        Duration::from_secs(20),
        store.claim(&due(&ids[0]).await, "worker-a", 60_000),
    )
    .await
    .expect("the claim waited behind the writer holding the write lock")
    .unwrap();
    holder.release().await;
    let first = first.expect("the due occurrence is claimed");
    assert_eq!(first.schedule.schedule_id, ids[0]);
    assert_eq!(
        store.version().await.unwrap(),
        version_before,
        "a claim moved the schedules' change counter"
    );

    // Another transaction holds the second schedule's row: passed over at once, and
    // claimed once it lets go.
    let (row_holder, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    row_holder
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM schedules WHERE schedule_id = '{}' FOR UPDATE",
            ids[1]
        ))
        .await
        .unwrap();
    let seen = due(&ids[1]).await;
    let passed = tokio::time::timeout(
        Duration::from_secs(20),
        store.claim(&seen, "worker-b", 60_000),
    )
    .await
    .expect("the claim waited for a row another transaction holds")
    .unwrap();
    assert!(passed.is_none(), "claimed a schedule whose row was held");
    row_holder.batch_execute("ROLLBACK").await.unwrap();
    let second = store.claim(&seen, "worker-b", 60_000).await.unwrap();
    assert!(second.is_some(), "not claimed once its row was let go");
    // Claimed once: the same occurrence again finds it taken.
    assert!(store
        .claim(&seen, "worker-c", 60_000)
        .await
        .unwrap()
        .is_none());

    // A person's change still tells the workers.
    store.pause(&Actor::Operator, &ids[0], None).await.unwrap();
    assert!(store.version().await.unwrap() > version_before);
}
