//! Runs that start from events rather than from the cadence: a trigger with its input, the
//! run of the schedule this one follows ending (a chain), an occurrence of a past range (a
//! backfill). Each event is a row of `schedule_events`, unique per schedule by its key, so
//! the same event twice (a repeated idempotency key, an upstream run recorded by a second
//! worker) starts one run; a worker claims it in one transaction that records the run it
//! starts, as for an occurrence.

use serde::Serialize;

use super::ScheduleStore;
use crate::access::Actor;
use crate::db::{fetch_all, fetch_optional, query_scalar, text_column, DbError, FromRow, WriteTx};
use crate::ids;
use crate::input::{self, InputError, Lines};
use crate::schedule::types::{Claim, RunOrigin, RunStatus, Schedule, ScheduleStatus};
use crate::schedule::{Result, ScheduleError};

/// Largest input a trigger may carry, in bytes.
pub const MAX_TRIGGER_INPUT_BYTES: usize = 64 * 1024;
/// Longest idempotency key, in bytes.
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 256;
/// Events of one schedule that may wait for their run; a trigger beyond them is refused.
pub const MAX_WAITING_EVENTS: i64 = 100;

/// An event waiting for its run leaves out a schedule that cannot take it now: one that is
/// paused, or (unless `overlap = "allow"`) that has a run going. Events of one schedule
/// run one after another, oldest first, whatever its other overlap policy. A schedule that
/// has ended (completed, failed) takes its waiting events too: each is recorded as a
/// skipped run, so none waits for ever unseen.
const EVENT_CAN_RUN: &str = "(s.status IN ('completed', 'failed') OR (s.status = 'active'
     AND (s.overlap = 'allow' OR NOT EXISTS (SELECT 1 FROM schedule_runs r
          WHERE r.schedule_id = s.schedule_id AND r.status = 'running'))))";

/// The earliest event waiting for a run that a schedule can take now: when the scheduler
/// has something to do (a subquery of the scheduler's one wake-up read).
pub(super) fn earliest_event_sql() -> String {
    format!(
        "(SELECT min(e.created_at) FROM schedule_events e
          JOIN schedules s ON s.schedule_id = e.schedule_id
          WHERE e.run_id IS NULL AND {EVENT_CAN_RUN})"
    )
}

/// What a trigger did.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Triggered {
    pub event_id: String,
    pub schedule_id: String,
    /// The run it started, once a worker has claimed it (none yet when it is waiting).
    pub run_id: Option<String>,
    /// True when the idempotency key had been used before: this is that trigger, and no
    /// new run starts.
    pub deduplicated: bool,
}

/// An event a worker may claim.
#[derive(Debug, Clone)]
pub struct PendingEvent {
    pub event_id: String,
    pub kind: RunOrigin,
    pub input: Option<String>,
    pub scheduled_for: i64,
    pub schedule_id: String,
    /// The run a rerun repeats (see `rerun`).
    pub parent_run_id: Option<String>,
    /// The instant whose memory a rerun sees (see `rerun`).
    pub memory_as_of: Option<i64>,
}

impl FromRow for PendingEvent {
    const COLUMNS: &'static str =
        "e.event_id, e.kind, e.input, e.scheduled_for, e.schedule_id, e.parent_run_id,
         e.memory_as_of";

    fn from_row(row: &libsql::Row) -> std::result::Result<Self, DbError> {
        Ok(Self {
            event_id: row.get(0)?,
            kind: text_column(row, 1, "event kind")?,
            input: row.get(2)?,
            scheduled_for: row.get(3)?,
            schedule_id: row.get(4)?,
            parent_run_id: row.get(5)?,
            memory_as_of: row.get(6)?,
        })
    }
}

