//! Write transactions. On a local file SQLite's own lock and `busy_timeout` order writers.
//! On a libSQL server a write transaction holds the server's single write lock across
//! network round trips, and writers queued behind it are where sqld misbehaves: under
//! heavy queueing sqld 0.24 was seen to leave its write lock to a closed connection and
//! stall every later write. So against a server, a process writes one at a time (a write
//! transaction here, a single statement in `Runner::execute`) and the queue at the server
//! is at most one per worker.
//!
//! Against a server, a transaction runs on its connection's own Hrana stream (libsql's
//! `Connection::transaction` opens a new stream for each, which sqld pays for with a new
//! database connection), so it also runs the statements that connection has described in
//! one request each (see `Runner::query`).

use std::ops::Deref;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::runner::{Described, Runner};

/// A `BEGIN IMMEDIATE` transaction; against a server it also holds this process's turn
/// to write. Dropped without commit it rolls back.
pub struct WriteTx {
    runner: Runner,
    end: End,
    turn: Option<OwnedSemaphorePermit>,
}

/// How the transaction ends.
enum End {
    /// libsql's transaction (a local file; an embedded replica, whose writes libsql sends
    /// on to the server): it rolls back when dropped.
    Libsql(Option<libsql::Transaction>),
    /// BEGIN IMMEDIATE on a server connection's stream; `open` until COMMIT or ROLLBACK.
    /// The guard keeps the connection from being used or pooled until a rollback that a
    /// drop started has finished.
    Stream { open: bool, guard: StreamGuard },
}

impl WriteTx {
    pub(super) async fn begin(
        conn: &libsql::Connection,
        described: Option<Described>,
        guard: StreamGuard,
        gate: Option<&Arc<Semaphore>>,
    ) -> Result<Self, libsql::Error> {
        let turn = take_turn(gate).await;
        // Only a plain server connection keeps described statements (see `Db::conn`): a
        // local file and an embedded replica use libsql's transaction.
        if described.is_none() {
            let tx = conn
                .transaction_with_behavior(libsql::TransactionBehavior::Immediate)
                .await?;
            return Ok(Self {
                runner: Runner::in_transaction(Deref::deref(&tx).clone(), None),
                end: End::Libsql(Some(tx)),
                turn,
            });
        }
        if let Err(err) = conn.execute("BEGIN IMMEDIATE", ()).await {
            // The request may have reached the server and begun the transaction.
            roll_back(conn).await;
            return Err(err);
        }
        Ok(Self {
            runner: Runner::in_transaction(conn.clone(), described),
            end: End::Stream { open: true, guard },
            turn,
        })
    }

    /// Runs a query inside the transaction; see [`Runner::query`].
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

    pub async fn commit(mut self) -> Result<(), libsql::Error> {
        self.end("COMMIT").await
    }

    pub async fn rollback(mut self) -> Result<(), libsql::Error> {
        self.end("ROLLBACK").await
    }

    async fn end(&mut self, how: &str) -> Result<(), libsql::Error> {
        match &mut self.end {
            End::Libsql(tx) => {
                let tx = tx.take().expect("a transaction ends once");
                if how == "COMMIT" {
                    tx.commit().await
                } else {
                    tx.rollback().await
                }
            }
            End::Stream { open, .. } => {
                // A failed COMMIT leaves `open` set: the drop rolls back whatever is left.
                self.runner.connection().execute(how, ()).await?;
                *open = false;
                Ok(())
            }
        }
    }
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        let End::Stream { open: true, guard } = &self.end else {
            return;
        };
        let conn = self.runner.connection().clone();
        // The server already ended it (SQLite rolls back on some errors): nothing to do.
        if conn.is_autocommit() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        // The rollback keeps this process's turn to write and the connection's guard
        // until it is done: the connection is neither used nor pooled before.
        let turn = self.turn.take();
        let hold = guard.hold();
        runtime.spawn(async move {
            roll_back(&conn).await;
            drop(hold);
            drop(turn);
        });
    }
}

/// Ends whatever transaction a server connection's stream may hold: a ROLLBACK ends it
/// (or fails harmlessly when there is none) and closes the stream; when the server cannot
/// be reached, the stream is forgotten instead, and the server ends it when it expires.
async fn roll_back(conn: &libsql::Connection) {
    if conn.execute("ROLLBACK", ()).await.is_err() {
        conn.reset().await;
    }
}

/// Held while the ROLLBACK of a transaction dropped unfinished is on its way (see
/// `WriteTx`'s drop): the connection's next statement waits for it, and the connection is
/// not pooled meanwhile.
#[derive(Clone, Default)]
pub(super) struct StreamGuard(Arc<tokio::sync::Mutex<()>>);

impl StreamGuard {
    pub(super) fn hold(&self) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        self.0.clone().try_lock_owned().ok()
    }

    pub(super) async fn settled(&self) {
        drop(self.0.lock().await);
    }

    pub(super) fn is_held(&self) -> bool {
        self.0.try_lock().is_err()
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
