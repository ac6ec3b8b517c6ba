//! Write transactions. On a local file SQLite's own lock and `busy_timeout` order writers.
//! On a libSQL server a write transaction holds the server's single write lock across
//! network round trips, and writers queued behind it are where sqld misbehaves: under
//! heavy queueing sqld 0.24 was seen to leave its write lock to a closed connection and
//! stall every later write. So against a server, a process writes one at a time (a write
//! transaction here, a single statement in `Conn::execute`) and the queue at the server is
//! at most one per worker.

use std::ops::Deref;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A `BEGIN IMMEDIATE` transaction; against a server it also holds this process's turn
/// to write. Dropped without commit it rolls back.
pub struct WriteTx {
    tx: libsql::Transaction,
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
        Ok(Self { tx, _turn: turn })
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
    type Target = libsql::Transaction;

    fn deref(&self) -> &libsql::Transaction {
        &self.tx
    }
}
