//! The long-running daemon behind `nightshift run`: it opens and migrates the database,
//! syncs the config file's schedules, and runs the scheduler loop until told to stop.
//! Then it stops claiming, lets running work finish within a grace period, marks what is
//! still running `interrupted`, and returns.

mod executor;
mod listener;
mod maintenance;

mod scheduler;
mod systemd;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::app::{App, AppError};
use crate::error::{ErrorKind, Kind};
use crate::ids;
use crate::notify::sender::Sender;
use crate::registry;
use crate::runtime::AgentRuntime;
use crate::schedule::sync;

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// A component could not be built or started (a config error, the database away…).
    #[error(transparent)]
    Start(#[from] AppError),
    #[error(
        "the database did not answer within {secs}s while shutting down; the runs and \
         messages this worker still holds are taken over by other workers once their \
         leases run out"
    )]
    ShutdownStalled { secs: u64 },
    #[error("{task} stopped unexpectedly; the worker shut down so it can be restarted")]
    TaskStopped { task: &'static str },
}

impl Kind for WorkerError {
    fn kind(&self) -> ErrorKind {
        match self {
            WorkerError::Start(err) => err.kind(),
            WorkerError::ShutdownStalled { .. } => ErrorKind::Unavailable,
            WorkerError::TaskStopped { .. } => ErrorKind::Internal,
        }
    }
}

/// How long each last step of a shutdown may take once the grace period is over (waiting
/// for interrupted runs to be recorded; releasing leases and unregistering): a database
/// that stops answering must not keep the process from exiting. What it still holds is
/// recovered by the others after the lease.
const SHUTDOWN_FINAL: Duration = Duration::from_secs(10);

/// Pieces a caller (or a test) may supply instead of the defaults.
#[derive(Default)]
pub struct WorkerParts {
    pub runtime: Option<Arc<dyn AgentRuntime>>,
    pub worker_id: Option<String>,
}

/// Runs the worker on `app` until `shutdown` completes.
pub async fn run(app: &App, shutdown: impl Future<Output = ()>) -> Result<(), WorkerError> {
    run_with(app, WorkerParts::default(), shutdown).await
}

