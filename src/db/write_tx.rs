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
//! Against a server every transaction lives on a stream of its own that its COMMIT or
//! ROLLBACK closes: a transaction never lives on a pooled connection's stream, where the
//! reads of whoever took that connection next would keep an unfinished transaction, and
//! the server's write lock, alive. Against a plain server (not through a replica) that
//! stream belongs to the process's write connection, kept between transactions by whoever
//! holds the turn, with the statements described inside a transaction: libsql's own
//! transactions open a new connection each and describe every query anew, a request
//! each (~5 a scheduled run), every one of them made while the server's write lock is
//! held.

use std::ops::Deref;

use super::runner::Runner;
use super::write_gate::{take_turn, Lane, Turn, WriteConn, WriteConnSlot};

/// A write transaction (`BEGIN IMMEDIATE`, or see [`Begin::WritingFirst`]); against a
/// server it also holds this process's turn to write. Dropped without commit it rolls
/// back.
pub struct WriteTx {
    on: TxOn,
    runner: Runner,
    turn: Option<Turn>,
}

/// What a [`WriteTx`] runs on.
enum TxOn {
    /// libsql's transaction (a local file, a server through a replica); `None` once
    /// committed or rolled back.
    Libsql(Option<libsql::Transaction>),
    /// The connection's PostgreSQL session, holding the write lock (see `db::postgres`);
    /// `None` once committed or rolled back. Dropped unfinished, it is rolled back.
    Postgres(Option<super::postgres::Session>),
    /// The process's write connection to a server; `None` once committed or rolled back.
    Server {
        home: WriteConnSlot,
        conn: Option<WriteConn>,
    },
}

/// How a [`WriteTx`] begins.
#[derive(Clone, Copy)]
pub(super) enum Begin {
    /// `BEGIN IMMEDIATE`: the write lock is taken at once.
    Immediate,
    /// The first statement writes: on the server's write connection a plain `BEGIN`, so
    /// the server takes its write lock at that statement rather than a round trip
    /// before it. Where no round trip is saved (a local file, libsql's transaction
    /// through a replica) it begins as [`Begin::Immediate`].
    WritingFirst,
    /// A claim of rows the transaction locks itself: on PostgreSQL it takes no write lock
    /// (see `postgres::Session::begin_claiming`); elsewhere, where every writer holds the
    /// database's one lock, it begins as [`Begin::WritingFirst`].
    Claiming,
}

impl WriteTx {
    pub(super) async fn begin(on: &Runner, begin: Begin) -> Result<Self, libsql::Error> {
        let conn = match &on.link {
            super::runner::Link::Libsql(conn) => conn,
            super::runner::Link::Postgres(session) => {
                match begin {
                    Begin::Claiming => session.begin_claiming().await?,
                    Begin::Immediate | Begin::WritingFirst => session.begin().await?,
                }
                return Ok(Self {
                    runner: Runner::postgres(session.clone()),
                    on: TxOn::Postgres(Some(session.clone())),
                    turn: None,
                });
            }
        };
        let gate = on.write_gate.as_ref();
        let turn = take_turn(gate, Lane::Queue).await;
        if let Some(home) = gate.and_then(|gate| gate.write_conn.as_ref()) {
            let write_conn = home.take()?;
            let sql = match begin {
                Begin::Immediate => "BEGIN IMMEDIATE",
                Begin::WritingFirst | Begin::Claiming => "BEGIN",
            };
            // On a failed BEGIN the connection is dropped: its stream's state is unknown.
            write_conn.conn.execute(sql, ()).await?;
            return Ok(Self {
                runner: Runner::new(
                    write_conn.conn.clone(),
                    Some(write_conn.stream.clone()),
                    None,
                    None,
                ),
                on: TxOn::Server {
                    home: home.clone(),
                    conn: Some(write_conn),
                },
                turn,
            });
        }
        let immediate = || conn.transaction_with_behavior(libsql::TransactionBehavior::Immediate);
        let tx = match on.local_busy {
            Some(busy) => super::lock_wait::writing(conn, busy, immediate).await?,
            None => immediate().await?,
        };
        Ok(Self {
            runner: Runner::in_transaction(Deref::deref(&tx).clone()),
            on: TxOn::Libsql(Some(tx)),
            turn,
        })
    }

