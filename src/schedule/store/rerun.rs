//! Reruns: a past run's occurrence run again with the input it had, as a new run linked to
//! the one it repeats (`parent_run_id`). One run at a time ([`ScheduleStore::rerun`]), or
//! every run of a past range ([`ScheduleStore::replay`]), bounded like a backfill. Each is
//! queued as an event and claimed as a trigger's is; the run it repeats is left as it was.

use serde::Serialize;

use super::backfill::MAX_BACKFILL;
use super::events::{check_takes_events, waiting_events, MAX_WAITING_EVENTS};
use super::ScheduleStore;
use crate::access::Actor;
use crate::db::{clock::to_rfc3339, WriteTx};
use crate::ids;
use crate::input::InputError;
use crate::schedule::bounds::parse_bound;
use crate::schedule::cadence::render;
use crate::schedule::spec::bound_error;
use crate::schedule::types::{Run, RunStatus};
use crate::schedule::{Result, ScheduleError};

/// Most runs one replay queues; a range holding more is refused, not cut.
pub const MAX_REPLAY: usize = MAX_BACKFILL;

/// What memory a rerun sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RerunMemory {
    /// Memory as it is when the rerun runs.
    #[default]
    Now,
    /// Memory as it was when the run repeated started (a rerun of a rerun that saw an
    /// earlier moment sees that moment): its context and memory tools read the notes'
    /// versions and the conversation of then, and it changes no memory.
    AsOfOriginal,
}

impl RerunMemory {
    pub fn as_of_original(yes: bool) -> Self {
        if yes {
            Self::AsOfOriginal
        } else {
            Self::Now
        }
    }
}

/// A rerun queued: the event its run starts from, and the run it repeats.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Rerun {
    pub event_id: String,
    pub schedule_id: String,
    /// The run repeated.
    pub parent_run_id: String,
    /// The occurrence run again (UTC).
    pub scheduled_for: String,
    /// The instant whose memory the rerun sees (UTC), with `--memory-as-of-original`.
    pub memory_as_of: Option<String>,
}

/// Which runs of a schedule a replay runs again, and how.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayAsk<'a> {
    /// An instant, or a date in the schedule's zone (its first moment).
    pub from: &'a str,
    /// An instant, or a date (its last moment).
    pub to: &'a str,
    /// Only runs that ended so.
    pub status: Option<&'a str>,
    /// Say what would run again, and queue nothing.
    pub dry_run: bool,
    pub memory: RerunMemory,
}

/// What a replay queued (or, dry, would queue).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Replay {
    pub schedule_id: String,
    /// Nothing was queued: this is what would be.
    pub dry_run: bool,
    /// Each run queued sees memory as it was when the run it repeats started.
    pub memory_as_of_original: bool,
    /// The runs of the range queued to run again, oldest occurrence first.
    pub queued: Vec<ReplayedRun>,
    /// Runs of the range already rerun (their rerun stands for them): not queued again.
    pub already_rerun: Vec<ReplayedRun>,
}

/// One run a replay looked at.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ReplayedRun {
    pub run_id: String,
    /// Its occurrence, in the schedule's zone.
    pub scheduled_for: String,
    /// How it ended.
    pub status: RunStatus,
}

/// How a run to rerun may have ended: it ran (a skipped occurrence never did; a backfill
/// runs it) and it is over.
const RERUNNABLE: [RunStatus; 5] = [
    RunStatus::Succeeded,
    RunStatus::Failed,
    RunStatus::TimedOut,
    RunStatus::Cancelled,
    RunStatus::Interrupted,
];

