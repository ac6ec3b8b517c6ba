//! The passes themselves, and their records.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};
use tokio_util::task::AbortOnDropHandle;

use super::error::ConsolidateError;
use super::facts::FactExtractor;
use super::pass::{Pass, Progress};
use crate::artifact::ArtifactStore;
use crate::config::ConsolidationConfig;
use crate::ids;
use crate::memory::{Memory, Origin, SessionKey, SummarizeOutcome, Summarizer, SummaryPolicy};
use crate::notify::outbox::Outbox;
use crate::schedule::ScheduleStore;

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PassReport {
    pub run_id: String,
    pub pass: String,
    pub status: String,
    pub started_at: i64,
    pub finished_at: Option<i64>,
    pub counts: Value,
    pub error: Option<String>,
}

#[derive(Clone)]
pub struct Consolidator {
    pub memory: Memory,
    /// Whose run history the prune pass trims.
    pub schedules: ScheduleStore,
    /// Whose delivered messages the prune pass removes.
    pub outbox: Outbox,
    /// Whose unreferenced content the expiry pass removes.
    pub artifacts: ArtifactStore,
    pub config: ConsolidationConfig,
    pub worker_id: Option<String>,
    pub summarizer: Arc<dyn Summarizer>,
    pub extractor: Arc<dyn FactExtractor>,
    /// Each user's `extraction_instructions`, after the global ones.
    pub user_instructions: std::collections::HashMap<String, String>,
}

/// Tries the facts pass gives one event before skipping it (and reporting it).
pub const FACTS_TRIES: i64 = 3;

use super::counts::{bump, Counts, PassOutcome};

/// What a panicked task's payload says.
fn panic_text(join: tokio::task::JoinError) -> String {
    if !join.is_panic() {
        return join.to_string();
    }
    let panic = join.into_panic();
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into())
}

impl Consolidator {
    pub fn policy(&self) -> SummaryPolicy {
        SummaryPolicy {
            budget_tokens: self.config.summary_budget_tokens,
            min_turns: self.config.summary_min_turns,
            trigger_ratio: self.config.summary_trigger_ratio,
            target_ratio: self.config.summary_target_ratio,
            max_summary_chars: self.config.max_summary_chars,
        }
    }

    pub(super) fn now(&self) -> i64 {
        self.memory.clock().now_ms()
    }

    /// Runs `passes` in order, each recorded. A pass that fails, for any reason (an
    /// internal fault included), is recorded failed and the passes after it still run.
    /// `user` limits the summaries and facts passes to one user.
    pub async fn run(
        &self,
        passes: &[Pass],
        user: Option<&str>,
        progress: Option<Progress>,
    ) -> Result<Vec<PassReport>, ConsolidateError> {
        let mut reports = Vec::new();
        let run_started = self.now();
        for pass in passes {
            let run_id = ids::new_id("mnt");
            let started_at = self.now();
            if let Err(err) = self.record_start(&run_id, *pass, started_at).await {
                // Without a record the pass still runs: the database may be back by its end.
                tracing::warn!(pass = pass.as_str(), %err, "cannot record the start of a consolidation pass");
            }
            // On a task of its own, so a fault inside a pass is this pass's failure. The
            // task ends with this future: a pass stopped (shutdown, a caller giving up)
            // must not run on beside the next one, which would then repeat its work.
            let this = self.clone();
            let (pass_owned, user_owned, progress_owned) =
                (*pass, user.map(str::to_string), progress.clone());
            let result = AbortOnDropHandle::new(tokio::spawn(async move {
                this.run_pass(pass_owned, user_owned.as_deref(), progress_owned.as_ref())
                    .await
            }))
            .await
            .unwrap_or_else(|join| Err(ConsolidateError::Panicked(panic_text(join))));
            let finished_at = self.now();
            let (status, counts, error): (&'static str, Value, Option<String>) = match result {
                Ok(PassOutcome {
                    counts,
                    error: None,
                }) => ("succeeded", Value::Object(counts), None),
                Ok(PassOutcome {
                    counts,
                    error: Some(error),
                }) => {
                    tracing::error!(pass = pass.as_str(), %error, "consolidation pass failed in part");
                    ("failed", Value::Object(counts), Some(error))
                }
                Err(err) => {
                    tracing::error!(pass = pass.as_str(), %err, "consolidation pass failed");
                    ("failed", json!({}), Some(err.to_string()))
                }
            };
            if let Err(err) = self
                .record_end(&run_id, status, finished_at, &counts, error.as_deref())
                .await
            {
                tracing::warn!(pass = pass.as_str(), %err, "cannot record the end of a consolidation pass");
            }
            tracing::info!(pass = pass.as_str(), status, counts = %counts, "consolidation pass");
            crate::telemetry::consolidation_pass(pass.as_str(), status);
            reports.push(PassReport {
                run_id,
                pass: pass.as_str().to_string(),
                status: status.to_string(),
                started_at,
                finished_at: Some(finished_at),
                counts,
                error,
            });
        }
        // Subscribers of memory changes hear that consolidation changed their notes.
        let names: Vec<&str> = passes.iter().map(|p| p.as_str()).collect();
        if let Err(err) = self
            .memory
            .consolidation_finished(&names, run_started, self.now())
            .await
        {
            tracing::warn!(%err, "cannot record consolidation's change events");
        }
        Ok(reports)
    }

