//! Schedules declared in the config file (`[[schedules]]`, source `config`) are synced at
//! start: added, changed in place (their ids and runs stay), removed when gone from the
//! file. Schedules made through the CLI or the API are never touched. A config schedule is
//! identified by its name.
//!
//! All or nothing: every entry is resolved and checked first (as `config check` does),
//! then every change is made in one transaction. A one-shot whose time has passed is
//! reported and left out, not fatal: the file may keep a reminder that already ran.

use serde::Serialize;

use super::spec::{to_new_schedule, ScheduleSpec};
use super::store::{Edited, ScheduleStore};
use super::types::{NewSchedule, Schedule, Source};
use super::validate::{check_cadence, check_fields, StoreLimits};
use super::{Cadence, CadenceError, Result, ScheduleError};

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
    pub unchanged: usize,
    /// Config one-shots whose time has passed, by name: not created.
    pub expired: Vec<String>,
}

/// A config entry, resolved and checked.
#[derive(Debug, Clone)]
pub enum Entry {
    /// Ready to store.
    Valid(Box<NewSchedule>),
    /// A one-shot whose time has passed: reported, left out.
    Expired { name: String, reason: String },
}

/// An entry's error as a config error, with the key path of the field that was wrong.
fn entry_error(index: usize, name: &str, err: ScheduleError) -> ScheduleError {
    let (field, reason) = match &err {
        ScheduleError::Cadence { field, source } => (Some(field.to_string()), source.to_string()),
        ScheduleError::Input(input) => (
            Some(match input.field.as_str() {
                "user id" => "user".to_string(),
                other => other.replace(' ', "_"),
            }),
            input.reason.clone(),
        ),
        other => (None, other.to_string()),
    };
    let key = match field {
        Some(field) => format!("schedules[{index}].{field}"),
        None => format!("schedules[{index}]"),
    };
    ScheduleError::Config {
        key,
        name: crate::input::printable(name).into_owned(),
        reason,
    }
}

/// Resolves and checks every entry, as `nightshift run` would, without a database: the
/// first one that cannot be used is an error naming it (`schedules[1] (`name`): …`).
pub fn check_entries(
    entries: &[ScheduleSpec],
    now_ms: i64,
    default_tz: &str,
    limits: &StoreLimits,
) -> Result<Vec<Entry>> {
    let mut out = Vec::with_capacity(entries.len());
    for (index, spec) in entries.iter().enumerate() {
        let name = spec.name.clone().unwrap_or_default();
        let user = spec.user.clone().unwrap_or_default();
        let mut new = to_new_schedule(spec, &user, Source::Config, now_ms, default_tz)
            .and_then(|mut new| {
                limits.resolve_calendars(&mut new)?;
                check_fields(&new).map(|()| new)
            })
            .map_err(|err| entry_error(index, &name, err))?;
        new.jitter_secs = super::jitter::with_default(
            new.jitter_secs,
            limits.default_jitter_secs,
            &new.cadence,
            now_ms,
        );
        // An entry whose window has closed is reported like a one-shot whose time passed.
        if new.bounds.ends_at.is_some_and(|end| end <= now_ms) {
            out.push(Entry::Expired {
                name,
                reason: "its end (ends_at) has passed".to_string(),
            });
            continue;
        }
        match check_cadence(&new, now_ms, limits) {
            Ok(()) => out.push(Entry::Valid(Box::new(new))),
            Err(ScheduleError::Cadence {
                source: source @ CadenceError::InPast(_),
                ..
            }) if matches!(new.cadence, Cadence::Once { .. }) => out.push(Entry::Expired {
                name,
                reason: source.to_string(),
            }),
            Err(err) => return Err(entry_error(index, &name, err)),
        }
    }
    Ok(out)
}

