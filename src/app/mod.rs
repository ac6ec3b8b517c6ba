//! The composition root: from a validated configuration to the database, the memory store,
//! the schedule store, the outbox, the notification router and the consolidator, each built
//! once. The CLI, the worker and the HTTP API all take an [`App`].
//!
//! Secrets are not read here: the runtime's API key and the channels' tokens are loaded by
//! [`App::runtime`] and [`App::channels`], which the worker calls at start, so a CLI command
//! run from an operator's shell does not need the service's secrets.

pub mod check;
pub mod db_status;
pub mod overview;
pub mod purge;
mod schedules;
mod sources;
pub mod status;

pub use sources::Received;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::artifact::ArtifactStore;
use crate::config::{Config, ConfigError};
use crate::consolidate::facts::{FactExtractor, ModelExtractor, PatternExtractor};
use crate::consolidate::Consolidator;
use crate::db::clock::Clock;
use crate::db::{migrate, Db, DbError, DbOptions, DbTarget};
use crate::embed::{self, EmbedError};
use crate::error::{ErrorKind, Kind};
use crate::memory::{Memory, MemoryError};
use crate::notify::channels::{ChannelError, Channels};
use crate::notify::outbox::Outbox;
use crate::notify::router::Router;
use crate::runtime::{self, AgentRuntime, RuntimeError};
use crate::schedule::validate::StoreLimits;
use crate::schedule::{ScheduleError, ScheduleStore};

/// Why the app could not be opened; its kind is the kind of what failed.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Channel(#[from] ChannelError),
}

impl Kind for AppError {
    fn kind(&self) -> ErrorKind {
        match self {
            AppError::Config(err) => err.kind(),
            AppError::Db(err) => err.kind(),
            AppError::Embed(err) => err.kind(),
            AppError::Memory(err) => err.kind(),
            AppError::Schedule(err) => err.kind(),
            AppError::Runtime(err) => err.kind(),
            AppError::Channel(err) => err.kind(),
        }
    }
}

/// Pieces a test may supply instead of the defaults.
#[derive(Default)]
pub struct AppParts {
    /// Stamps and compares every time (the scheduler's tests run on a paused clock).
    pub clock: Option<Arc<dyn Clock>>,
}

/// Everything nightshift is made of, built once. Cheap to clone.
#[derive(Clone)]
pub struct App {
    config: Arc<Config>,
    memory: Memory,
    schedules: ScheduleStore,
    outbox: Outbox,
    router: Arc<Router>,
    /// Woken when a message is written to the outbox by this process.
    outbox_wake: Arc<Notify>,
    /// Woken when this process answers an approval: the scheduler loop resumes the run.
    scheduler_wake: Arc<Notify>,
    approvals: crate::approval::ApprovalStore,
    /// The scheduler loop's heartbeat, for readiness.
    liveness: Arc<crate::health::Liveness>,
    tokens: crate::tokens::TokenStore,
    state: crate::state::StateStore,
    /// Files agents produced; one instance, so this process's folder writes are ordered.
    artifacts: ArtifactStore,
    /// Writes a front door started and its caller stopped waiting for (a cancelled MCP
    /// call): they finish whole, and the process waits for them on its way out.
    background: tokio_util::task::TaskTracker,
}

impl App {
    /// Opens the configured database (migrating it) and builds every component.
    pub async fn open(config: &Config) -> Result<App, AppError> {
        Self::open_with(config, AppParts::default()).await
    }

