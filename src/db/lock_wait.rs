//! Waiting for a local file's write lock without stalling the runtime. SQLite waits for a
//! lock another process holds (the CLI, `nightshift mcp`, a backup) in its busy handler,
//! sleeping on the calling thread for up to `busy_timeout`: on a runtime worker that
//! holds up every task queued there, timers and the HTTP API included. So a write is first
//! tried without waiting, which is all it takes when nobody else writes; only when the
//! lock is held is it tried again with the busy timeout, on a thread tokio has been told
//! will block.

use std::future::Future;
use std::time::Duration;

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `attempt` (a statement that takes the write lock) on `conn`, whose busy timeout is
/// `busy`. `attempt` may run twice: its first try had no effect when it found the lock held.
pub(super) async fn writing<T, F, Fut>(
    conn: &libsql::Connection,
    busy: Duration,
    attempt: F,
) -> Result<T, libsql::Error>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, libsql::Error>>,
{
    let first = {
        conn.busy_timeout(Duration::ZERO)?;
        // Put back however the try ends, a dropped future included.
        let _restore = Restore(conn, busy);
        attempt().await
    };
    match first {
        Err(err) if is_busy(&err) => off_the_runtime(attempt()).await,
        other => other,
    }
}

struct Restore<'a>(&'a libsql::Connection, Duration);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        if let Err(err) = self.0.busy_timeout(self.1) {
            tracing::warn!(%err, "cannot restore a connection's busy timeout");
        }
    }
}

/// SQLITE_BUSY, whatever its extended code.
fn is_busy(err: &libsql::Error) -> bool {
    matches!(err, libsql::Error::SqliteFailure(code, _) if code & 0xff == 5)
}

/// Runs `fut`, which may block its thread, with the worker's other tasks handed to another
/// thread first. A current-thread runtime (the tests') has no other thread: it just waits.
async fn off_the_runtime<F: Future>(fut: F) -> F::Output {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| handle.block_on(fut))
        }
        _ => fut.await,
    }
}