impl ScheduleStore {
    /// Starts a run of the schedule now with `input`, given to the runtime beside the
    /// goal. With `idempotency_key`, the same key twice starts one run (across workers and
    /// restarts, for as long as the run is kept in the history): the second call returns
    /// the first's event. The schedule must be active; at most [`MAX_WAITING_EVENTS`] may
    /// wait.
    pub async fn trigger(
        &self,
        actor: &Actor,
        schedule_id: &str,
        input: Option<&str>,
        idempotency_key: Option<&str>,
    ) -> Result<Triggered> {
        if let Some(key) = idempotency_key {
            input::check_text(
                "idempotency_key",
                key,
                MAX_IDEMPOTENCY_KEY_BYTES,
                Lines::One,
            )?;
            if key.trim().is_empty() {
                return Err(InputError::new("idempotency_key", "must not be empty").into());
            }
        }
        // A caller's keys have a namespace of their own: one cannot name a run id, nor a
        // source's delivery.
        let event_key = idempotency_key.map(|key| format!("key:{key}"));
        let mut triggered = self
            .trigger_all(actor, &[schedule_id], input, event_key.as_deref())
            .await?;
        Ok(triggered.remove(0))
    }

    /// Starts a run of each schedule with `input`, all or none in one transaction: a
    /// schedule that cannot take one (paused, missing, 100 waiting) refuses them all. With
    /// `event_key` (namespaced by the caller: `key:…`, `source:…`), a schedule that had an
    /// event of that key answers it, deduplicated, and starts nothing new.
    pub async fn trigger_all(
        &self,
        actor: &Actor,
        schedule_ids: &[&str],
        input: Option<&str>,
        event_key: Option<&str>,
    ) -> Result<Vec<Triggered>> {
        if let Some(input) = input {
            // A run's input is conversation (it opens the run's transcript): kept as given.
            input::check_content("input", input, MAX_TRIGGER_INPUT_BYTES)?;
        }
        let mut schedules = Vec::with_capacity(schedule_ids.len());
        for schedule_id in schedule_ids {
            schedules.push(self.get(actor, schedule_id).await?);
        }
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let outcome = async {
            let mut all = Vec::with_capacity(schedules.len());
            for schedule in &schedules {
                let schedule_id = schedule.schedule_id.as_str();
                let event_id = ids::new_id("evt");
                // Keys of different kinds never meet: a caller's key cannot name a run id.
                let event_key = match event_key {
                    Some(key) => key.to_string(),
                    None => format!("event:{event_id}"),
                };
                if let Some(seen) = existing(&tx, schedule_id, &event_key).await? {
                    all.push(seen);
                    continue;
                }
                check_takes_events(&tx, schedule_id).await?;
                let waiting = waiting_events(&tx, schedule_id).await?;
                if waiting >= MAX_WAITING_EVENTS {
                    return Err(ScheduleError::State(format!(
                        "schedule `{schedule_id}` already has {waiting} triggered runs waiting \
                         (at most {MAX_WAITING_EVENTS}); try again when they have started"
                    )));
                }
                tx.execute(
                    "INSERT INTO schedule_events (event_id, schedule_id, kind, event_key, input,
                     scheduled_for, created_at) VALUES (?1, ?2, 'trigger', ?3, ?4, ?5, ?5)",
                    libsql::params![
                        event_id.as_str(),
                        schedule_id,
                        event_key.as_str(),
                        input,
                        now
                    ],
                )
                .await?;
                all.push(Triggered {
                    event_id,
                    schedule_id: schedule.schedule_id.clone(),
                    run_id: None,
                    deduplicated: false,
                });
            }
            Ok(all)
        }
        .await;
        super::settle(tx, outcome, true).await
    }

    /// Events waiting for a run whose schedule can take one now, oldest first (a
    /// backfill's, queued together, by their occurrences' times).
    pub async fn due_events(&self, limit: i64) -> Result<Vec<PendingEvent>> {
        let conn = self.db.conn().await?;
        Ok(fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM schedule_events e JOIN schedules s
                 ON s.schedule_id = e.schedule_id
                 WHERE e.run_id IS NULL AND {EVENT_CAN_RUN}
                 ORDER BY e.created_at, e.scheduled_for, e.event_id LIMIT ?1",
                PendingEvent::COLUMNS,
            ),
            [limit],
        )
        .await?)
    }

    /// Claims a waiting event for `worker_id` in one transaction, recording the run it
    /// starts. `None` when another worker took it first, or its schedule cannot take it
    /// now (it waits).
    pub async fn claim_event(
        &self,
        event: &PendingEvent,
        worker_id: &str,
        lease_ms: i64,
    ) -> Result<Option<Claim>> {
        let now = self.clock.now_ms();
        let run_id = ids::new_id("run");
        let schedule_id = event.schedule_id.as_str();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx_writing_first().await?;
        let taken = tx
            .execute(
                "UPDATE schedule_events SET run_id = ?2 WHERE event_id = ?1 AND run_id IS NULL",
                libsql::params![event.event_id.as_str(), run_id.as_str()],
            )
            .await?;
        if taken == 0 {
            tx.rollback().await?;
            return Ok(None);
        }
        // The schedule's row first (see `lock_schedules`): the read below, a statement of
        // its own, then sees the run an occurrence's claim started.
        super::lock_schedules(&tx, "schedule_id = ?1", [schedule_id]).await?;
        // Its status and whether it can take the event now, in one read.
        let state: Option<(String, bool)> = crate::db::query_first_row(
            &tx,
            &format!("SELECT s.status, {EVENT_CAN_RUN} FROM schedules s WHERE s.schedule_id = ?1"),
            [schedule_id],
            |row| Ok((row.get(0)?, row.get::<i64>(1)? != 0)),
        )
        .await?;
        let status = match state {
            Some((status, true)) => status,
            // A run started meanwhile, or the schedule was paused (the event waits), or it
            // was deleted (its events went with it).
            _ => {
                tx.rollback().await?;
                return Ok(None);
            }
        };
        if status != "active" {
            // The schedule ended before the event's run could start: recorded, not run.
            tx.execute(
                "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status,
                 worker_id, started_at, finished_at, error, origin, event_id, parent_run_id,
                 memory_as_of)
                 VALUES (?1, ?2, ?3, 'skipped', ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT DO NOTHING",
                libsql::params![
                    run_id.as_str(),
                    schedule_id,
                    event.scheduled_for,
                    worker_id,
                    now,
                    format!("not run: the schedule is {status}"),
                    event.kind.as_str(),
                    (event.kind != RunOrigin::Backfill).then_some(event.event_id.as_str()),
                    event.parent_run_id.as_deref(),
                    event.memory_as_of
                ],
            )
            .await?;
            tx.commit().await?;
            return Ok(None);
        }
        if event.kind == RunOrigin::Backfill {
            // An occurrence recorded as skipped (missed, or passed over by a policy) is
            // what a backfill is for: its run takes the skipped record's place.
            tx.execute(
                "DELETE FROM schedule_runs WHERE schedule_id = ?1 AND scheduled_for = ?2
                 AND event_id IS NULL AND status = 'skipped'",
                libsql::params![schedule_id, event.scheduled_for],
            )
            .await?;
        }
        // A backfilled occurrence is the cadence's occurrence (unique by its time, so one
        // that already has a run is not run again); a trigger's or a chain's run is
        // unique by its event.
        let event_id = (event.kind != RunOrigin::Backfill).then_some(event.event_id.as_str());
        let inserted = tx
            .execute(
                "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, attempt, status,
                 worker_id, lease_expires_at, started_at, origin, event_id, parent_run_id,
                 memory_as_of)
                 VALUES (?1, ?2, ?3, 1, 'running', ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT DO NOTHING",
                libsql::params![
                    run_id.as_str(),
                    schedule_id,
                    event.scheduled_for,
                    worker_id,
                    now + lease_ms,
                    now,
                    event.kind.as_str(),
                    event_id,
                    event.parent_run_id.as_deref(),
                    event.memory_as_of
                ],
            )
            .await?;
        if inserted == 0 {
            // The occurrence already has a run: the event points at it, and nothing runs.
            tx.execute(
                "UPDATE schedule_events SET run_id = coalesce((SELECT run_id FROM schedule_runs
                     WHERE schedule_id = ?2 AND scheduled_for = ?3 AND event_id IS NULL), run_id)
                 WHERE event_id = ?1",
                libsql::params![event.event_id.as_str(), schedule_id, event.scheduled_for],
            )
            .await?;
            tx.commit().await?;
            return Ok(None);
        }
        // The schedule as it is now: read inside the claim, so an edit made since the
        // event was seen applies to its run.
        let schedule: Schedule = fetch_optional(
            &tx,
            &format!(
                "SELECT {} FROM schedules WHERE schedule_id = ?1",
                Schedule::COLUMNS
            ),
            [schedule_id],
        )
        .await?
        .ok_or_else(|| ScheduleError::NotFound(schedule_id.to_string()))?;
        tx.commit().await?;
        Ok(Some(Claim {
            run_id,
            schedule,
            scheduled_for: event.scheduled_for,
            attempt: 1,
            origin: event.kind,
            input: event.input.clone(),
            resume: None,
            parent_run_id: event.parent_run_id.clone(),
            memory_as_of: event.memory_as_of,
        }))
    }
}