    async fn record_start(
        &self,
        run_id: &str,
        pass: Pass,
        started_at: i64,
    ) -> Result<(), ConsolidateError> {
        let conn = self.memory.db().conn().await?;
        conn.execute(
            "INSERT INTO maintenance_runs (run_id, pass, worker_id, started_at, status)
             VALUES (?1, ?2, ?3, ?4, 'running')",
            libsql::params![run_id, pass.as_str(), self.worker_id.as_deref(), started_at],
        )
        .await?;
        Ok(())
    }

    async fn record_end(
        &self,
        run_id: &str,
        status: &str,
        finished_at: i64,
        counts: &Value,
        error: Option<&str>,
    ) -> Result<(), ConsolidateError> {
        let conn = self.memory.db().conn().await?;
        conn.execute(
            "UPDATE maintenance_runs SET status = ?2, finished_at = ?3, counts_json = ?4, error = ?5
             WHERE run_id = ?1",
            libsql::params![run_id, status, finished_at, counts.to_string(), error],
        )
        .await?;
        Ok(())
    }

    /// Claims the `job` window starting at `window_start` for `worker_id`; false when
    /// another worker has it. One worker runs each overnight window.
    pub async fn claim_window(
        &self,
        job: &str,
        window_start: i64,
        worker_id: &str,
    ) -> Result<bool, ConsolidateError> {
        let conn = self.memory.db().conn().await?;
        let inserted = conn
            .execute(
                "INSERT INTO maintenance_windows (job, window_start, worker_id, claimed_at)
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                libsql::params![job, window_start, worker_id, self.now()],
            )
            .await?;
        Ok(inserted == 1)
    }

    /// Past passes, newest first.
    pub async fn status(&self, limit: i64) -> Result<Vec<PassReport>, ConsolidateError> {
        let conn = self.memory.db().conn().await?;
        let mut rows = conn
            .query(
                "SELECT run_id, pass, status, started_at, finished_at, counts_json, error
                 FROM maintenance_runs ORDER BY started_at DESC, run_id DESC LIMIT ?1",
                [limit],
            )
            .await?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().await? {
            let counts: String = row.get(5)?;
            out.push(PassReport {
                run_id: row.get(0)?,
                pass: row.get(1)?,
                status: row.get(2)?,
                started_at: row.get(3)?,
                finished_at: row.get(4)?,
                counts: serde_json::from_str(&counts).unwrap_or(Value::Null),
                error: row.get(6)?,
            });
        }
        Ok(out)
    }

    /// Runs `pass` in its span (`consolidate {pass}`), whose attributes are the pass's
    /// counts (`nightshift.pass.NAME`).
    async fn run_pass(
        &self,
        pass: Pass,
        user: Option<&str>,
        progress: Option<&Progress>,
    ) -> Result<PassOutcome, ConsolidateError> {
        use opentelemetry::context::FutureExt as _;
        let span = crate::traces::SpanScope::start_under(
            &opentelemetry::Context::new(),
            format!("consolidate {}", pass.as_str()),
            opentelemetry::trace::SpanKind::Internal,
            vec![opentelemetry::KeyValue::new(
                "nightshift.pass",
                pass.as_str(),
            )],
        );
        let outcome = self
            .run_pass_unspanned(pass, user, progress)
            .with_context(span.context().clone())
            .await;
        match &outcome {
            Ok(outcome) => {
                for (name, count) in &outcome.counts {
                    if let Some(count) = count.as_i64() {
                        span.set_key(format!("nightshift.pass.{name}"), count);
                    }
                }
                if let Some(error) = &outcome.error {
                    span.fail("pass", error.clone());
                }
            }
            Err(err) => span.fail("pass", err.to_string()),
        }
        span.end();
        outcome
    }

