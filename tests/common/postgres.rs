//! The PostgreSQL engine under the suite. With `NIGHTSHIFT_TEST_ENGINE=postgres`
//! (scripts/test.sh runs the suite a second time so) every test that opens its database
//! through `config_in` gets a fresh database of its own on the cluster
//! `NIGHTSHIFT_TEST_POSTGRES_URL` names (scripts/postgres-cluster.sh starts one).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Whether this run of the suite is on PostgreSQL.
pub fn engine_is_postgres() -> bool {
    std::env::var("NIGHTSHIFT_TEST_ENGINE").is_ok_and(|engine| engine == "postgres")
}

/// The cluster's URL (its `postgres` database), or the test fails saying how to start one.
pub fn cluster_url() -> String {
    std::env::var("NIGHTSHIFT_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "NIGHTSHIFT_TEST_ENGINE=postgres needs a cluster: run \
             `eval \"$(scripts/postgres-cluster.sh start)\"` (scripts/test.sh does)"
        )
    })
}

/// The database of the test folder `dir`: made on first asking, the same one after (a
/// test that opens its config twice means one database, as it would mean one file).
pub fn database_for(dir: &std::path::Path) -> String {
    static DATABASES: std::sync::Mutex<Vec<(std::path::PathBuf, String)>> =
        std::sync::Mutex::new(Vec::new());
    let mut databases = DATABASES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, url)) = databases.iter().find(|(of, _)| of == dir) {
        return url.clone();
    }
    let url = fresh_database();
    databases.push((dir.to_path_buf(), url.clone()));
    url
}

/// Drops the databases of test processes that have ended (a database is named after its
/// process): cargo runs the test binaries one after another, so the cluster holds one
/// binary's databases at a time, not the whole suite's (about 8 MB each).
async fn drop_finished_tests_databases(client: &tokio_postgres::Client) {
    let Ok(rows) = client
        .query(
            "SELECT datname FROM pg_database WHERE datname LIKE 't\\_%'",
            &[],
        )
        .await
    else {
        return;
    };
    for row in rows {
        let name: String = row.get(0);
        let pid = name
            .split('_')
            .nth(1)
            .and_then(|pid| pid.parse::<u32>().ok());
        let alive = pid.is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            let _ = client
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .await;
        }
    }
}

/// A new, empty database on the cluster: its URL.
pub fn fresh_database() -> String {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let admin = cluster_url();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!(
        "t_{}_{}_{nanos}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    );
    static FIRST: std::sync::Once = std::sync::Once::new();
    let mut first = false;
    FIRST.call_once(|| first = true);
    // On a thread of its own: the caller may be inside a runtime already.
    let create = {
        let (admin, name) = (admin.clone(), name.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
                    .await
                    .expect("connect to the test cluster");
                tokio::spawn(connection);
                if first {
                    drop_finished_tests_databases(&client).await;
                }
                // A file copy of the template, not one through the write-ahead log (each
                // test's database would add its size to the log).
                client
                    .batch_execute(&format!("CREATE DATABASE {name} STRATEGY = FILE_COPY"))
                    .await
                    .expect("create a test database");
            })
        })
    };
    create.join().expect("create a test database");
    let (base, _) = admin
        .rsplit_once('/')
        .expect("the cluster URL names a database");
    format!("{base}/{name}")
}

/// Whether a test on tokio's paused clock is skipped: against a network database it
/// cannot hold, because while the test waits on the server's answer the runtime is idle
/// and the paused clock jumps to the next timer (a lease, a deadline, a shutdown's grace),
/// so time passes in the test that did not pass for the database. On PostgreSQL it prints
/// that it was skipped and why; the file engine's run of the suite keeps it.
pub fn skip_on_paused_clock() -> bool {
    if engine_is_postgres() {
        super::skip::skipped(
            "runs on tokio's paused clock, which jumps ahead while a network database \
             answers; it runs on the file engine",
        );
        true
    } else {
        false
    }
}

/// A fresh database on the test cluster for a test that needs PostgreSQL whatever engine
/// the suite runs on; without a cluster, the skip line (or, where peers are required, a
/// failure saying how to start one).
pub fn database_or_skip() -> Option<String> {
    if std::env::var_os("NIGHTSHIFT_TEST_POSTGRES_URL").is_none() {
        let why = "needs PostgreSQL: run `eval \"$(scripts/postgres-cluster.sh start)\"` \
                   (scripts/test.sh does) to start a throwaway cluster and set \
                   NIGHTSHIFT_TEST_POSTGRES_URL";
        if std::env::var_os("NIGHTSHIFT_TEST_PEERS_REQUIRED").is_some() {
            panic!("{why}");
        }
        super::skip::skipped(why);
        return None;
    }
    Some(fresh_database())
}

/// The write lock of the database at `database` (a file or a PostgreSQL URL), held by
/// another connection as another process would hold it, until released.
pub enum WriteLockHolder {
    File(libsql::Connection),
    Postgres(tokio_postgres::Client),
}

impl WriteLockHolder {
    pub async fn hold(database: &str) -> Self {
        if database.starts_with("postgres") {
            let (client, connection) = tokio_postgres::connect(database, tokio_postgres::NoTls)
                .await
                .expect("connect to the test database");
            tokio::spawn(connection);
            client
                .batch_execute(&format!(
                    "SELECT pg_advisory_lock({})",
                    nightshift::db::postgres::WRITE_LOCK
                ))
                .await
                .expect("take the write lock");
            WriteLockHolder::Postgres(client)
        } else {
            let holder = libsql::Builder::new_local(database).build().await.unwrap();
            let lock = holder.connect().unwrap();
            lock.execute("BEGIN IMMEDIATE", ()).await.unwrap();
            WriteLockHolder::File(lock)
        }
    }

    pub async fn release(self) {
        match self {
            WriteLockHolder::File(lock) => {
                lock.execute("COMMIT", ()).await.unwrap();
            }
            WriteLockHolder::Postgres(client) => {
                client
                    .batch_execute(&format!(
                        "SELECT pg_advisory_unlock({})",
                        nightshift::db::postgres::WRITE_LOCK
                    ))
                    .await
                    .unwrap();
            }
        }
    }
}
