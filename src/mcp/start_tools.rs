//! The tools that start a run — `schedule_trigger` and `schedule_run_now` — and, asked to
//! wait (`wait_secs`), follow it: each status change, turn, tool call and result is sent
//! as an MCP progress notification (when the call carries a progress token), and the
//! answer is the run as it ended, or as it stands when the wait is over.

use std::time::Duration;

use rmcp::model::{CallToolResult, JsonObject, ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};
use rmcp::RoleServer;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::tool_def::{args, done, CallError, Effect, ToolDef};
use crate::access::Actor;
use crate::app::App;
use crate::error::Error;
use crate::input::InputError;
use crate::schedule::progress::ProgressKind;
use crate::schedule::store::{Started, Triggered};
use crate::schedule::view::{RunView, ScheduleView, SHOW_NEXT_RUNS};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleTriggerIn {
    pub schedule_id: String,
    /// Given to the runtime beside the goal (at most 64 KiB).
    pub input: Option<String>,
    /// The same key twice starts one run.
    pub idempotency_key: Option<String>,
    /// Wait up to this many seconds (below the server's request timeout) for the run to
    /// end, told as progress notifications meanwhile; default: answer at once.
    #[schema(minimum = 1)]
    pub wait_secs: Option<u64>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRunNowIn {
    pub schedule_id: String,
    /// As schedule_trigger's: wait for the run this starts, told as progress.
    #[schema(minimum = 1)]
    pub wait_secs: Option<u64>,
}

/// A trigger, and with a wait, its run.
#[derive(Serialize, ToSchema)]
pub struct TriggerOut {
    #[serde(flatten)]
    pub triggered: Triggered,
    /// With `wait_secs`: the run as it ended or as it stands when the wait ran out; none
    /// when no worker took it in time.
    pub run: Option<RunView>,
}

/// A schedule made due now, and with a wait, the run it started.
#[derive(Serialize, ToSchema)]
pub struct RunNowOut {
    #[serde(flatten)]
    pub schedule: ScheduleView,
    /// As schedule_trigger's `run`.
    pub run: Option<RunView>,
}

pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef::of::<ScheduleRunNowIn, RunNowOut>(
            "schedule_run_now",
            "Run a schedule now",
            Effect::Writes,
            "Make one of the user's schedules due now; its cadence continues afterwards. With wait_secs, wait for the run (progress notifications tell each step) and answer with it.",
        ),
        ToolDef::of::<ScheduleTriggerIn, TriggerOut>(
            "schedule_trigger",
            "Trigger a schedule",
            Effect::Writes,
            "Start a run of one of the user's schedules now with an input it receives beside its goal; the same idempotency_key twice starts one run. With wait_secs, wait for the run (progress notifications tell each step) and answer with it.",
        ),
    ]
}

/// Where a call's progress goes: the client that asked, under the token it gave.
pub struct ProgressNotifier {
    peer: Peer<RoleServer>,
    token: ProgressToken,
}

impl ProgressNotifier {
    /// Tells the client; a client that went away loses the notice, not the call.
    async fn notify(&self, progress: f64, message: String) {
        let param =
            ProgressNotificationParam::new(self.token.clone(), progress).with_message(message);
        if let Err(err) = self.peer.notify_progress(param).await {
            tracing::debug!(%err, "cannot send a progress notification");
        }
    }
}

/// What a tool call may wait on: its client's progress token, its cancellation (the
/// client cancelling, the session ending), and the moment the server stops waiting for
/// the call's answer.
pub struct CallContext {
    progress: Option<ProgressNotifier>,
    cancelled: tokio_util::sync::CancellationToken,
    deadline: tokio::time::Instant,
}

impl CallContext {
    /// The context of a call answered by `deadline`.
    pub fn of(context: &RequestContext<RoleServer>, deadline: tokio::time::Instant) -> Self {
        Self {
            progress: context
                .meta
                .get_progress_token()
                .map(|token| ProgressNotifier {
                    token,
                    peer: context.peer.clone(),
                }),
            cancelled: context.ct.clone(),
            deadline,
        }
    }
}

