//! A small pool of idle connections. Opening a connection costs a file open and a few
//! pragmas; a busy CLI or worker reuses them instead. Against a libSQL server a connection
//! is a Hrana stream, and a new stream costs the server about as much as a statement (it
//! opens a database connection for it: measured on sqld 0.24, one request on a new stream
//! took ~2.4 ms of its CPU, two on a stream already open ~1.6 ms); the server ends a
//! stream idle for 10 s, so server connections are only reused while recently used.

use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::runner::{Described, Runner};
use super::write_tx::WriteTx;

/// An idle connection, the statements it has described (server only), and since when it
/// is idle.
type Idle = (libsql::Connection, Option<Described>, Instant);

#[derive(Clone)]
pub(super) struct Pool {
    /// Idle connections; the most recently given back last.
    idle: Arc<Mutex<Vec<Idle>>>,
    max_idle: usize,
    /// How long a connection may sit idle and still be handed out (`None`: forever).
    max_idle_time: Option<Duration>,
}

impl Pool {
    pub(super) fn new(max_idle: usize, max_idle_time: Option<Duration>) -> Self {
        Self {
            idle: Arc::new(Mutex::new(Vec::with_capacity(max_idle))),
            max_idle,
            max_idle_time,
        }
    }

    pub(super) fn take(&self) -> Option<(libsql::Connection, Option<Described>)> {
        let mut idle = self.idle.lock().expect("pool lock poisoned");
        if let Some(max_idle_time) = self.max_idle_time {
            // Given back in order, so the stale ones are at the front.
            let stale = idle
                .iter()
                .take_while(|(_, _, since)| since.elapsed() > max_idle_time)
                .count();
            idle.drain(..stale);
        }
        idle.pop().map(|(conn, described, _)| (conn, described))
    }

    fn give_back(&self, conn: libsql::Connection, described: Option<Described>) {
        let mut idle = self.idle.lock().expect("pool lock poisoned");
        if idle.len() < self.max_idle {
            idle.push((conn, described, Instant::now()));
        }
    }
}

/// A connection owned by one task. Dropped, it goes back to the pool, unless it is still
/// inside a transaction (a task failed between BEGIN and COMMIT): then it is closed, which
/// rolls the transaction back, so no later task inherits it.
pub struct Conn {
    runner: Option<Runner>,
    pool: Pool,
}

impl Conn {
    pub(super) fn new(
        conn: libsql::Connection,
        described: Option<Described>,
        pool: Pool,
        write_gate: Option<Arc<Semaphore>>,
    ) -> Self {
        Self {
            runner: Some(Runner::new(conn, described, write_gate)),
            pool,
        }
    }

    fn runner_ref(&self) -> &Runner {
        self.runner.as_ref().expect("connection present until drop")
    }

    /// The connection as statements kept across calls run on it (a local writer's
    /// prepared statements). Outside the pool's reach: the `Conn` must outlive it.
    pub fn runner(&self) -> Runner {
        self.runner_ref().clone()
    }

    /// Runs a query; see [`Runner::query`]. Shadows `libsql::Connection::query`, so every
    /// `conn.query` on a [`Conn`] goes through here.
    pub async fn query(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<libsql::Rows, libsql::Error> {
        let result = self.runner_ref().query(sql, params).await;
        self.forget_stream_after(result).await
    }

    /// Runs one statement on its own (autocommit); see [`Runner::execute`]. Shadows
    /// `libsql::Connection::execute`, so every `conn.execute` on a [`Conn`] goes through
    /// here.
    pub async fn execute(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<u64, libsql::Error> {
        let result = self.runner_ref().execute(sql, params).await;
        self.forget_stream_after(result).await
    }

    /// After a failed statement on a server connection, starts its next statement on a
    /// new stream: the failure may have been the server going away or restarting, and
    /// the old stream's baton would then fail every later statement, for as long as the
    /// connection is reused. Only outside a transaction, where no state lives on the
    /// stream: a transaction's stream is ended by its COMMIT or ROLLBACK.
    async fn forget_stream_after<T>(
        &self,
        result: Result<T, libsql::Error>,
    ) -> Result<T, libsql::Error> {
        let runner = self.runner_ref();
        if result.is_err() && runner.described.is_some() && runner.conn.is_autocommit() {
            runner.conn.reset().await;
        }
        result
    }

    /// Begins a write (`BEGIN IMMEDIATE`) transaction on this connection.
    pub async fn write_tx(&self) -> Result<WriteTx, libsql::Error> {
        let runner = self.runner_ref();
        WriteTx::begin(&runner.conn, runner.write_gate.as_ref()).await
    }
}

impl Deref for Conn {
    type Target = libsql::Connection;

    fn deref(&self) -> &libsql::Connection {
        &self.runner_ref().conn
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(runner) = self.runner.take() {
            if runner.conn.is_autocommit() {
                self.pool.give_back(runner.conn, runner.described);
            }
        }
    }
}
