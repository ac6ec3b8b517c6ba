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
                client
                    .batch_execute(&format!("CREATE DATABASE {name}"))
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
