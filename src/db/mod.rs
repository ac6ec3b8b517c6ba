//! The database: how it is opened, how connections are handed out, how its schema is
//! migrated. Every other module talks SQL through a [`Conn`] from [`Db::conn`].

pub mod clock;
mod error;
mod lock_wait;
pub mod migrate;
mod pool;
pub mod postgres;
mod query;
mod runner;
mod server_stream;
mod target;
mod write_gate;
mod write_tx;

use std::sync::Arc;
use std::time::Duration;

pub use error::DbError;
pub use pool::Conn;
pub use query::*;
pub use runner::Runner;
pub use target::DbTarget;
use target::{only_this_machine, postgres_config, IDLE_IN_TRANSACTION};
pub use write_tx::WriteTx;

/// Options that shape every connection.
#[derive(Debug, Clone)]
pub struct DbOptions {
    pub busy_timeout: Duration,
    pub pool_size: usize,
}

/// Reads of a local database go through a memory map of its first GiB, not a system
/// call a page: search reads a few hundred rows by key scattered over the file, and a
/// user of 50,000 chunks searched at p50 / p95 2.96 / 3.45 ms with it against 3.70 /
/// 4.84 ms without (`cargo bench --bench memory`, back to back). The map only reads:
/// SQLite still writes with system calls, and a larger file is read past it as before.
const MMAP_PRAGMA: &str = "PRAGMA mmap_size = 1073741824";

impl Default for DbOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            pool_size: 8,
        }
    }
}

/// A handle on the database; cheap to clone and share between tasks. Each task takes its
/// own connection, because one libSQL connection must never carry two transactions.
#[derive(Clone)]
pub struct Db {
    inner: Arc<DbInner>,
}

struct DbInner {
    target: DbTarget,
    engine: Engine,
    options: DbOptions,
    pool: pool::Pool,
    /// One write transaction at a time from this process, against a server (see
    /// [`WriteTx`]).
    write_gate: Option<write_gate::WriteGate>,
}

/// What statements run on.
enum Engine {
    Libsql(Arc<libsql::Database>),
    Postgres(postgres::Engine),
}

impl Db {
    /// Opens (creating if needed) the database. Does not migrate: see [`migrate`].
    pub async fn open(target: &DbTarget, options: DbOptions) -> Result<Self, DbError> {
        if let DbTarget::Postgres { url, password } = target {
            return Self::open_postgres(target, url, password.as_deref(), options).await;
        }
        let open_err = |reason: String| DbError::Open {
            target: target.to_string(),
            reason,
        };
        let database = match target {
            DbTarget::Local(path) => {
                create_private_file(path).map_err(open_err)?;
                libsql::Builder::new_local(path)
                    .build()
                    .await
                    .map_err(|e| open_err(e.to_string()))?
            }
            DbTarget::Remote { auth_token, .. } => {
                let url = target.server_url().unwrap_or_default();
                libsql::Builder::new_remote(url, auth_token.clone())
                    .build()
                    .await
                    .map_err(|e| open_err(e.to_string()))?
            }
            DbTarget::Postgres { .. } => {
                return Err(open_err("PostgreSQL is opened by its own engine".into()))
            }
            DbTarget::Replica {
                auth_token,
                path,
                sync_interval,
                ..
            } => {
                // libsql makes the replica's files itself (an empty file is not a replica
                // it can sync): a private folder now, private files once they exist.
                if let Some(parent) = path.parent() {
                    create_private_dir(parent).map_err(open_err)?;
                }
                let url = target.server_url().unwrap_or_default();
                let database = libsql::Builder::new_remote_replica(path, url, auth_token.clone())
                    .read_your_writes(true)
                    .sync_interval(*sync_interval)
                    .build()
                    .await
                    .map_err(|e| replica_err(target, e))?;
                // Catch up before the first read, so a fresh replica is not an empty
                // database; an unreachable server or a bad token fails here.
                database.sync().await.map_err(|e| replica_err(target, e))?;
                make_private(path);
                database
            }
        };
        let database = Arc::new(database);
        let db = Db {
            inner: Arc::new(DbInner {
                target: target.clone(),
                engine: Engine::Libsql(database.clone()),
                // A replica's connection is a local one plus a writer known to the server
                // by a client id, new with every connection: the server keeps a connection
                // for each id until it expires, so replica connections are pooled too.
                pool: pool::Pool::new(options.pool_size),
                write_gate: match target {
                    DbTarget::Local(_) => None,
                    DbTarget::Remote { .. } => Some(write_gate::WriteGate::new(Some(
                        write_gate::WriteConnSlot::new(database),
                    ))),
                    DbTarget::Replica { .. } | DbTarget::Postgres { .. } => {
                        Some(write_gate::WriteGate::new(None))
                    }
                },
                options,
            }),
        };
        // WAL lets searches read while a writer commits; it is a property of the file,
        // so it is set once here rather than on every connection.
        let conn = db.conn().await.map_err(|e| open_err(e.to_string()))?;
        // A first round trip, so an unreachable server or a bad token fails here, clearly.
        let first_err = |e: libsql::Error| classify(target, e.to_string());
        let mut rows = conn.query("SELECT 1", ()).await.map_err(first_err)?;
        while rows
            .next()
            .await
            .map_err(|e| open_err(e.to_string()))?
            .is_some()
        {}
        drop(rows);
        if matches!(target, DbTarget::Local(_)) {
            let mut rows = conn.query("PRAGMA journal_mode = WAL", ()).await?;
            while rows.next().await?.is_some() {}
        }
        Ok(db)
    }