pub async fn run_with(
    app: &App,
    parts: WorkerParts,
    shutdown: impl Future<Output = ()>,
) -> Result<(), WorkerError> {
    let config = app.config();
    let memory = app.memory();
    let store = app.schedules();
    // Secrets first: a missing key or token is a configuration error before anything runs.
    let runtime = match parts.runtime {
        Some(runtime) => runtime,
        None => app.runtime().map_err(AppError::from)?,
    };
    let channels = app.channels().map_err(AppError::from)?;
    // The calendars first: config schedules naming them are checked against them.
    let (changed, refreshed) = store.adopt_calendars().await.map_err(AppError::from)?;
    if !changed.is_empty() {
        tracing::info!(calendars = ?changed, schedules = refreshed, "calendars changed; schedules naming them brought up to date");
    }
    let report = sync::sync(store, &config.schedules, &config.scheduler.default_timezone)
        .await
        .map_err(AppError::from)?;
    tracing::info!(
        added = report.added,
        changed = report.changed,
        removed = report.removed,
        unchanged = report.unchanged,
        expired = report.expired.len(),
        "synced schedules from the config file"
    );
    // A model change found here is re-embedded in the background by the embedder below.
    memory.adopt_model().await.map_err(AppError::from)?;
    let worker_id = parts
        .worker_id
        .unwrap_or_else(|| ids::new_id(&format!("wrk-{}", std::process::id())));
    let consolidation = Arc::new(app.consolidator(Some(worker_id.clone())));
    let executor = Arc::new(executor::Executor {
        store: store.clone(),
        memory: memory.clone(),
        runtime,
        scheduler: config.scheduler.clone(),
        runtime_config: config.runtime.clone(),
        worker_id: worker_id.clone(),
        listener: Arc::new(listener::LogListener),
        summaries: Some((consolidation.policy(), consolidation.summarizer.clone())),
        artifacts: app.artifacts().clone(),
        running: Default::default(),
    });
    let scheduler = scheduler::Scheduler {
        store: store.clone(),
        executor,
        wake: app.scheduler_wake().clone(),
        max_concurrent: config.scheduler.max_concurrent,
        change_check: Duration::from_millis(config.scheduler.change_check_ms),
        liveness: app.liveness().clone(),
    };

    let stop = CancellationToken::new();
    let hard_stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    let sender = Sender {
        outbox: app.outbox().clone(),
        channels,
        config: config.notify.clone(),
        owner: worker_id.clone(),
        clock: memory.clock().clone(),
        wake: app.outbox_wake().clone(),
        changes: crate::notify::changes::ChangeForwarder::from_config(
            memory.db().clone(),
            app.router().clone(),
            config,
        ),
    };
    // The sender outlives the scheduler loop so the last runs' messages still go out.
    let sender_stop = CancellationToken::new();
    let sender_task = {
        let stop = sender_stop.clone();
        let check = Duration::from_millis(config.scheduler.change_check_ms);
        tokio::spawn(async move { sender.run(stop, check).await })
    };
    let loop_task = {
        let (stop, hard_stop, tracker) = (stop.clone(), hard_stop.clone(), tracker.clone());
        tokio::spawn(async move { scheduler.run(stop, hard_stop, tracker).await })
    };
    let embedder_task = memory.spawn_embedder(stop.clone());
    let maintenance_task = config.consolidation.enabled.then(|| {
        let (consolidation, worker_id, stop) =
            (consolidation.clone(), worker_id.clone(), stop.clone());
        tokio::spawn(async move { maintenance::run(consolidation, worker_id, stop).await })
    });
    registry::register(memory.db(), memory.clock().as_ref(), &worker_id)
        .await
        .map_err(AppError::from)?;
    let heartbeat_task = {
        let (db, clock, worker_id, stop) = (
            memory.db().clone(),
            memory.clock().clone(),
            worker_id.clone(),
            sender_stop.clone(),
        );
        let period = Duration::from_millis((config.scheduler.lease_secs * 1000 / 3).max(1) as u64);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(period) => {}
                }
                if let Err(err) = registry::heartbeat(&db, clock.as_ref(), &worker_id).await {
                    tracing::warn!(%err, "cannot record the worker's heartbeat");
                }
            }
        })
    };
    tracing::info!(database = %memory.db().target(), %worker_id, "nightshift is running");
    systemd::ready();

    let mut loop_task = loop_task;
    let mut sender_task = sender_task;
    // A loop that ends before it is told to (a fault inside it) stops the worker: better a
    // restart by systemd than a worker that looks alive and runs nothing.
    let ended_early = tokio::select! {
        _ = shutdown => None,
        ended = &mut loop_task => Some(("the scheduler loop", ended)),
        ended = &mut sender_task => Some(("the outbox sender", ended)),
    };
    if let Some((task, ended)) = &ended_early {
        let why = match ended {
            Err(err) if err.is_panic() => "an internal error (logged above)".to_string(),
            Err(err) => err.to_string(),
            Ok(()) => "no reason".to_string(),
        };
        tracing::error!(task, %why, "a worker task stopped unexpectedly; shutting down");
    }
    systemd::stopping();
    tracing::info!("shutting down: no new runs are claimed");
    stop.cancel();
    tracker.close();
    let mut tasks = vec![embedder_task];
    if !matches!(ended_early, Some(("the scheduler loop", _))) {
        tasks.push(loop_task);
    }
    tasks.extend(maintenance_task);
    let aborts: Vec<_> = tasks.iter().map(|task| task.abort_handle()).collect();
    let stopping = async {
        for task in tasks {
            let _ = task.await;
        }
        tracker.wait().await;
    };
    tokio::pin!(stopping);
    let grace = Duration::from_secs(config.scheduler.shutdown_grace_secs as u64);
    let mut stalled = false;
    if tokio::time::timeout(grace, &mut stopping).await.is_err() {
        tracing::warn!(
            grace_secs = grace.as_secs(),
            "runs still going after the grace period; interrupting them"
        );
        hard_stop.cancel();
        if tokio::time::timeout(SHUTDOWN_FINAL, &mut stopping)
            .await
            .is_err()
        {
            stalled = true;
            aborts.iter().for_each(|task| task.abort());
        }
    }
    sender_stop.cancel();
    let sender_ended = matches!(ended_early, Some(("the outbox sender", _)));
    let held = async {
        if !sender_ended {
            let _ = sender_task.await;
        }
        let _ = heartbeat_task.await;
        // Retried (within the bound on this step): a database busy for a moment must not
        // leave the runs held until their leases run out.
        let mut retry_in = Duration::from_millis(200);
        loop {
            match store
                .interrupt_held(&worker_id, config.scheduler.pause_after_failures)
                .await
            {
                Ok(0) => break,
                Ok(interrupted) => {
                    tracing::warn!(interrupted, "marked unfinished runs interrupted");
                    break;
                }
                Err(err) => {
                    tracing::warn!(%err, "cannot mark unfinished runs interrupted; retrying");
                    tokio::time::sleep(retry_in).await;
                    retry_in = (retry_in * 2).min(Duration::from_secs(2));
                }
            }
        }
        if let Err(err) = registry::unregister(memory.db(), &worker_id).await {
            tracing::warn!(%err, "cannot unregister the worker");
        }
    };
    if tokio::time::timeout(SHUTDOWN_FINAL, held).await.is_err() {
        stalled = true;
    }
    if stalled {
        return Err(WorkerError::ShutdownStalled {
            secs: SHUTDOWN_FINAL.as_secs(),
        });
    }
    if let Some((task, _)) = ended_early {
        return Err(WorkerError::TaskStopped { task });
    }
    tracing::info!("stopped");
    Ok(())
}
