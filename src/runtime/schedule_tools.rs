//! The schedule tools offered to the model when the operator lets agents make schedules
//! (`[scheduler] agent_schedules` is not `off`): `schedule_follow_up` (a one-shot at an
//! instant or after a duration), `schedule_list` and `schedule_pause`, each acting for the
//! run's user only, through the schedule store's own checks.

use serde_json::{json, Value};

use crate::access::Actor;
use crate::db::run_to_completion;
use crate::schedule::agent_policy::AgentSchedules;
use crate::schedule::store::{FollowUp, FollowUpOrigin, ScheduleFilter, ScheduleStore};

/// The store and the operator's rules.
#[derive(Clone)]
pub struct ScheduleTools {
    pub store: ScheduleStore,
    pub policy: AgentSchedules,
    pub max_per_user: i64,
}

/// Who asks: the run's user, its schedule and the run.
pub(super) struct Asker<'a> {
    pub user_id: &'a str,
    pub schedule_id: &'a str,
    pub run_id: &'a str,
}

/// The tools' names.
pub(super) const NAMES: &[&str] = &["schedule_follow_up", "schedule_list", "schedule_pause"];

/// Most schedules `schedule_list` shows.
const LIST_LIMIT: i64 = 50;

impl ScheduleTools {
    /// The definitions, or none when agents may not make schedules.
    pub(super) fn definitions(&self) -> Vec<Value> {
        if self.policy == AgentSchedules::Off {
            return Vec::new();
        }
        let confirm = if self.policy == AgentSchedules::Confirm {
            " It waits, paused, until the user confirms it."
        } else {
            ""
        };
        vec![
            json!({"type": "function", "function": {
                "name": "schedule_follow_up",
                "description": format!("Schedule a follow-up task for the user: the goal runs once, at an instant or after a duration, and the user is told of its result where they hear of this task.{confirm}"),
                "parameters": {"type": "object", "properties": {
                    "goal": {"type": "string", "description": "What to do then, as an instruction"},
                    "at": {"type": "string", "description": "When: RFC 3339 (2026-12-01T09:00:00Z)"},
                    "after": {"type": "string", "description": "Or after how long: 30m, 2h, 3d"},
                    "name": {"type": "string", "description": "A short name"}
                }, "required": ["goal"]}}}),
            json!({"type": "function", "function": {
                "name": "schedule_list",
                "description": "The user's schedules: id, name, goal, when, status, next run.",
                "parameters": {"type": "object", "properties": {}}}}),
            json!({"type": "function", "function": {
                "name": "schedule_pause",
                "description": "Pause one of the user's schedules until the user resumes it.",
                "parameters": {"type": "object", "properties": {
                    "schedule_id": {"type": "string"},
                    "note": {"type": "string", "description": "Why, for the user"}
                }, "required": ["schedule_id"]}}}),
        ]
    }

    /// Runs one call; the result (or the error) as JSON for the model.
    pub(super) async fn call(&self, asker: &Asker<'_>, name: &str, args: &Value) -> Value {
        let outcome = match name {
            "schedule_follow_up" => self.follow_up(asker, args).await,
            "schedule_list" => self.list(asker).await,
            "schedule_pause" => self.pause(asker, args).await,
            other => Err(format!("unknown tool `{other}`")),
        };
        outcome.unwrap_or_else(|error| json!({ "error": error }))
    }

    async fn follow_up(&self, asker: &Asker<'_>, args: &Value) -> Result<Value, String> {
        let text = |field: &str| match args.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("`{field}` must be a string")),
        };
        let goal = text("goal")?.ok_or("missing string argument `goal`")?;
        let now = self.store.clock().now_ms();
        let at = match (text("at")?, text("after")?) {
            (Some(at), None) => {
                crate::memory::parse_time("at", &at, false).map_err(|e| e.to_string())?
            }
            (None, Some(after)) => {
                let secs = crate::schedule::cadence::parse_duration(&after)
                    .map_err(|e| format!("invalid after: {e}"))?;
                now.saturating_add(secs.saturating_mul(1000))
            }
            _ => return Err("give `at` or `after`, one of them".to_string()),
        };
        let follow_up = FollowUp {
            goal,
            at,
            name: text("name")?,
        };
        let tools = self.clone();
        let (user_id, schedule_id, run_id) = (
            asker.user_id.to_string(),
            asker.schedule_id.to_string(),
            asker.run_id.to_string(),
        );
        // A schedule made is kept even if the run's deadline drops this call.
        let schedule = run_to_completion(async move {
            let origin = FollowUpOrigin {
                user_id: &user_id,
                schedule_id: &schedule_id,
                run_id: &run_id,
                policy: tools.policy,
                max_per_user: tools.max_per_user,
            };
            tools.store.create_follow_up(&origin, &follow_up).await
        })
        .await
        .map_err(|e| e.to_string())?;
        Ok(json!({
            "schedule_id": schedule.schedule_id,
            "status": schedule.status,
            "next_run_at": schedule.next_run_at,
            "message": if schedule.status.as_str() == "paused" {
                "made; it waits for the user to confirm it"
            } else {
                "scheduled"
            },
        }))
    }

    async fn list(&self, asker: &Asker<'_>) -> Result<Value, String> {
        let actor = Actor::User(asker.user_id.to_string());
        let filter = ScheduleFilter {
            limit: Some(LIST_LIMIT),
            ..Default::default()
        };
        let (schedules, total) = self
            .store
            .list(&actor, &filter)
            .await
            .map_err(|e| e.to_string())?;
        let items: Vec<Value> = schedules
            .iter()
            .map(|s| {
                json!({
                    "schedule_id": s.schedule_id,
                    "name": s.name,
                    "goal": crate::text::truncate_chars(&s.goal, 200),
                    "when": s.cadence.describe(),
                    "status": s.status,
                    "next_run_at": s.next_run_at,
                    "made_by_agent": s.made_by_run.is_some(),
                })
            })
            .collect();
        Ok(json!({"schedules": items, "total": total}))
    }

    async fn pause(&self, asker: &Asker<'_>, args: &Value) -> Result<Value, String> {
        let schedule_id = args
            .get("schedule_id")
            .and_then(Value::as_str)
            .ok_or("missing string argument `schedule_id`")?
            .to_string();
        let note = match args.get("note") {
            None | Some(Value::Null) => None,
            Some(Value::String(note)) => Some(note.clone()),
            Some(_) => return Err("`note` must be a string".to_string()),
        };
        let actor = Actor::User(asker.user_id.to_string());
        let store = self.store.clone();
        let paused =
            run_to_completion(
                async move { store.pause(&actor, &schedule_id, note.as_deref()).await },
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(json!({"schedule_id": paused.schedule_id, "status": paused.status, "message": "paused"}))
    }
}
