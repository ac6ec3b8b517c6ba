//! Write transactions. On a local file SQLite's own lock and `busy_timeout` order writers.
//! On a libSQL server a write transaction holds the server's single write lock across
//! network round trips, and writers queued behind it are where sqld misbehaves: under
//! heavy queueing sqld 0.24 was seen to leave its write lock to a closed connection and
//! stall every later write. So against a server, a process writes one at a time (a write
//! transaction here, a single statement in `Runner::execute`) and the queue at the server
//! is at most one per worker. A write that keeps a held run alive (a lease renewal) waits
//! behind at most one other write of the process, not the whole queue: under load the
//! queue outlasted a lease (found by `tests/scaleout.rs` with `lease_secs = 3`), and
//! another worker took over a run that was still going.
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
    _turn: Option<Turn>,
}

impl WriteTx {
    pub(super) async fn begin(
        conn: &libsql::Connection,
        gate: Option<&WriteGate>,
    ) -> Result<Self, libsql::Error> {
        let turn = take_turn(gate, Lane::Queue).await;
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

/// Which way a write reaches this process's turn to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lane {
    /// Behind every write of the process that asked before it.
    Queue,
    /// Behind at most one write of the queue: for writes that keep a held run alive.
    Ahead,
}

/// This process's turn to write against a server, one writer at a time. A queued write
/// first takes its place (`queue`, first come first served), then the turn; so at most
/// one queued write waits on the turn, and a write in the [`Lane::Ahead`] goes straight
/// to the turn, behind that one write and the one writing.
#[derive(Clone)]
pub(super) struct WriteGate {
    queue: Arc<Semaphore>,
    turn: Arc<Semaphore>,
}

impl WriteGate {
    pub(super) fn new() -> Self {
        Self {
            queue: Arc::new(Semaphore::new(1)),
            turn: Arc::new(Semaphore::new(1)),
        }
    }

    async fn take(&self, lane: Lane) -> Turn {
        let place = match lane {
            Lane::Queue => Some(acquire(&self.queue).await),
            Lane::Ahead => None,
        };
        Turn {
            _turn: acquire(&self.turn).await,
            _place: place,
        }
    }
}

async fn acquire(semaphore: &Arc<Semaphore>) -> OwnedSemaphorePermit {
    semaphore
        .clone()
        .acquire_owned()
        .await
        .expect("the write gate is never closed")
}

/// The turn to write, held until the write ends.
pub(super) struct Turn {
    _turn: OwnedSemaphorePermit,
    _place: Option<OwnedSemaphorePermit>,
}

/// This process's turn to write, against a server (`gate` is `None` for a local file).
pub(super) async fn take_turn(gate: Option<&WriteGate>, lane: Lane) -> Option<Turn> {
    match gate {
        Some(gate) => Some(gate.take(lane).await),
        None => None,
    }
}

impl Deref for WriteTx {
    type Target = libsql::Connection;

    fn deref(&self) -> &libsql::Connection {
        self.runner.connection()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    /// A write in the lane ahead goes before the writes queued before it, behind the one
    /// writing.
    #[tokio::test(start_paused = true)]
    async fn a_write_ahead_passes_the_queue() {
        let gate = WriteGate::new();
        let order = Arc::new(Mutex::new(Vec::new()));
        let writing = gate.take(Lane::Queue).await;
        let mut writers = Vec::new();
        for (name, lane) in [
            ("queued 1", Lane::Queue),
            ("queued 2", Lane::Queue),
            ("queued 3", Lane::Queue),
            ("ahead", Lane::Ahead),
        ] {
            let (gate, order) = (gate.clone(), order.clone());
            writers.push(tokio::spawn(async move {
                let _turn = gate.take(lane).await;
                order.lock().unwrap().push(name);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }));
            // Each is waiting before the next one asks.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        drop(writing);
        for writer in writers {
            writer.await.unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            ["ahead", "queued 1", "queued 2", "queued 3"]
        );
    }
}
