//! The database: how it is opened, how connections are handed out, how its schema is
//! migrated. Every other module talks SQL through a [`Conn`] from [`Db::conn`].

pub mod clock;
mod lock_wait;
pub mod migrate;
mod pool;
pub mod postgres;
mod runner;
mod write_tx;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use pool::Conn;
pub use runner::Runner;
pub use write_tx::WriteTx;

/// Where the database is: a local file, a libSQL server (sqld, Turso) reached over HTTP,
/// or such a server read through a local embedded replica. The same SQL runs on all three.
#[derive(Clone, PartialEq, Eq)]
pub enum DbTarget {
    Local(PathBuf),
    Remote {
        url: String,
        auth_token: String,
    },
    /// Reads from the local file at `path`, kept in step with the server every
    /// `sync_interval` (and after each of this process's writes); writes go to the server.
    Replica {
        url: String,
        auth_token: String,
        path: PathBuf,
        sync_interval: Duration,
    },
    /// A PostgreSQL database, shared by several workers (docs/scaling.md). `url` never
    /// holds the password, which comes from the config's password file or variable.
    Postgres {
        url: String,
        password: Option<String>,
    },
}

impl std::fmt::Debug for DbTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        write!(f, "DbTarget({self})")
    }
}

impl DbTarget {
    /// Reads a `--db` / `NIGHTSHIFT_DB` / `[database] path` value.
    pub fn parse(value: &str) -> Result<Self, DbError> {
        let value = value.trim();
        if value.is_empty() {
            return Err(DbError::BadTarget("the database location is empty".into()));
        }
        if let Some((scheme, _)) = value.split_once("://") {
            return match scheme {
                "http" | "https" | "libsql" => Ok(Self::Remote {
                    url: value.to_string(),
                    auth_token: String::new(),
                }),
                "postgres" | "postgresql" => {
                    let (config, _) = postgres_config(value)?;
                    if config.get_password().is_some() {
                        return Err(DbError::BadTarget(
                            "the PostgreSQL URL holds a password: remove it, and name a file \
                             holding it in [database] password_file, or an environment \
                             variable in [database] password_env (a URL can be seen in the \
                             process list and in logs)"
                                .into(),
                        ));
                    }
                    Ok(Self::Postgres {
                        url: value.to_string(),
                        password: None,
                    })
                }
                other => Err(DbError::BadTarget(format!(
                    "`{other}://` is not a database URL nightshift knows: use a file path, \
                     an http://, https:// or libsql:// URL, or a postgresql:// URL"
                ))),
            };
        }
        Ok(Self::Local(PathBuf::from(value)))
    }

    /// The token for a remote server (never given on the command line).
    pub fn with_auth_token(self, token: Option<String>) -> Self {
        match (self, token) {
            (DbTarget::Remote { url, .. }, Some(auth_token)) => {
                DbTarget::Remote { url, auth_token }
            }
            (
                DbTarget::Replica {
                    url,
                    path,
                    sync_interval,
                    ..
                },
                Some(auth_token),
            ) => DbTarget::Replica {
                url,
                auth_token,
                path,
                sync_interval,
            },
            (other, _) => other,
        }
    }

    /// A PostgreSQL database's password (from the config's file or variable).
    pub fn with_password(self, password: Option<String>) -> Self {
        match (self, password) {
            (DbTarget::Postgres { url, .. }, Some(password)) => DbTarget::Postgres {
                url,
                password: Some(password),
            },
            (other, _) => other,
        }
    }

    /// A PostgreSQL database.
    pub fn is_postgres(&self) -> bool {
        matches!(self, DbTarget::Postgres { .. })
    }

    /// Reads a server through an embedded replica at `replica_path`, when one is set.
    pub fn with_replica(
        self,
        replica_path: Option<&str>,
        sync_interval: Duration,
    ) -> Result<Self, DbError> {
        let Some(replica_path) = replica_path else {
            return Ok(self);
        };
        match self {
            DbTarget::Remote { url, auth_token } => Ok(DbTarget::Replica {
                url,
                auth_token,
                path: PathBuf::from(replica_path),
                sync_interval,
            }),
            DbTarget::Replica { .. } => Ok(self),
            DbTarget::Postgres { .. } => Err(DbError::BadTarget(
                "database.replica_path is set, but the database is PostgreSQL: a replica \
                 is of a libSQL server; PostgreSQL has its own replication"
                    .into(),
            )),
            DbTarget::Local(path) => Err(DbError::BadTarget(format!(
                "database.replica_path is set, but the database is the file {}: a replica \
                 needs a libSQL server URL (http://, https:// or libsql://)",
                path.display()
            ))),
        }
    }

