//! A small pool of idle connections. Opening a connection costs a file open and a few
//! pragmas; a busy CLI or worker reuses them instead. Against a libSQL server a connection
//! is a Hrana stream, and a new stream costs the server about as much as a statement (it
//! opens a database connection for it: measured on sqld 0.24, one request on a new stream
//! took ~2.4 ms of its CPU, two on a stream already open ~1.6 ms). The server ends a
//! stream idle for 10 s; a pooled connection idle that long starts a new one on its next
//! statement (`db::runner`) and keeps the statements it has described.

use std::sync::{Arc, Mutex};

use super::runner::Runner;
use super::server_stream::ServerStream;
use super::write_gate::WriteGate;
use super::write_tx::{Begin, WriteTx};

/// An idle connection and, against a server, what is kept of its stream.
type Idle = (libsql::Connection, Option<ServerStream>);

#[derive(Clone)]
pub(super) struct Pool {
    /// Idle connections; the most recently given back last.
    idle: Arc<Mutex<Vec<Idle>>>,
    max_idle: usize,
}

impl Pool {
    pub(super) fn new(max_idle: usize) -> Self {
        Self {
            idle: Arc::new(Mutex::new(Vec::with_capacity(max_idle))),
            max_idle,
        }
    }

    pub(super) fn take(&self) -> Option<Idle> {
        self.idle.lock().expect("pool lock poisoned").pop()
    }

    fn give_back(&self, idle_conn: Idle) {
        let mut idle = self.idle.lock().expect("pool lock poisoned");
        if idle.len() < self.max_idle {
            idle.push(idle_conn);
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
        stream: Option<ServerStream>,
        pool: Pool,
        write_gate: Option<WriteGate>,
        local_busy: Option<std::time::Duration>,
    ) -> Self {
        Self {
            runner: Some(Runner::new(conn, stream, write_gate, local_busy)),
            pool,
        }
    }

    /// A PostgreSQL session's (its pool is PostgreSQL's own).
    pub(super) fn postgres(session: super::postgres::Session, pool: Pool) -> Self {
        Self {
            runner: Some(Runner::postgres(session)),
            pool,
        }
    }

    /// On PostgreSQL (where some statements are written differently).
    pub fn is_postgres(&self) -> bool {
        self.runner_ref().is_postgres()
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
        self.runner_ref().query(sql, params).await
    }

    /// Runs one statement on its own (autocommit); see [`Runner::execute`]. Shadows
    /// `libsql::Connection::execute`, so every `conn.execute` on a [`Conn`] goes through
    /// here.
    pub async fn execute(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<u64, libsql::Error> {
        self.runner_ref().execute(sql, params).await
    }

    /// Runs one statement on its own, behind at most one other write of this process;
    /// see [`Runner::execute_ahead`].
    pub async fn execute_ahead(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<u64, libsql::Error> {
        self.runner_ref().execute_ahead(sql, params).await
    }

    /// Begins a write (`BEGIN IMMEDIATE`) transaction: on this connection, or against a
    /// plain server on the process's write connection (see `db::write_tx`).
    pub async fn write_tx(&self) -> Result<WriteTx, libsql::Error> {
        let runner = self.runner_ref();
        WriteTx::begin(runner, Begin::Immediate).await
    }

    /// As [`Conn::write_tx`], for a transaction whose first statement writes: against a
    /// plain server it begins with a plain `BEGIN`, and the server's write lock is taken
    /// by that first statement instead of by `BEGIN`, one network round trip later. (A
    /// transaction that read first would then fail at its first write if another
    /// writer had committed since the read, so only a first statement that writes
    /// qualifies.)
    pub async fn write_tx_writing_first(&self) -> Result<WriteTx, libsql::Error> {
        WriteTx::begin(self.runner_ref(), Begin::WritingFirst).await
    }

    /// A claim's transaction, whose first statement locks the rows it takes with `… SKIP
    /// LOCKED` and which writes no other: on PostgreSQL it waits behind no
    /// other writer, and its changes to the schedules tell no worker (see
    /// `postgres::CLAIMING`); elsewhere it is [`Conn::write_tx_writing_first`].
    pub async fn claim_tx(&self) -> Result<WriteTx, libsql::Error> {
        WriteTx::begin(self.runner_ref(), Begin::Claiming).await
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(runner) = self.runner.take() {
            if let Some(conn) = runner.libsql() {
                if conn.is_autocommit() {
                    self.pool.give_back((conn.clone(), runner.stream));
                }
            }
        }
    }
}