    pub async fn open_with(config: &Config, parts: AppParts) -> Result<App, AppError> {
        config.validate()?;
        check::structure(config)?;
        // The model first: a missing or wrong one is refused before the database is touched.
        let embedder = embed::from_config(&config.embedding)?;
        let limits = store_limits(config)?;
        let db = open_db(config).await?;
        migrate::migrate(&db).await?;
        let mut memory = Memory::new(db, embedder, config.memory.clone(), config.search.clone())
            .await?
            .with_embed_batch_size(config.embedding.batch_size);
        if let Some(clock) = parts.clock {
            memory = memory.with_clock(clock);
        }
        if config.search.rerank != crate::config::RerankMode::None {
            // Loaded on the first search that needs it; a missing model degrades search.
            memory =
                memory.with_rerank_stage(Arc::new(crate::memory::RerankStage::late_interaction(
                    config.embedding.clone(),
                    config.search.rerank_cache_mib,
                )));
        }
        // A zone that does not parse was refused by validation above.
        let zones = config
            .users
            .iter()
            .filter_map(|(user, settings)| {
                Some((user.clone(), settings.timezone.as_deref()?.parse().ok()?))
            })
            .collect();
        memory = memory.with_user_zones(zones);
        memory = memory.with_change_events(crate::notify::changes::ChangeForwarder::events(config));
        let artifacts = ArtifactStore::new(
            memory.db().clone(),
            memory.clock().clone(),
            config.artifacts.clone(),
        );
        memory = memory.with_whole_text_keeper(Arc::new(artifacts.clone()));
        let router = Arc::new(Router::from_config(config));
        let outbox_wake = Arc::new(Notify::new());
        let scheduler_wake = Arc::new(Notify::new());
        let schedules = ScheduleStore::new(memory.db().clone(), memory.clock().clone(), limits)
            .with_notifications(router.clone(), outbox_wake.clone())
            .with_scheduler_wake(scheduler_wake.clone());
        Ok(App {
            approvals: crate::approval::ApprovalStore::new(
                memory.db().clone(),
                memory.clock().clone(),
                scheduler_wake.clone(),
            ),
            scheduler_wake,
            config: Arc::new(config.clone()),
            outbox: Outbox::new(memory.db().clone()),
            liveness: Arc::new(crate::health::Liveness::default()),
            tokens: crate::tokens::TokenStore::new(memory.db().clone(), memory.clock().clone()),
            state: crate::state::StateStore::new(memory.clone()),
            artifacts,
            memory,
            schedules,
            router,
            outbox_wake,
            background: tokio_util::task::TaskTracker::new(),
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    pub fn db(&self) -> &Db {
        self.memory.db()
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        self.memory.clock()
    }

    pub fn schedules(&self) -> &ScheduleStore {
        &self.schedules
    }

    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    pub fn router(&self) -> &Arc<Router> {
        &self.router
    }

    pub fn outbox_wake(&self) -> &Arc<Notify> {
        &self.outbox_wake
    }

    pub fn scheduler_wake(&self) -> &Arc<Notify> {
        &self.scheduler_wake
    }

    pub fn approvals(&self) -> &crate::approval::ApprovalStore {
        &self.approvals
    }

    pub fn liveness(&self) -> &Arc<crate::health::Liveness> {
        &self.liveness
    }

    pub fn tokens(&self) -> &crate::tokens::TokenStore {
        &self.tokens
    }

    /// Erases everything of `user_id` (or with `dry_run`, counts it): see [`purge`].
    pub async fn purge_user(
        &self,
        actor: &crate::access::Actor,
        user_id: &str,
        dry_run: bool,
    ) -> Result<purge::UserPurged, purge::PurgeError> {
        let purged = purge::purge_user(self.db(), actor, user_id, dry_run).await?;
        if purged.purged {
            self.tokens.forget_user(user_id);
        }
        Ok(purged)
    }

    pub fn state(&self) -> &crate::state::StateStore {
        &self.state
    }

    pub fn artifacts(&self) -> &ArtifactStore {
        &self.artifacts
    }

    /// Where a front door spawns work that must finish even if its caller goes away.
    pub fn background(&self) -> &tokio_util::task::TaskTracker {
        &self.background
    }

    /// Waits, at most `grace`, for the background work to finish; false if some did not.
    pub async fn finish_background(&self, grace: Duration) -> bool {
        self.background.close();
        let finished = tokio::time::timeout(grace, self.background.wait())
            .await
            .is_ok();
        if !finished {
            tracing::warn!(
                left = self.background.len(),
                "background writes still going after the grace period; each is all or nothing"
            );
        }
        finished
    }

    /// The configured agent runtime; reads its API key from the environment.
    pub fn runtime(&self) -> Result<Arc<dyn AgentRuntime>, RuntimeError> {
        runtime::from_config(
            &self.config.runtime,
            crate::mcp_client::McpTools::from_config(&self.config),
            runtime::ScheduleTools {
                store: self.schedules.clone(),
                policy: self.config.scheduler.agent_schedules,
                max_per_user: self.config.scheduler.max_agent_schedules_per_user,
            },
        )
    }

    /// The configured channels; reads their secrets.
    pub fn channels(&self) -> Result<Channels, ChannelError> {
        Ok(Channels::from_config(
            &self.config.channels,
            Duration::from_secs(self.config.notify.timeout_secs),
        )?
        .with_artifacts(self.artifacts.clone()))
    }

    /// Export and import over this app's database, memory and artifacts.
    pub fn portable(&self) -> crate::portable::Portable {
        crate::portable::Portable::new(crate::portable::PortableParts {
            db: self.db().clone(),
            memory: self.memory.clone(),
            artifacts: self.artifacts.clone(),
            schedules: self.schedules.clone(),
            grants: self.channel_grants(),
            clock: self.clock().clone(),
        })
    }

    /// The consolidator: summaries and facts by the model when an `openai` runtime is
    /// configured (and its key is set), extractive and pattern-based otherwise.
    /// `worker_id` is recorded with the passes it runs.
    pub fn consolidator(&self, worker_id: Option<String>) -> Consolidator {
        Consolidator {
            memory: self.memory.clone(),
            schedules: self.schedules.clone(),
            outbox: self.outbox.clone(),
            artifacts: self.artifacts.clone(),
            config: self.config.consolidation.clone(),
            worker_id,
            summarizer: runtime::summarizer(&self.config.runtime),
            extractor: fact_extractor(&self.config.runtime),
            user_instructions: self
                .config
                .users
                .iter()
                .filter_map(|(user, settings)| {
                    Some((user.clone(), settings.extraction_instructions.clone()?))
                })
                .collect(),
        }
    }
}

/// The schedule store's limits from the configuration.
/// The store's limits from the configuration, its calendars read (their files too).
pub(crate) fn store_limits(config: &Config) -> Result<StoreLimits, ConfigError> {
    let calendars = crate::schedule::calendar::resolve(&config.calendars)
        .map_err(|(key, reason)| ConfigError::Invalid { key, reason })?;
    Ok(StoreLimits {
        min_interval_secs: config.scheduler.min_interval_secs,
        max_per_user: config.scheduler.max_per_user,
        history_keep: config.scheduler.history_keep,
        max_output_bytes: config.scheduler.max_output_bytes,
        default_jitter_secs: config.scheduler.default_jitter_secs,
        calendars,
    })
}

/// Facts are extracted by the model when an `openai` runtime is configured.
fn fact_extractor(config: &crate::config::RuntimeConfig) -> Arc<dyn FactExtractor> {
    if config.kind == crate::config::RuntimeKind::Openai {
        match runtime::OpenAiRuntime::new(config) {
            Ok(runtime) => return Arc::new(ModelExtractor { runtime }),
            Err(err) => tracing::warn!(%err, "cannot use the model for fact extraction"),
        }
    }
    Arc::new(PatternExtractor)
}

/// The database's auth token: `NIGHTSHIFT_DB_AUTH_TOKEN`, else `database.auth_token_file`.
pub fn db_auth_token(config: &Config) -> Result<Option<String>, DbError> {
    if let Ok(token) = std::env::var("NIGHTSHIFT_DB_AUTH_TOKEN") {
        return Ok(Some(token));
    }
    let Some(file) = &config.database.auth_token_file else {
        return Ok(None);
    };
    let path = crate::config::credential_path(file);
    let token = std::fs::read_to_string(&path).map_err(|e| {
        DbError::BadTarget(format!(
            "cannot read database.auth_token_file {}: {e}",
            path.display()
        ))
    })?;
    Ok(Some(token.trim().to_string()))
}

/// A PostgreSQL database's password: the variable `database.password_env` names, else
/// `database.password_file`'s contents (its last line break trimmed).
pub fn db_password(config: &Config) -> Result<Option<String>, DbError> {
    if let Some(name) = &config.database.password_env {
        return match std::env::var(name) {
            Ok(password) => Ok(Some(password)),
            Err(_) => Err(DbError::BadTarget(format!(
                "database.password_env names {name}, which is not set (or not valid UTF-8)"
            ))),
        };
    }
    let Some(file) = &config.database.password_file else {
        return Ok(None);
    };
    let path = crate::config::credential_path(file);
    let password = std::fs::read_to_string(&path).map_err(|e| {
        DbError::BadTarget(format!(
            "cannot read database.password_file {}: {e}",
            path.display()
        ))
    })?;
    Ok(Some(password.trim_end_matches(['\n', '\r']).to_string()))
}

/// Where the configured database is.
pub fn db_target(config: &Config) -> Result<DbTarget, DbError> {
    let target = DbTarget::parse(&config.database.path)?;
    let target = if target.is_postgres() {
        target.with_password(db_password(config)?)
    } else {
        target
    };
    target.with_auth_token(db_auth_token(config)?).with_replica(
        config.database.replica_path.as_deref(),
        Duration::from_secs(config.database.sync_interval_secs),
    )
}

/// Opens the configured database without touching its schema (`db status`, `db migrate`).
pub async fn open_db(config: &Config) -> Result<Db, DbError> {
    let options = DbOptions {
        busy_timeout: Duration::from_millis(config.database.busy_timeout_ms),
        pool_size: config.database.pool_size,
    };
    Db::open(&db_target(config)?, options).await
}

/// The memory store alone (tests and benchmarks that need nothing else).
pub async fn open_memory(config: &Config) -> Result<Memory, AppError> {
    Ok(App::open(config).await?.memory)
}