/// Runs the start tool `name` for `user`.
pub async fn call(
    app: &App,
    user: &str,
    name: &str,
    arguments: Option<JsonObject>,
    call: &CallContext,
) -> Result<CallToolResult, CallError> {
    let actor = Actor::user(user).map_err(Error::from)?;
    let store = app.schedules();
    match name {
        "schedule_trigger" => {
            let input: ScheduleTriggerIn = args(arguments)?;
            let wait = wait(app, input.wait_secs)?;
            let triggered = store
                .trigger(
                    &actor,
                    &input.schedule_id,
                    input.input.as_deref(),
                    input.idempotency_key.as_deref(),
                )
                .await
                .map_err(Error::from)?;
            let mut text = if triggered.deduplicated {
                format!(
                    "Already triggered with this idempotency key ({}); no new run.",
                    triggered.run_id.as_deref().unwrap_or(&triggered.event_id)
                )
            } else {
                format!(
                    "Triggered {} ({}); a worker starts its run now.",
                    triggered.schedule_id, triggered.event_id
                )
            };
            let started = Started::ByEvent(&triggered.event_id);
            let run = match wait {
                Some(wait) => {
                    watch(app, &actor, &triggered.schedule_id, started, wait, call).await?
                }
                None => None,
            };
            if wait.is_some() {
                text.push(' ');
                text.push_str(&outcome(run.as_ref()));
            }
            done(text, &TriggerOut { triggered, run })
        }
        "schedule_run_now" => {
            let input: ScheduleRunNowIn = args(arguments)?;
            let wait = wait(app, input.wait_secs)?;
            let since = app.clock().now_ms();
            let schedule = store
                .run_now(&actor, &input.schedule_id)
                .await
                .map_err(Error::from)?;
            let view = ScheduleView::new(&schedule, SHOW_NEXT_RUNS);
            let mut text = format!(
                "Due now: {} [{}]: {} — {}; next runs {}",
                view.schedule_id,
                view.status,
                view.goal,
                view.description,
                view.next_runs.join(", ")
            );
            let run = match wait {
                Some(wait) => {
                    let started = Started::Since(since);
                    watch(app, &actor, &view.schedule_id, started, wait, call).await?
                }
                None => None,
            };
            if wait.is_some() {
                text.push(' ');
                text.push_str(&outcome(run.as_ref()));
            }
            done(
                text,
                &RunNowOut {
                    schedule: view,
                    run,
                },
            )
        }
        other => Err(CallError::UnknownTool(other.to_string())),
    }
}

/// The wait asked for, checked: at least a second, and under the server's request
/// timeout (past it the call is answered as timed out, whatever the run does).
fn wait(app: &App, wait_secs: Option<u64>) -> Result<Option<Duration>, CallError> {
    let Some(secs) = wait_secs else {
        return Ok(None);
    };
    let max = app.config().server.request_timeout_secs.saturating_sub(1);
    if secs == 0 || secs > max {
        let reason = if max == 0 {
            "cannot wait: server.request_timeout_secs leaves no time".to_string()
        } else {
            format!("must be 1..={max} (below server.request_timeout_secs), got {secs}")
        };
        return Err(Error::from(InputError::new("wait_secs", reason)).into());
    }
    Ok(Some(Duration::from_secs(secs)))
}

/// Follows the run `started` names for up to `wait` (and never past the call's own
/// deadline, nor once the call is cancelled), telling each event as progress.
async fn watch(
    app: &App,
    actor: &Actor,
    schedule_id: &str,
    started: Started<'_>,
    wait: Duration,
    call: &CallContext,
) -> Result<Option<RunView>, CallError> {
    let deadline = (tokio::time::Instant::now() + wait).min(call.deadline);
    let store = app.schedules();
    let found = tokio::select! {
        found = store.await_started(actor, schedule_id, started, deadline) => {
            found.map_err(Error::from)?
        }
        _ = call.cancelled.cancelled() => None,
    };
    let Some(run_id) = found else {
        return Ok(None);
    };
    if let Some(mut follow) = store.follow(actor, &run_id, 0).await.map_err(Error::from)? {
        loop {
            let next = tokio::select! {
                next = follow.next() => next.map_err(Error::from)?,
                _ = tokio::time::sleep_until(deadline) => break,
                _ = call.cancelled.cancelled() => break,
            };
            let Some(event) = next else { break };
            if let Some(progress) = &call.progress {
                let told = progress.notify(event.seq as f64, event.describe());
                if tokio::time::timeout_at(deadline, told).await.is_err() {
                    break;
                }
            }
            if event.kind == ProgressKind::End {
                break;
            }
        }
    }
    let run = store.run(actor, &run_id).await.map_err(Error::from)?;
    Ok(Some(RunView::from(&run)))
}

/// The waited-for run in words.
fn outcome(run: Option<&RunView>) -> String {
    use crate::schedule::types::RunStatus;
    match run {
        None => "No worker took it within the wait.".to_string(),
        Some(run) if matches!(run.status, RunStatus::Running | RunStatus::Waiting) => format!(
            "Run {} is still {} after the wait; schedule_run_events follows it.",
            run.run_id, run.status
        ),
        Some(run) => format!(
            "Run {} {}: {}",
            run.run_id,
            run.status,
            run.error
                .clone()
                .or_else(|| run.output_summary.clone())
                .unwrap_or_default()
        ),
    }
}
