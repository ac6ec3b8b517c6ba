//! Running one claimed occurrence: the attempt loop with its deadline and backoff, the
//! lease heartbeat, and recording the result, transcript and history.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::context::FutureExt as _;
use tokio_util::sync::CancellationToken;

use super::listener::{FinishedRun, RunListener};
use crate::approval::WaitFor;
use crate::artifact::ArtifactStore;
use crate::config::{RuntimeConfig, SchedulerConfig};
use crate::memory::NewEvent;
use crate::memory::{
    ContextRequest, Memory, MemoryError, SearchRequest, SessionKey, SessionKind, Strategy,
    Summarizer, SummaryPolicy,
};
use crate::runtime::{AgentRuntime, GoalOutcome, GoalRequest, RuntimeError};
use crate::schedule::progress::Progress;
use crate::schedule::store::{Paused, ScheduleStore, Transcript};
use crate::schedule::types::{Claim, RunOutcome, RunStatus, ScheduleStatus};
use crate::schedule::ScheduleError;

/// Longest wait between attempts.
const MAX_BACKOFF_SECS: i64 = 3600;
/// Waits between tries to record a finished run while the database is out of reach.
const FINISH_RETRY_FIRST: Duration = Duration::from_millis(200);
const FINISH_RETRY_MAX: Duration = Duration::from_secs(10);
/// Failed tries to record a run together with its transcript before the run is recorded
/// alone and the transcript stored after it: statements of the transcript that keep
/// failing must not keep the run unrecorded.
const TRANSCRIPT_TOGETHER_TRIES: u32 = 3;

pub struct Executor {
    pub store: ScheduleStore,
    pub memory: Memory,
    pub runtime: Arc<dyn AgentRuntime>,
    pub scheduler: SchedulerConfig,
    pub runtime_config: RuntimeConfig,
    pub worker_id: String,
    pub listener: Arc<dyn RunListener>,
    /// Rolling summaries of the schedule's session, brought up to date after each run.
    pub summaries: Option<(SummaryPolicy, Arc<dyn Summarizer>)>,
    /// Where the files a run produced are stored, with the schedule's session.
    pub artifacts: ArtifactStore,
    /// The runs this worker is running, by id: cancelling one's token stops it.
    pub running: std::sync::Mutex<std::collections::HashMap<String, CancellationToken>>,
}

/// Takes a run out of [`Executor::running`] however its execution ends.
struct Running<'a> {
    executor: &'a Executor,
    run_id: String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Ok(mut running) = self.executor.running.lock() {
            running.remove(&self.run_id);
        }
    }
}

impl Executor {
    pub fn lease_ms(&self) -> i64 {
        self.scheduler.lease_secs * 1000
    }

    /// Whether this worker is running any run (else no cancel can be for it).
    pub fn runs_any(&self) -> bool {
        self.running.lock().is_ok_and(|running| !running.is_empty())
    }

    /// Stops the run `run_id` if this worker is running it (someone asked to); it is
    /// recorded `cancelled`. Returns whether it was running here.
    pub fn cancel(&self, run_id: &str) -> bool {
        let running = self.running.lock().map(|r| r.get(run_id).cloned());
        match running {
            Ok(Some(token)) => {
                token.cancel();
                true
            }
            _ => false,
        }
    }