impl ScheduleStore {
    /// Queues the run `run_id` (one of the actor's) to run again: its occurrence, with the
    /// input it had, as a new run whose `parent_run_id` names it. The run must have ended
    /// (a running or waiting one is a conflict) and have run (a skipped one is refused:
    /// backfill runs those); its schedule must be active, with fewer than
    /// [`MAX_WAITING_EVENTS`] runs waiting.
    pub async fn rerun(&self, actor: &Actor, run_id: &str, memory: RerunMemory) -> Result<Rerun> {
        let run = self.run(actor, run_id).await?;
        rerunnable(&run)?;
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let queued = async {
            check_takes_events(&tx, &run.schedule_id).await?;
            let waiting = waiting_events(&tx, &run.schedule_id).await?;
            if waiting >= MAX_WAITING_EVENTS {
                return Err(ScheduleError::State(format!(
                    "schedule `{}` already has {waiting} runs waiting (at most \
                     {MAX_WAITING_EVENTS}); try again when they have started",
                    run.schedule_id
                )));
            }
            queue_rerun(&tx, &run.run_id, memory, now).await
        }
        .await;
        let (event_id, memory_as_of) = super::settle(tx, queued, true).await?;
        Ok(Rerun {
            event_id,
            schedule_id: run.schedule_id,
            parent_run_id: run.run_id,
            scheduled_for: to_rfc3339(run.scheduled_for),
            memory_as_of: memory_as_of.map(to_rfc3339),
        })
    }

    /// Queues every run of the schedule whose occurrence falls from `from` to `to`
    /// (instants, or dates in its zone: `to` a date means its end) to run again, as
    /// [`ScheduleStore::rerun`] does, oldest first: those that ran and ended, only those
    /// that ended as `status` when it is given. A run already rerun is not queued again
    /// (its rerun is in the range and stands for it), so a replay asked twice queues once.
    /// At most [`MAX_REPLAY`] runs; the schedule must be active unless `dry_run`.
    pub async fn replay(
        &self,
        actor: &Actor,
        schedule_id: &str,
        ask: &ReplayAsk<'_>,
    ) -> Result<Replay> {
        let ReplayAsk {
            from,
            to,
            status,
            dry_run,
            memory,
        } = *ask;
        let schedule = self.get(actor, schedule_id).await?;
        let tz = schedule.cadence.zone();
        let from_ms = parse_bound(from, tz, false).map_err(bound_error("from"))?;
        let to_ms = parse_bound(to, tz, true).map_err(bound_error("to"))?;
        if to_ms < from_ms {
            return Err(InputError::new("to", "is before from").into());
        }
        let status = status.map(parse_status).transpose()?;
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let done = async {
            let found = runs_in_range(&tx, schedule_id, from_ms, to_ms, status).await?;
            let (already, queued): (Vec<_>, Vec<_>) = found.into_iter().partition(|run| run.rerun);
            if !dry_run {
                check_takes_events(&tx, schedule_id).await?;
                let waiting = waiting_events(&tx, schedule_id).await?;
                if waiting as usize + queued.len() > MAX_REPLAY {
                    return Err(ScheduleError::State(format!(
                        "schedule `{schedule_id}` has {waiting} runs waiting; with {} more it \
                         would pass {MAX_REPLAY}: try again when they have run",
                        queued.len()
                    )));
                }
                for run in &queued {
                    queue_rerun(&tx, &run.run_id, memory, now).await?;
                }
            }
            Ok::<_, ScheduleError>((queued, already))
        }
        .await;
        let (queued, already) = super::settle(tx, done, !dry_run).await?;
        let show = |runs: Vec<FoundRun>| {
            runs.into_iter()
                .map(|run| ReplayedRun {
                    run_id: run.run_id,
                    scheduled_for: render(run.scheduled_for, tz),
                    status: run.status,
                })
                .collect()
        };
        Ok(Replay {
            schedule_id: schedule_id.to_string(),
            dry_run,
            memory_as_of_original: memory == RerunMemory::AsOfOriginal,
            queued: show(queued),
            already_rerun: show(already),
        })
    }
}

/// Refuses a run that cannot be rerun, saying why.
fn rerunnable(run: &Run) -> Result<()> {
    match run.status {
        RunStatus::Running | RunStatus::Waiting => Err(ScheduleError::State(format!(
            "run `{}` is still {}; cancel it or let it end before running it again",
            run.run_id, run.status
        ))),
        RunStatus::Skipped => Err(InputError::new(
            "run_id",
            format!(
                "run `{}` was skipped and never ran: backfill its occurrence instead",
                run.run_id
            ),
        )
        .into()),
        _ => Ok(()),
    }
}

