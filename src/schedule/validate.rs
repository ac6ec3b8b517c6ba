//! The checks a schedule passes before it is stored or changed, the same for every door:
//! the user id, goal and name by the common text rules, every number within its documented
//! range, and the cadence (it must run, within ten years, never more often than the
//! minimum interval).

use super::types::NewSchedule;
use super::{Result, ScheduleError};
use crate::input::{self, Lines};

/// Largest goal accepted, in bytes.
pub const MAX_GOAL_BYTES: usize = 16 * 1024;
/// Attempts of one occurrence.
pub const MAX_ATTEMPTS: i64 = 20;
/// Longest deadline of one attempt: a day.
pub const MAX_TIMEOUT_SECS: i64 = 86_400;
/// Most tool-loop turns one run may take.
pub const MAX_TURNS: i64 = 1000;
/// Highest cost limit accepted.
pub const MAX_COST: f64 = 1_000_000.0;
/// Most failed runs in a row `alert_failures` may wait for.
pub const MAX_ALERT_FAILURES: i64 = 1000;

/// Limits the store enforces.
#[derive(Debug, Clone)]
pub struct StoreLimits {
    pub min_interval_secs: i64,
    pub max_per_user: i64,
    /// Finished runs kept per schedule; older ones go when a run is recorded.
    pub history_keep: i64,
    /// Largest runtime answer kept with a run, in bytes; the rest is cut with a note.
    pub max_output_bytes: usize,
    /// Jitter of config schedules that set none (see [`super::jitter::with_default`]).
    pub default_jitter_secs: i64,
    /// The configured calendars' dates, by name.
    pub calendars: std::sync::Arc<super::calendar::Calendars>,
}

impl StoreLimits {
    /// Gives `new` the dates of the calendars it names; an unknown name is bad input.
    pub fn resolve_calendars(&self, new: &mut NewSchedule) -> Result<()> {
        new.bounds.calendar_dates =
            super::calendar::dates_of(&self.calendars, &new.bounds.calendars)?;
        Ok(())
    }
}

impl Default for StoreLimits {
    fn default() -> Self {
        Self {
            min_interval_secs: 60,
            max_per_user: 50,
            history_keep: 50,
            max_output_bytes: 65_536,
            default_jitter_secs: 0,
            calendars: Default::default(),
        }
    }
}

/// Everything about a schedule but its cadence's timing (see [`check_cadence`]).
pub fn check_fields(new: &NewSchedule) -> Result<()> {
    input::check_user_id(&new.user_id)?;
    input::check_text("goal", &new.goal, MAX_GOAL_BYTES, Lines::Many)?;
    if let Some(name) = &new.name {
        input::check_name("name", name)?;
    }
    if let Some(text) = &new.cadence_text {
        input::check_text("when", text, input::MAX_QUERY_BYTES, Lines::One)?;
    }
    input::check_range("max_attempts", new.max_attempts, 1..=MAX_ATTEMPTS)?;
    if let Some(window) = new.catch_up_window_secs {
        input::check_range("catch_up_window", window, 1..=input::MAX_DURATION_SECS)?;
    }
    if let Some(late) = new.alerts.late_secs {
        input::check_range("alert_late", late, 1..=input::MAX_DURATION_SECS)?;
    }
    if let Some(failures) = new.alerts.failures {
        input::check_range("alert_failures", failures, 1..=MAX_ALERT_FAILURES)?;
    }
    if let Some(silent) = new.alerts.silent_secs {
        input::check_range("alert_silent", silent, 60..=input::MAX_DURATION_SECS)?;
    }
    if new.overlap == super::types::Overlap::CancelOther
        && new.catch_up == super::types::CatchUp::All
    {
        return Err(input::InputError::new(
            "overlap",
            "cancel_other cannot go with catch_up = \"all\", which runs every missed occurrence in turn",
        )
        .into());
    }
    if let Some(t) = new.timeout_secs {
        input::check_range("timeout_secs", t, 1..=MAX_TIMEOUT_SECS)?;
    }
    if let Some(t) = new.max_turns {
        input::check_range("max_turns", t, 1..=MAX_TURNS)?;
    }
    if let Some(c) = new.max_cost {
        input::check_amount("max_cost", c, MAX_COST)?;
    }
    if let Some(id) = &new.channel_id {
        input::check_id("channel", id)?;
    }
    if let Some(context) = &new.channel_context_id {
        input::check_id("channel context", context)?;
    }
    if let Some(agent) = &new.agent_id {
        input::check_id("agent", agent)?;
    }
    check_patterns("tools", &new.tools)?;
    check_patterns("approve", &new.approve)?;
    Ok(())
}

/// Tool patterns (`tools`, `approve`; at most [`crate::mcp_client::MAX_PATTERNS`] each):
/// see [`crate::mcp_client::check_patterns`]; the error names `field`.
fn check_patterns(field: &'static str, patterns: &[String]) -> Result<()> {
    crate::mcp_client::check_patterns(patterns)
        .map_err(|reason| input::InputError::new(field, reason).into())
}

/// The cadence must run after `now`, within ten years, no more often than the minimum, and
/// its bounds must be sound and leave it an occurrence.
pub fn check_cadence(new: &NewSchedule, now_ms: i64, limits: &StoreLimits) -> Result<()> {
    // The field the caller used, so the error names it.
    if let super::Cadence::Triggered { .. } = new.cadence {
        // Bounds, jitter and skipped dates are about a cadence's times; it has none.
        let timed = [
            ("starts_at", new.bounds.starts_at.is_some()),
            ("ends_at", new.bounds.ends_at.is_some()),
            ("max_runs", new.bounds.max_runs.is_some()),
            ("skip", !new.bounds.skip.is_empty()),
            ("calendars", !new.bounds.calendars.is_empty()),
            ("jitter", new.jitter_secs.is_some()),
            ("catch_up_window", new.catch_up_window_secs.is_some()),
            ("alert_late", new.alerts.late_secs.is_some()),
        ];
        if let Some((field, _)) = timed.iter().find(|(_, set)| *set) {
            return Err(input::InputError::new(
                *field,
                "applies to the times of a cadence, and a triggered schedule has none",
            )
            .into());
        }
        return Ok(());
    }
    let field = match (&new.cadence_text, &new.cadence) {
        (Some(_), _) => "when",
        (None, super::Cadence::Triggered { .. }) => "triggered",
        (None, super::Cadence::Cron { .. }) => "cron",
        (None, super::Cadence::Once { .. }) => "at",
        (None, super::Cadence::Interval { .. }) => "every",
    };
    new.cadence
        .validate(now_ms, limits.min_interval_secs)
        .map_err(|source| ScheduleError::Cadence { field, source })?;
    new.bounds.check(now_ms)?;
    super::jitter::check(new.jitter_secs, &new.cadence, now_ms)?;
    if new.next_after(now_ms).is_none() {
        let field = if new.bounds.ends_at.is_some() {
            "ends_at"
        } else if !new.bounds.calendars.is_empty() {
            "calendars"
        } else if !new.bounds.skip.is_empty() {
            "skip"
        } else {
            "starts_at"
        };
        return Err(input::InputError::new(
            field,
            "leaves no occurrence to run (starts_at, ends_at, skip and calendars together)",
        )
        .into());
    }
    Ok(())
}

/// Both: what `create` checks before it writes.
pub fn check_new(new: &NewSchedule, now_ms: i64, limits: &StoreLimits) -> Result<()> {
    check_fields(new)?;
    check_cadence(new, now_ms, limits)
}
