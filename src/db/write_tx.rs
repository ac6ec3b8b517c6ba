//! Write transactions. On a local file SQLite's own lock and `busy_timeout` order writers.
//! On a libSQL server a write transaction holds the server's single write lock across
//! network round trips, and writers queued behind it are where sqld misbehaves: under
//! heavy queueing sqld 0.24 was seen to leave its write lock to a closed connection and
//! stall every later write. So against a server, a process writes one at a time (a write
//! transaction here, a single statement in `Runner::execute`) and the queue at the server
//! is at most one per worker.
//!
//! Against a server every transaction is libsql's, on a stream of its own that its COMMIT
//! or ROLLBACK closes (or libsql's drop rolls back): a transaction never lives on a pooled
//! connection's stream, where the reads of whoever took that connection next would keep
//! an unfinished transaction, and the server's write lock, alive.

use std::ops::Deref;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::runner::Runner;

/// A `BEGIN IMMEDIATE` transaction; against a server it also holds this process's turn
/// to write. Dropped without commit it rolls back.
pub struct WriteTx {
    tx: libsql::Transaction,
    runner: Runner,
    _turn: Option<OwnedSemaphorePermit>,
}

impl WriteTx {
    pub(super) async fn begin(
        conn: &libsql::Connection,
        gate: Option<&Arc<Semaphore>>,
    ) -> Result<Self, libsql::Error> {
        let turn = take_turn(gate).await;
        let tx = conn
            .transaction_with_behavior(libsql::TransactionBehavior::Immediate)
            .await?;
        Ok(Self {
            runner: Runner::in_transaction(Deref::deref(&tx).clone()),
            tx,
            _turn: turn,
        })
    }

    /// Runs a query inside the transaction.
    pub async fn query(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<libsql::Rows, libsql::Error> {
        self.runner.query(sql, params).await
    }

    /// The transaction as statements run on it (for statements kept across calls).
    pub fn runner(&self) -> Runner {
        self.runner.clone()
    }

    pub async fn commit(self) -> Result<(), libsql::Error> {
        self.tx.commit().await
    }

    pub async fn rollback(self) -> Result<(), libsql::Error> {
        self.tx.rollback().await
    }
}

/// This process's turn to write, against a server (`gate` is `None` for a local file).
pub(super) async fn take_turn(gate: Option<&Arc<Semaphore>>) -> Option<OwnedSemaphorePermit> {
    match gate {
        Some(gate) => Some(
            gate.clone()
                .acquire_owned()
                .await
                .expect("the write gate is never closed"),
        ),
        None => None,
    }
}

impl Deref for WriteTx {
    type Target = libsql::Connection;

    fn deref(&self) -> &libsql::Connection {
        self.runner.connection()
    }
}
