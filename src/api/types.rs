//! What requests carry: JSON bodies and query parameters, each an input of one library
//! operation. Unknown fields are refused, so a typo is an error rather than ignored.

use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::input::InputError;
use crate::memory::{parse_time_opt, EventWindow, NewEvent, NoteFilter, Strategy};

/// `?user=`: the user an admin token acts for (a user token needs none).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UserQuery {
    /// With an admin token: the user to act for.
    pub user: Option<String>,
}

/// `?user=&memory_as_of_original=`: a rerun for whom, seeing which memory.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RerunQuery {
    /// With an admin token: the user to act for.
    pub user: Option<String>,
    /// See memory as it was when the run started (its notes' versions and conversation
    /// of then), changing none; default false: memory as it is.
    #[serde(default)]
    pub memory_as_of_original: bool,
}

/// `?user=&agent=`: whose notes, as which of the user's agents sees them.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct NoteScopeQuery {
    /// With an admin token: the user to act for.
    pub user: Option<String>,
    /// Act as this agent of the user: its own notes and the shared ones are seen, and
    /// notes saved are its own. Without it, only the shared notes.
    pub agent: Option<String>,
}

impl NoteScopeQuery {
    /// The store acting for the agent.
    pub fn memory(
        &self,
        memory: &crate::memory::Memory,
    ) -> Result<crate::memory::Memory, crate::memory::MemoryError> {
        memory.as_agent(self.agent.as_deref())
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveNoteBody {
    pub text: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Save under a key: a note with the same key is replaced, keeping its id.
    pub key: Option<String>,
    pub category: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateNoteBody {
    pub text: String,
    /// Replaces the note's tags; kept when absent.
    pub tags: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"query": "coffee order", "top_k": 5}))]
pub struct SearchBody {
    pub query: String,
    /// Hits to return (default `search.default_top_k`, at most `search.max_top_k`).
    pub top_k: Option<usize>,
    /// Also search this conversation session of the user.
    pub session: Option<String>,
    /// Only notes carrying every one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only notes carrying at least one of these tags.
    #[serde(default)]
    pub any_tags: Vec<String>,
    /// Only notes carrying none of these tags.
    #[serde(default)]
    pub no_tags: Vec<String>,
    /// Only notes of exactly this category.
    pub category: Option<String>,
    /// Only notes whose key starts with exactly this text.
    pub key_prefix: Option<String>,
    /// Only notes of this source: `tool` or `consolidation`.
    pub source: Option<String>,
    /// Instants: UTC ms (digits), RFC 3339, or a date (UTC: its first moment for
    /// `*_after` and `since`, its last for `*_before` and `until`); bounds are inclusive.
    pub created_after: Option<String>,
    pub created_before: Option<String>,
    pub updated_after: Option<String>,
    pub updated_before: Option<String>,
    /// Only conversation events at or after this instant (notes are not affected).
    pub since: Option<String>,
    /// Only conversation events at or before this instant.
    pub until: Option<String>,
    /// Search the notes as they were at this instant (a date: its last moment), by
    /// keywords; not combined with a session, note filters or a window.
    pub as_of: Option<String>,
}

impl SearchBody {
    /// The note filter and event window the body asks for (their values checked by the
    /// library).
    pub fn filters(&mut self) -> Result<(NoteFilter, EventWindow), InputError> {
        let filter = note_filter(
            [
                std::mem::take(&mut self.tags),
                std::mem::take(&mut self.any_tags),
                std::mem::take(&mut self.no_tags),
            ],
            [
                self.category.take(),
                self.key_prefix.take(),
                self.source.take(),
            ],
            [
                self.created_after.as_deref(),
                self.created_before.as_deref(),
                self.updated_after.as_deref(),
                self.updated_before.as_deref(),
            ],
        )?;
        let window = window(self.since.as_deref(), self.until.as_deref())?;
        Ok((filter, window))
    }
}

/// A note filter from its parts: tags all / any / none; category, key prefix, source;
/// created after / before, updated after / before.
pub(crate) fn note_filter(
    [tags, any_tags, no_tags]: [Vec<String>; 3],
    [category, key_prefix, source]: [Option<String>; 3],
    [created_after, created_before, updated_after, updated_before]: [Option<&str>; 4],
) -> Result<NoteFilter, InputError> {
    Ok(NoteFilter {
        tags,
        any_tags,
        no_tags,
        category,
        key_prefix,
        source,
        created_after: parse_time_opt("created_after", created_after, false)?,
        created_before: parse_time_opt("created_before", created_before, true)?,
        updated_after: parse_time_opt("updated_after", updated_after, false)?,
        updated_before: parse_time_opt("updated_before", updated_before, true)?,
    })
}

pub(crate) fn window(since: Option<&str>, until: Option<&str>) -> Result<EventWindow, InputError> {
    Ok(EventWindow {
        since: parse_time_opt("since", since, false)?,
        until: parse_time_opt("until", until, true)?,
    })
}

/// A comma-separated list of tags in a query parameter (a tag with a comma in it can be
/// filtered on only by `POST /v1/search`).
fn tag_list(list: Option<&str>) -> Vec<String> {
    list.map(|l| l.split(',').map(str::to_string).collect())
        .unwrap_or_default()
}

