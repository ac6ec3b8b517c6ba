//! The PostgreSQL engine: several workers on one PostgreSQL database (docs/scaling.md).
//! Stores run the same statements and read the same values as on libSQL (see [`sql`] and
//! [`value`]); what differs by engine is written per engine at the store.
//!
//! Writes keep SQLite's guarantee that a write transaction sees no other writer: each one
//! (a [`WriteTx`](super::WriteTx), or a single statement outside one) holds one
//! transaction-level advisory lock, [`WRITE_LOCK`], until it ends. Reads take no lock.
//! PostgreSQL releases the lock with the transaction, on commit, rollback or a lost
//! connection alike, so a killed worker never leaves it held. The one exception is a
//! queue's claim written for PostgreSQL (the outbox's): `FOR UPDATE SKIP LOCKED` locks
//! the rows it takes and passes over those another worker's claim holds, so claims run
//! side by side and never wait behind the other writers. A schedule's claim is one too:
//! a transaction of its own ([`Session::begin_claiming`]) that locks that schedule's row.

pub mod listen;
pub mod sql;
pub mod tls;
pub mod value;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use libsql::params::Params;
use libsql::Value;
use tokio_postgres::types::{ToSql, Type};

use value::{Cell, Param};

/// The advisory lock every write holds (the bytes of "nightshf").
pub const WRITE_LOCK: i64 = 0x6e69_6768_7473_6866;

/// The setting a claim's transaction turns on (see [`Session::begin_claiming`]): the
/// schedules' change trigger passes its changes over (migration 34), as they only move an
/// occurrence on, which no other worker needs to hear about; counting them on the one
/// counter row would queue every claim behind the others.
pub const CLAIMING: &str = "nightshift.claiming";

/// Statements whose settled parameter types are kept, at most.
const MAX_SETTLED: usize = 16_384;

/// How long a server that refuses connections is asked again before the error is given.
const RECONNECT_FOR: Duration = Duration::from_secs(15);

/// How long a statement may wait for a connection from the pool.
const POOL_WAIT: Duration = Duration::from_secs(30);

/// Each statement's parameter types as PostgreSQL settled them, by its text and the types
/// declared from its values (see [`Session::prepare`]).
type Settled = HashMap<(String, Vec<Type>), Vec<Type>>;

/// The connections to one PostgreSQL database; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<EngineInner>,
}

struct EngineInner {
    pool: Pool,
    /// For connections of their own (a listener).
    config: tokio_postgres::Config,
    /// `None`: plain connections.
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    /// Where the server is (`HOST:PORT/DATABASE`), for errors.
    server: String,
    settled: std::sync::Mutex<Settled>,
}

impl Engine {
    /// A pool for `config`, of at most `max_size` connections, opened as they are needed,
    /// over TLS when `tls` is given.
    pub fn new(
        config: tokio_postgres::Config,
        tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
        max_size: usize,
    ) -> Result<Self, String> {
        let recycling = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match &tls {
            Some(tls) => Manager::from_config(config.clone(), tls.clone(), recycling),
            None => Manager::from_config(config.clone(), tokio_postgres::NoTls, recycling),
        };
        let pool = Pool::builder(manager)
            .max_size(max_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(POOL_WAIT))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            inner: Arc::new(EngineInner {
                pool,
                server: server_of(&config),
                config,
                tls,
                settled: Default::default(),
            }),
        })
    }

    /// A failure of this engine's as the stores see errors (see [`pg_error_at`]), a lost or
    /// refused connection naming the server.
    fn error(&self, err: tokio_postgres::Error) -> libsql::Error {
        pg_error_at(&self.inner.server, err)
    }

    fn settled(&self) -> std::sync::MutexGuard<'_, Settled> {
        self.inner.settled.lock().expect("settled types poisoned")
    }

    /// Listens for the schedules' change notifications (see [`listen`]).
    pub fn listen_for_schedule_changes(&self) -> listen::Listener {
        listen::Listener::start(
            self.inner.config.clone(),
            self.inner.tls.clone(),
            listen::SCHEDULES_CHANNEL,
        )
    }

    /// A session on a connection of its own, returned to the pool when the last clone of
    /// it is dropped.
    pub async fn session(&self) -> Result<Session, libsql::Error> {
        let client = self.connection().await?;
        Ok(Session {
            inner: Arc::new(SessionInner {
                client: Some(client),
                in_transaction: AtomicBool::new(false),
                abandoned: AtomicBool::new(false),
                failed: AtomicBool::new(false),
                turn: tokio::sync::Mutex::new(()),
            }),
            engine: self.clone(),
        })
    }
}