    /// Runs a claimed occurrence to its end. When `hard_stop` fires first the run is
    /// abandoned as it stands (shutdown marks it interrupted).
    pub async fn execute(&self, mut claim: Claim, hard_stop: CancellationToken) {
        let run_id = claim.run_id.clone();
        let cancelled = CancellationToken::new();
        if let Ok(mut running) = self.running.lock() {
            running.insert(run_id.clone(), cancelled.clone());
        }
        let _running = Running {
            executor: self,
            run_id: run_id.clone(),
        };
        let heartbeat = async {
            let period = Duration::from_millis((self.lease_ms() / 3).max(1) as u64);
            loop {
                tokio::time::sleep(period).await;
                match self
                    .store
                    .renew_lease(&run_id, &self.worker_id, self.lease_ms())
                    .await
                {
                    Ok(true) => {
                        // A cancel the scheduler loop did not pass on (it stops first
                        // when the worker shuts down) is seen here.
                        if let Ok(Some(_)) = self.store.cancel_asked(&run_id).await {
                            cancelled.cancel();
                        }
                    }
                    Ok(false) => {
                        tracing::warn!(%run_id, "lost the lease on a running run");
                        return;
                    }
                    Err(err) => tracing::warn!(%run_id, %err, "cannot renew lease"),
                }
            }
        };
        let started = std::time::Instant::now();
        let span = super::run_span::start(&claim);
        let attempts = self
            .attempts(&mut claim)
            .with_context(span.context().clone());
        let (status, mut outcome) = tokio::select! {
            result = attempts => result,
            _ = heartbeat => return,
            _ = hard_stop.cancelled() => return,
            // The runtime call is dropped with the attempts (an HTTP request closed, an
            // A2A task canceled by its guard, an MCP call dropped).
            _ = cancelled.cancelled() => {
                let by = self
                    .store
                    .run(&crate::access::Actor::Operator, &run_id)
                    .await
                    .ok()
                    .and_then(|run| run.cancel_requested_by)
                    .unwrap_or_else(|| "unknown".to_string());
                (
                    RunStatus::Cancelled,
                    GoalOutcome {
                        error: Some(RuntimeError::Cancelled { by }),
                        ..Default::default()
                    },
                )
            }
        };
        super::run_span::end(span, &claim, status, &outcome);
        if let Some(wait) = outcome.wait.take() {
            self.wait(&claim, outcome, wait, &hard_stop).await;
            return;
        }
        crate::telemetry::run_finished(status.as_str(), started.elapsed());
        self.record(&claim, status, outcome, &hard_stop).await;
    }

    /// The attempts of a run, until one succeeds, none are left, or one must wait for an
    /// approval (then `Waiting`, with what to wait on in the outcome).
    async fn attempts(&self, claim: &mut Claim) -> (RunStatus, GoalOutcome) {
        let schedule = &claim.schedule;
        // The run's memory is its agent's view: the shared notes and the agent's own.
        let memory = match self.memory.as_agent(schedule.agent_id.as_deref()) {
            Ok(memory) => memory,
            Err(err) => {
                // Stored ids are checked on the way in; a bad one reaches no agent's notes.
                tracing::warn!(schedule_id = %schedule.schedule_id, %err, "schedule's agent refused; its run sees the shared notes only");
                self.memory.clone()
            }
        };
        // Told before the context is assembled (a search): a follower sees the run start
        // as soon as it does.
        let progress = Progress::to(Arc::new(self.store.clone()), &claim.run_id);
        progress.running(claim.attempt).await;
        let mut request = GoalRequest {
            run_id: claim.run_id.clone(),
            schedule_id: schedule.schedule_id.clone(),
            user_id: schedule.user_id.clone(),
            goal: schedule.goal.clone(),
            session_id: SessionKind::scheduled_session(&schedule.schedule_id),
            context: self
                .context(
                    &memory,
                    &schedule.user_id,
                    &schedule.goal,
                    &schedule.schedule_id,
                    claim.memory_as_of,
                )
                .await,
            max_turns: schedule
                .max_turns
                .unwrap_or(self.runtime_config.default_max_turns),
            max_cost: schedule.max_cost,
            input: claim.input.clone(),
            agent_id: memory.agent().map(str::to_string),
            tools: schedule.tools.clone(),
            approve: schedule.approve.clone(),
            resume: claim.resume.take(),
            progress,
            memory_as_of: claim.memory_as_of,
        };
        let deadline = Duration::from_secs(
            schedule
                .timeout_secs
                .unwrap_or(self.scheduler.default_timeout_secs) as u64,
        );
        let mut retry = false;
        loop {
            if retry {
                request.progress.running(claim.attempt).await;
            }
            retry = true;
            let (status, outcome) = match tokio::time::timeout(
                deadline,
                self.runtime.run_goal(&request, &memory),
            )
            .await
            {
                Ok(outcome) if outcome.wait.is_some() => {
                    let tool = outcome.wait.as_ref().map(|w| w.tool_name.as_str());
                    request
                        .progress
                        .waiting(claim.attempt, tool.unwrap_or_default())
                        .await;
                    return (RunStatus::Waiting, outcome);
                }
                Ok(outcome) if outcome.error.is_none() => (RunStatus::Succeeded, outcome),
                Ok(outcome) => (RunStatus::Failed, outcome),
                Err(_) => (
                    RunStatus::TimedOut,
                    GoalOutcome {
                        error: Some(RuntimeError::Deadline {
                            secs: deadline.as_secs(),
                        }),
                        ..Default::default()
                    },
                ),
            };
            if status.is_success() || claim.attempt >= schedule.max_attempts {
                return (status, outcome);
            }
            // Only the first attempt goes on from an answered approval: a retry starts the
            // goal over, so an approved call is never made twice on one answer.
            request.resume = None;
            let backoff = (self.scheduler.retry_base_secs << (claim.attempt - 1).min(20))
                .min(MAX_BACKOFF_SECS);
            tracing::warn!(
                run_id = %claim.run_id,
                attempt = claim.attempt,
                error = %outcome.error.as_ref().map(ToString::to_string).unwrap_or_default(),
                retry_in_secs = backoff,
                "attempt failed; retrying"
            );
            let error = outcome.error.as_ref().map(ToString::to_string);
            request
                .progress
                .retrying(claim.attempt, &error.unwrap_or_default(), backoff)
                .await;
            tokio::time::sleep(Duration::from_secs(backoff as u64)).await;
            match self
                .store
                .next_attempt(&claim.run_id, &self.worker_id, self.lease_ms())
                .await
            {
                Ok(true) => claim.attempt += 1,
                // Someone else holds the run now (our lease ran out): stop here.
                _ => return (status, outcome),
            }
        }
    }