    /// PostgreSQL: a pool of connections (opened as needed), and a first round trip so an
    /// unreachable server or a refused password fails here, clearly.
    async fn open_postgres(
        target: &DbTarget,
        url: &str,
        password: Option<&str>,
        options: DbOptions,
    ) -> Result<Self, DbError> {
        let (mut config, tls) = postgres_config(url)?;
        let tls = postgres::tls::connector(&tls).map_err(|reason| DbError::Open {
            target: target.to_string(),
            reason,
        })?;
        if let Some(password) = password {
            config.password(password);
        }
        if config.get_application_name().is_none() {
            config.application_name("nightshift");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        // A worker frozen (stopped, its VM paused, its network cut without a reset) inside
        // a write transaction would hold every worker's write lock until TCP gave up on
        // it, two hours by default: the server ends a transaction idle this long, and
        // probes a quiet connection sooner. Nothing of nightshift's idles in one.
        if config.get_options().is_none() {
            config.options(format!(
                "-c idle_in_transaction_session_timeout={}",
                IDLE_IN_TRANSACTION.as_millis()
            ));
        }
        if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
            config.keepalives_idle(Duration::from_secs(30));
        }
        if tls.is_none() && !only_this_machine(&config) {
            tracing::warn!(
                server = %target,
                "connections to PostgreSQL are not encrypted: add sslmode=verify-full (and \
                 sslrootcert) to the URL unless the network is private"
            );
        }
        let engine = postgres::Engine::new(config, tls, (options.pool_size * 4).max(16)).map_err(
            |reason| DbError::Open {
                target: target.to_string(),
                reason,
            },
        )?;
        let db = Db {
            inner: Arc::new(DbInner {
                target: target.clone(),
                engine: Engine::Postgres(engine),
                pool: pool::Pool::new(0),
                write_gate: None,
                options,
            }),
        };
        let first = async {
            let conn = db.conn().await?;
            query_scalar::<i64>(&conn, "SELECT 1", ())
                .await
                .map_err(DbError::from)
        };
        if let Err(err) = first.await {
            let reason = err.to_string();
            return Err(if reason.contains("28P01") || reason.contains("28000") {
                DbError::PostgresAuth {
                    target: target.to_string(),
                    reason,
                }
            } else {
                DbError::Open {
                    target: target.to_string(),
                    reason,
                }
            });
        }
        Ok(db)
    }

    pub fn target(&self) -> &DbTarget {
        &self.inner.target
    }

    /// On PostgreSQL (where some statements are written differently).
    pub fn is_postgres(&self) -> bool {
        self.inner.target.is_postgres()
    }

    /// On PostgreSQL, a listener woken when any process changes or triggers a schedule
    /// (`db::postgres::listen`); elsewhere `None`, and changes are found by polling.
    pub fn listen_for_schedule_changes(&self) -> Option<postgres::listen::Listener> {
        match &self.inner.engine {
            Engine::Postgres(engine) => Some(engine.listen_for_schedule_changes()),
            Engine::Libsql(_) => None,
        }
    }

    /// Through an embedded replica: pulls the server's latest changes now rather than at
    /// the next `sync_interval`. Elsewhere there is nothing to catch up with.
    pub async fn catch_up(&self) -> Result<(), DbError> {
        if let (DbTarget::Replica { .. }, Engine::Libsql(database)) =
            (&self.inner.target, &self.inner.engine)
        {
            database.sync().await?;
        }
        Ok(())
    }

    /// A local file (as opposed to a libSQL server).
    pub fn is_local(&self) -> bool {
        matches!(self.inner.target, DbTarget::Local(_))
    }

    /// Reads run in this process, on a local file or an embedded replica (not on a
    /// server, where each statement is a round trip).
    pub fn reads_locally(&self) -> bool {
        matches!(
            self.inner.target,
            DbTarget::Local(_) | DbTarget::Replica { .. }
        )
    }