impl Engine {
    /// A pooled connection. A server that refuses connections (restarting, or failing
    /// over) is asked again with backoff for up to [`RECONNECT_FOR`], so a restart is a
    /// pause for every door rather than a failed command; a refused password or a
    /// missing database is not retried.
    async fn connection(&self) -> Result<Object, libsql::Error> {
        let started = std::time::Instant::now();
        let mut backoff = Duration::from_millis(50);
        loop {
            let err = match self.inner.pool.get().await {
                Ok(client) => return Ok(client),
                Err(deadpool_postgres::PoolError::Backend(err)) => err,
                Err(other) => {
                    return Err(libsql::Error::ConnectionFailed(format!(
                        "PostgreSQL at {}: {other}",
                        self.inner.server
                    )))
                }
            };
            // Refused by the server itself: for now while it starts or stops, or has no
            // connection to spare; for good for a password, a role or a database.
            let refused_for_good = err.as_db_error().is_some_and(|db| {
                !matches!(db.code().code(), "57P01" | "57P02" | "57P03" | "53300")
                    && !db.code().code().starts_with("08")
            });
            if refused_for_good || started.elapsed() + backoff > RECONNECT_FOR {
                return Err(self.error(err));
            }
            tracing::debug!(%err, "PostgreSQL refused a connection; asking again");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }
}

/// One connection as statements run on it: a task's, for its reads and its writes alike
/// (a write on a connection of its own would need two per task, and a pool of tasks
/// waiting for the write lock with one each would leave none for the holder).
#[derive(Clone)]
pub struct Session {
    inner: Arc<SessionInner>,
    engine: Engine,
}

struct SessionInner {
    /// `None` only while dropped.
    client: Option<Object>,
    /// Between BEGIN and its COMMIT or ROLLBACK.
    in_transaction: AtomicBool,
    /// A transaction given up midway (its task failed or was stopped): rolled back before
    /// anything else runs here.
    abandoned: AtomicBool,
    /// A statement of the open transaction failed: PostgreSQL has aborted it, and would
    /// answer its COMMIT with a silent ROLLBACK.
    failed: AtomicBool,
    /// One request at a time, so a rollback of an abandoned transaction goes before the
    /// next statement, whoever sends it first.
    turn: tokio::sync::Mutex<()>,
}

impl Drop for SessionInner {
    fn drop(&mut self) {
        // Dropped inside a transaction: the connection is closed rather than pooled,
        // which rolls the transaction back and frees the write lock, so no later task
        // inherits either.
        if self.in_transaction.load(Ordering::Acquire) || self.abandoned.load(Ordering::Acquire) {
            if let Some(client) = self.client.take() {
                drop(Object::take(client));
            }
        }
    }
}

impl Session {
    fn client(&self) -> &Object {
        self.inner
            .client
            .as_ref()
            .expect("a session has its connection until dropped")
    }

    pub fn in_transaction(&self) -> bool {
        self.inner.in_transaction.load(Ordering::Acquire)
    }

    /// In a transaction that goes on: not one given up, which the next turn rolls back (a
    /// statement sent after it must not count on its write lock).
    fn in_open_transaction(&self) -> bool {
        self.in_transaction() && !self.inner.abandoned.load(Ordering::Acquire)
    }

    /// Notes a statement's failure inside a transaction (see `failed`).
    fn noting_failure<T>(&self, result: Result<T, libsql::Error>) -> Result<T, libsql::Error> {
        if result.is_err() && self.in_transaction() {
            self.inner.failed.store(true, Ordering::Release);
        }
        result
    }

    /// The turn to send a request, after rolling back a transaction given up midway.
    async fn turn(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, libsql::Error> {
        let turn = self.inner.turn.lock().await;
        if self.inner.abandoned.load(Ordering::Acquire) {
            self.client()
                .batch_execute("ROLLBACK")
                .await
                .map_err(|e| self.engine.error(e))?;
            self.inner.in_transaction.store(false, Ordering::Release);
            self.inner.failed.store(false, Ordering::Release);
            self.inner.abandoned.store(false, Ordering::Release);
        }
        Ok(turn)
    }

    /// Gives up the transaction open here: it is rolled back now, in a task of its own,
    /// so the write lock is not held until this connection is next used (or, if that
    /// cannot be done, the connection is closed when dropped, which rolls back).
    pub fn abandon(&self) {
        if !self.in_transaction() {
            return;
        }
        self.inner.abandoned.store(true, Ordering::Release);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let session = self.clone();
            runtime.spawn(async move {
                if let Err(err) = session.turn().await {
                    tracing::debug!(%err, "cannot roll back an abandoned transaction; its connection will be closed");
                }
            });
        }
    }