    async fn run_pass_unspanned(
        &self,
        pass: Pass,
        user: Option<&str>,
        progress: Option<&Progress>,
    ) -> Result<PassOutcome, ConsolidateError> {
        let counts = match pass {
            Pass::Summaries => self.summaries(user, progress).await?,
            Pass::Facts => return self.facts(user, progress).await,
            Pass::Expiry => self.expiry().await?,
            Pass::Prune => self.prune().await?,
            Pass::Backfill => self.backfill().await?,
            Pass::Optimize => self.optimize().await?,
            Pass::Snapshot => self.snapshot().await?,
            Pass::Macros => {
                let (counts, error) = super::macros::run(&self.memory, &self.config, user).await?;
                return Ok(PassOutcome { counts, error });
            }
        };
        Ok(PassOutcome {
            counts,
            error: None,
        })
    }

    /// Conversation and scheduled-run sessions (their keys), optionally of one user.
    pub(super) async fn sessions(
        &self,
        user: Option<&str>,
    ) -> Result<Vec<SessionKey>, ConsolidateError> {
        let conn = self.memory.db().conn().await?;
        let mut rows = conn
            .query(
                "SELECT session_id FROM sessions WHERE kind != 'memory'
                 AND (CAST(?1 AS TEXT) IS NULL OR user_id = ?1) ORDER BY session_id",
                [user],
            )
            .await?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().await? {
            out.push(SessionKey::stored(row.get(0)?));
        }
        Ok(out)
    }

    async fn summaries(
        &self,
        user: Option<&str>,
        progress: Option<&Progress>,
    ) -> Result<Counts, ConsolidateError> {
        let sessions = self.sessions(user).await?;
        let policy = self.policy();
        let mut counts = Counts::new();
        for (i, key) in sessions.iter().enumerate() {
            bump(&mut counts, "sessions", 1);
            match self
                .memory
                .summarize_session(key, &policy, self.summarizer.as_ref())
                .await?
            {
                SummarizeOutcome::Written {
                    condensed_turns,
                    usage,
                    ..
                } => {
                    bump(&mut counts, "summarized", 1);
                    bump(&mut counts, "turns_condensed", condensed_turns as i64);
                    super::facts_pass::add_usage(&mut counts, &usage);
                }
                SummarizeOutcome::Stale { .. } => bump(&mut counts, "stale", 1),
                SummarizeOutcome::NotNeeded { .. } => {}
            }
            if let Some(progress) = progress {
                progress(Pass::Summaries, i + 1, sessions.len());
            }
            tokio::task::yield_now().await;
        }
        Ok(counts)
    }

    /// Brings summaries of sessions that went quiet up to date.
    pub async fn summarize_quiet(
        &self,
        quiet_ms: i64,
        window_ms: i64,
    ) -> Result<usize, ConsolidateError> {
        let now = self.now();
        let conn = self.memory.db().conn().await?;
        let mut rows = conn
            .query(
                "SELECT s.session_id FROM sessions s JOIN session_state st ON st.session_id = s.session_id
                 WHERE s.kind != 'memory' AND s.updated_at <= ?1 AND s.updated_at > ?2
                   AND s.last_sequence > st.summary_upper_sequence",
                libsql::params![now - quiet_ms, now - quiet_ms - window_ms],
            )
            .await?;
        let mut quiet = Vec::new();
        while let Some(row) = rows.next().await? {
            quiet.push(SessionKey::stored(row.get::<String>(0)?));
        }
        drop(rows);
        drop(conn);
        let policy = self.policy();
        let mut written = 0;
        for key in quiet {
            if let SummarizeOutcome::Written { .. } = self
                .memory
                .summarize_session(&key, &policy, self.summarizer.as_ref())
                .await?
            {
                written += 1;
            }
        }
        Ok(written)
    }

