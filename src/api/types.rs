//! What requests carry: JSON bodies and query parameters, each an input of one library
//! operation. Unknown fields are refused, so a typo is an error rather than ignored.

use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::memory::{NewEvent, Strategy};

/// `?user=`: the user an admin token acts for (a user token needs none).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UserQuery {
    /// With an admin token: the user to act for.
    pub user: Option<String>,
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
pub struct SearchBody {
    pub query: String,
    /// Hits to return (default `search.default_top_k`, at most `search.max_top_k`).
    pub top_k: Option<usize>,
    /// Also search this conversation session of the user.
    pub session: Option<String>,
    /// Only notes carrying every one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendBody {
    /// One or more events, stored together (all or none) with consecutive sequences.
    pub events: Vec<NewEvent>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RecallQuery {
    pub user: Option<String>,
    /// Events to return, the newest (default `memory.recall_limit`, 1..=10000).
    pub limit: Option<usize>,
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
    /// 1..=1000 (default 100).
    pub limit: Option<i64>,
    pub offset: Option<i64>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    pub user: Option<String>,
    /// 1..=1000 (default 20).
    pub limit: Option<i64>,
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