/// Same cadence, ignoring what depends on when it was created (an interval's anchor, the
/// instant a relative phrase resolved to).
fn same_cadence(existing: &Schedule, new: &NewSchedule) -> bool {
    existing.bounds == new.bounds
        && existing.jitter_secs == new.jitter_secs
        && match (&existing.cadence_text, &new.cadence_text) {
            (Some(a), Some(b)) => a == b && existing.cadence.zone() == new.cadence.zone(),
            (None, None) => match (&existing.cadence, &new.cadence) {
                (
                    Cadence::Interval {
                        every_secs: a,
                        tz: za,
                        ..
                    },
                    Cadence::Interval {
                        every_secs: b,
                        tz: zb,
                        ..
                    },
                ) => a == b && za == zb,
                (a, b) => a == b,
            },
            _ => false,
        }
}

/// Same definition: the cadence as [`same_cadence`] sees it, and every other field.
fn same_definition(existing: &Schedule, new: &NewSchedule) -> bool {
    same_cadence(existing, new)
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
        && existing.catch_up_window_secs == new.catch_up_window_secs
        && existing.after == new.after
        && existing.agent_id == new.agent_id
        && existing.tools == new.tools
        && existing.approve == new.approve
        && existing.alerts == new.alerts
}

/// Brings the database's config schedules in line with `entries`, all or nothing.
pub async fn sync(
    store: &ScheduleStore,
    entries: &[ScheduleSpec],
    default_tz: &str,
) -> Result<SyncReport> {
    let now = store.clock().now_ms();
    let checked = check_entries(entries, now, default_tz, store.limits())?;
    let existing = store.all_of_source(Source::Config).await?;
    let mut report = SyncReport::default();
    let mut remove: Vec<&str> = Vec::new();
    let mut create: Vec<(usize, &NewSchedule)> = Vec::new();
    let mut update: Vec<(usize, &Schedule, Edited)> = Vec::new();
    for (index, entry) in checked.iter().enumerate() {
        match entry {
            Entry::Expired { name, reason } => {
                tracing::warn!(schedule = %name, %reason, "config one-shot not created: its time has passed");
                report.expired.push(name.clone());
            }
            Entry::Valid(new) => {
                let current = existing.iter().find(|s| s.name == new.name);
                match current {
                    Some(current) if same_definition(current, new) => report.unchanged += 1,
                    // Changed for the same user: changed in place, keeping its id and
                    // runs; the next run is worked out again if the cadence changed.
                    Some(current) if current.user_id == new.user_id => {
                        let edited = Edited {
                            new: (**new).clone(),
                            cadence_changed: !same_cadence(current, new),
                        };
                        update.push((index, current, edited));
                        report.changed += 1;
                    }
                    // Given to another user: replaced, so no run history changes hands.
                    Some(current) => {
                        remove.push(&current.schedule_id);
                        create.push((index, new));
                        report.changed += 1;
                    }
                    None => {
                        create.push((index, new));
                        report.added += 1;
                    }
                }
            }
        }
    }
    let named = |name: &Option<String>| {
        checked.iter().any(|entry| match entry {
            Entry::Valid(new) => &new.name == name,
            Entry::Expired { name: expired, .. } => name.as_deref() == Some(expired.as_str()),
        })
    };
    for gone in existing.iter().filter(|s| !named(&s.name)) {
        remove.push(&gone.schedule_id);
        report.removed += 1;
    }
    if remove.is_empty() && create.is_empty() && update.is_empty() {
        return Ok(report);
    }
    let conn = store.db().conn().await?;
    let tx = conn.write_tx().await?;
    let applied = async {
        for schedule_id in &remove {
            store.delete_in(&tx, schedule_id).await?;
        }
        for (index, current, edited) in &update {
            store
                .update_in(&tx, current, edited, now)
                .await
                .map_err(|err| {
                    entry_error(*index, current.name.as_deref().unwrap_or_default(), err)
                })?;
        }
        for (index, new) in &create {
            store
                .create_in(&tx, new, now)
                .await
                .map_err(|err| entry_error(*index, new.name.as_deref().unwrap_or_default(), err))?;
        }
        Ok::<(), ScheduleError>(())
    }
    .await;
    match applied {
        Ok(()) => tx.commit().await?,
        Err(err) => {
            tx.rollback().await?;
            return Err(err);
        }
    }
    Ok(report)
}