/// A replay's `status`: one of the ways a run that ran can end.
fn parse_status(text: &str) -> Result<RunStatus> {
    let names = || {
        RERUNNABLE
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match text.parse::<RunStatus>() {
        Ok(status) if RERUNNABLE.contains(&status) => Ok(status),
        _ => Err(InputError::new(
            "status",
            format!(
                "`{}` is not how a run that ran ends; one of {}",
                crate::input::printable(text),
                names()
            ),
        )
        .into()),
    }
}

/// A run a replay found, and whether it was already rerun.
struct FoundRun {
    run_id: String,
    scheduled_for: i64,
    status: RunStatus,
    rerun: bool,
}

/// The schedule's runs that ran and ended, with occurrences from `from` to `to`, oldest
/// first; more than [`MAX_REPLAY`] is refused.
async fn runs_in_range(
    tx: &WriteTx,
    schedule_id: &str,
    from: i64,
    to: i64,
    status: Option<RunStatus>,
) -> Result<Vec<FoundRun>> {
    let mut rows = tx
        .query(
            "SELECT r.run_id, r.scheduled_for, r.status,
                    EXISTS (SELECT 1 FROM schedule_events e WHERE e.parent_run_id = r.run_id)
             FROM schedule_runs r WHERE r.schedule_id = ?1
             AND r.scheduled_for BETWEEN ?2 AND ?3
             AND r.status IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'interrupted')
             AND (?4 IS NULL OR r.status = ?4)
             ORDER BY r.scheduled_for, r.started_at, r.run_id LIMIT ?5",
            libsql::params![
                schedule_id,
                from,
                to,
                status.map(|s| s.as_str()),
                MAX_REPLAY as i64 + 1
            ],
        )
        .await?;
    let mut found = Vec::new();
    while let Some(row) = rows.next().await? {
        found.push(FoundRun {
            run_id: row.get(0)?,
            scheduled_for: row.get(1)?,
            status: crate::db::text_column(&row, 2, "run status")?,
            rerun: row.get::<i64>(3)? != 0,
        });
    }
    if found.len() > MAX_REPLAY {
        return Err(InputError::new(
            "to",
            format!("the range holds more than {MAX_REPLAY} runs; replay a shorter one"),
        )
        .into());
    }
    Ok(found)
}

/// Queues the run `run_id` to run again: an event of its schedule for its occurrence,
/// carrying the input its own event carried (none for an occurrence of the cadence), and
/// with [`RerunMemory::AsOfOriginal`] the instant whose memory it sees: the moment the run
/// repeated saw, or its start. Returns the event's id and that instant.
async fn queue_rerun(
    tx: &WriteTx,
    run_id: &str,
    memory: RerunMemory,
    now: i64,
) -> Result<(String, Option<i64>)> {
    let event_id = ids::new_id("evt");
    let memory_as_of = match memory {
        RerunMemory::AsOfOriginal => "coalesce(r.memory_as_of, r.started_at, r.scheduled_for)",
        RerunMemory::Now => "NULL",
    };
    let queued: Option<Option<i64>> = crate::db::query_first_row(
        tx,
        &format!(
            "INSERT INTO schedule_events (event_id, schedule_id, kind, event_key, input,
             scheduled_for, created_at, parent_run_id, memory_as_of)
             SELECT ?1, r.schedule_id, 'trigger', ?2,
                    (SELECT e.input FROM schedule_events e WHERE e.event_id = r.event_id),
                    r.scheduled_for, ?3, r.run_id, {memory_as_of}
             FROM schedule_runs r WHERE r.run_id = ?4
             RETURNING memory_as_of"
        ),
        libsql::params![event_id.as_str(), format!("rerun:{event_id}"), now, run_id],
        |row| row.get::<Option<i64>>(0),
    )
    .await?;
    // Pruned from the history since it was read.
    let Some(memory_as_of) = queued else {
        return Err(ScheduleError::RunNotFound(run_id.to_string()));
    };
    Ok((event_id, memory_as_of))
}