    /// What the prompt carries: the schedule session's context (summary, recent and
    /// salient turns, relevant memories) from the same assembly `memory context` uses; on
    /// a first run, the user's notes relevant to the goal. Within the configured budget.
    /// With `as_of`, memory as it was then (a rerun with memory as of the original).
    async fn context(
        &self,
        memory: &Memory,
        user_id: &str,
        goal: &str,
        schedule_id: &str,
        as_of: Option<i64>,
    ) -> String {
        let budget = self.runtime_config.context_budget_tokens;
        // A goal may be longer than a query: its start is what memories should be about.
        let query = crate::text::truncate_bytes(goal, crate::input::MAX_QUERY_BYTES).to_string();
        let request = ContextRequest {
            user_id: user_id.to_string(),
            session_id: SessionKind::scheduled_session(schedule_id),
            budget_tokens: Some(budget),
            query: Some(query.clone()),
            strategy: Strategy::All,
        };
        let assembled = match as_of {
            Some(at) => memory.context_as_of(&request, at).await,
            None => memory.context(&request).await,
        };
        match assembled {
            Ok(context) => return context.render(),
            Err(MemoryError::SessionNotFound(_)) => {}
            Err(err) => tracing::warn!(%err, "cannot assemble the run's context"),
        }
        let request = SearchRequest {
            user_id: user_id.to_string(),
            query,
            as_of,
            ..Default::default()
        };
        let mut context = String::new();
        if let Ok(hits) = memory.search(&request).await {
            if !hits.is_empty() {
                context.push_str("Relevant memories:\n");
                for hit in hits {
                    context.push_str(&format!(
                        "- [{}] {}\n",
                        hit.note_id.unwrap_or_default(),
                        hit.text
                    ));
                }
            }
        }
        crate::text::truncate_chars(&context, budget * 4).to_string()
    }

    /// Stores the files the run produced with its session and run id. One that cannot be
    /// stored (over a limit, a bad name or type) is skipped with a note at the end of the
    /// run's output: the run itself stands.
    async fn store_artifacts(&self, claim: &Claim, session: &str, outcome: &mut GoalOutcome) {
        let mut artifacts = std::mem::take(&mut outcome.artifacts);
        // A run keeps at most MAX_ARTIFACTS_PER_RUN; the rest are named and left out.
        let over = artifacts.split_off(artifacts.len().min(crate::artifact::MAX_ARTIFACTS_PER_RUN));
        for artifact in &over {
            let name = crate::input::printable(crate::text::truncate_chars(&artifact.name, 100))
                .into_owned();
            if !outcome.output.is_empty() {
                outcome.output.push('\n');
            }
            outcome.output.push_str(&format!(
                "[artifact `{name}` not stored: a run keeps at most {} artifacts]",
                crate::artifact::MAX_ARTIFACTS_PER_RUN
            ));
        }
        for artifact in &artifacts {
            let stored = self
                .artifacts
                .put(
                    &claim.schedule.user_id,
                    session,
                    Some(&claim.run_id),
                    artifact,
                )
                .await;
            if let Err(err) = stored {
                let name =
                    crate::input::printable(crate::text::truncate_chars(&artifact.name, 100))
                        .into_owned();
                tracing::warn!(run_id = %claim.run_id, artifact = %name, %err, "artifact not stored");
                if !outcome.output.is_empty() {
                    outcome.output.push('\n');
                }
                outcome
                    .output
                    .push_str(&format!("[artifact `{name}` not stored: {err}]"));
            }
        }
    }