    /// Runs a query and reads all its rows. A query that writes (`INSERT … RETURNING`, an
    /// `UPDATE` claiming rows) outside a transaction runs in one of its own holding the
    /// write lock, as [`Session::execute`] does: on its own, PostgreSQL's READ COMMITTED
    /// would let two such claims take the same rows (found by `tests/scaleout.rs`: an
    /// outbox message leased and sent by two workers). A claim that locks its own rows
    /// (`FOR UPDATE SKIP LOCKED`) runs as it is, taking no turn behind other writers.
    pub async fn query(&self, sql: &str, params: Params) -> Result<libsql::Rows, libsql::Error> {
        let values = positional(params)?;
        if self.in_open_transaction() || !sql::writes(sql) || sql::claims_rows_itself(sql) {
            return self.query_here(sql, &values).await;
        }
        self.begin().await?;
        let open = Open(self);
        let result = self.query_here(sql, &values).await;
        std::mem::forget(open);
        match result {
            Ok(rows) => {
                self.commit().await?;
                Ok(rows)
            }
            Err(err) => {
                let _ = self.rollback().await;
                Err(err)
            }
        }
    }

    async fn query_here(&self, sql: &str, values: &[Value]) -> Result<libsql::Rows, libsql::Error> {
        let _turn = self.turn().await?;
        let result = self.read_rows(sql, values).await;
        self.noting_failure(result)
    }

    async fn read_rows(&self, sql: &str, values: &[Value]) -> Result<libsql::Rows, libsql::Error> {
        let statement = self.prepare(sql, values).await?;
        let params = bind(values);
        let rows = self
            .client()
            .query(&statement, &refs(&params))
            .await
            .map_err(|e| self.engine.error(e))?;
        let columns: Vec<String> = statement
            .columns()
            .iter()
            .map(|column| column.name().to_string())
            .collect();
        let mut read = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut values = Vec::with_capacity(columns.len());
            for i in 0..columns.len() {
                values.push(
                    row.try_get::<_, Cell>(i)
                        .map_err(|e| self.engine.error(e))?
                        .0,
                );
            }
            read.push(values);
        }
        Ok(libsql::Rows::from_values(columns, read))
    }

    /// Runs one statement; returns the rows it changed. Outside a transaction it runs in
    /// one of its own, holding the write lock as a transaction would (but for a claim
    /// that locks its own rows); stopped midway, that transaction is abandoned (rolled
    /// back).
    pub async fn execute(&self, sql: &str, params: Params) -> Result<u64, libsql::Error> {
        let values = positional(params)?;
        if self.in_open_transaction() || sql::claims_rows_itself(sql) {
            let _turn = self.turn().await?;
            return self.execute_here(sql, &values).await;
        }
        self.begin().await?;
        let open = Open(self);
        let result = {
            let _turn = self.turn().await?;
            self.execute_here(sql, &values).await
        };
        std::mem::forget(open);
        match result {
            Ok(changed) => {
                self.commit().await?;
                Ok(changed)
            }
            Err(err) => {
                let _ = self.rollback().await;
                Err(err)
            }
        }
    }

    async fn execute_here(&self, sql: &str, values: &[Value]) -> Result<u64, libsql::Error> {
        let result = async {
            let statement = self.prepare(sql, values).await?;
            let params = bind(values);
            self.client()
                .execute(&statement, &refs(&params))
                .await
                .map_err(|e| self.engine.error(e))
        }
        .await;
        self.noting_failure(result)
    }

    /// Sends `sql` (statements without parameters) on the turn already held.
    async fn batch(&self, sql: &str) -> Result<(), libsql::Error> {
        self.client()
            .batch_execute(sql)
            .await
            .map_err(|e| self.engine.error(e))
    }

    /// Runs a script of statements with no parameters (a migration).
    pub async fn execute_batch(&self, sql: &str) -> Result<(), libsql::Error> {
        let _turn = self.turn().await?;
        self.client()
            .batch_execute(sql)
            .await
            .map_err(|e| self.engine.error(e))
    }

