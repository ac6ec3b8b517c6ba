//! A small pool of idle connections. Opening a connection costs a file open and a few
//! pragmas; a busy CLI or worker reuses them instead.

use std::ops::Deref;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use super::write_tx::WriteTx;

#[derive(Clone)]
pub(super) struct Pool {
    idle: Arc<Mutex<Vec<libsql::Connection>>>,
    max_idle: usize,
}

impl Pool {
    pub(super) fn new(max_idle: usize) -> Self {
        Self {
            idle: Arc::new(Mutex::new(Vec::with_capacity(max_idle))),
            max_idle,
        }
    }

    pub(super) fn take(&self) -> Option<libsql::Connection> {
        self.idle.lock().expect("pool lock poisoned").pop()
    }

    fn give_back(&self, conn: libsql::Connection) {
        let mut idle = self.idle.lock().expect("pool lock poisoned");
        if idle.len() < self.max_idle {
            idle.push(conn);
        }
    }
}

/// A connection owned by one task. Dropped, it goes back to the pool, unless it is still
/// inside a transaction (a task failed between BEGIN and COMMIT): then it is closed, which
/// rolls the transaction back, so no later task inherits it.
pub struct Conn {
    conn: Option<libsql::Connection>,
    pool: Pool,
    write_gate: Option<Arc<Semaphore>>,
}

impl Conn {
    pub(super) fn new(
        conn: libsql::Connection,
        pool: Pool,
        write_gate: Option<Arc<Semaphore>>,
    ) -> Self {
        Self {
            conn: Some(conn),
            pool,
            write_gate,
        }
    }

    /// Begins a write (`BEGIN IMMEDIATE`) transaction on this connection.
    pub async fn write_tx(&self) -> Result<WriteTx, libsql::Error> {
        WriteTx::begin(self, self.write_gate.as_ref()).await
    }

    /// Runs one statement on its own (autocommit). Against a server it takes this
    /// process's turn to write first, like a [`WriteTx`]: a single-statement write waits
    /// at the server for the write lock just as a transaction does, and under a long queue
    /// sqld answers `SQLITE_BUSY` to waiters it keeps queued (see `db::write_tx`). Shadows
    /// `libsql::Connection::execute`, so every `conn.execute` on a [`Conn`] goes through
    /// here.
    pub async fn execute(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<u64, libsql::Error> {
        let _turn = super::write_tx::take_turn(self.write_gate.as_ref()).await;
        Deref::deref(self).execute(sql, params).await
    }
}

impl Deref for Conn {
    type Target = libsql::Connection;

    fn deref(&self) -> &libsql::Connection {
        self.conn.as_ref().expect("connection present until drop")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if conn.is_autocommit() {
                self.pool.give_back(conn);
            }
        }
    }
}
