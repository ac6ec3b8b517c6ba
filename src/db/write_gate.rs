//! The turn to write against a server (`WriteGate`, `Turn`) and its connection (`WriteConnSlot`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;

use super::server_stream::ServerStream;

/// The process's write connection to a server, with the statements described inside its
/// transactions. They are kept across transactions: a described statement is the SQL
/// text and its columns, and runs on whatever stream the connection has open.
pub(super) struct WriteConn {
    pub(super) conn: libsql::Connection,
    pub(super) stream: ServerStream,
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

    pub(super) fn take(&self) -> Result<WriteConn, libsql::Error> {
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

    pub(super) fn give_back(&self, write_conn: WriteConn) {
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
    /// Against a plain server, the connection write transactions run on (see `write_tx`'s
    /// module documentation); through a replica they are libsql's.
    pub(super) write_conn: Option<WriteConnSlot>,
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