    /// On PostgreSQL (where some statements are written differently).
    pub fn is_postgres(&self) -> bool {
        self.runner.is_postgres()
    }

    /// Runs a query inside the transaction.
    pub async fn query(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<libsql::Rows, libsql::Error> {
        self.runner.query(sql, params).await
    }

    /// Runs one statement inside the transaction; returns the rows it changed.
    pub async fn execute(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<u64, libsql::Error> {
        self.runner.execute(sql, params).await
    }

    /// Runs several statements (a migration's script) inside the transaction.
    pub(crate) async fn execute_batch(&self, sql: &str) -> Result<(), libsql::Error> {
        self.runner.execute_script(sql).await
    }

    /// The transaction as statements run on it (for statements kept across calls).
    pub fn runner(&self) -> Runner {
        self.runner.clone()
    }

    pub async fn commit(mut self) -> Result<(), libsql::Error> {
        self.finish(End::Commit).await
    }

    pub async fn rollback(mut self) -> Result<(), libsql::Error> {
        self.finish(End::Rollback).await
    }

    async fn finish(&mut self, end: End) -> Result<(), libsql::Error> {
        match &mut self.on {
            TxOn::Libsql(tx) => {
                let tx = tx.take().expect("a transaction is open until it ends");
                match end {
                    End::Commit => tx.commit().await,
                    End::Rollback => tx.rollback().await,
                }
            }
            TxOn::Server { home, conn } => {
                let write_conn = conn.take().expect("a transaction is open until it ends");
                end_on(home, write_conn, end).await
            }
            TxOn::Postgres(session) => {
                let session = session.take().expect("a transaction is open until it ends");
                match end {
                    End::Commit => session.commit().await,
                    End::Rollback => session.rollback().await,
                }
            }
        }
    }
}

impl Runner {
    /// Begins a write transaction on this connection (see [`Conn::write_tx`](super::Conn::write_tx)).
    pub(crate) async fn write_tx(&self) -> Result<super::WriteTx, libsql::Error> {
        super::WriteTx::begin(self, super::write_tx::Begin::Immediate).await
    }
}

#[derive(Clone, Copy)]
enum End {
    Commit,
    Rollback,
}

/// Ends the transaction on the write connection (the statement closes its stream), and
/// keeps the connection for the next one unless that failed: its stream's state is then
/// unknown.
async fn end_on(
    home: &WriteConnSlot,
    write_conn: WriteConn,
    end: End,
) -> Result<(), libsql::Error> {
    let sql = match end {
        End::Commit => "COMMIT",
        End::Rollback => "ROLLBACK",
    };
    write_conn.conn.execute(sql, ()).await?;
    home.give_back(write_conn);
    Ok(())
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        // Dropped unfinished (a task failed or was stopped between BEGIN and COMMIT): on
        // the server's write connection, roll back before the turn passes on, so the next
        // writer does not queue at the server behind a transaction left open. (libsql's
        // own transaction rolls itself back when dropped.)
        if let TxOn::Postgres(Some(session)) = &self.on {
            session.abandon();
            return;
        }
        let TxOn::Server { home, conn } = &mut self.on else {
            return;
        };
        let Some(write_conn) = conn.take() else {
            return;
        };
        let (home, turn) = (home.clone(), self.turn.take());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(err) = end_on(&home, write_conn, End::Rollback).await {
                    tracing::debug!(%err, "cannot roll back a dropped transaction; the server will end it");
                }
                drop(turn);
            });
        }
    }
}