    /// Begins a write transaction here, holding the write lock until it ends.
    pub async fn begin(&self) -> Result<(), libsql::Error> {
        self.begin_as(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCK})"
        ))
        .await
    }

    /// Begins a claim's transaction here (see [`CLAIMING`]): it takes no write lock, so
    /// it waits behind no other writer. It must write only rows it has locked itself
    /// first (`FOR [NO KEY] UPDATE SKIP LOCKED`, or the row an `UPDATE` of it locks), and take no
    /// lock another writer may hold while it waits for this one's rows.
    pub async fn begin_claiming(&self) -> Result<(), libsql::Error> {
        self.begin_as(&format!("BEGIN; SET LOCAL {CLAIMING} = 'on'"))
            .await
    }

    async fn begin_as(&self, begin: &str) -> Result<(), libsql::Error> {
        let _turn = self.turn().await?;
        // As SQLite: PostgreSQL would only warn, and the inner COMMIT would end the outer
        // transaction halfway.
        if self.in_transaction() {
            return Err(libsql::Error::Misuse(
                "a transaction is already open on this connection".into(),
            ));
        }
        // Marked first: a BEGIN that fails or is stopped midway leaves the connection in
        // an unknown state, and it is rolled back (or closed) rather than reused as is.
        self.inner.in_transaction.store(true, Ordering::Release);
        let open = Open(self);
        self.client()
            .batch_execute(begin)
            .await
            .map_err(|e| self.engine.error(e))?;
        std::mem::forget(open);
        Ok(())
    }

    pub async fn commit(&self) -> Result<(), libsql::Error> {
        self.end("COMMIT").await
    }

    pub async fn rollback(&self) -> Result<(), libsql::Error> {
        self.end("ROLLBACK").await
    }

    async fn end(&self, sql: &str) -> Result<(), libsql::Error> {
        // Guarded from the start: stopped while it waits for its turn, the transaction is
        // abandoned (rolled back), never left open for the next statement to join.
        let open = Open(self);
        let _turn = self.turn().await?;
        if !self.in_transaction() {
            // Given up and rolled back by the turn just taken.
            std::mem::forget(open);
            return Err(libsql::Error::Misuse(
                "the transaction was given up and rolled back before it ended".into(),
            ));
        }
        let failed = self.inner.failed.load(Ordering::Acquire);
        let commit_refused = failed && sql == "COMMIT";
        let sql = if failed { "ROLLBACK" } else { sql };
        self.client()
            .batch_execute(sql)
            .await
            .map_err(|e| self.engine.error(e))?;
        std::mem::forget(open);
        self.inner.in_transaction.store(false, Ordering::Release);
        self.inner.failed.store(false, Ordering::Release);
        if commit_refused {
            return Err(libsql::Error::SqliteFailure(
                1,
                format!(
                    "PostgreSQL at {}: the transaction was rolled back, as a statement in it \
                     failed",
                    self.engine.inner.server
                ),
            ));
        }
        Ok(())
    }

    /// Prepares `sql` (once per connection: the pool keeps it) for `values`. A blob is
    /// declared `bytea` and a real `double precision`, which they are wherever they go;
    /// PostgreSQL infers the rest from where they stand (an integer may be a boolean, a
    /// text a JSON document). A parameter nothing tells the type of (`?1 IS NULL`, where
    /// SQLite needs none) is declared by its value, a text or an integer, and prepared
    /// again (inside a transaction, under a savepoint); what PostgreSQL settled is kept for
    /// the process.
    async fn prepare(
        &self,
        sql: &str,
        values: &[Value],
    ) -> Result<tokio_postgres::Statement, libsql::Error> {
        let sql = sql::to_postgres(sql).into_owned();
        let declared: Vec<Type> = values
            .iter()
            .map(|value| match value {
                Value::Blob(_) => Type::BYTEA,
                Value::Real(_) => Type::FLOAT8,
                _ => Type::UNKNOWN,
            })
            .collect();
        let key = (sql, declared);
        let settled = self.engine.settled().get(&key).cloned();
        if let Some(types) = settled {
            return self
                .client()
                .prepare_typed_cached(&key.0, &types)
                .await
                .map_err(|e| self.engine.error(e));
        }
        let statement = if self.in_transaction() {
            // A failed PREPARE aborts the transaction: the guesses are made under a
            // savepoint, rolled back to after each one that fails. (On a connection of
            // its own, a writer holding the lock could wait for the pool behind the very
            // tasks that wait for its lock.)
            self.batch("SAVEPOINT nightshift_settle").await?;
            let statement = self.settle(&key.0, &key.1, values, true).await;
            self.batch("RELEASE SAVEPOINT nightshift_settle").await?;
            statement?
        } else {
            self.settle(&key.0, &key.1, values, false).await?
        };
        let types = statement.params().to_vec();
        let mut settled = self.engine.settled();
        // Statements are the code's own, a bounded set; the bound only guards against a
        // text built from data.
        if settled.len() >= MAX_SETTLED {
            settled.clear();
        }
        settled.insert(key, types);
        Ok(statement)
    }

    /// Prepares `sql`, declaring a parameter PostgreSQL cannot tell the type of by its
    /// value, one at a time: an integer as `bigint`, a text as `text`, a null as `text`,
    /// or `bigint` when `text` does not fit where it stands. `in_savepoint`: inside a
    /// transaction, under the savepoint `nightshift_settle`, rolled back to after each
    /// failed attempt.
    async fn settle(
        &self,
        sql: &str,
        declared: &[Type],
        values: &[Value],
        in_savepoint: bool,
    ) -> Result<tokio_postgres::Statement, libsql::Error> {
        let mut types = declared.to_vec();
        // The last parameter declared by a guess, and the guesses left for it.
        let mut guessed: Option<(usize, Vec<Type>)> = None;
        loop {
            let err = match self.client().prepare_typed_cached(sql, &types).await {
                Ok(statement) => return Ok(statement),
                Err(err) => err,
            };
            if in_savepoint {
                self.batch("ROLLBACK TO SAVEPOINT nightshift_settle")
                    .await?;
            }
            let undetermined = undetermined_parameter(&err)
                .and_then(|n| n.checked_sub(1))
                .filter(|&i| i < types.len() && types[i] == Type::UNKNOWN);
            match (undetermined, guessed.as_mut()) {
                (Some(slot), _) => {
                    let mut candidates = match values[slot] {
                        Value::Integer(_) => vec![Type::INT8],
                        Value::Null => vec![Type::TEXT, Type::INT8],
                        _ => vec![Type::TEXT],
                    };
                    types[slot] = candidates.remove(0);
                    guessed = Some((slot, candidates));
                }
                (None, Some((slot, candidates))) if !candidates.is_empty() => {
                    types[*slot] = candidates.remove(0);
                }
                _ => return Err(self.engine.error(err)),
            }
        }
    }
}

