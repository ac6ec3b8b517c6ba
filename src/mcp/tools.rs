//! The MCP tools: each a library operation with a JSON Schema for its input and its output,
//! and a one-line description written for a model. Every tool acts for the session's one
//! user; bad input and "not found" are tool results with `isError`, carrying the same
//! message the CLI prints.

use rmcp::model::{CallToolResult, JsonObject};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::access::Actor;
use crate::app::App;
use crate::error::Error;
use crate::memory::{
    AppendedEvents, Context, ContextRequest, Event, NewEvent, NewNote, Note, NoteDeleted, Role,
    SaveOutcome, SearchResponse, Strategy,
};
use crate::schedule::store::{Backfill, ScheduleFilter};
use crate::schedule::types::ScheduleStatus;
use crate::schedule::view::{
    RunView, ScheduleDeleted, ScheduleList, ScheduleView, LIST_NEXT_RUNS, SHOW_NEXT_RUNS,
};
use crate::spec::{SchedulePatch, ScheduleSpec};

pub use super::search_in::MemorySearchIn;
pub use super::tool_def::{args, done, CallError, Effect, ToolDef};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySaveIn {
    /// The note's text.
    pub text: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Save under a key: a note already saved under it is replaced, keeping its id.
    pub key: Option<String>,
    pub category: Option<String>,
    /// Save it as this agent's own note (without: shared by all the user's agents).
    pub agent: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryUpdateIn {
    pub note_id: String,
    /// The new text.
    pub text: String,
    /// Replaces the note's tags when given.
    pub tags: Option<Vec<String>>,
    /// Act as this agent of the user: its own notes and the shared ones (without: the
    /// shared notes only).
    pub agent: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteIdIn {
    pub note_id: String,
    /// Act as this agent of the user: its own notes and the shared ones (without: the
    /// shared notes only).
    pub agent: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryAppendIn {
    /// The conversation session (created on first use).
    pub session: String,
    pub role: Role,
    pub text: String,
    /// Who said it, when the role has more than one voice (a group chat's members).
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRecallIn {
    pub session: String,
    /// Events to return, the newest (default 50).
    pub limit: Option<usize>,
    /// Only turns at or after this instant (UTC ms, RFC 3339 or a date).
    pub since: Option<String>,
    /// Only turns at or before this instant.
    pub until: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryContextIn {
    pub session: String,
    /// Tokens, 1..=8000 (default 2000).
    pub budget: Option<usize>,
    /// What relevant memories should be about (default: the last user turn).
    pub query: Option<String>,
    pub strategy: Option<Strategy>,
    /// Act as this agent of the user: its own notes and the shared ones (without: the
    /// shared notes only).
    pub agent: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleListIn {
    /// Only schedules in this state.
    pub status: Option<ScheduleStatus>,
    /// 1..=1000 (default 100).
    pub limit: Option<i64>,
    pub offset: Option<i64>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleIdIn {
    pub schedule_id: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedulePauseIn {
    pub schedule_id: String,
    /// Why, shown with the schedule.
    pub note: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleBackfillIn {
    pub schedule_id: String,
    /// An instant, or a date (its first moment) in the schedule's zone.
    pub from: String,
    /// An instant, or a date (its last moment); not in the future.
    pub to: String,
    /// List what would run, and queue nothing.
    #[serde(default)]
    pub dry_run: bool,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleEditIn {
    pub schedule_id: String,
    /// The fields to change; the rest stay.
    pub changes: SchedulePatch,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRunsIn {
    pub schedule_id: String,
    /// 1..=1000 (default 20).
    pub limit: Option<i64>,
}

/// A session's events, oldest first.
#[derive(Serialize, ToSchema)]
pub struct EventsOut {
    pub events: Vec<Event>,
}

/// A schedule's runs, newest first.
#[derive(Serialize, ToSchema)]
pub struct RunsOut {
    pub runs: Vec<RunView>,
}

macro_rules! def {
    ($name:literal, $title:literal, $effect:ident, $description:literal, $input:ty, $output:ty) => {
        ToolDef::of::<$input, $output>($name, $title, Effect::$effect, $description)
    };
}

/// Every tool, in the order `tools/list` pages through them.
pub fn definitions() -> Vec<ToolDef> {
    let mut tools = vec![
        def!("memory_search", "Search memory", Reads,
            "Search the user's saved notes (and optionally one conversation) by meaning and keywords; best first.",
            MemorySearchIn, SearchResponse),
        def!("memory_save", "Save a note", Writes,
            "Save a fact, preference or decision to the user's memory; returns its note_id (with a key, replaces the note saved under it).",
            MemorySaveIn, SaveOutcome),
        def!("memory_update", "Update a note", Writes,
            "Replace the text (and optionally the tags) of one of the user's notes, keeping its id.",
            MemoryUpdateIn, Note),
        def!("memory_delete", "Delete a note", Deletes,
            "Delete one of the user's notes by id.",
            NoteIdIn, NoteDeleted),
        def!("memory_append", "Append to a conversation", Writes,
            "Append one turn (role user, assistant, tool or system) to a conversation session of the user.",
            MemoryAppendIn, AppendedEvents),
        def!("memory_recall", "Recall a conversation", Reads,
            "The last turns of one of the user's conversation sessions, oldest first.",
            MemoryRecallIn, EventsOut),
        def!("memory_context", "Context for a prompt", Reads,
            "What to put in a prompt for a session within a token budget: summary, recent and salient turns, relevant memories.",
            MemoryContextIn, Context),
        def!("schedule_add", "Add a schedule", Writes,
            "Schedule a goal to run later or repeatedly: give the goal and exactly one of cron (with tz), every, at, or when (plain words like \"every weekday at 9am\").",
            ScheduleSpec, ScheduleView),
        def!("schedule_list", "List schedules", Reads,
            "The user's schedules, newest first, with their next run.",
            ScheduleListIn, ScheduleList),
        def!("schedule_show", "Show a schedule", Reads,
            "One of the user's schedules, its cadence in words and its next five runs.",
            ScheduleIdIn, ScheduleView),
        def!("schedule_edit", "Change a schedule", Writes,
            "Change one of the user's schedules in place, keeping its id and runs: give only the fields to change (goal, a new cadence, tz, policies, limits); clear takes optional settings away.",
            ScheduleEditIn, ScheduleView),
        def!("schedule_pause", "Pause a schedule", Writes,
            "Stop running one of the user's schedules until it is resumed, with an optional note.",
            SchedulePauseIn, ScheduleView),
        def!("schedule_resume", "Resume a schedule", Writes,
            "Resume a paused schedule of the user from now.",
            ScheduleIdIn, ScheduleView),
        def!("schedule_delete", "Delete a schedule", Deletes,
            "Delete one of the user's schedules and its run history.",
            ScheduleIdIn, ScheduleDeleted),
        def!("schedule_runs", "A schedule's runs", Reads,
            "The runs of one of the user's schedules, newest first: status, output, error.",
            ScheduleRunsIn, RunsOut),
    ];
    tools.extend(super::start_tools::definitions());
    tools.extend([
        def!("schedule_backfill", "Backfill a schedule", Writes,
            "Run the occurrences of a past range of one of the user's schedules, oldest first (at most 1000); those that already ran are not run again; dry_run lists them only.",
            ScheduleBackfillIn, Backfill),
    ]);
    tools.extend(super::state_tools::definitions());
    tools.extend(super::version_tools::definitions());
    tools.extend(super::approval_tools::definitions());
    tools.extend(super::run_tools::definitions());
    tools
}

/// Runs the tool `name` for `user`.
pub async fn call(
    app: &App,
    user: &str,
    name: &str,
    arguments: Option<JsonObject>,
    call: &super::start_tools::CallContext,
) -> Result<CallToolResult, CallError> {
    let memory = &app.memory().by(crate::memory::Origin::Mcp);
    let actor = Actor::user(user).map_err(Error::from)?;
    match name {
        "memory_search" => {
            let input: MemorySearchIn = args(arguments)?;
            let memory = &memory
                .as_agent(input.agent.as_deref())
                .map_err(Error::from)?;
            let request = input.into_request(user).map_err(Error::from)?;
            let found = SearchResponse::from(
                memory
                    .search_detailed(&request)
                    .await
                    .map_err(Error::from)?,
            );
            let mut text = if found.hits.is_empty() {
                "No memories match.".to_string()
            } else {
                found
                    .hits
                    .iter()
                    .enumerate()
                    .map(|(i, hit)| {
                        let origin = hit
                            .note_id
                            .clone()
                            .or_else(|| {
                                hit.session_id
                                    .as_ref()
                                    .map(|s| format!("{s}#{}", hit.sequence.unwrap_or_default()))
                            })
                            .unwrap_or_default();
                        format!("{}. [{origin}] {}", i + 1, hit.text)
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            if let Some(reason) = &found.degraded_reason {
                text.push_str(&format!("\n(keyword search only: {reason})"));
            }
            done(text, &found)
        }
        "memory_save" => {
            let input: MemorySaveIn = args(arguments)?;
            let memory = &memory
                .as_agent(input.agent.as_deref())
                .map_err(Error::from)?;
            let note = NewNote {
                content: input.text,
                tags: input.tags,
                key: input.key,
                category: input.category,
                ..Default::default()
            };
            let saved = memory.save_note(user, &note).await.map_err(Error::from)?;
            let verb = if saved.created { "Saved" } else { "Replaced" };
            done(format!("{verb} note {}.", saved.note_id), &saved)
        }
        "memory_update" => {
            let input: MemoryUpdateIn = args(arguments)?;
            let memory = &memory
                .as_agent(input.agent.as_deref())
                .map_err(Error::from)?;
            let note = memory
                .update_note(user, &input.note_id, &input.text, input.tags.as_deref())
                .await
                .map_err(Error::from)?;
            done(format!("Updated note {}.", note.note_id), &note)
        }
        "memory_delete" => {
            let input: NoteIdIn = args(arguments)?;
            let memory = &memory
                .as_agent(input.agent.as_deref())
                .map_err(Error::from)?;
            memory
                .delete_note(user, &input.note_id)
                .await
                .map_err(Error::from)?;
            let out = NoteDeleted {
                note_id: input.note_id,
                deleted: true,
            };
            done(format!("Deleted note {}.", out.note_id), &out)
        }
        "memory_append" => {
            let input: MemoryAppendIn = args(arguments)?;
            let sequences = memory
                .append(
                    user,
                    &input.session,
                    &[NewEvent {
                        name: input.name,
                        ..NewEvent::new(input.role, input.text)
                    }],
                )
                .await
                .map_err(Error::from)?;
            let out = AppendedEvents {
                session_id: input.session,
                sequences,
            };
            done(
                format!(
                    "Appended to {} as #{}.",
                    out.session_id,
                    out.sequences.first().copied().unwrap_or_default()
                ),
                &out,
            )
        }
        "memory_recall" => {
            let input: MemoryRecallIn = args(arguments)?;
            let limit = input.limit.unwrap_or(app.config().memory.recall_limit);
            let window = crate::api::types::window(input.since.as_deref(), input.until.as_deref())
                .map_err(Error::from)?;
            let events = memory
                .recall_in(&actor, &input.session, limit, &window)
                .await
                .map_err(Error::from)?;
            let text = if events.is_empty() {
                "The session has no turns.".to_string()
            } else {
                events
                    .iter()
                    .map(|e| format!("#{} {}: {}", e.sequence, e.role.as_str(), e.content))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            done(text, &EventsOut { events })
        }
        "memory_context" => {
            let input: MemoryContextIn = args(arguments)?;
            let memory = &memory
                .as_agent(input.agent.as_deref())
                .map_err(Error::from)?;
            let context: Context = memory
                .context(&ContextRequest {
                    user_id: user.to_string(),
                    session_id: input.session,
                    budget_tokens: input.budget,
                    query: input.query,
                    strategy: input.strategy.unwrap_or(Strategy::All),
                })
                .await
                .map_err(Error::from)?;
            done(context.render(), &context)
        }
        "schedule_add" => {
            let spec: ScheduleSpec = args(arguments)?;
            if spec.user.as_deref().is_some_and(|u| u != user) {
                return Err(CallError::Failed(Error::new(
                    crate::error::ErrorKind::BadInput,
                    "invalid user: a schedule is added for the session's own user; leave it out",
                )));
            }
            let schedule = app
                .add_schedule(&actor, user, &spec)
                .await
                .map_err(Error::from)?;
            let view = ScheduleView::new(&schedule, SHOW_NEXT_RUNS);
            done(
                format!(
                    "Scheduled {}: {}; next run {}.",
                    view.schedule_id,
                    view.description,
                    view.next_run_at.as_deref().unwrap_or("none")
                ),
                &view,
            )
        }
        "schedule_list" => {
            let input: ScheduleListIn = args(arguments)?;
            let filter = ScheduleFilter {
                user_id: Some(user.to_string()),
                status: input.status,
                limit: Some(input.limit.unwrap_or(100)),
                offset: input.offset.unwrap_or(0),
                ..Default::default()
            };
            let (schedules, total) = app
                .schedules()
                .list(&actor, &filter)
                .await
                .map_err(Error::from)?;
            let list = ScheduleList {
                schedules: schedules
                    .iter()
                    .map(|s| ScheduleView::new(s, LIST_NEXT_RUNS))
                    .collect(),
                total,
            };
            let mut lines: Vec<String> = list
                .schedules
                .iter()
                .map(|s| {
                    format!(
                        "{} [{}] {} — {}; next {}",
                        s.schedule_id,
                        s.status,
                        s.goal,
                        s.description,
                        s.next_run_at.as_deref().unwrap_or("-")
                    )
                })
                .collect();
            lines.push(format!("{} of {} schedule(s)", list.schedules.len(), total));
            done(lines.join("\n"), &list)
        }
        "schedule_show" | "schedule_resume" | "schedule_delete" => {
            let input: ScheduleIdIn = args(arguments)?;
            let store = app.schedules();
            let id = input.schedule_id.as_str();
            match name {
                "schedule_delete" => {
                    store.delete(&actor, id).await.map_err(Error::from)?;
                    let out = ScheduleDeleted {
                        schedule_id: input.schedule_id.clone(),
                        deleted: true,
                    };
                    done(format!("Deleted schedule {id}."), &out)
                }
                _ => {
                    let (schedule, verb) = match name {
                        "schedule_resume" => (store.resume(&actor, id).await, "Resumed"),
                        _ => (store.get(&actor, id).await, "Schedule"),
                    };
                    let view = ScheduleView::new(&schedule.map_err(Error::from)?, SHOW_NEXT_RUNS);
                    done(
                        format!(
                            "{verb} {} [{}]: {} — {}; next runs {}",
                            view.schedule_id,
                            view.status,
                            view.goal,
                            view.description,
                            view.next_runs.join(", ")
                        ),
                        &view,
                    )
                }
            }
        }
        "schedule_edit" => {
            let input: ScheduleEditIn = args(arguments)?;
            let schedule = app
                .edit_schedule(&actor, &input.schedule_id, &input.changes)
                .await
                .map_err(Error::from)?;
            let view = ScheduleView::new(&schedule, SHOW_NEXT_RUNS);
            done(
                format!(
                    "Changed {} [{}]: {} — {}; next runs {}",
                    view.schedule_id,
                    view.status,
                    view.goal,
                    view.description,
                    view.next_runs.join(", ")
                ),
                &view,
            )
        }
        "schedule_backfill" => {
            let input: ScheduleBackfillIn = args(arguments)?;
            let backfill = app
                .schedules()
                .backfill(
                    &actor,
                    &input.schedule_id,
                    &input.from,
                    &input.to,
                    input.dry_run,
                )
                .await
                .map_err(Error::from)?;
            let text = format!(
                "{} {} occurrence(s) of {} ({}); {} already ran.",
                if backfill.dry_run {
                    "Would run"
                } else {
                    "Queued"
                },
                backfill.queued.len(),
                backfill.schedule_id,
                backfill.queued.join(", "),
                backfill.already_run.len()
            );
            done(text, &backfill)
        }
        "schedule_pause" => {
            let input: SchedulePauseIn = args(arguments)?;
            let schedule = app
                .schedules()
                .pause(&actor, &input.schedule_id, input.note.as_deref())
                .await
                .map_err(Error::from)?;
            let view = ScheduleView::new(&schedule, 0);
            done(format!("Paused {}.", view.schedule_id), &view)
        }
        "schedule_runs" => {
            let input: ScheduleRunsIn = args(arguments)?;
            let runs = app
                .schedules()
                .runs(&actor, &input.schedule_id, input.limit.unwrap_or(20))
                .await
                .map_err(Error::from)?;
            let runs: Vec<RunView> = runs.iter().map(RunView::from).collect();
            let text = if runs.is_empty() {
                "No runs yet.".to_string()
            } else {
                runs.iter()
                    .map(|r| {
                        format!(
                            "{} {} {}: {}",
                            r.scheduled_for,
                            r.run_id,
                            r.status,
                            r.error
                                .clone()
                                .or_else(|| r.output_summary.clone())
                                .unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            done(text, &RunsOut { runs })
        }
        "schedule_trigger" | "schedule_run_now" => {
            super::start_tools::call(app, user, name, arguments, call).await
        }
        "schedule_run_cancel" | "schedule_run_rerun" | "schedule_run_events" => {
            super::run_tools::call(app, user, name, arguments).await
        }
        other if other.starts_with("approval_") => {
            super::approval_tools::call(app, user, other, arguments).await
        }
        other if other.starts_with("state_") => {
            super::state_tools::call(app, user, other, arguments).await
        }
        other => super::version_tools::call(app, user, other, arguments).await,
    }
}