    /// The run's turns as its transcript keeps them: each within the size any event may
    /// have, the rest cut with a note (a long answer must not cost the run its transcript).
    /// The turns a run adds to its schedule's session: none for a rerun that sees memory
    /// as it was (it changes none; its record keeps its output and its progress).
    fn transcript_events(&self, claim: &Claim, outcome: &GoalOutcome) -> Vec<NewEvent> {
        if claim.memory_as_of.is_some() {
            return Vec::new();
        }
        let max_text = self.memory.limits().max_text_bytes;
        let max_payload = self.memory.limits().max_payload_bytes;
        outcome
            .transcript
            .iter()
            .filter(|event| !event.content.trim().is_empty())
            .map(|event| {
                let mut event = event.clone();
                event.content = crate::text::cut_with_note(&event.content, max_text).into_owned();
                let payload_len = event.payload.as_ref().map_or(0, |p| {
                    serde_json::to_string(p).map_or(usize::MAX, |t| t.len())
                });
                if payload_len > max_payload {
                    event.payload = Some(serde_json::json!({
                        "omitted": format!("{payload_len} bytes, over memory.max_payload_bytes")
                    }));
                }
                event
            })
            .collect()
    }

    /// Pauses the run on a call that waits for approval: recorded `waiting` with the
    /// approval, the transcript so far and the request to the user (see
    /// [`ScheduleStore::wait_for_approval`]); this worker's slot is free once it returns.
    /// Kept and retried while the database is away, as a result is.
    async fn wait(
        &self,
        claim: &Claim,
        outcome: GoalOutcome,
        wait: WaitFor,
        hard_stop: &CancellationToken,
    ) {
        let schedule = &claim.schedule;
        let session = SessionKind::scheduled_session(&schedule.schedule_id);
        let events = self.transcript_events(claim, &outcome);
        let transcript = Transcript {
            memory: &self.memory,
            user_id: &schedule.user_id,
            session_id: &session,
            events: &events,
        };
        let so_far = RunOutcome {
            status: Some(RunStatus::Waiting),
            turn_count: outcome.turn_count,
            prompt_tokens: outcome.prompt_tokens,
            completion_tokens: outcome.completion_tokens,
            cost: outcome.cost,
            ..Default::default()
        };
        let timeout_ms = self.scheduler.approval_timeout_secs.saturating_mul(1000);
        let mut with_transcript = !events.is_empty();
        let mut retry_in = FINISH_RETRY_FIRST;
        loop {
            match self
                .store
                .wait_for_approval(
                    claim,
                    &self.worker_id,
                    &so_far,
                    &wait,
                    timeout_ms,
                    with_transcript.then_some(&transcript),
                )
                .await
            {
                Ok(Paused::Waiting(waiting)) => {
                    tracing::info!(run_id = %claim.run_id, approval_id = %waiting.approval_id, tool = %wait.tool_name, "run waits for approval of a tool call");
                    return;
                }
                Ok(Paused::CancelAsked(by)) => {
                    // The call is not asked for: the run stops here, with what it used.
                    let stopped = GoalOutcome {
                        error: Some(RuntimeError::Cancelled { by }),
                        ..outcome
                    };
                    self.record(claim, RunStatus::Cancelled, stopped, hard_stop)
                        .await;
                    return;
                }
                Ok(Paused::NotHeld) => {
                    tracing::warn!(run_id = %claim.run_id, "run was taken over by another worker; its approval request discarded");
                    return;
                }
                Err(ScheduleError::Transcript(err)) if !matches!(err, MemoryError::Db(_)) => {
                    tracing::warn!(run_id = %claim.run_id, %err, "cannot store the run's transcript; pausing the run without it");
                    with_transcript = false;
                }
                Err(err) => {
                    tracing::error!(run_id = %claim.run_id, %err, retry_in_ms = retry_in.as_millis() as u64, "cannot pause the run for approval; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(retry_in) => {}
                        // The lease runs out and recovery starts the run over.
                        _ = hard_stop.cancelled() => return,
                    }
                    retry_in = (retry_in * 2).min(FINISH_RETRY_MAX);
                }
            }
        }
    }

