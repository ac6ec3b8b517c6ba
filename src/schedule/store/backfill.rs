//! Backfill: running the occurrences of a past range, oldest first. Each is queued as an
//! event keyed by its time and runs as that occurrence (unique by its time, so one that
//! already has a run, or is queued already, is not run again); the schedule's runs go one
//! after another unless its overlap is `allow`.

use serde::Serialize;

use super::ScheduleStore;
use crate::access::Actor;
use crate::db::query_scalar;
use crate::ids;
use crate::input::InputError;
use crate::schedule::bounds::parse_bound;
use crate::schedule::cadence::render;
use crate::schedule::spec::bound_error;
use crate::schedule::types::{Schedule, ScheduleStatus};
use crate::schedule::{Cadence, Result, ScheduleError};

/// Most occurrences one backfill runs; a longer range is refused, not cut.
pub const MAX_BACKFILL: usize = 1000;

/// What a backfill queued (or, dry, would queue).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Backfill {
    pub schedule_id: String,
    /// Nothing was queued: this is what would be.
    pub dry_run: bool,
    /// The occurrences queued to run, oldest first, in the schedule's zone.
    pub queued: Vec<String>,
    /// Occurrences in the range that already have a run, or are queued: not run again (one
    /// recorded as skipped is run).
    pub already_run: Vec<String>,
}

impl ScheduleStore {
    /// Queues the schedule's occurrences from `from` to `to` (instants, or dates in its
    /// zone: `to` a date means its end), at most [`MAX_BACKFILL`], each to run once as
    /// that occurrence. The range must start in the past and stops at now; the schedule
    /// must be active.
    pub async fn backfill(
        &self,
        actor: &Actor,
        schedule_id: &str,
        from: &str,
        to: &str,
        dry_run: bool,
    ) -> Result<Backfill> {
        let schedule = self.get(actor, schedule_id).await?;
        let tz = schedule.cadence.zone();
        let from_ms = parse_bound(from, tz, false).map_err(bound_error("from"))?;
        let to_ms = parse_bound(to, tz, true).map_err(bound_error("to"))?;
        let now = self.clock.now_ms();
        if to_ms < from_ms {
            return Err(InputError::new("to", "is before from").into());
        }
        if from_ms > now {
            return Err(InputError::new(
                "from",
                format!(
                    "{} is in the future: a backfill runs past occurrences",
                    render(from_ms, tz)
                ),
            )
            .into());
        }
        // Occurrences still to come run as they fall due: the range stops at now (`--to`
        // a date means up to its end, which may be later today).
        let to_ms = to_ms.min(now);
        if matches!(schedule.cadence, Cadence::Triggered { .. }) {
            return Err(InputError::new(
                "schedule",
                "a triggered schedule has no occurrences to backfill",
            )
            .into());
        }
        if schedule.status != ScheduleStatus::Active && !dry_run {
            return Err(ScheduleError::State(format!(
                "schedule `{schedule_id}` is {}; resume it first",
                schedule.status
            )));
        }
        let occurrences = occurrences_between(&schedule, from_ms, to_ms)?;
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let done = async {
            // The range's occurrences that already have a run (one skipped is run) or are
            // queued by an earlier backfill, in one read.
            let (first, last) = match (occurrences.first(), occurrences.last()) {
                (Some(&first), Some(&last)) => (first, last),
                _ => (0, -1),
            };
            let mut taken = std::collections::HashSet::new();
            let mut rows = tx
                .query(
                    "SELECT scheduled_for FROM schedule_runs WHERE schedule_id = ?1
                     AND scheduled_for BETWEEN ?2 AND ?3 AND event_id IS NULL
                     AND status != 'skipped'
                     UNION SELECT scheduled_for FROM schedule_events WHERE schedule_id = ?1
                     AND kind = 'backfill' AND scheduled_for BETWEEN ?2 AND ?3",
                    libsql::params![schedule_id, first, last],
                )
                .await?;
            while let Some(row) = rows.next().await? {
                taken.insert(row.get::<i64>(0)?);
            }
            drop(rows);
            let (already_run, queued): (Vec<i64>, Vec<i64>) =
                occurrences.into_iter().partition(|at| taken.contains(at));
            if !dry_run {
                let waiting: i64 = query_scalar(
                    &tx,
                    "SELECT count(*) FROM schedule_events WHERE schedule_id = ?1 AND run_id IS NULL",
                    [schedule_id],
                )
                .await?
                .unwrap_or(0);
                if waiting as usize + queued.len() > MAX_BACKFILL {
                    return Err(ScheduleError::State(format!(
                        "schedule `{schedule_id}` has {waiting} runs waiting; with {} more it \
                         would pass {MAX_BACKFILL}: try again when they have run",
                        queued.len()
                    )));
                }
                for &at in &queued {
                    tx.execute(
                        "INSERT INTO schedule_events (event_id, schedule_id, kind, event_key,
                         scheduled_for, created_at) VALUES (?1, ?2, 'backfill', ?3, ?4, ?5)",
                        libsql::params![
                            ids::new_id("evt"),
                            schedule_id,
                            format!("at:{at}"),
                            at,
                            now
                        ],
                    )
                    .await?;
                }
            }
            Ok::<_, ScheduleError>((queued, already_run))
        }
        .await;
        let (queued, already_run) = super::settle(tx, done, !dry_run).await?;
        let show = |times: Vec<i64>| times.into_iter().map(|t| render(t, tz)).collect();
        Ok(Backfill {
            schedule_id: schedule_id.to_string(),
            dry_run,
            queued: show(queued),
            already_run: show(already_run),
        })
    }
}

/// The schedule's occurrences from `from` to `to` (both included) that its bounds admit,
/// oldest first; more than [`MAX_BACKFILL`] is refused. An interval's rhythm reaches back
/// before its first run.
fn occurrences_between(schedule: &Schedule, from: i64, to: i64) -> Result<Vec<i64>> {
    let cadence = match &schedule.cadence {
        Cadence::Interval {
            every_secs,
            anchor,
            tz,
        } if *anchor > from => {
            let every = every_secs.saturating_mul(1000).max(1);
            // Whole periods back to at or before `from` (both positive here).
            let periods = (anchor - from + every - 1) / every;
            Cadence::Interval {
                every_secs: *every_secs,
                anchor: anchor.saturating_sub(periods.saturating_mul(every)),
                tz: tz.clone(),
            }
        }
        other => other.clone(),
    };
    let mut found = Vec::new();
    let mut at = schedule.bounds.next_after(&cadence, from.saturating_sub(1));
    while let Some(t) = at.filter(|&t| t <= to) {
        if found.len() == MAX_BACKFILL {
            return Err(InputError::new(
                "to",
                format!(
                    "the range holds more than {MAX_BACKFILL} occurrences; backfill a shorter one"
                ),
            )
            .into());
        }
        found.push(t);
        at = schedule.bounds.next_after(&cadence, t);
    }
    Ok(found)
}