/// Checks, inside the transaction that queues an event, that the schedule takes new ones:
/// it is active (one paused or ended is a conflict saying so) and still there.
pub(super) async fn check_takes_events(tx: &WriteTx, schedule_id: &str) -> Result<()> {
    let status: Option<String> = query_scalar(
        tx,
        "SELECT status FROM schedules WHERE schedule_id = ?1",
        [schedule_id],
    )
    .await?;
    match status.as_deref().map(str::parse::<ScheduleStatus>) {
        Some(Ok(ScheduleStatus::Active)) => Ok(()),
        Some(Ok(status)) => Err(ScheduleError::State(format!(
            "schedule `{schedule_id}` is {status}; {}",
            if status == ScheduleStatus::Paused {
                "resume it first"
            } else {
                "it runs no more"
            }
        ))),
        _ => Err(ScheduleError::NotFound(schedule_id.to_string())),
    }
}

/// How many of the schedule's events wait for their run.
pub(super) async fn waiting_events(tx: &WriteTx, schedule_id: &str) -> Result<i64> {
    Ok(query_scalar(
        tx,
        "SELECT count(*) FROM schedule_events WHERE schedule_id = ?1 AND run_id IS NULL",
        [schedule_id],
    )
    .await?
    .unwrap_or(0))
}

