//! `nightshift run`: the worker's loops and the HTTP server side by side, from one app,
//! under one shutdown. The server is listening before the worker tells systemd it is ready;
//! on SIGTERM it stops taking connections and lets the requests in flight finish while the
//! worker lets its runs finish, each within the grace period.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::error::{ErrorKind, Kind};
use crate::worker::{WorkerError, WorkerParts};

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Server(#[from] crate::api::ServerError),
    #[error(transparent)]
    Worker(#[from] WorkerError),
    #[error(transparent)]
    Traces(#[from] crate::traces::TracesError),
}

impl Kind for DaemonError {
    fn kind(&self) -> ErrorKind {
        match self {
            DaemonError::Server(err) => err.kind(),
            DaemonError::Worker(err) => err.kind(),
            DaemonError::Traces(_) => ErrorKind::Config,
        }
    }
}

/// Runs until `shutdown` completes.
pub async fn run(app: &App, shutdown: impl Future<Output = ()>) -> Result<(), DaemonError> {
    run_with(app, WorkerParts::default(), shutdown).await
}

pub async fn run_with(
    app: &App,
    parts: WorkerParts,
    shutdown: impl Future<Output = ()>,
) -> Result<(), DaemonError> {
    crate::telemetry::install();
    let traces = crate::traces::install(&app.config().traces)?;
    let outcome = serve_and_work(app, parts, shutdown).await;
    // The spans of the last runs, sent before the process goes (on every way out), from a
    // thread that may block while they are.
    if let Some(traces) = traces {
        let _ = tokio::task::spawn_blocking(move || traces.shutdown()).await;
    }
    outcome
}

async fn serve_and_work(
    app: &App,
    parts: WorkerParts,
    shutdown: impl Future<Output = ()>,
) -> Result<(), DaemonError> {
    let grace = Duration::from_secs(app.config().scheduler.shutdown_grace_secs as u64);
    let stop_server = CancellationToken::new();
    let server = match crate::api::bind(app, true, &stop_server).await? {
        Some(listening) => {
            let addr = listening
                .local_addr()
                .map_or_else(|| app.config().server.listen.clone(), |a| a.to_string());
            let scheme = if listening.is_tls() { "https" } else { "http" };
            tracing::info!(address = %format!("{scheme}://{addr}"), "the HTTP API is listening");
            let stop = stop_server.clone();
            Some(tokio::spawn(
                async move { listening.serve(stop, grace).await },
            ))
        }
        None => {
            tracing::info!("the HTTP API is off (server.listen = \"\")");
            None
        }
    };
    let stop = stop_server.clone();
    let worker = crate::worker::run_with(app, parts, async move {
        shutdown.await;
        stop.cancel();
    })
    .await;
    // The worker may also stop on its own (a task that failed): the server goes with it.
    stop_server.cancel();
    if let Some(server) = server {
        let _ = server.await;
    }
    app.finish_background(grace).await;
    Ok(worker?)
}
