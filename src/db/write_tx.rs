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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;

use super::runner::{Runner, ServerStream};

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

/// The process's write connection to a server, with the statements described inside its
/// transactions. They are kept across transactions: a described statement is the SQL
/// text and its columns, and runs on whatever stream the connection has open.
struct WriteConn {
    conn: libsql::Connection,
    stream: ServerStream,
}

/// Where the write connection waits between transactions. Only the holder of the turn
/// takes it, so there is one at most; a new one is made when the last was dropped.
#[derive(Clone)]
pub(super) struct WriteConnSlot {
    database: Arc<libsql::Database>,
    idle: Arc<Mutex<Option<WriteConn>>>,
}

impl WriteConnSlot {
    pub(super) fn new(database: Arc<libsql::Database>) -> Self {
        Self {
            database,
            idle: Arc::new(Mutex::new(None)),
        }
    }

    fn take(&self) -> Result<WriteConn, libsql::Error> {
        let idle = self
            .idle
            .lock()
            .expect("write connection slot poisoned")
            .take();
        match idle {
            Some(write_conn) => Ok(write_conn),
            None => Ok(WriteConn {
                conn: self.database.connect()?,
                stream: ServerStream::new(),
            }),
        }
    }

    fn give_back(&self, write_conn: WriteConn) {
        *self.idle.lock().expect("write connection slot poisoned") = Some(write_conn);
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
    /// Against a plain server, the connection write transactions run on (see the module
    /// documentation); through a replica they are libsql's.
    write_conn: Option<WriteConnSlot>,
}

impl WriteGate {
    pub(super) fn new(write_conn: Option<WriteConnSlot>) -> Self {
        Self {
            queue: Arc::new(Semaphore::new(1)),
            turn: Arc::new(Semaphore::new(1)),
            write_conn,
        }
    }

    async fn take(&self, lane: Lane) -> Turn {
        let waiting = std::time::Instant::now();
        let place = match lane {
            Lane::Queue => Some(acquire(&self.queue).await),
            Lane::Ahead => None,
        };
        let turn = acquire(&self.turn).await;
        crate::telemetry::write_gate_wait(waiting.elapsed());
        Turn {
            _turn: turn,
            _place: place,
            watchdog: tokio::spawn(warn_while_held()).abort_handle(),
        }
    }
}

/// How long a write may hold the turn before the log says so. sqld takes its write lock
/// back from a holder idle for 5 s, so a write unfinished after this long is a very long
/// transaction or a server that stopped granting its lock: sqld 0.24.33 can (README,
/// "Known issue"), and then only a restart of the server lets writes go on.
pub(super) const WRITE_STALL_WARNING: Duration = Duration::from_secs(30);

/// Logs, while a write holds the turn, that it has not finished: once after
/// [`WRITE_STALL_WARNING`], then each time as long again. Aborted when the turn ends.
async fn warn_while_held() {
    let mut held = Duration::ZERO;
    loop {
        tokio::time::sleep(WRITE_STALL_WARNING).await;
        held += WRITE_STALL_WARNING;
        tracing::warn!(
            held_secs = held.as_secs(),
            "a write to the database server has not finished: a very long transaction, or a \
             server that stopped granting its write lock (sqld 0.24.33 can; reads still \
             answer). If writes do not resume, restart the server: results waiting to be \
             recorded are kept and retried"
        );
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
    /// [`warn_while_held`], for this turn.
    watchdog: AbortHandle,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.watchdog.abort();
    }
}

/// This process's turn to write, against a server (`gate` is `None` for a local file).
pub(super) async fn take_turn(gate: Option<&WriteGate>, lane: Lane) -> Option<Turn> {
    match gate {
        Some(gate) => Some(gate.take(lane).await),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write in the lane ahead goes before the writes queued before it, behind the one
    /// writing.
    #[tokio::test(start_paused = true)]
    async fn a_write_ahead_passes_the_queue() {
        let gate = WriteGate::new(None);
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

    /// What a test's log shows: a writer for `tracing_subscriber` into shared memory.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn warnings(&self) -> usize {
            String::from_utf8_lossy(&self.0.lock().unwrap())
                .matches("a write to the database server has not finished")
                .count()
        }
    }

    /// A write that holds the turn past [`WRITE_STALL_WARNING`] is reported, again as long
    /// as it lasts; a write that ends in time, or after its report, is reported no more.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_write_that_does_not_finish_is_reported() {
        let log = Captured::default();
        let writer = log.clone();
        let _subscriber = tracing::subscriber::set_default(
            tracing_subscriber::fmt()
                .with_writer(move || writer.clone())
                .finish(),
        );
        let gate = WriteGate::new(None);

        let quick = gate.take(Lane::Queue).await;
        tokio::time::sleep(WRITE_STALL_WARNING - Duration::from_secs(1)).await;
        drop(quick);
        tokio::time::sleep(WRITE_STALL_WARNING * 3).await;
        assert_eq!(log.warnings(), 0);

        let stuck = gate.take(Lane::Ahead).await;
        tokio::time::sleep(WRITE_STALL_WARNING + Duration::from_secs(1)).await;
        assert_eq!(log.warnings(), 1);
        tokio::time::sleep(WRITE_STALL_WARNING).await;
        assert_eq!(log.warnings(), 2);
        drop(stuck);
        tokio::time::sleep(WRITE_STALL_WARNING * 3).await;
        assert_eq!(log.warnings(), 2);
    }
}
