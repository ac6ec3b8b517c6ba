//! Schedules declared in the config file (`[[schedules]]`, source `config`) are synced at
//! start: added, changed, removed when gone from the file. Schedules made through the CLI
//! are never touched. A config schedule is identified by its name.

use super::cadence::{Cadence, CadenceInput};
use super::store::{ScheduleError, ScheduleFilter, ScheduleStore};
use super::types::{NewSchedule, Schedule, Source};
use crate::config::ScheduleConfig;

#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SyncReport {
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
    pub unchanged: usize,
}

fn invalid(name: &str, what: &str, reason: String) -> ScheduleError {
    let reason = if name.is_empty() {
        format!("{what}: {reason}")
    } else {
        format!("`{name}`: {what}: {reason}")
    };
    ScheduleError::Invalid {
        what: "schedule",
        reason,
    }
}

/// The schedule a config entry describes.
pub fn to_new_schedule(
    entry: &ScheduleConfig,
    now_ms: i64,
    default_tz: &str,
) -> Result<NewSchedule, ScheduleError> {
    let input = CadenceInput {
        cron: entry.cron.as_deref(),
        tz: entry.tz.as_deref(),
        every: entry.every.as_deref(),
        at: entry.at.as_deref(),
        when: entry.when.as_deref(),
    };
    let (cadence, cadence_text) = input
        .resolve(now_ms, default_tz)
        .map_err(|e| invalid(&entry.name, "cadence", e.to_string()))?;
    let mut new = NewSchedule::new(entry.user.clone(), entry.goal.clone(), cadence);
    new.name = Some(entry.name.clone());
    new.cadence_text = cadence_text;
    new.source = Source::Config;
    if let Some(channel) = &entry.channel {
        let (id, context) = split_channel(channel);
        new.channel_id = Some(id);
        new.channel_context_id = context;
    }
    let parse = |what: &str, value: &Option<String>| {
        value.as_deref().map(|v| (what.to_string(), v.to_string()))
    };
    if let Some((what, v)) = parse("notify", &entry.notify) {
        new.notify = v.parse().map_err(|e| invalid(&entry.name, &what, e))?;
    }
    if let Some((what, v)) = parse("overlap", &entry.overlap) {
        new.overlap = v.parse().map_err(|e| invalid(&entry.name, &what, e))?;
    }
    if let Some((what, v)) = parse("catch_up", &entry.catch_up) {
        new.catch_up = v.parse().map_err(|e| invalid(&entry.name, &what, e))?;
    }
    if let Some(n) = entry.max_attempts {
        new.max_attempts = n;
    }
    new.timeout_secs = entry.timeout_secs;
    new.max_turns = entry.max_turns;
    new.max_cost = entry.max_cost;
    Ok(new)
}

/// `ID` or `ID:CONTEXT` (the context may itself contain colons, as `chat:thread` does).
pub fn split_channel(channel: &str) -> (String, Option<String>) {
    match channel.split_once(':') {
        Some((id, context)) => (id.to_string(), Some(context.to_string())),
        None => (channel.to_string(), None),
    }
}

/// Same definition, ignoring what depends on when it was created (an interval's anchor,
/// the instant a relative phrase resolved to).
fn same_definition(existing: &Schedule, new: &NewSchedule) -> bool {
    let same_cadence = match (&existing.cadence_text, &new.cadence_text) {
        (Some(a), Some(b)) => a == b && existing.cadence.zone() == new.cadence.zone(),
        (None, None) => match (&existing.cadence, &new.cadence) {
            (Cadence::Interval { every_secs: a, .. }, Cadence::Interval { every_secs: b, .. }) => {
                a == b
            }
            (a, b) => a == b,
        },
        _ => false,
    };
    same_cadence
        && existing.user_id == new.user_id
        && existing.goal == new.goal
        && existing.notify == new.notify
        && existing.overlap == new.overlap
        && existing.catch_up == new.catch_up
        && existing.max_attempts == new.max_attempts
        && existing.timeout_secs == new.timeout_secs
        && existing.max_turns == new.max_turns
        && existing.max_cost == new.max_cost
        && existing.channel_id == new.channel_id
        && existing.channel_context_id == new.channel_context_id
}

/// Brings the database's config schedules in line with `entries`.
pub async fn sync(
    store: &ScheduleStore,
    entries: &[ScheduleConfig],
    default_tz: &str,
) -> Result<SyncReport, ScheduleError> {
    let now = store.clock().now_ms();
    let (all, _) = store.list(&ScheduleFilter::default()).await?;
    let existing: Vec<&Schedule> = all.iter().filter(|s| s.source == Source::Config).collect();
    let mut report = SyncReport::default();
    // Validate every entry before changing anything.
    let wanted: Vec<NewSchedule> = entries
        .iter()
        .map(|e| to_new_schedule(e, now, default_tz))
        .collect::<Result<_, _>>()?;
    for new in &wanted {
        let name = new.name.as_deref().unwrap_or_default();
        match existing.iter().find(|s| s.name.as_deref() == Some(name)) {
            Some(current) if same_definition(current, new) => report.unchanged += 1,
            Some(current) => {
                // Changed: replace it, so every field and the next run follow the file.
                store.delete(&current.schedule_id).await?;
                store.create(new).await?;
                report.changed += 1;
            }
            None => {
                store.create(new).await?;
                report.added += 1;
            }
        }
    }
    for gone in existing
        .iter()
        .filter(|s| !wanted.iter().any(|w| w.name == s.name))
    {
        store.delete(&gone.schedule_id).await?;
        report.removed += 1;
    }
    Ok(report)
}