/// The trigger already made with `event_key`, if there is one.
async fn existing(tx: &WriteTx, schedule_id: &str, event_key: &str) -> Result<Option<Triggered>> {
    let row: Option<(String, Option<String>)> = crate::db::query_first_row(
        tx,
        "SELECT event_id, run_id FROM schedule_events WHERE schedule_id = ?1 AND event_key = ?2",
        libsql::params![schedule_id, event_key],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
    .await?;
    Ok(row.map(|(event_id, run_id)| Triggered {
        event_id,
        schedule_id: schedule_id.to_string(),
        run_id,
        deduplicated: true,
    }))
}

/// Queues one run of every schedule following `claim`'s whose condition the run's end
/// meets, inside the transaction that records the run: the upstream run's id is the
/// event's key, so a run recorded twice (or recovered and finished by another worker)
/// starts each follower once. `input` is the run's output (its error when it has none).
/// Followers that are paused keep theirs until they are resumed.
pub(super) async fn start_followers(
    tx: &WriteTx,
    claim: &Claim,
    status: RunStatus,
    input: Option<&str>,
    now: i64,
) -> Result<()> {
    let ended_as = match status {
        RunStatus::Succeeded => "succeeded",
        RunStatus::Failed | RunStatus::TimedOut => "failed",
        _ => return Ok(()),
    };
    debug_assert!(status.starts_followers(crate::spec::ChainOn::Finished));
    // A follower with as many events waiting as a trigger may queue (paused for long
    // behind a frequent upstream) gets a skipped run instead, saying so: first, while the
    // count still leaves out this event.
    tx.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, started_at,
         finished_at, error, origin, event_id)
         SELECT 'run-' || lower(hex(randomblob(16))), schedule_id, ?3, 'skipped', ?3, ?3,
                ?6, 'chain', 'evt-' || ?2 || '-' || schedule_id
         FROM schedules WHERE after_schedule_id = ?1 AND status IN ('active', 'paused')
         AND (after_on = 'finished' OR after_on = ?4)
         AND (SELECT count(*) FROM schedule_events w
              WHERE w.schedule_id = schedules.schedule_id AND w.run_id IS NULL) >= ?5
         ON CONFLICT DO NOTHING",
        libsql::params![
            claim.schedule.schedule_id.as_str(),
            claim.run_id.as_str(),
            now,
            ended_as,
            MAX_WAITING_EVENTS,
            format!(
                "not run: {MAX_WAITING_EVENTS} runs of this schedule were already waiting (the limit)"
            )
        ],
    )
    .await?;
    tx.execute(
        "INSERT INTO schedule_events (event_id, schedule_id, kind, event_key, input,
         scheduled_for, created_at)
         SELECT 'evt-' || lower(hex(randomblob(16))), schedule_id, 'chain', ?2, ?3, ?4, ?4
         FROM schedules WHERE after_schedule_id = ?1 AND status IN ('active', 'paused')
         AND (after_on = 'finished' OR after_on = ?5)
         AND (SELECT count(*) FROM schedule_events w
              WHERE w.schedule_id = schedules.schedule_id AND w.run_id IS NULL) < ?6
         ON CONFLICT (schedule_id, event_key) DO NOTHING",
        libsql::params![
            claim.schedule.schedule_id.as_str(),
            claim.run_id.as_str(),
            input,
            now,
            ended_as,
            MAX_WAITING_EVENTS
        ],
    )
    .await?;
    Ok(())
}