/// The parameter PostgreSQL could not tell the type of (42P08), by its number.
fn undetermined_parameter(err: &tokio_postgres::Error) -> Option<usize> {
    let db = err.as_db_error()?;
    if db.code().code() != "42P08" {
        return None;
    }
    let (_, number) = db.message().rsplit_once('$')?;
    number.trim().parse().ok()
}

/// A transaction's step under way: dropped before it is forgotten (its future was
/// stopped, or it failed with `?`), the transaction is abandoned.
struct Open<'a>(&'a Session);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

fn positional(params: Params) -> Result<Vec<Value>, libsql::Error> {
    match params {
        Params::None => Ok(Vec::new()),
        Params::Positional(values) => Ok(values),
        Params::Named(_) => Err(libsql::Error::Misuse(
            "named parameters are not used with PostgreSQL".into(),
        )),
    }
}

fn bind(values: &[Value]) -> Vec<Param<'_>> {
    values.iter().map(Param).collect()
}

fn refs<'a>(params: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

/// Where `config` points: `HOST:PORT/DATABASE` (the first host; a socket's folder).
fn server_of(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => "?".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}/{}", config.get_dbname().unwrap_or_default())
}

/// A PostgreSQL failure as the stores see errors: a lost or refused connection is a
/// failed connection (worth retrying), a statement's failure a database failure with
/// PostgreSQL's code and message.
pub fn pg_error_at(server: &str, err: tokio_postgres::Error) -> libsql::Error {
    let at = if server.is_empty() {
        String::new()
    } else {
        format!(" at {server}")
    };
    match err.as_db_error() {
        Some(db) => {
            // SQLite's codes where one means the same: busy for a lock or serialization
            // conflict, a constraint for an integrity violation.
            let code = match db.code().code() {
                "40001" | "40P01" | "55P03" => 5,
                class if class.starts_with("23") => 19,
                _ => 1,
            };
            libsql::Error::SqliteFailure(
                code,
                format!("PostgreSQL {}: {}", db.code().code(), db.message()),
            )
        }
        None if err.is_closed()
            || err.to_string().contains("connection")
            || std::error::Error::source(&err)
                .is_some_and(|cause| cause.is::<std::io::Error>()) =>
        {
            libsql::Error::ConnectionFailed(format!(
                "PostgreSQL{at}: {}",
                crate::error::error_chain(&err)
            ))
        }
        None => libsql::Error::SqliteFailure(
            1,
            format!("PostgreSQL{at}: {}", crate::error::error_chain(&err)),
        ),
    }
}
