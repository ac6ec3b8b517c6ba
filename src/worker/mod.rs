//! The long-running daemon behind `nightshift run`: it opens and migrates the database,
//! syncs the config file's schedules, and runs the scheduler loop until told to stop.
//! Then it stops claiming, lets running work finish within a grace period, marks what is
//! still running `interrupted`, and returns.

mod executor;
mod listener;
mod maintenance;
mod run_span;

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
    // Secrets first: a missing key or token is a configuration error before anything runs.
    let runtime = match parts.runtime {
        Some(runtime) => runtime,
        None => app.runtime().map_err(AppError::from)?,
    };
    let channels = app.channels().map_err(AppError::from)?;
    prepare(app).await?;
    let worker_id = parts
        .worker_id
        .unwrap_or_else(|| ids::new_id(&format!("wrk-{}", std::process::id())));
    let mut tasks = start(app, runtime, channels, &worker_id).await?;
    tracing::info!(database = %app.memory().db().target(), %worker_id, "nightshift is running");
    systemd::ready();
    let ended_early = tasks.until_stopped(shutdown).await;
    tasks.shut_down(app, &worker_id, ended_early).await
}

/// What must hold before anything runs: the calendars adopted, the config file's
/// schedules synced, a changed embedding model noticed.
async fn prepare(app: &App) -> Result<(), WorkerError> {
    let (config, store) = (app.config(), app.schedules());
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
    app.memory().adopt_model().await.map_err(AppError::from)?;
    Ok(())
}

/// The worker's running parts: the scheduler loop, the outbox sender, the embedder, the
/// overnight maintenance and the registry heartbeat, each on its own task.
struct Tasks {
    scheduler: tokio::task::JoinHandle<()>,
    sender: tokio::task::JoinHandle<()>,
    embedder: tokio::task::JoinHandle<()>,
    maintenance: Option<tokio::task::JoinHandle<()>>,
    heartbeat: tokio::task::JoinHandle<()>,
    /// Stops claiming (the scheduler loop, the embedder, maintenance).
    stop: CancellationToken,
    /// Makes runs still going give up.
    hard_stop: CancellationToken,
    /// Stops the sender and the heartbeat, last.
    sender_stop: CancellationToken,
    /// The runs the scheduler started.
    runs: TaskTracker,
}