/// Checks that `upstream` may be followed by the schedule `schedule_id` (`None`: one being
/// created) of `user_id`: it exists, is the same user's, and following it makes no cycle
/// and no chain longer than [`MAX_CHAIN_LINKS`]. Run inside the transaction that stores
/// the schedule, so two edits cannot make a cycle between them.
pub(super) async fn check_upstream(
    tx: &WriteTx,
    user_id: &str,
    schedule_id: Option<&str>,
    upstream: &str,
) -> Result<()> {
    let not_found = || {
        InputError::new(
            "after",
            format!(
                "no schedule `{}` of this user to follow",
                input::printable(upstream)
            ),
        )
    };
    if Some(upstream) == schedule_id {
        return Err(InputError::new("after", "a schedule cannot follow itself").into());
    }
    let mut path = vec![upstream.to_string()];
    let mut at = upstream.to_string();
    loop {
        let row: Option<(String, Option<String>)> = crate::db::query_first_row(
            tx,
            "SELECT user_id, after_schedule_id FROM schedules WHERE schedule_id = ?1",
            [at.as_str()],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .await?;
        let Some((owner, next)) = row else {
            if path.len() == 1 {
                return Err(not_found().into());
            }
            // A link further up was deleted: the chain ends there.
            return Ok(());
        };
        if path.len() == 1 && owner != user_id {
            return Err(not_found().into());
        }
        let Some(next) = next else {
            return Ok(());
        };
        if Some(next.as_str()) == schedule_id {
            path.push(next);
            return Err(InputError::new(
                "after",
                format!(
                    "following `{upstream}` would make a cycle: {} → {}",
                    schedule_id.unwrap_or_default(),
                    path.join(" → ")
                ),
            )
            .into());
        }
        if path.len() >= MAX_CHAIN_LINKS || path.contains(&next) {
            return Err(InputError::new(
                "after",
                format!("the chain above `{upstream}` is longer than {MAX_CHAIN_LINKS} schedules"),
            )
            .into());
        }
        path.push(next.clone());
        at = next;
    }
}

/// Most schedules one chain may hold above a schedule.
pub const MAX_CHAIN_LINKS: usize = 32;