    /// Facts from every session's new user and tool turns. Each session's cursor moves
    /// past what was read; an event that fails is tried again by the next passes and, after
    /// [`FACTS_TRIES`], skipped and reported, so one message never stops the pass for
    /// good. A session that fails does not stop the others: the pass is then recorded
    /// failed with its counts.
    async fn expiry(&self) -> Result<Counts, ConsolidateError> {
        let now = self.now();
        let mut counts = Counts::new();
        let expired = self
            .memory
            .by(Origin::Consolidation("expiry"))
            .expire_notes(now)
            .await?;
        bump(&mut counts, "notes_expired", expired as i64);
        let retention_days = self.memory.limits().deleted_note_retention_days;
        if retention_days > 0 {
            let cutoff = now.saturating_sub(retention_days.saturating_mul(86_400_000));
            let purged = self.memory.purge_deleted_versions(cutoff).await?;
            bump(&mut counts, "note_versions_purged", purged as i64);
        }
        // `temp:` state a crashed run left (a run that ends clears its own).
        let cleared = crate::state::StateStore::new(self.memory.clone())
            .sweep_temp()
            .await?;
        bump(&mut counts, "temp_state_cleared", cleared as i64);
        if self.config.conversation_retention_days > 0 {
            let cutoff = now - self.config.conversation_retention_days * 86_400_000;
            let removed = self.memory.remove_idle_sessions(cutoff).await?;
            bump(&mut counts, "sessions_removed", removed as i64);
        }
        // After the sessions: content of artifacts that went with them goes too.
        let garbage = self.artifacts.collect_garbage().await?;
        bump(
            &mut counts,
            "artifact_contents_removed",
            garbage.contents_removed as i64,
        );
        bump(
            &mut counts,
            "artifact_files_removed",
            garbage.files_removed as i64,
        );
        Ok(counts)
    }

    async fn prune(&self) -> Result<Counts, ConsolidateError> {
        let mut counts = Counts::new();
        let runs = self.schedules.prune_runs(None).await?;
        bump(&mut counts, "runs_pruned", runs as i64);
        let cutoff = self.now() - self.config.outbox_retention_days * 86_400_000;
        let delivered = self.outbox.prune_delivered(cutoff).await?;
        bump(&mut counts, "outbox_pruned", delivered as i64);
        Ok(counts)
    }

    /// Gives every chunk a vector of the current model: queues any chunk that has none
    /// and is not queued (a repair; writes queue their own), then drains the queue.
    async fn backfill(&self) -> Result<Counts, ConsolidateError> {
        let mut counts = Counts::new();
        let queued = self.memory.queue_missing_vectors().await?;
        bump(&mut counts, "queued", queued as i64);
        let embedded = self.memory.embed_pending(&|_, _| {}).await?;
        bump(&mut counts, "embedded", embedded as i64);
        Ok(counts)
    }

    async fn optimize(&self) -> Result<Counts, ConsolidateError> {
        self.memory.optimize_index().await?;
        let mut counts = Counts::new();
        if let Some((busy, pages)) = self.memory.db().checkpoint().await? {
            counts.insert("wal_busy".into(), json!(busy));
            counts.insert("wal_pages_checkpointed".into(), json!(pages));
        }
        counts.insert("fts_optimized".into(), json!(true));
        Ok(counts)
    }

    /// `VACUUM INTO` a timestamped file in `snapshot_dir`, keeping the newest few.
    async fn snapshot(&self) -> Result<Counts, ConsolidateError> {
        let mut counts = Counts::new();
        let Some(dir) = &self.config.snapshot_dir else {
            counts.insert("skipped".into(), json!("no consolidation.snapshot_dir"));
            return Ok(counts);
        };
        if !self.memory.db().is_local() {
            // VACUUM INTO would write on the server's disk, not here.
            counts.insert(
                "skipped".into(),
                json!("snapshots are for a local database file"),
            );
            return Ok(counts);
        }
        // Snapshots carry the database's privacy: a folder and files only the owner reads.
        crate::db::create_private_dir(std::path::Path::new(dir))
            .map_err(ConsolidateError::Snapshot)?;
        let stamp = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(self.now())
            .unwrap_or_default()
            .format("%Y%m%dT%H%M%S%3fZ");
        let path = std::path::Path::new(dir).join(format!("nightshift-{stamp}.db"));
        self.memory.db().snapshot_into(&path).await?;
        counts.insert("snapshot".into(), json!(path.display().to_string()));
        let mut snapshots: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| ConsolidateError::Snapshot(e.to_string()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("nightshift-") && n.ends_with(".db"))
            })
            .collect();
        snapshots.sort();
        let excess = snapshots
            .len()
            .saturating_sub(self.config.snapshot_keep.max(1));
        for old in &snapshots[..excess] {
            std::fs::remove_file(old).map_err(|e| ConsolidateError::Snapshot(e.to_string()))?;
        }
        bump(&mut counts, "removed", excess as i64);
        Ok(counts)
    }
}