/// Builds the executor, the scheduler and the sender around `runtime` and `channels`,
/// registers the worker, and starts every task.
async fn start(
    app: &App,
    runtime: Arc<dyn AgentRuntime>,
    channels: crate::notify::channels::Channels,
    worker_id: &str,
) -> Result<Tasks, WorkerError> {
    let (config, memory, store) = (app.config(), app.memory(), app.schedules());
    let consolidation = Arc::new(app.consolidator(Some(worker_id.to_string())));
    let executor = Arc::new(executor::Executor {
        store: store.clone(),
        memory: memory.clone(),
        runtime,
        scheduler: config.scheduler.clone(),
        runtime_config: config.runtime.clone(),
        worker_id: worker_id.to_string(),
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
        changes: memory.db().listen_for_schedule_changes(),
    };
    let sender = Sender {
        outbox: app.outbox().clone(),
        channels,
        config: config.notify.clone(),
        owner: worker_id.to_string(),
        clock: memory.clock().clone(),
        wake: app.outbox_wake().clone(),
        changes: crate::notify::changes::ChangeForwarder::from_config(
            memory.db().clone(),
            app.router().clone(),
            config,
        ),
        quiet: crate::notify::quiet::QuietPolicy::from_config(config),
        digests: Some(crate::notify::digest::DigestFolder::new(
            memory.db().clone(),
            app.router().clone(),
        )),
    };
    let (stop, hard_stop, sender_stop) = (
        CancellationToken::new(),
        CancellationToken::new(),
        CancellationToken::new(),
    );
    let runs = TaskTracker::new();
    // The sender outlives the scheduler loop so the last runs' messages still go out.
    let sender = {
        let (stop, check) = (
            sender_stop.clone(),
            Duration::from_millis(config.scheduler.change_check_ms),
        );
        tokio::spawn(async move { sender.run(stop, check).await })
    };
    let scheduler = {
        let (stop, hard_stop, runs) = (stop.clone(), hard_stop.clone(), runs.clone());
        tokio::spawn(async move { scheduler.run(stop, hard_stop, runs).await })
    };
    let embedder = memory.spawn_embedder(stop.clone());
    let maintenance = config.consolidation.enabled.then(|| {
        let (consolidation, worker_id, stop) =
            (consolidation.clone(), worker_id.to_string(), stop.clone());
        tokio::spawn(async move { maintenance::run(consolidation, worker_id, stop).await })
    });
    registry::register(memory.db(), memory.clock().as_ref(), worker_id)
        .await
        .map_err(AppError::from)?;
    let heartbeat = spawn_heartbeat(app, worker_id, sender_stop.clone());
    Ok(Tasks {
        scheduler,
        sender,
        embedder,
        maintenance,
        heartbeat,
        stop,
        hard_stop,
        sender_stop,
        runs,
    })
}

/// Records the worker's heartbeat in the registry every third of a lease until `stop`.
fn spawn_heartbeat(
    app: &App,
    worker_id: &str,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let (db, clock, worker_id) = (
        app.memory().db().clone(),
        app.memory().clock().clone(),
        worker_id.to_string(),
    );
    let period =
        Duration::from_millis((app.config().scheduler.lease_secs * 1000 / 3).max(1) as u64);
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
}

/// Which task ended on its own (a fault inside it), if one did before `shutdown`.
type EndedEarly = Option<(&'static str, Result<(), tokio::task::JoinError>)>;

impl Tasks {
    /// Waits for `shutdown`. A loop that ends before it is told to (a fault inside it)
    /// stops the worker: better a restart by systemd than a worker that looks alive and
    /// runs nothing.
    async fn until_stopped(&mut self, shutdown: impl Future<Output = ()>) -> EndedEarly {
        let ended_early = tokio::select! {
            _ = shutdown => None,
            ended = &mut self.scheduler => Some(("the scheduler loop", ended)),
            ended = &mut self.sender => Some(("the outbox sender", ended)),
        };
        if let Some((task, ended)) = &ended_early {
            let why = match ended {
                Err(err) if err.is_panic() => "an internal error (logged above)".to_string(),
                Err(err) => err.to_string(),
                Ok(()) => "no reason".to_string(),
            };
            tracing::error!(task, %why, "a worker task stopped unexpectedly; shutting down");
        }
        ended_early
    }

    /// Stops claiming, lets running work finish within the grace period (then makes it
    /// give up), stops the sender, and releases what this worker still holds.
    async fn shut_down(
        self,
        app: &App,
        worker_id: &str,
        ended_early: EndedEarly,
    ) -> Result<(), WorkerError> {
        systemd::stopping();
        tracing::info!("shutting down: no new runs are claimed");
        self.stop.cancel();
        self.runs.close();
        let ended = ended_early.as_ref().map(|(task, _)| *task);
        let mut tasks = vec![self.embedder];
        if ended != Some("the scheduler loop") {
            tasks.push(self.scheduler);
        }
        tasks.extend(self.maintenance);
        let mut stalled = !drain(
            tasks,
            &self.runs,
            &self.hard_stop,
            Duration::from_secs(app.config().scheduler.shutdown_grace_secs as u64),
        )
        .await;
        self.sender_stop.cancel();
        let held = async {
            if ended != Some("the outbox sender") {
                let _ = self.sender.await;
            }
            let _ = self.heartbeat.await;
            release(app, worker_id).await;
        };
        if tokio::time::timeout(SHUTDOWN_FINAL, held).await.is_err() {
            stalled = true;
        }
        if stalled {
            return Err(WorkerError::ShutdownStalled {
                secs: SHUTDOWN_FINAL.as_secs(),
            });
        }
        if let Some(task) = ended {
            return Err(WorkerError::TaskStopped { task });
        }
        tracing::info!("stopped");
        Ok(())
    }
}

/// Waits for `tasks` and the runs to end within `grace`; then makes the runs give up
/// (`hard_stop`) and waits [`SHUTDOWN_FINAL`] more, after which the tasks are aborted.
/// Returns false when even that was not enough.
async fn drain(
    tasks: Vec<tokio::task::JoinHandle<()>>,
    runs: &TaskTracker,
    hard_stop: &CancellationToken,
    grace: Duration,
) -> bool {
    let aborts: Vec<_> = tasks.iter().map(|task| task.abort_handle()).collect();
    let stopping = async {
        for task in tasks {
            let _ = task.await;
        }
        runs.wait().await;
    };
    tokio::pin!(stopping);
    if tokio::time::timeout(grace, &mut stopping).await.is_ok() {
        return true;
    }
    tracing::warn!(
        grace_secs = grace.as_secs(),
        "runs still going after the grace period; interrupting them"
    );
    hard_stop.cancel();
    if tokio::time::timeout(SHUTDOWN_FINAL, &mut stopping)
        .await
        .is_err()
    {
        aborts.iter().for_each(|task| task.abort());
        return false;
    }
    true
}

/// Marks the runs this worker still holds `interrupted` and unregisters it. Retried: a
/// database busy for a moment must not leave the runs held until their leases run out
/// (the caller bounds the whole).
async fn release(app: &App, worker_id: &str) {
    let mut retry_in = Duration::from_millis(200);
    loop {
        match app
            .schedules()
            .interrupt_held(worker_id, app.config().scheduler.pause_after_failures)
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
    if let Err(err) = registry::unregister(app.memory().db(), worker_id).await {
        tracing::warn!(%err, "cannot unregister the worker");
    }
}