    /// The server's URL, when the database is on a server.
    fn server_url(&self) -> Option<String> {
        let url = match self {
            DbTarget::Local(_) | DbTarget::Postgres { .. } => return None,
            DbTarget::Remote { url, .. } | DbTarget::Replica { url, .. } => url,
        };
        // libsql:// is the same protocol over TLS.
        Some(match url.strip_prefix("libsql://") {
            Some(rest) => format!("https://{rest}"),
            None => url.clone(),
        })
    }
}

impl std::fmt::Display for DbTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbTarget::Local(path) => write!(f, "{}", path.display()),
            DbTarget::Remote { url, .. } => write!(f, "{url}"),
            DbTarget::Replica { url, path, .. } => {
                write!(f, "{url} (replica {})", path.display())
            }
            DbTarget::Postgres { url, .. } => write!(f, "{url}"),
        }
    }
}

/// Reads a PostgreSQL URL (`postgresql://user@host:port/database?…`, or libpq's
/// `host=… dbname=…` form after the scheme is not accepted: a URL only).
/// How long PostgreSQL lets a transaction of nightshift's sit idle before it ends it.
const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(120);

/// Whether every host of `config` is this machine (a unix socket, or a loopback address),
/// where an unencrypted connection crosses no network.
fn only_this_machine(config: &tokio_postgres::Config) -> bool {
    config.get_hosts().iter().all(|host| match host {
        tokio_postgres::config::Host::Unix(_) => true,
        tokio_postgres::config::Host::Tcp(name) => {
            name == "localhost"
                || name
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    })
}

/// The driver's settings and the TLS options of a `postgresql://` URL, or what is wrong
/// with it.
fn postgres_config(
    url: &str,
) -> Result<(tokio_postgres::Config, postgres::tls::TlsOptions), DbError> {
    const FORM: &str = "write it as postgresql://USER@HOST:PORT/DATABASE";
    let bad = |what: String| DbError::BadTarget(format!("the PostgreSQL URL {what}: {FORM}"));
    let (url, mut tls) =
        postgres::tls::split_url(url).map_err(|e| bad(format!("is refused ({e})")))?;
    let mut config = url
        .parse::<tokio_postgres::Config>()
        .map_err(|e| bad(format!("cannot be read ({e})")))?;
    if config.get_hosts().is_empty() {
        return Err(bad("names no host".into()));
    }
    if config.get_user().is_none() {
        return Err(bad("names no user".into()));
    }
    // As libpq: no TLS over a unix socket (the kernel carries it; nothing to encrypt).
    if config
        .get_hosts()
        .iter()
        .all(|host| matches!(host, tokio_postgres::config::Host::Unix(_)))
    {
        tls.required = false;
    }
    // TLS is nightshift's to make (see postgres::tls); the driver asks for it only when
    // it is required.
    config.ssl_mode(if tls.required {
        tokio_postgres::config::SslMode::Require
    } else {
        tokio_postgres::config::SslMode::Disable
    });
    Ok((config, tls))
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("invalid database location: {0}")]
    BadTarget(String),
    #[error("cannot open database {target}: {reason}")]
    Open { target: String, reason: String },
    #[error(
        "authentication to {target} failed: the server refused the token (set it with \
         NIGHTSHIFT_DB_AUTH_TOKEN or [database] auth_token_file): {reason}"
    )]
    Auth { target: String, reason: String },
    #[error(
        "authentication to PostgreSQL at {target} failed: the server refused the user or \
         password (set the password with [database] password_file or password_env): {reason}"
    )]
    PostgresAuth { target: String, reason: String },
    #[error(
        "database schema version {database} is newer than this nightshift supports ({binary}); \
         upgrade nightshift or point it at another database"
    )]
    SchemaTooNew { database: i64, binary: i64 },
    #[error(
        "migration {version} ({name}) was applied with different contents (checksum {applied}, \
         this binary has {expected}); refusing to start on a schema it does not know"
    )]
    ChecksumMismatch {
        version: i64,
        name: String,
        applied: String,
        expected: String,
    },
    #[error("database has {0} unapplied migration(s); run `nightshift db migrate`")]
    NotMigrated(usize),
    #[error("stored {what} cannot be read: {reason}")]
    Corrupt { what: String, reason: String },
    #[error("database error: {}", sql_message(.0))]
    Sql(#[from] libsql::Error),
}

impl crate::error::Kind for DbError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            DbError::BadTarget(_)
            | DbError::Auth { .. }
            | DbError::PostgresAuth { .. }
            | DbError::SchemaTooNew { .. }
            | DbError::ChecksumMismatch { .. }
            | DbError::NotMigrated(_) => ErrorKind::Config,
            DbError::Open { .. } => ErrorKind::Unavailable,
            DbError::Corrupt { .. } => ErrorKind::Internal,
            DbError::Sql(err) => sql_kind(err),
        }
    }
}

