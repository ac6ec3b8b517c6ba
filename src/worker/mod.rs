//! The long-running daemon behind `nightshift run`.
//!
//! Today it opens and migrates the database and then waits to be stopped; the scheduler
//! loop, embedding queue, outbox sender and maintenance jobs will run under it.

use std::future::Future;

use crate::app::{open_memory, OpenError};
use crate::config::Config;

/// Runs until `shutdown` completes, then returns. The shutdown future is injected so tests
/// (and the binary's signal handling) decide when to stop.
pub async fn run(config: &Config, shutdown: impl Future<Output = ()>) -> Result<(), OpenError> {
    let memory = open_memory(config).await?;
    tracing::info!(database = %memory.db().target(), "nightshift is running");
    shutdown.await;
    tracing::info!("shutting down");
    Ok(())
}