/// `GET /v1/notes`: which notes (every field narrows; the same meaning as in the search
/// body, tag lists comma-separated).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct NotesQuery {
    /// With an admin token: the user to act for.
    pub user: Option<String>,
    /// Act as this agent of the user: its own notes and the shared ones (without: the
    /// shared notes only).
    pub agent: Option<String>,
    /// Comma-separated: only notes carrying every one.
    pub tags: Option<String>,
    /// Comma-separated: only notes carrying at least one.
    pub any_tags: Option<String>,
    /// Comma-separated: only notes carrying none.
    pub no_tags: Option<String>,
    pub category: Option<String>,
    pub key_prefix: Option<String>,
    /// `tool` or `consolidation`.
    pub source: Option<String>,
    /// UTC ms, RFC 3339 or a date; inclusive.
    pub created_after: Option<String>,
    pub created_before: Option<String>,
    pub updated_after: Option<String>,
    pub updated_before: Option<String>,
}

impl NotesQuery {
    pub fn filter(&mut self) -> Result<NoteFilter, InputError> {
        note_filter(
            [
                tag_list(self.tags.as_deref()),
                tag_list(self.any_tags.as_deref()),
                tag_list(self.no_tags.as_deref()),
            ],
            [
                self.category.take(),
                self.key_prefix.take(),
                self.source.take(),
            ],
            [
                self.created_after.as_deref(),
                self.created_before.as_deref(),
                self.updated_after.as_deref(),
                self.updated_before.as_deref(),
            ],
        )
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendBody {
    /// One or more events, stored together (all or none) with consecutive sequences.
    #[schema(min_items = 1)]
    pub events: Vec<NewEvent>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RecallQuery {
    pub user: Option<String>,
    /// Events to return, the newest (default `memory.recall_limit`, 1..=10000).
    pub limit: Option<usize>,
    /// Only events at or after this instant (UTC ms, RFC 3339 or a date).
    pub since: Option<String>,
    /// Only events at or before this instant.
    pub until: Option<String>,
}

impl RecallQuery {
    pub fn window(&self) -> Result<EventWindow, InputError> {
        window(self.since.as_deref(), self.until.as_deref())
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextBody {
    /// Tokens, 1..=8000 (default 2000).
    pub budget: Option<usize>,
    /// What relevant memories should be about (default: the last user turn).
    pub query: Option<String>,
    /// Default `all`.
    pub strategy: Option<Strategy>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ScheduleListQuery {
    /// With an admin token: only this user's (every user's when absent).
    pub user: Option<String>,
    /// `active`, `paused`, `completed` or `failed`.
    pub status: Option<String>,
    /// `true`: only the schedules agents made during runs (with `status=paused`: the
    /// paused ones, those made under `agent_schedules = "confirm"` among them).
    pub made_by_agent: Option<bool>,
    /// 1..=1000 (default 100).
    pub limit: Option<i64>,
    pub offset: Option<i64>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ApprovalsQuery {
    pub user: Option<String>,
    /// Only approvals in this state: pending, approved, denied or expired.
    #[param(pattern = "^(pending|approved|denied|expired)$")]
    pub state: Option<String>,
    /// 1..=1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// An answer's reason, kept with it.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    #[schema(max_length = 2000)]
    pub reason: Option<String>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    pub user: Option<String>,
    /// 1..=1000 (default 20).
    pub limit: Option<i64>,
}

/// `GET /v1/runs`: runs across schedules; each filter given narrows the list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RunListQuery {
    /// With an admin token: the user to act for (without it, every user's runs).
    pub user: Option<String>,
    /// Only runs that ended (or stand) so.
    pub status: Option<String>,
    /// Only this schedule's runs.
    pub schedule: Option<String>,
    /// Occurrences from this instant (UTC ms, RFC 3339 or a date: its first moment).
    pub since: Option<String>,
    /// Occurrences until this instant, included (a date: its last moment).
    pub until: Option<String>,
    /// 1..=200 (default 50).
    pub limit: Option<i64>,
    /// Runs to pass over (default 0).
    pub offset: Option<i64>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseBody {
    /// Why, shown with the schedule.
    pub note: Option<String>,
}

/// A backfill: the past range whose occurrences run.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BackfillBody {
    /// An instant, or a date (its first moment) in the schedule's zone.
    pub from: String,
    /// An instant, or a date (its last moment); not in the future.
    pub to: String,
    /// List what would run, and queue nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// A replay: the past range whose runs run again, and which of them.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayBody {
    /// An instant, or a date (its first moment) in the schedule's zone.
    pub from: String,
    /// An instant, or a date (its last moment).
    pub to: String,
    /// Only runs that ended so: succeeded, failed, timed_out, cancelled or interrupted.
    pub status: Option<String>,
    /// List what would run again, and queue nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Each run sees memory as it was when the run it repeats started, and changes none.
    #[serde(default)]
    pub memory_as_of_original: bool,
}

/// A trigger: what the run receives beside its goal, and a key that makes a repeat
/// harmless.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerBody {
    /// Given to the runtime beside the goal (at most 64 KiB).
    pub input: Option<String>,
    /// The same key twice starts one run: the second answer is the first trigger's.
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OutboxQuery {
    /// `pending`, `delivered` or `dead`.
    pub status: Option<String>,
    /// 1..=1000 (default 50).
    pub limit: Option<i64>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LimitQuery {
    /// 1..=1000 (default 20).
    pub limit: Option<i64>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsolidateBody {
    /// Passes to run (all when absent): summaries, facts, expiry, prune, backfill,
    /// optimize, snapshot, macros.
    #[serde(default)]
    pub passes: Vec<String>,
    /// Only this user's sessions (summaries, facts and macros).
    pub user: Option<String>,
}