/// A statement's failure in words: PostgreSQL's message as the server gave it (its engine
/// carries it in libSQL's error type), else libSQL's.
fn sql_message(err: &libsql::Error) -> String {
    match err {
        libsql::Error::SqliteFailure(_, message) | libsql::Error::ConnectionFailed(message)
            if message.starts_with("PostgreSQL") =>
        {
            message.clone()
        }
        other => other.to_string(),
    }
}

/// A statement's failure: the database busy or out of reach (worth retrying) or a fault.
fn sql_kind(err: &libsql::Error) -> crate::error::ErrorKind {
    use crate::error::ErrorKind;
    let text = err.to_string();
    let transient = [
        "database is locked",
        "SQLITE_BUSY",
        "SQLITE_INTERRUPT",
        "STREAM_EXPIRED",
        "connection",
        "Connection",
        "error sending request",
        "Hrana",
        "timed out",
    ];
    // PostgreSQL's lock and serialization conflicts are SQLite's busy (db::postgres).
    if matches!(
        err,
        libsql::Error::ConnectionFailed(_) | libsql::Error::SqliteFailure(5, _)
    ) || transient.iter().any(|needle| text.contains(needle))
    {
        ErrorKind::Unavailable
    } else {
        ErrorKind::Internal
    }
}

/// Options that shape every connection.
#[derive(Debug, Clone)]
pub struct DbOptions {
    pub busy_timeout: Duration,
    pub pool_size: usize,
}

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
    write_gate: Option<write_tx::WriteGate>,
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
                    DbTarget::Remote { .. } => Some(write_tx::WriteGate::new(Some(
                        write_tx::WriteConnSlot::new(database),
                    ))),
                    DbTarget::Replica { .. } | DbTarget::Postgres { .. } => {
                        Some(write_tx::WriteGate::new(None))
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
        // cascade in the schema (a libSQL server has them on already).
        if matches!(self.inner.target, DbTarget::Local(_)) {
            conn.busy_timeout(self.inner.options.busy_timeout)?;
            for pragma in ["PRAGMA foreign_keys = ON", "PRAGMA synchronous = NORMAL"] {
                let mut rows = conn.query(pragma, ()).await?;
                while rows.next().await?.is_some() {}
            }
        }
        // Against a server a connection keeps the statements it has described.
        let stream =
            matches!(self.inner.target, DbTarget::Remote { .. }).then(runner::ServerStream::new);
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

    fn wrap(&self, conn: libsql::Connection, stream: Option<runner::ServerStream>) -> Conn {
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

/// A column value [`query_scalar`] can return. (libsql keeps its own conversion trait
/// private.)
pub trait Scalar: Sized {
    fn from_value(value: libsql::Value) -> Option<Self>;
}

impl Scalar for i64 {
    fn from_value(value: libsql::Value) -> Option<Self> {
        match value {
            libsql::Value::Integer(n) => Some(n),
            _ => None,
        }
    }
}

impl Scalar for String {
    fn from_value(value: libsql::Value) -> Option<Self> {
        match value {
            libsql::Value::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// Something queries run on: a [`Conn`] (which, against a server, keeps the statements
/// it has described), a [`WriteTx`], or a bare libsql connection.
pub trait Queryable: Sync {
    fn query_rows(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams + Send,
    ) -> impl std::future::Future<Output = Result<libsql::Rows, libsql::Error>> + Send;
}

impl Queryable for Conn {
    async fn query_rows(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams + Send,
    ) -> Result<libsql::Rows, libsql::Error> {
        self.query(sql, params).await
    }
}

impl Queryable for libsql::Connection {
    async fn query_rows(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams + Send,
    ) -> Result<libsql::Rows, libsql::Error> {
        self.query(sql, params).await
    }
}

impl Queryable for WriteTx {
    async fn query_rows(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams + Send,
    ) -> Result<libsql::Rows, libsql::Error> {
        self.query(sql, params).await
    }
}

/// What `read` takes from the first row; `None` when there is no row. The row and its
/// statement are gone when this returns: on a local file they keep a read transaction
/// open, and a write on the same connection after it could fail with `SQLITE_BUSY`.
pub async fn query_first_row<T>(
    conn: &(impl Queryable + ?Sized),
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
    read: impl FnOnce(&libsql::Row) -> Result<T, libsql::Error>,
) -> Result<Option<T>, libsql::Error> {
    let mut rows = conn.query_rows(sql, params).await?;
    let first = match rows.next().await? {
        Some(row) => read(&row)?,
        None => return Ok(None),
    };
    finish_rows(rows).await?;
    Ok(Some(first))
}

/// After the row a caller wanted, one more look, for the end of the rows: against a
/// server, rows read to their end let the response end too, and only then is the
/// server done with the statement (see `vendor/README.md`); a response left unread
/// is cut off, and sqld 0.24 was seen to answer that by interrupting the next
/// statement on the stream. A statement with more rows is simply dropped.
pub(crate) async fn finish_rows(mut rows: libsql::Rows) -> Result<(), libsql::Error> {
    rows.next().await?;
    Ok(())
}

/// A record read from a row by column position; `COLUMNS` is the select list it reads, so
/// the positions and the list are written in one place.
pub trait FromRow: Sized {
    const COLUMNS: &'static str;
    fn from_row(row: &libsql::Row) -> Result<Self, DbError>;
}

/// A stored row that could not be read as its record: which kind of record, its id (the
/// first selected column, as text) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub what: &'static str,
    pub id: String,
    pub reason: String,
}

impl Unreadable {
    fn of<T: FromRow>(row: &libsql::Row, err: &DbError) -> Self {
        let id = match row.get_value(0) {
            Ok(libsql::Value::Text(text)) => crate::input::printable(&text).to_string(),
            Ok(libsql::Value::Integer(n)) => n.to_string(),
            Ok(other) => format!("{other:?}"),
            Err(e) => format!("(no id: {e})"),
        };
        let what = std::any::type_name::<T>()
            .rsplit("::")
            .next()
            .unwrap_or("row");
        Unreadable {
            what,
            id,
            reason: err.to_string(),
        }
    }
}

/// Every row `sql` returns, as records. A row that cannot be read (a value of another
/// type than its column's, stored JSON that does not parse: whatever put it there) is
/// skipped and logged with its record kind and id, so one bad row never fails every
/// read of its table.
pub async fn fetch_all<T: FromRow>(
    conn: &(impl Queryable + ?Sized),
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
) -> Result<Vec<T>, DbError> {
    let (records, unreadable) = fetch_readable(conn, sql, params).await?;
    for bad in &unreadable {
        tracing::error!(record = bad.what, id = %bad.id, reason = %bad.reason,
            "a stored row cannot be read; skipped it");
    }
    Ok(records)
}

/// Every row `sql` returns: the records, and the rows that could not be read.
pub async fn fetch_readable<T: FromRow>(
    conn: &(impl Queryable + ?Sized),
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
) -> Result<(Vec<T>, Vec<Unreadable>), DbError> {
    let mut rows = conn.query_rows(sql, params).await?;
    let (mut out, mut unreadable) = (Vec::new(), Vec::new());
    while let Some(row) = rows.next().await? {
        match T::from_row(&row) {
            Ok(record) => out.push(record),
            Err(err) => unreadable.push(Unreadable::of::<T>(&row, &err)),
        }
    }
    Ok((out, unreadable))
}

/// The first row `sql` returns, as a record; `None` when there is none.
pub async fn fetch_optional<T: FromRow>(
    conn: &(impl Queryable + ?Sized),
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
) -> Result<Option<T>, DbError> {
    let mut rows = conn.query_rows(sql, params).await?;
    let first = match rows.next().await? {
        Some(row) => T::from_row(&row)?,
        None => return Ok(None),
    };
    finish_rows(rows).await?;
    Ok(Some(first))
}

/// A stored text column read as one of a closed set of names (see `text_enum!`).
pub fn text_column<T: std::str::FromStr<Err = String>>(
    row: &libsql::Row,
    index: i32,
    what: &str,
) -> Result<T, DbError> {
    let text: String = row.get(index)?;
    text.parse().map_err(|reason| DbError::Corrupt {
        what: what.to_string(),
        reason,
    })
}

/// A stored JSON column read as `T`.
pub fn json_column<T: serde::de::DeserializeOwned>(
    row: &libsql::Row,
    index: i32,
    what: &str,
) -> Result<T, DbError> {
    let text: String = row.get(index)?;
    serde_json::from_str(&text).map_err(|e| DbError::Corrupt {
        what: what.to_string(),
        reason: e.to_string(),
    })
}

/// Moves the schedules' change counter inside `tx`: every worker, in any process, looks
/// at the schedules and runs again at its next change check (the schedules' own triggers
/// move it for their rows; this is for changes elsewhere a worker must act on: an
/// approval answered, a cancel asked).
pub async fn tell_workers_to_look(tx: &WriteTx) -> Result<(), libsql::Error> {
    tx.execute(
        "UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) WHERE key = 'schedules_version'",
        (),
    )
    .await?;
    Ok(())
}

/// The first column of the first row; `None` when there is no row or the value is NULL.
pub async fn query_scalar<T: Scalar>(
    conn: &(impl Queryable + ?Sized),
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
) -> Result<Option<T>, libsql::Error> {
    let value = query_first_row(conn, sql, params, |row| row.get_value(0)).await?;
    Ok(value.and_then(T::from_value))
}