    /// A connection for this task alone, returned to the pool when dropped.
    pub async fn conn(&self) -> Result<Conn, DbError> {
        let database = match &self.inner.engine {
            Engine::Libsql(database) => database,
            Engine::Postgres(engine) => {
                return Ok(Conn::postgres(
                    engine.session().await?,
                    self.inner.pool.clone(),
                ))
            }
        };
        if let Some((conn, stream)) = self.inner.pool.take() {
            return Ok(self.wrap(conn, stream));
        }
        let conn = database.connect()?;
        // Per-connection settings, where they mean something: foreign keys drive every
        // cascade in the schema (a libSQL server has them on already), and the file is
        // read through a memory map.
        if matches!(self.inner.target, DbTarget::Local(_)) {
            conn.busy_timeout(self.inner.options.busy_timeout)?;
            for pragma in [
                "PRAGMA foreign_keys = ON",
                "PRAGMA synchronous = NORMAL",
                MMAP_PRAGMA,
            ] {
                let mut rows = conn.query(pragma, ()).await?;
                while rows.next().await?.is_some() {}
            }
        }
        // Against a server a connection keeps the statements it has described.
        let stream = matches!(self.inner.target, DbTarget::Remote { .. })
            .then(server_stream::ServerStream::new);
        Ok(self.wrap(conn, stream))
    }

    /// Writes a consistent copy of a local database to `path` (`VACUUM INTO`), readable by
    /// its owner only, like the database.
    pub async fn snapshot_into(&self, path: &std::path::Path) -> Result<(), DbError> {
        if !self.is_local() {
            return Err(DbError::BadTarget(
                "snapshots are written for a local database file only".into(),
            ));
        }
        create_private_file(path).map_err(|reason| DbError::Open {
            target: path.display().to_string(),
            reason,
        })?;
        let conn = self.conn().await?;
        conn.execute("VACUUM INTO ?1", [path.display().to_string()])
            .await?;
        Ok(())
    }

    /// Checkpoints a local database's WAL into the main file, truncating it: returns
    /// (busy, pages checkpointed), or `None` on a server.
    pub async fn checkpoint(&self) -> Result<Option<(i64, i64)>, DbError> {
        if !self.is_local() {
            return Ok(None);
        }
        let conn = self.conn().await?;
        Ok(
            query_first_row(&conn, "PRAGMA wal_checkpoint(TRUNCATE)", (), |row| {
                Ok((row.get::<i64>(0)?, row.get::<i64>(2)?))
            })
            .await?,
        )
    }

    fn wrap(&self, conn: libsql::Connection, stream: Option<server_stream::ServerStream>) -> Conn {
        let local_busy = matches!(self.inner.target, DbTarget::Local(_))
            .then_some(self.inner.options.busy_timeout);
        Conn::new(
            conn,
            stream,
            self.inner.pool.clone(),
            self.inner.write_gate.clone(),
            local_busy,
        )
    }
}

/// Creates `path`'s missing folders readable by their owner only (0700), whatever the umask.
pub fn create_private_dir(path: &std::path::Path) -> Result<(), String> {
    if path.as_os_str().is_empty() || path.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(path)
        .map_err(|e| format!("cannot create folder {}: {e}", path.display()))
}

/// Creates `path` empty and readable by its owner only (0600), in a private folder, unless
/// it exists. A database holds private conversations: its file, and the WAL and
/// shared-memory files SQLite gives the same mode, are never created readable by others.
pub fn create_private_file(path: &std::path::Path) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        create_private_dir(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("cannot create {}: {e}", path.display())),
    }
}

/// Makes a database file and the files beside it (`-wal`, `-shm`, a replica's `-info`)
/// readable by their owner only, where they exist.
fn make_private(path: &std::path::Path) {
    #[cfg(unix)]
    for suffix in ["", "-wal", "-shm", "-info", "-client_wal_index"] {
        use std::os::unix::fs::PermissionsExt;
        let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
        if file.exists() {
            if let Err(err) =
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
            {
                tracing::warn!(file = %file.display(), %err, "cannot make a database file private");
            }
        }
    }
}

/// Runs a database write to its end even when the caller stops waiting for it. Futures
/// that race (a lease renewal against the run, a run against its deadline or a hard stop)
/// drop the loser: a write dropped mid-request leaves a libSQL server with a waiter for
/// its write lock that is gone, and sqld 0.24 was seen to hand the lock to it, after which
/// every write of every worker hung (found by `tests/scaleout.rs` on sqld). A write that
/// can lose such a race goes through here.
pub async fn run_to_completion<T: Send + 'static>(
    write: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    match tokio::spawn(write).await {
        Ok(value) => value,
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    }
}

/// An open failure, told apart: a refused token is an authentication error.
fn classify(target: &DbTarget, reason: String) -> DbError {
    if reason.contains("403 Forbidden")
        || reason.contains("Unauthorized")
        || reason.contains("Unauthenticated")
    {
        DbError::Auth {
            target: target.to_string(),
            reason,
        }
    } else {
        DbError::Open {
            target: target.to_string(),
            reason,
        }
    }
}

/// A replica that cannot be built or synced: the reason, with its cause chain (libsql's
/// sync errors say little at the top).
fn replica_err(target: &DbTarget, err: libsql::Error) -> DbError {
    classify(target, crate::error::error_chain(&err))
}
