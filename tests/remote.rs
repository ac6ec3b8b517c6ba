//! The same memory and scheduler code against a real libSQL server (the sqld binary
//! `NIGHTSHIFT_TEST_SQLD` names; skipped without one) on 127.0.0.1.

mod common;

use common::sqld::Sqld;

use nightshift::access::Actor;
use nightshift::app::open_memory;
use nightshift::config::Config;
use nightshift::db::DbTarget;
use nightshift::memory::{MemoryError, NewEvent, NewNote, Role, SearchRequest};
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::Cadence;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_schedules_work_against_a_libsql_server() {
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let config = sqld.config();
    assert!(matches!(
        DbTarget::parse(&sqld.url).unwrap(),
        DbTarget::Remote { .. }
    ));
    let memory = open_memory(&config).await.unwrap();
    // Migrating again is a no-op.
    assert_eq!(
        nightshift::db::migrate::migrate(memory.db()).await.unwrap(),
        0
    );

    let saved = memory
        .save_note("alice", &NewNote::new("Alice keeps bees in Porto"))
        .await
        .unwrap();
    memory
        .append(
            "alice",
            "chat",
            &[NewEvent::new(
                Role::User,
                "the hive inspection is on saturday",
            )],
        )
        .await
        .unwrap();
    let hits = memory
        .search(&SearchRequest {
            user_id: "alice".into(),
            query: "bees hive".into(),
            session_id: Some("chat".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(hits.len(), 2, "{hits:?}");
    // Isolation holds on the server too.
    assert!(matches!(
        memory.delete_note("bob", &saved.note_id).await,
        Err(MemoryError::NoteNotFound(_))
    ));
    // Bob's session of the same id is his own.
    assert_eq!(
        memory
            .append("bob", "chat", &[NewEvent::new(Role::User, "x")])
            .await
            .unwrap(),
        [1]
    );
    // Forgetting cascades through the server's foreign keys, to alice's session only.
    memory
        .forget(&Actor::user("alice").unwrap(), "chat")
        .await
        .unwrap();
    assert_eq!(
        common::count(&memory, "SELECT count(*) FROM events").await,
        1
    );
    assert_eq!(
        memory
            .recall(&Actor::user("bob").unwrap(), "chat", 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        common::count(
            &memory,
            "SELECT count(*) FROM chunks WHERE session_id = 'alice\u{1f}chat'"
        )
        .await,
        0
    );
    assert_eq!(
        common::count(
            &memory,
            "SELECT count(*) FROM chunk_vectors WHERE session_id = 'alice\u{1f}chat'"
        )
        .await,
        0
    );

    // Concurrent appends: unique, consecutive sequences.
    let mut tasks = Vec::new();
    for i in 0..10 {
        let memory = memory.clone();
        tasks.push(tokio::spawn(async move {
            memory
                .append(
                    "alice",
                    "busy",
                    &[NewEvent::new(Role::User, format!("message {i}"))],
                )
                .await
                .unwrap()
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let events = memory.recall(&Actor::Operator, "busy", 100).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        (1..=10).collect::<Vec<_>>()
    );

    // A schedule is claimed once.
    let store = common::app_with(&config, None).await.schedules().clone();
    let schedule = store
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "alice",
                "check the hives",
                Cadence::cron("0 9 * * *", "UTC").unwrap(),
            ),
        )
        .await
        .unwrap();
    let due = store
        .run_now(&Actor::Operator, &schedule.schedule_id)
        .await
        .unwrap();
    let first = store.claim(&due, "w1", 60_000).await.unwrap();
    let second = store.claim(&due, "w2", 60_000).await.unwrap();
    assert!(first.is_some() && second.is_none());
}

#[tokio::test]
async fn an_unreachable_server_or_unknown_scheme_is_a_clear_error() {
    // A port held but not listening: a connection to it is refused (a port let go could be
    // taken by another test meanwhile).
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = held.local_addr().unwrap().port();
    let mut config = Config::default();
    config.database.path = format!("http://127.0.0.1:{port}");
    let err = open_memory(&config).await.err().unwrap().to_string();
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    let err = DbTarget::parse("mysql://x").unwrap_err().to_string();
    assert!(err.contains("mysql://"), "{err}");
}

/// A JWT for sqld: EdDSA over `{"a": "rw"}`, signed with `key`.
fn jwt(key: &ed25519_dalek::SigningKey) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use ed25519_dalek::Signer;
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"EdDSA","typ":"JWT"}"#);
    let claims = URL_SAFE_NO_PAD.encode(r#"{"a":"rw"}"#);
    let signed = format!("{header}.{claims}");
    let signature = URL_SAFE_NO_PAD.encode(key.sign(signed.as_bytes()).to_bytes());
    format!("{signed}.{signature}")
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_an_authentication_error_and_writes_nothing() {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let dir = tempfile::TempDir::new().unwrap();
    let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
    let key_file = dir.path().join("jwt.key");
    std::fs::write(
        &key_file,
        URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes()),
    )
    .unwrap();
    let Some(sqld) =
        Sqld::start_with_env(&[("SQLD_AUTH_JWT_KEY_FILE", key_file.to_str().unwrap())])
    else {
        return;
    };
    let open = |token: Option<String>| {
        let url = sqld.url.clone();
        async move {
            let target = DbTarget::parse(&url).unwrap().with_auth_token(token);
            nightshift::db::Db::open(&target, nightshift::db::DbOptions::default()).await
        }
    };
    let impostor = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    for token in [None, Some(jwt(&impostor)), Some("not-a-jwt".to_string())] {
        let err = open(token.clone())
            .await
            .err()
            .expect("refused")
            .to_string();
        assert!(
            err.contains("authentication") && err.contains(&sqld.url),
            "{token:?}: {err}"
        );
    }
    // The right token opens it, and finds that nothing was written before.
    let db = open(Some(jwt(&key))).await.unwrap();
    let conn = db.conn().await.unwrap();
    let tables: i64 = nightshift::db::query_scalar(&conn, "SELECT count(*) FROM sqlite_master", ())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tables, 0);
    nightshift::db::migrate::migrate(&db).await.unwrap();
}

/// A runtime whose first answer waits until the test lets it go; counts calls per run.
#[derive(Default)]
struct HeldRuntime {
    calls: std::sync::Mutex<Vec<String>>,
    release: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl nightshift::runtime::AgentRuntime for HeldRuntime {
    async fn run_goal(
        &self,
        request: &nightshift::runtime::GoalRequest,
        _memory: &nightshift::memory::Memory,
    ) -> nightshift::runtime::GoalOutcome {
        self.calls.lock().unwrap().push(request.run_id.clone());
        self.release.notified().await;
        nightshift::runtime::GoalOutcome {
            output: "report written".into(),
            ..Default::default()
        }
    }
}

/// A worker in this process with `runtime`, until the sender fires (or is dropped).
fn spawn_worker(
    config: &Config,
    runtime: std::sync::Arc<HeldRuntime>,
    worker_id: Option<&str>,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), nightshift::worker::WorkerError>>,
) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let config = config.clone();
    let parts = nightshift::worker::WorkerParts {
        runtime: Some(runtime),
        worker_id: worker_id.map(str::to_string),
    };
    let worker = tokio::spawn(async move {
        let app = nightshift::app::App::open(&config)
            .await
            .map_err(nightshift::worker::WorkerError::from)?;
        nightshift::worker::run_with(&app, parts, async {
            let _ = stopped.await;
        })
        .await
    });
    (stop, worker)
}

/// Waits, a bounded number of polls, until the runtime has been called.
async fn wait_for_a_call(runtime: &HeldRuntime) {
    for _ in 0..200 {
        if !runtime.calls.lock().unwrap().is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The server goes away while a run is in flight and stays away longer than the lease:
/// the worker keeps the run's result, does not exit, records it once the server is back,
/// and nobody runs the occurrence again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_finished_while_the_server_is_away_is_recorded_when_it_returns_and_runs_once() {
    let data = tempfile::TempDir::new().unwrap();
    let data_dir = data.path().display().to_string();
    let Some(sqld) = Sqld::start_with(&[], &["-d", &data_dir]) else {
        return;
    };
    let port = sqld.url.rsplit(':').next().unwrap().to_string();
    let mut config = sqld.config();
    config.scheduler.lease_secs = 2;
    config.scheduler.change_check_ms = 100;
    config.consolidation.enabled = false;
    let app = common::app_with(&config, None).await;
    let memory = app.memory().clone();
    let store = app.schedules().clone();
    let schedule = store
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "u",
                "write the report",
                Cadence::Interval {
                    every_secs: 3600,
                    anchor: memory.clock().now_ms() + 3_600_000,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap();
    store
        .run_now(&Actor::Operator, &schedule.schedule_id)
        .await
        .unwrap();

    let runtime = std::sync::Arc::new(HeldRuntime::default());
    let (stop, worker) = spawn_worker(&config, runtime.clone(), Some("wrk-survivor"));
    wait_for_a_call(&runtime).await;
    assert_eq!(
        runtime.calls.lock().unwrap().len(),
        1,
        "the run never started"
    );

    sqld.stop();
    runtime.release.notify_one();
    // Away for three leases: the worker's lease runs out meanwhile.
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    assert!(
        !worker.is_finished(),
        "the worker exited while the server was away"
    );
    let back =
        Sqld::start_with(&[], &["-d", &data_dir, "-p", &port]).expect("the sqld that ran before");

    let mut recorded = None;
    for _ in 0..300 {
        let runs = store
            .runs(&Actor::Operator, &schedule.schedule_id, 10)
            .await
            .unwrap_or_default();
        if let Some(run) = runs.first().filter(|r| r.status.as_str() == "succeeded") {
            recorded = Some(run.clone());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let run = recorded.expect("the run's result was never recorded");
    assert_eq!(run.attempt, 1, "the occurrence was run again: {run:?}");
    assert_eq!(run.output_summary.as_deref(), Some("report written"));
    assert_eq!(
        *runtime.calls.lock().unwrap(),
        vec![run.run_id.clone()],
        "the runtime saw the occurrence more than once"
    );
    stop.send(()).unwrap();
    worker.await.unwrap().unwrap();
    drop(back);
}

/// The server stops answering (SIGSTOP: connections open, no replies) just as the worker is
/// told to stop: the worker does not hang in its last writes, it exits with an error that
/// says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_server_stops_answering_still_exits_and_says_why() {
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let mut config = sqld.config();
    config.scheduler.shutdown_grace_secs = 1;
    config.consolidation.enabled = false;
    let app = common::app_with(&config, None).await;
    let memory = app.memory().clone();
    let store = app.schedules().clone();
    let schedule = store
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "u",
                "write the report",
                Cadence::Interval {
                    every_secs: 3600,
                    anchor: memory.clock().now_ms() + 3_600_000,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap();
    store
        .run_now(&Actor::Operator, &schedule.schedule_id)
        .await
        .unwrap();

    let runtime = std::sync::Arc::new(HeldRuntime::default());
    let (stop, worker) = spawn_worker(&config, runtime.clone(), None);
    wait_for_a_call(&runtime).await;
    assert_eq!(
        runtime.calls.lock().unwrap().len(),
        1,
        "the run never started"
    );

    let signal = |name: &str| {
        std::process::Command::new("kill")
            .args([name, &sqld.pid])
            .status()
            .unwrap()
    };
    assert!(signal("-STOP").success());
    stop.send(()).unwrap();
    // Bounded: the grace period, then at most two bounded last steps.
    let exited = tokio::time::timeout(std::time::Duration::from_secs(90), worker).await;
    signal("-CONT");
    let result = exited.expect("the worker hung on a server that does not answer");
    let err = result.unwrap().expect_err("a stalled shutdown is an error");
    assert!(
        matches!(err, nightshift::worker::WorkerError::ShutdownStalled { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("did not answer"), "{err}");
}

/// An embedded replica: search is served from a local file, writes go to the server; a
/// process reads its own writes at once and finds another process's after a sync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_replica_reads_its_own_writes_and_finds_others_after_a_sync() {
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let dir = tempfile::TempDir::new().unwrap();
    let replica_path = dir.path().join("replica").join("nightshift.db");
    let mut config = sqld.config();
    config.database.replica_path = Some(replica_path.display().to_string());
    let replica = open_memory(&config).await.unwrap();
    assert!(matches!(replica.db().target(), DbTarget::Replica { .. }));
    assert!(replica_path.exists(), "the replica is a local file");

    // Its own write: found at once, by this process.
    replica
        .save_note("alice", &NewNote::new("Alice keeps bees in Porto"))
        .await
        .unwrap();
    let search = |user: &str, query: &str| SearchRequest {
        user_id: user.into(),
        query: query.into(),
        ..Default::default()
    };
    let hits = replica.search(&search("alice", "bees")).await.unwrap();
    assert_eq!(hits.len(), 1, "read-your-writes: {hits:?}");

    // The write reached the server: another process, without a replica, sees it.
    let other = open_memory(&sqld.config()).await.unwrap();
    let hits = other.search(&search("alice", "bees")).await.unwrap();
    assert_eq!(hits.len(), 1, "the write went to the server: {hits:?}");

    // Another process's write: found through the replica after a sync (1 s by default).
    other
        .append(
            "alice",
            "chat",
            &[NewEvent::new(
                Role::User,
                "the hive inspection is on saturday",
            )],
        )
        .await
        .unwrap();
    // (The session is looked up first: until the sync it does not exist here.)
    let in_chat = SearchRequest {
        session_id: Some("chat".into()),
        ..search("alice", "inspection")
    };
    let mut found = Vec::new();
    for _ in 0..100 {
        found = replica.search(&in_chat).await.unwrap_or_default();
        if !found.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        found.len(),
        1,
        "another worker's event never reached the replica"
    );
    // And never for another user.
    let theirs = replica
        .search(&search("bob", "inspection bees"))
        .await
        .unwrap();
    assert!(theirs.is_empty(), "{theirs:?}");
    let not_theirs = replica
        .search(&SearchRequest {
            session_id: Some("chat".into()),
            ..search("bob", "inspection")
        })
        .await;
    assert!(
        matches!(not_theirs, Err(MemoryError::SessionNotFound(_))),
        "{not_theirs:?}"
    );
}

#[test]
fn a_replica_needs_a_server_url() {
    let err = DbTarget::parse("data/nightshift.db")
        .unwrap()
        .with_replica(Some("replica.db"), std::time::Duration::from_secs(1))
        .unwrap_err();
    assert!(err.to_string().contains("replica_path"), "{err}");
}

/// A worker reading through an embedded replica picks up a run requested by another
/// process (plain remote, as the CLI would be) and records it on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_on_a_replica_runs_what_another_process_asks_for() {
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = sqld.config();
    config.database.replica_path = Some(dir.path().join("replica.db").display().to_string());
    config.scheduler.change_check_ms = 100;
    config.consolidation.enabled = false;

    let runtime = std::sync::Arc::new(HeldRuntime::default());
    runtime.release.notify_one();
    let (stop, worker) = spawn_worker(&config, runtime.clone(), None);

    // The other process: no replica.
    let cli_config = sqld.config();
    let app = common::app_with(&cli_config, None).await;
    let memory = app.memory().clone();
    let store = app.schedules().clone();
    let schedule = store
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "u",
                "write the report",
                Cadence::Interval {
                    every_secs: 3600,
                    anchor: memory.clock().now_ms() + 3_600_000,
                    tz: "UTC".into(),
                },
            ),
        )
        .await
        .unwrap();
    store
        .run_now(&Actor::Operator, &schedule.schedule_id)
        .await
        .unwrap();

    let mut recorded = None;
    for _ in 0..200 {
        let runs = store
            .runs(&Actor::Operator, &schedule.schedule_id, 10)
            .await
            .unwrap();
        if let Some(run) = runs.first().filter(|r| r.status.as_str() == "succeeded") {
            recorded = Some(run.clone());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let run = recorded.expect("the worker on the replica never ran it");
    assert_eq!(run.output_summary.as_deref(), Some("report written"));
    assert_eq!(*runtime.calls.lock().unwrap(), vec![run.run_id.clone()]);
    stop.send(()).unwrap();
    worker.await.unwrap().unwrap();
}

/// The CLI against a server, directly and through an embedded replica: the same commands,
/// the same answers.
#[test]
fn the_cli_works_against_a_server_directly_and_through_a_replica() {
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let dir = tempfile::TempDir::new().unwrap();
    let replica_config = dir.path().join("replica.toml");
    std::fs::write(
        &replica_config,
        format!(
            "[database]\nurl = \"{}\"\nreplica_path = \"{}\"\n",
            sqld.url,
            dir.path().join("replica.db").display()
        ),
    )
    .unwrap();
    let nightshift = |via_replica: bool, args: &[&str]| -> serde_json::Value {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_nightshift"));
        command.env("NIGHTSHIFT_LISTEN", "127.0.0.1:0");
        command.current_dir(dir.path()).arg("--json");
        if via_replica {
            command.arg("--config").arg(&replica_config);
            command.env_remove("NIGHTSHIFT_DB");
        } else {
            command.env("NIGHTSHIFT_DB", &sqld.url);
        }
        let out = command.args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?} (replica: {via_replica}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    for via_replica in [false, true] {
        let user = if via_replica { "rita" } else { "remo" };
        let migrated = nightshift(via_replica, &["db", "migrate"]);
        // Migrated once, by the first mode; the replica finds nothing left to do.
        let applied = migrated["applied"].as_i64().unwrap();
        assert_eq!(applied == 0, via_replica, "{migrated}");
        nightshift(
            via_replica,
            &["memory", "save", "--user", user, "keeps bees in Porto"],
        );
        let found = nightshift(via_replica, &["memory", "search", "--user", user, "bees"]);
        assert_eq!(found["hits"].as_array().unwrap().len(), 1, "{found}");
        let added = nightshift(
            via_replica,
            &[
                "schedule",
                "add",
                "--user",
                user,
                "--goal",
                "check the hives",
                "--every",
                "1h",
            ],
        );
        let id = added["schedule_id"].as_str().unwrap().to_string();
        let listed = nightshift(via_replica, &["schedule", "list", "--user", user]);
        assert_eq!(listed["schedules"].as_array().unwrap().len(), 1, "{listed}");
        let shown = nightshift(via_replica, &["schedule", "run-now", &id]);
        assert_eq!(shown["schedule_id"], id.as_str());
        let status = nightshift(via_replica, &["db", "status"]);
        assert!(status["schema_version"].as_i64().unwrap() > 0, "{status}");
        nightshift(via_replica, &["workers"]);
    }
    // Each mode saw the other's writes: one server.
    let found = nightshift(true, &["memory", "search", "--user", "remo", "bees"]);
    assert_eq!(found["hits"].as_array().unwrap().len(), 1, "{found}");
}

/// A write transaction dropped unfinished (a task that failed between BEGIN and COMMIT)
/// keeps nothing, on a server as on a file: the connection it ran on takes its next
/// statement on its own, and another writer gets the write lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_transaction_dropped_unfinished_keeps_nothing_and_holds_no_lock() {
    use nightshift::db::{Db, DbOptions};
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("tx.db").display().to_string();
    for location in [sqld.url.clone(), file] {
        let db = Db::open(&DbTarget::parse(&location).unwrap(), DbOptions::default())
            .await
            .unwrap();
        let conn = db.conn().await.unwrap();
        conn.execute("CREATE TABLE t (v TEXT)", ()).await.unwrap();
        {
            let tx = conn.write_tx().await.unwrap();
            tx.execute("INSERT INTO t VALUES ('dropped')", ())
                .await
                .unwrap();
            let seen: Option<i64> = nightshift::db::query_scalar(&tx, "SELECT count(*) FROM t", ())
                .await
                .unwrap();
            assert_eq!(
                seen,
                Some(1),
                "{location}: a transaction reads its own write"
            );
        }
        conn.execute("INSERT INTO t VALUES ('kept')", ())
            .await
            .unwrap();
        let other = db.conn().await.unwrap();
        // A bound on the wait, not a speed check: a lock left held would hang here.
        let tx = tokio::time::timeout(std::time::Duration::from_secs(60), other.write_tx())
            .await
            .unwrap_or_else(|_| panic!("{location}: the write lock was left held"))
            .unwrap();
        tx.execute("INSERT INTO t VALUES ('other')", ())
            .await
            .unwrap();
        tx.commit().await.unwrap();
        drop((conn, other));
        let conn = db.conn().await.unwrap();
        let mut rows = conn.query("SELECT v FROM t ORDER BY v", ()).await.unwrap();
        let mut values = Vec::new();
        while let Some(row) = rows.next().await.unwrap() {
            values.push(row.get::<String>(0).unwrap());
        }
        assert_eq!(values, ["kept", "other"], "{location}");
    }
}

/// A write transaction that failed partway and was rolled back keeps nothing of its
/// own, and the transactions after it work as before, with the statements the earlier
/// ones ran (on a server they run on one connection, kept between transactions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_transaction_that_failed_leaves_the_next_ones_working() {
    use nightshift::db::{query_scalar, Db, DbOptions};
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("tx.db").display().to_string();
    for location in [sqld.url.clone(), file] {
        let db = Db::open(&DbTarget::parse(&location).unwrap(), DbOptions::default())
            .await
            .unwrap();
        let conn = db.conn().await.unwrap();
        conn.execute("CREATE TABLE t (v TEXT UNIQUE)", ())
            .await
            .unwrap();
        let insert = "INSERT INTO t (v) VALUES (?1) RETURNING v";
        let count = "SELECT count(*) FROM t";
        let tx = conn.write_tx().await.unwrap();
        let kept: Option<String> = query_scalar(&tx, insert, ["a"]).await.unwrap();
        assert_eq!(kept.as_deref(), Some("a"), "{location}");
        tx.commit().await.unwrap();

        let tx = conn.write_tx().await.unwrap();
        let written: Option<String> = query_scalar(&tx, insert, ["b"]).await.unwrap();
        assert_eq!(written.as_deref(), Some("b"), "{location}");
        let duplicate = query_scalar::<String>(&tx, insert, ["a"]).await;
        assert!(
            duplicate.is_err(),
            "{location}: a second `a` breaks the UNIQUE constraint"
        );
        tx.rollback().await.unwrap();

        let tx = conn.write_tx().await.unwrap();
        let seen: Option<i64> = query_scalar(&tx, count, ()).await.unwrap();
        assert_eq!(seen, Some(1), "{location}: the rolled-back `b` is gone");
        let written: Option<String> = query_scalar(&tx, insert, ["c"]).await.unwrap();
        assert_eq!(written.as_deref(), Some("c"), "{location}");
        tx.commit().await.unwrap();

        let other = db.conn().await.unwrap();
        let mut rows = other.query("SELECT v FROM t ORDER BY v", ()).await.unwrap();
        let mut values = Vec::new();
        while let Some(row) = rows.next().await.unwrap() {
            values.push(row.get::<String>(0).unwrap());
        }
        assert_eq!(values, ["a", "c"], "{location}");
    }
}

/// A task may hold a connection while it waits on something else (its turn to write, an
/// agent's answer). sqld ends a stream idle for 10 s, and a connection that carried on
/// with the ended stream would fail with `STREAM_EXPIRED`: a held connection, and a pooled
/// one taken later, carry on on a new stream. The wait is real: sqld's clock cannot be
/// paused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_idle_longer_than_the_server_keeps_a_stream_still_works() {
    use nightshift::db::{query_scalar, Db, DbOptions};
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let db = Db::open(&DbTarget::parse(&sqld.url).unwrap(), DbOptions::default())
        .await
        .unwrap();
    let held = db.conn().await.unwrap();
    held.execute("CREATE TABLE t (v INTEGER)", ())
        .await
        .unwrap();
    let pooled = db.conn().await.unwrap();
    let one: Option<i64> = query_scalar(&pooled, "SELECT 1", ()).await.unwrap();
    assert_eq!(one, Some(1));
    drop(pooled);
    let count = "SELECT count(*) FROM t";
    let seen: Option<i64> = query_scalar(&held, count, ()).await.unwrap();
    assert_eq!(seen, Some(0));
    // The connection write transactions run on, with a statement described inside one.
    let tx = held.write_tx().await.unwrap();
    let seen: Option<i64> = query_scalar(&tx, count, ()).await.unwrap();
    assert_eq!(seen, Some(0));
    tx.commit().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(12)).await;
    let tx = held
        .write_tx()
        .await
        .expect("a transaction begun past the server's stream expiry");
    let seen: Option<i64> = query_scalar(&tx, count, ())
        .await
        .expect("a read in a transaction begun past the server's stream expiry");
    assert_eq!(seen, Some(0));
    tx.rollback().await.unwrap();
    let seen: Option<i64> = query_scalar(&held, count, ())
        .await
        .expect("a read on a connection held past the server's stream expiry");
    assert_eq!(seen, Some(0));
    held.execute("INSERT INTO t VALUES (1)", ())
        .await
        .expect("a write on a connection held past the server's stream expiry");
    let seen: Option<i64> = query_scalar(&held, count, ()).await.unwrap();
    assert_eq!(seen, Some(1));
    drop(held);
    tokio::time::sleep(std::time::Duration::from_secs(12)).await;
    let taken = db.conn().await.unwrap();
    let seen: Option<i64> = query_scalar(&taken, count, ())
        .await
        .expect("a read on a pooled connection idle past the server's stream expiry");
    assert_eq!(seen, Some(1));
}

/// A session keeps each chunk text once: repeated text, in one append or a later one,
/// moves the stored chunk's last sequence on instead of storing it again. The same on a
/// server (where an append's rows go in a few multi-row statements) as on a file, and for
/// appends of more rows than one statement carries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_text_is_one_chunk_on_a_server_as_on_a_file() {
    use nightshift::db::query_scalar;
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("chunks.db").display().to_string();
    for location in [sqld.url.clone(), file] {
        let mut config = Config::default();
        config.database.path = location.clone();
        let memory = open_memory(&config).await.unwrap();
        let said = |texts: &[&str]| -> Vec<NewEvent> {
            texts
                .iter()
                .map(|t| NewEvent::new(Role::User, *t))
                .collect()
        };
        let first = memory
            .append(
                "alice",
                "chat",
                &said(&["water the plants", "done", "water the plants"]),
            )
            .await
            .unwrap();
        assert_eq!(first, [1, 2, 3], "{location}");
        let second = memory
            .append("alice", "chat", &said(&["done", "feed the cat"]))
            .await
            .unwrap();
        assert_eq!(second, [4, 5], "{location}");
        // Another user's session with the same text has its own chunk.
        memory
            .append("bob", "bob-chat", &said(&["water the plants"]))
            .await
            .unwrap();
        let conn = memory.db().conn().await.unwrap();
        let mut rows = conn
            .query(
                "SELECT c.text, c.sequence_start, c.sequence_end, c.context
                 FROM chunks c WHERE c.session_id = 'alice\u{1f}chat' ORDER BY c.sequence_start",
                (),
            )
            .await
            .unwrap();
        let mut chunks = Vec::new();
        while let Some(row) = rows.next().await.unwrap() {
            chunks.push((
                row.get::<String>(0).unwrap(),
                row.get::<i64>(1).unwrap(),
                row.get::<i64>(2).unwrap(),
                row.get::<String>(3).unwrap(),
            ));
        }
        drop(rows);
        let expected = [
            ("water the plants", 1, 3, ""),
            ("done", 2, 4, "water the plants"),
            ("feed the cat", 5, 5, "done"),
        ];
        let expected: Vec<_> = expected
            .iter()
            .map(|(t, s, e, c)| (t.to_string(), *s, *e, c.to_string()))
            .collect();
        assert_eq!(chunks, expected, "{location}");
        let unindexed: Option<i64> = query_scalar(
            &conn,
            "SELECT count(*) FROM chunks c
             WHERE NOT EXISTS (SELECT 1 FROM embed_queue q WHERE q.chunk_id = c.chunk_id)
               AND NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.chunk_id)",
            (),
        )
        .await
        .unwrap();
        assert_eq!(
            unindexed,
            Some(0),
            "{location}: every chunk is queued or embedded"
        );
        let bob: Option<i64> = query_scalar(
            &conn,
            "SELECT count(*) FROM chunks WHERE session_id = 'bob\u{1f}bob-chat'",
            (),
        )
        .await
        .unwrap();
        assert_eq!(bob, Some(1), "{location}");

        // More rows than one statement carries: 600 events, 300 texts twice each.
        let texts: Vec<String> = (0..600)
            .map(|i| format!("note number {}", i % 300))
            .collect();
        let many: Vec<NewEvent> = texts
            .iter()
            .map(|t| NewEvent::new(Role::User, t.as_str()))
            .collect();
        let sequences = memory.append("alice", "long", &many).await.unwrap();
        assert_eq!(sequences, (1..=600).collect::<Vec<i64>>(), "{location}");
        let (events, chunks, spans): (Option<i64>, Option<i64>, Option<i64>) = (
            query_scalar(
                &conn,
                "SELECT count(*) FROM events WHERE session_id = 'alice\u{1f}long'",
                (),
            )
            .await
            .unwrap(),
            query_scalar(
                &conn,
                "SELECT count(*) FROM chunks WHERE session_id = 'alice\u{1f}long'",
                (),
            )
            .await
            .unwrap(),
            query_scalar(
                &conn,
                "SELECT count(*) FROM chunks WHERE session_id = 'alice\u{1f}long'
                 AND sequence_end = sequence_start + 300",
                (),
            )
            .await
            .unwrap(),
        );
        assert_eq!(
            (events, chunks, spans),
            (Some(600), Some(300), Some(300)),
            "{location}"
        );
        let hits = memory
            .search(&SearchRequest {
                user_id: "alice".into(),
                query: "feed the cat".into(),
                session_id: Some("chat".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(
            hits.first().map(|h| h.text.as_str()),
            Some("feed the cat"),
            "{location}"
        );
        common::keyword_integrity(&memory).await;
    }
}

/// The local ports of this machine's TCP connections to `port` on 127.0.0.1, in any
/// state (a closed one lingers in TIME-WAIT), from `/proc/net/tcp`.
fn connections_to(port: u16) -> std::collections::HashSet<u16> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("Linux's /proc/net/tcp");
    let remote = format!("0100007F:{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace().skip(1);
            let local = fields.next()?;
            (fields.next()? == remote)
                .then(|| u16::from_str_radix(local.rsplit(':').next()?, 16).ok())
                .flatten()
        })
        .collect()
}

/// Reads against a server leave their HTTP connection open for the next request: a
/// response cut off unread cost a new TCP connection per read, and on a busy server sqld
/// 0.24 answered some of those cuts by interrupting the stream's next statement
/// (`SQLITE_INTERRUPT` on a write inside a transaction; see `vendor/README.md`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_against_a_server_keep_their_http_connection() {
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let port: u16 = sqld.url.rsplit(':').next().unwrap().parse().unwrap();
    let memory = open_memory(&sqld.config()).await.unwrap();
    let db = memory.db();
    let conn = db.conn().await.unwrap();
    conn.execute("CREATE TABLE reads (n INTEGER)", ())
        .await
        .unwrap();
    let before = connections_to(port);
    for n in 0..100_i64 {
        // One row wanted, as most lookups do; then every row; then a read inside a write
        // transaction, followed by a write on the same stream.
        let count: Option<i64> =
            nightshift::db::query_scalar(&conn, "SELECT count(*) FROM reads", ())
                .await
                .unwrap();
        assert_eq!(count, Some(n));
        let mut rows = conn.query("SELECT n FROM reads", ()).await.unwrap();
        while rows.next().await.unwrap().is_some() {}
        let tx = conn.write_tx().await.unwrap();
        nightshift::db::query_scalar::<i64>(&tx, "SELECT max(n) FROM reads", ())
            .await
            .unwrap();
        tx.execute("INSERT INTO reads VALUES (?1)", [n])
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
    let opened = connections_to(port).difference(&before).count();
    // 300 reads and 100 transactions: a handful of connections, not one per read.
    assert!(opened <= 10, "{opened} new TCP connections for 300 reads");
}

/// A stress run, not part of the test command (a minute or more): 3,000 transactions that
/// read and then write, each on a fresh server stream, none of them interrupted. Before
/// the vendored libsql read every response to its end, about one in 2,250 failed with
/// `SQLITE_INTERRUPT`. Run it with `cargo test --test remote -- --ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a stress run of a minute or more"]
async fn transactions_that_read_then_write_are_not_interrupted() {
    // sqld logging at debug level: slower, it leaves the window open far more often.
    let Some(sqld) = Sqld::start_with_env(&[("RUST_LOG", "info,libsql_server=debug")]) else {
        return;
    };
    let config = sqld.config();
    let app = common::app_with(&config, None).await;
    let memory = app.memory().clone();
    let store = app.schedules().clone();
    let mut failures = Vec::new();
    for i in 0..3_000 {
        // A schedule's creation counts the user's schedules, then inserts one.
        let new = NewSchedule::new(
            format!("user-{}", i % 100),
            format!("job {i}"),
            Cadence::Interval {
                every_secs: 60,
                anchor: memory.clock().now_ms(),
                tz: "UTC".into(),
            },
        );
        if let Err(err) = store.create(&Actor::Operator, &new).await {
            failures.push(format!("#{i}: {err}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 3000 failed, the first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

/// The text rules hold on a server as on a file: conversation content comes back byte for
/// byte, NUL and escape sequences included; blank content and an id with a control
/// character are refused, nothing stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_comes_back_intact_or_is_refused_on_a_server() {
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let memory = open_memory(&sqld.config()).await.unwrap();
    for bad in [" \n\t", "\u{85}"] {
        assert!(matches!(
            memory.save_note("alice", &NewNote::new(bad)).await,
            Err(MemoryError::Input(_))
        ));
        assert!(matches!(
            memory
                .append("alice", "s", &[NewEvent::new(Role::User, bad)])
                .await,
            Err(MemoryError::Input(_))
        ));
    }
    assert!(matches!(
        memory
            .append("alice", "s\u{1b}", &[NewEvent::new(Role::User, "x")])
            .await,
        Err(MemoryError::Input(_))
    ));
    assert!(memory.notes("alice").await.unwrap().is_empty());
    let texts = [
        "tabs\tand\nnewlines\r\n, accents: çéü, and 🦀",
        "abc\0def",
        "\0\0\0",
        "\u{7}\u{1b}[0;31mred\u{1b}[0m\u{8}\u{c}\u{85}\u{202e}",
    ];
    for text in texts {
        memory
            .save_note("alice", &NewNote::new(text))
            .await
            .unwrap();
    }
    let events: Vec<_> = texts
        .iter()
        .map(|t| NewEvent::new(Role::User, *t))
        .collect();
    memory.append("alice", "s", &events).await.unwrap();
    let mut notes: Vec<String> = memory
        .notes("alice")
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.content)
        .collect();
    notes.sort_unstable();
    let mut expected: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    expected.sort_unstable();
    assert_eq!(notes, expected);
    let recalled: Vec<String> = memory
        .recall(&Actor::Operator, "s", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.content)
        .collect();
    assert_eq!(recalled, texts);
}