    async fn record(
        &self,
        claim: &Claim,
        status: RunStatus,
        mut outcome: GoalOutcome,
        hard_stop: &CancellationToken,
    ) {
        let schedule = &claim.schedule;
        let session = SessionKind::scheduled_session(&schedule.schedule_id);
        // Before the run's record: its notification lists them.
        self.store_artifacts(claim, &session, &mut outcome).await;
        let run_outcome = RunOutcome {
            status: Some(status),
            output: (!outcome.output.is_empty()).then(|| outcome.output.clone()),
            error: outcome.error.as_ref().map(ToString::to_string),
            turn_count: outcome.turn_count,
            prompt_tokens: outcome.prompt_tokens,
            completion_tokens: outcome.completion_tokens,
            cost: outcome.cost,
        };
        let events = self.transcript_events(claim, &outcome);
        let transcript = Transcript {
            memory: &self.memory,
            user_id: &schedule.user_id,
            session_id: &session,
            events: &events,
        };
        // Stored with the run's record, in its transaction; on its own afterwards only
        // when storing them together keeps failing.
        let mut together = !events.is_empty();
        let mut after = false;
        let mut failures = 0;
        // The result is kept until the database takes it: a database that is away for a
        // while (a server restarting, a network cut) must not cost a second run.
        let mut retry_in = FINISH_RETRY_FIRST;
        loop {
            match self
                .store
                .finish_with(
                    claim,
                    Some(&self.worker_id),
                    &run_outcome,
                    self.scheduler.pause_after_failures,
                    together.then_some(&transcript),
                )
                .await
            {
                Ok(true) => break,
                Ok(false) => {
                    tracing::warn!(run_id = %claim.run_id, "run was taken over by another worker; result discarded");
                    return;
                }
                Err(ScheduleError::Transcript(err)) if !matches!(err, MemoryError::Db(_)) => {
                    // Refused, not the database failing: the run is recorded without it.
                    tracing::warn!(run_id = %claim.run_id, %err, "cannot store the run's transcript; recording the run without it");
                    together = false;
                }
                Err(err) => {
                    failures += 1;
                    if together && failures >= TRANSCRIPT_TOGETHER_TRIES {
                        together = false;
                        after = true;
                    }
                    tracing::error!(
                        run_id = %claim.run_id,
                        %err,
                        retry_in_ms = retry_in.as_millis() as u64,
                        "cannot record the run; keeping the result and retrying"
                    );
                    tokio::select! {
                        _ = tokio::time::sleep(retry_in) => {}
                        _ = hard_stop.cancelled() => {
                            // Shutting down: the lease runs out and recovery follows the
                            // schedule's policy.
                            tracing::error!(run_id = %claim.run_id, "stopping with the run's result unrecorded");
                            return;
                        }
                    }
                    retry_in = (retry_in * 2).min(FINISH_RETRY_MAX);
                }
            }
        }
        if after {
            if let Err(err) = self
                .memory
                .append_transcript(&schedule.user_id, &session, &events)
                .await
            {
                tracing::warn!(run_id = %claim.run_id, %err, "cannot store the run's transcript");
            }
        }
        // Only a failure can pause the schedule: a success is announced without a read.
        let paused = if status.is_success() {
            None
        } else {
            self.store
                .load(&schedule.schedule_id)
                .await
                .ok()
                .filter(|s| s.status == ScheduleStatus::Paused)
                .map(|s| s.status_reason.unwrap_or_default())
        };
        self.listener
            .run_finished(&FinishedRun {
                schedule_id: &schedule.schedule_id,
                run_id: &claim.run_id,
                status,
                attempt: claim.attempt,
                paused,
            })
            .await;
        // The schedule's session is summarized once the run is recorded, on its own task:
        // a model-written summary takes a while, and the run's slot is free meanwhile. A
        // summary lost to a shutdown is written by the next run or the quiet-session check.
        if let Some((policy, summarizer)) = self.summaries.as_ref().filter(|_| !events.is_empty()) {
            let (memory, policy, summarizer) =
                (self.memory.clone(), policy.clone(), summarizer.clone());
            let key = SessionKey::new(&schedule.user_id, &session);
            tokio::spawn(async move {
                if let Err(err) = memory
                    .summarize_session(&key, &policy, summarizer.as_ref())
                    .await
                {
                    tracing::warn!(session = %key, %err, "cannot summarize the schedule's session");
                }
            });
        }
    }
}
