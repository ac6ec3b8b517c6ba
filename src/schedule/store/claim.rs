//! The claim that makes each occurrence run on exactly one worker: one transaction moves
//! `next_run_at` on only if it is still what the worker saw, and inserts the run row,
//! unique per occurrence. Policies (overlap, catch-up) decide here whether the occurrence
//! runs or is recorded as skipped. On PostgreSQL the claim locks the schedule's row alone
//! (`FOR NO KEY UPDATE SKIP LOCKED`), so workers claim side by side, and it tells no other worker
//! (migrations/postgres/0034).

use super::{ScheduleStore, WAITS_BEHIND_RUNNING};
use crate::db::{clock::to_rfc3339, query_scalar, WriteTx};
use crate::ids;
use crate::schedule::types::{CatchUp, Claim, Overlap, Schedule};
use crate::schedule::{Cadence, Result};

/// Missed occurrences run at most, for `catch_up = "all"`.
pub const CATCH_UP_ALL_LIMIT: usize = 100;

impl ScheduleStore {
    /// Claims the occurrence `schedule.next_run_at` for `worker_id`, in one transaction:
    /// moves `next_run_at` on only if it is still what this worker saw, and inserts the
    /// run row, unique per occurrence. `None` when another worker got there first, or the
    /// occurrence was skipped by policy (recorded as a `skipped` run).
    pub async fn claim(
        &self,
        schedule: &Schedule,
        worker_id: &str,
        lease_ms: i64,
    ) -> Result<Option<Claim>> {
        // The occurrence is due at `next_run_at`; its identity is its nominal time, which
        // jitter may have moved it from.
        let (Some(due), Some(scheduled_for)) = (schedule.next_run_at, schedule.next_nominal())
        else {
            return Ok(None);
        };
        let now = self.clock.now_ms();
        // Worked out before the transaction: it holds the write lock.
        let AfterClaim { next, passed_over } = after_claim(schedule, scheduled_for, now);
        // catch_up = "skip" passes over an occurrence missed while no worker ran. One
        // that came due while a worker was up is late only because every worker was busy:
        // it runs, and those after it fold into it, so under more load than the workers
        // can run every claim still starts a run (each such claim once recorded a skip
        // and moved on, and almost nothing ran).
        let missed_while_none_ran = schedule.catch_up == CatchUp::Skip
            && missed(schedule, scheduled_for, now)
            && !queued_behind_run(schedule, scheduled_for)
            && !self.a_worker_was_up(worker_id, scheduled_for).await?;
        let next_due = next.map(|at| schedule.due_at(at));
        let next_nominal = next.filter(|_| schedule.jitter_secs.is_some());
        let conn = self.db.conn().await?;
        // Its first statement moves the occurrence on: a write. It locks the schedule's
        // row and writes no other but its new runs', so on PostgreSQL it waits behind no
        // other writer (see `Conn::claim_tx`). But for overlap = "cancel_other": that one
        // also writes the running run's row, which a finishing run holds while it waits
        // for the schedule's row; it takes the write lock, as those writers do.
        let tx = if schedule.overlap == Overlap::CancelOther {
            conn.write_tx_writing_first().await?
        } else {
            conn.claim_tx().await?
        };
        // The schedule's row, unless another worker's claim (or a change to the schedule)
        // holds it: on PostgreSQL that one is passed over at once, not waited for.
        let claimable = format!(
            "schedule_id = ?1 AND next_run_at = ?2 AND status = 'active'
             AND NOT {WAITS_BEHIND_RUNNING}"
        );
        let which = if tx.is_postgres() {
            format!(
                "schedule_id IN (SELECT schedule_id FROM schedules WHERE {claimable}
                                 FOR NO KEY UPDATE SKIP LOCKED)"
            )
        } else {
            claimable
        };
        // Moving the occurrence on comes first: a worker that lost the race to another, or
        // a schedule whose occurrence waits for its running run, finds out in this one
        // statement. Waiting: with buffer_one, or catch_up = "all" (every occurrence runs,
        // one after another), an occurrence due while the previous one runs stays pending
        // and runs when that run finishes; with buffer_one, further occurrences missed
        // meanwhile fold into it.
        let moved = tx
            .execute(
                &format!(
                    "UPDATE schedules SET next_run_at = ?3, status = ?4, updated_at = ?5,
                     next_nominal_at = ?6
                     WHERE {which}"
                ),
                libsql::params![
                    schedule.schedule_id.as_str(),
                    due,
                    next_due,
                    // A one-shot stays active until its run finishes (then completed or failed).
                    "active",
                    now,
                    next_nominal
                ],
            )
            .await?;
        if moved == 0 {
            tx.rollback().await?;
            return Ok(None);
        }
        // On PostgreSQL the statement above looked for a running run in the snapshot it
        // began with, before it had the row: an event's claim that held the row then may
        // have started one since. Looked for again now, in a statement of its own.
        if tx.is_postgres() && waits_behind_running(schedule) {
            let running: i64 = query_scalar(
                &tx,
                "SELECT count(*) FROM schedule_runs WHERE schedule_id = ?1 AND status = 'running'",
                [schedule.schedule_id.as_str()],
            )
            .await?
            .unwrap_or(0);
            if running > 0 {
                tx.rollback().await?;
                return Ok(None);
            }
        }
        if let Some(passed) = passed_over {
            record_skipped(
                &tx,
                &schedule.schedule_id,
                passed.first,
                worker_id,
                now,
                &passed.reason(),
            )
            .await?;
        }
        // Only overlap = "skip" needs to know about a run still going (buffer_one and
        // catch_up = "all" were left out above; "allow" runs anyway).
        let running: i64 = if schedule.overlap == Overlap::Skip && schedule.catch_up != CatchUp::All
        {
            query_scalar(
                &tx,
                "SELECT count(*) FROM schedule_runs WHERE schedule_id = ?1 AND status = 'running'",
                [schedule.schedule_id.as_str()],
            )
            .await?
            .unwrap_or(0)
        } else {
            0
        };
        // Its next run was worked out before a date was added to one of its calendars: it
        // is skipped (and cancels nothing).
        let on_calendar = schedule
            .bounds
            .on_calendar(scheduled_for, schedule.cadence.zone());
        // overlap = "cancel_other": the run still going is cancelled, and this one starts.
        // Its worker finds out at its next lease renewal and drops it; its answer is not
        // recorded.
        if schedule.overlap == Overlap::CancelOther && !on_calendar {
            tx.execute(
                "UPDATE schedule_runs SET status = 'cancelled', finished_at = ?2,
                 lease_expires_at = NULL,
                 error = 'cancelled: a later occurrence started (overlap = cancel_other)'
                 WHERE schedule_id = ?1 AND status = 'running'",
                libsql::params![schedule.schedule_id.as_str(), now],
            )
            .await?;
        }
        let run_id = ids::new_id("run");
        let skip_reason = if on_calendar {
            Some("on a date of its calendars")
        } else if running > 0 && schedule.overlap == Overlap::Skip {
            Some("the previous run was still running (overlap = skip)")
        } else if missed_while_none_ran {
            Some("missed while no worker was running (catch_up = skip)")
        } else if too_old(schedule, due, now) {
            Some("missed longer ago than its catch_up_window")
        } else {
            None
        };
        if let Some(reason) = skip_reason {
            record_skipped(
                &tx,
                &schedule.schedule_id,
                scheduled_for,
                worker_id,
                now,
                reason,
            )
            .await?;
            if next.is_none() {
                tx.execute(
                    "UPDATE schedules SET status = 'completed', status_reason = ?2 WHERE schedule_id = ?1",
                    libsql::params![schedule.schedule_id.as_str(), reason],
                )
                .await?;
            }
            tx.commit().await?;
            return Ok(None);
        }
        let inserted = tx
            .execute(
                "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, attempt, status,
                 worker_id, lease_expires_at, started_at, due_at)
                 VALUES (?1, ?2, ?3, 1, 'running', ?4, ?5, ?6, ?7)
                 ON CONFLICT (schedule_id, scheduled_for) WHERE event_id IS NULL DO NOTHING",
                libsql::params![
                    run_id.as_str(),
                    schedule.schedule_id.as_str(),
                    scheduled_for,
                    worker_id,
                    now + lease_ms,
                    now,
                    (due != scheduled_for).then_some(due)
                ],
            )
            .await?;
        if inserted == 0 {
            // This occurrence already has a run (it was claimed before): never again.
            tx.commit().await?;
            return Ok(None);
        }
        // A run limit counts this run; the last one allowed leaves no next occurrence.
        let next = match schedule.bounds.max_runs {
            Some(_) => {
                tx.execute(
                    "UPDATE schedules SET runs_started = runs_started + 1,
                     next_run_at = CASE WHEN max_runs IS NOT NULL AND runs_started + 1 >= max_runs
                                   THEN NULL ELSE next_run_at END,
                     next_nominal_at = CASE WHEN max_runs IS NOT NULL AND runs_started + 1 >= max_runs
                                   THEN NULL ELSE next_nominal_at END
                     WHERE schedule_id = ?1",
                    [schedule.schedule_id.as_str()],
                )
                .await?;
                query_scalar(
                    &tx,
                    "SELECT next_run_at FROM schedules WHERE schedule_id = ?1",
                    [schedule.schedule_id.as_str()],
                )
                .await?
            }
            None => next_due,
        };
        tx.commit().await?;
        let mut schedule = schedule.clone();
        schedule.next_nominal_at = next_nominal.filter(|_| next.is_some());
        schedule.next_run_at = next;
        Ok(Some(Claim::of_cadence(run_id, schedule, scheduled_for, 1)))
    }
}

impl ScheduleStore {
    /// Whether a worker was up when `at` came due: one registered before it and alive
    /// since (`worker_id`, claiming now, is alive).
    async fn a_worker_was_up(&self, worker_id: &str, at: i64) -> Result<bool> {
        let conn = self.db.conn().await?;
        let up = query_scalar::<i64>(
            &conn,
            "SELECT EXISTS (SELECT 1 FROM workers WHERE started_at <= ?2
                            AND (worker_id = ?1 OR heartbeat_at >= ?2))",
            libsql::params![worker_id, at],
        )
        .await?;
        Ok(up == Some(1))
    }
}

/// Whether the schedule's next occurrence waits for its running run (see
/// `WAITS_BEHIND_RUNNING`).
fn waits_behind_running(schedule: &Schedule) -> bool {
    matches!(schedule.overlap, Overlap::BufferOne | Overlap::BufferAll)
        || schedule.catch_up == CatchUp::All
}

/// Records the occurrence `scheduled_for` as skipped by policy, for `reason`; an
/// occurrence that already has a run keeps it.
async fn record_skipped(
    tx: &WriteTx,
    schedule_id: &str,
    scheduled_for: i64,
    worker_id: &str,
    now: i64,
    reason: &str,
) -> Result<()> {
    tx.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, worker_id,
         started_at, finished_at, error) VALUES (?1, ?2, ?3, 'skipped', ?4, ?5, ?5, ?6)
         ON CONFLICT (schedule_id, scheduled_for) WHERE event_id IS NULL DO NOTHING",
        libsql::params![
            ids::new_id("run"),
            schedule_id,
            scheduled_for,
            worker_id,
            now,
            reason
        ],
    )
    .await?;
    Ok(())
}

/// True when an occurrence due at `due` was missed longer ago than the schedule's
/// `catch_up_window`.
fn too_old(schedule: &Schedule, due: i64, now: i64) -> bool {
    schedule
        .catch_up_window_secs
        .is_some_and(|window| now.saturating_sub(due) > window.saturating_mul(1000))
}

/// True when `scheduled_for` was missed: a later occurrence is already due.
fn missed(schedule: &Schedule, scheduled_for: i64, now: i64) -> bool {
    schedule
        .next_after(scheduled_for)
        .is_some_and(|following| following <= now)
}

/// What claiming an occurrence does to the schedule, by its catch-up policy.
struct AfterClaim {
    /// Where `next_run_at` goes.
    next: Option<i64>,
    /// Missed occurrences passed over without a run of their own (`catch_up = "all"`
    /// beyond its limit).
    passed_over: Option<PassedOver>,
}

/// Missed occurrences `catch_up = "all"` passes over, all but the last
/// [`CATCH_UP_ALL_LIMIT`]: recorded as one `skipped` run at the first of them, so the
/// schedule's history accounts for every occurrence.
struct PassedOver {
    first: i64,
    last: i64,
    count: usize,
    /// The count stopped at [`MAX_COUNTED_STEPS`]: there were more.
    at_least: bool,
}

impl PassedOver {
    fn reason(&self) -> String {
        format!(
            "{}{} missed occurrence(s) from {} to {} passed over: catch_up = all runs at most \
             the last {CATCH_UP_ALL_LIMIT}",
            if self.at_least { "at least " } else { "" },
            self.count,
            to_rfc3339(self.first),
            to_rfc3339(self.last)
        )
    }
}

/// Where `next_run_at` goes once `scheduled_for` is claimed, by the catch-up policy.
fn after_claim(schedule: &Schedule, scheduled_for: i64, now: i64) -> AfterClaim {
    let cadence = &schedule.cadence;
    let fold = || AfterClaim {
        // Missed occurrences fold into this one; the next is the first one after now.
        next: schedule.next_after(now.max(scheduled_for)),
        passed_over: None,
    };
    let each_in_turn = schedule.catch_up == CatchUp::All || schedule.overlap == Overlap::BufferAll;
    if !each_in_turn {
        return fold();
    }
    let missed = missed_since(cadence, scheduled_for, now);
    // Those on skipped dates or outside the window are not missed. Those missed longer ago
    // than the catch-up window come next too: each is recorded as skipped by its claim.
    let bounded = !schedule.bounds.is_unbounded();
    let admitted = |t: i64| !bounded || schedule.bounds.admits(cadence, t);
    if schedule.catch_up != CatchUp::All {
        // overlap = "buffer_all" alone: the occurrences that came due while a run was
        // going wait and run in turn; the rest follow the catch-up policy.
        return match missed
            .recent
            .iter()
            .copied()
            .find(|&t| admitted(t) && queued_behind_run(schedule, t))
        {
            Some(queued) => AfterClaim {
                next: Some(queued),
                passed_over: None,
            },
            None => fold(),
        };
    }
    // catch_up = "all": each missed occurrence runs in turn, never more than the last 100.
    let next_missed = missed.recent.iter().copied().find(|&t| admitted(t));
    AfterClaim {
        next: next_missed.or_else(|| {
            if bounded {
                schedule.next_after(now)
            } else {
                missed.after_now
            }
        }),
        passed_over: missed.passed_over,
    }
}

/// Whether the occurrence at `t` waited behind a run (`overlap = "buffer_all"`): it came
/// due before the last run finished.
fn queued_behind_run(schedule: &Schedule, t: i64) -> bool {
    schedule.overlap == Overlap::BufferAll && schedule.last_run_at.is_some_and(|last| last >= t)
}

/// The occurrences after `scheduled_for` that are already due at `now`.
struct Missed {
    /// The last [`CATCH_UP_ALL_LIMIT`] of them, oldest first.
    recent: Vec<i64>,
    /// The ones before those.
    passed_over: Option<PassedOver>,
    /// The first occurrence after `now`.
    after_now: Option<i64>,
}

/// Finds the missed occurrences without walking every one of them when there are many:
/// an interval's are counted by arithmetic, a cron expression's from a window before
/// `now` that widens until it holds the last [`CATCH_UP_ALL_LIMIT`] (a worker that was
/// down for a year must not walk half a million minutes while holding up the others).
fn missed_since(cadence: &Cadence, scheduled_for: i64, now: i64) -> Missed {
    let after_now = cadence.next_after(now);
    // Walks from `from` (exclusive) up to `now`, keeping the last LIMIT.
    let walk = |from: i64| {
        let mut recent = std::collections::VecDeque::with_capacity(CATCH_UP_ALL_LIMIT + 1);
        let mut dropped: Option<(i64, i64, usize)> = None;
        let mut at = cadence.next_after(from);
        while let Some(t) = at.filter(|&t| t <= now) {
            recent.push_back(t);
            if recent.len() > CATCH_UP_ALL_LIMIT {
                let oldest = recent.pop_front().expect("over the limit");
                let d = dropped.get_or_insert((oldest, oldest, 0));
                d.1 = oldest;
                d.2 += 1;
            }
            at = cadence.next_after(t);
        }
        (Vec::from(recent), dropped)
    };
    if let Cadence::Interval {
        every_secs, anchor, ..
    } = cadence
    {
        let every = every_secs.saturating_mul(1000).max(1);
        // Occurrences k with scheduled_for < anchor + k*every <= now.
        let first_k = if scheduled_for < *anchor {
            0
        } else {
            (scheduled_for - anchor) / every + 1
        };
        let last_k = if now < *anchor {
            -1
        } else {
            (now - anchor) / every
        };
        let count = (last_k - first_k + 1).max(0);
        let keep = count.min(CATCH_UP_ALL_LIMIT as i64);
        let recent: Vec<i64> = ((last_k - keep + 1)..=last_k)
            .filter_map(|k| anchor.checked_add(k.checked_mul(every)?))
            .collect();
        let passed = count - keep;
        let passed_over = (passed > 0).then(|| PassedOver {
            first: anchor + first_k * every,
            last: anchor + (first_k + passed - 1) * every,
            count: passed as usize,
            at_least: false,
        });
        return Missed {
            recent,
            passed_over,
            after_now,
        };
    }
    // A cron expression: look back from `now` in a window that doubles until it holds
    // more than the limit (or reaches back to `scheduled_for`).
    let mut window: i64 = 3_600_000;
    loop {
        let from = now.saturating_sub(window);
        if from <= scheduled_for {
            let (recent, dropped) = walk(scheduled_for);
            return Missed {
                recent,
                passed_over: dropped.map(|(first, last, count)| PassedOver {
                    first,
                    last,
                    count,
                    at_least: false,
                }),
                after_now,
            };
        }
        let (recent, dropped) = walk(from);
        if let Some((_, last_dropped, in_window)) = dropped {
            // More than the limit in the window: those before the last LIMIT, and every
            // occurrence between `scheduled_for` and the window, are passed over. The
            // ones before the window are counted up to a bound (each is a step of the
            // cron evaluator), past which the count says "at least".
            let mut count = in_window;
            let mut first = None;
            let mut at = cadence.next_after(scheduled_for);
            let mut steps = 0usize;
            let mut at_least = false;
            while let Some(t) = at.filter(|&t| t <= from) {
                first.get_or_insert(t);
                count += 1;
                steps += 1;
                if steps >= MAX_COUNTED_STEPS {
                    at_least = true;
                    break;
                }
                at = cadence.next_after(t);
            }
            return Missed {
                recent,
                passed_over: Some(PassedOver {
                    first: first.unwrap_or(last_dropped),
                    last: last_dropped,
                    count,
                    at_least,
                }),
                after_now,
            };
        }
        window = window.saturating_mul(2);
    }
}

/// Occurrences before the look-back window counted one by one at most (ten weeks of
/// every-minute occurrences); past that the record says "at least".
const MAX_COUNTED_STEPS: usize = 100_000;

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(cadence: Cadence) -> Schedule {
        let mut new = crate::schedule::types::NewSchedule::new("u", "g", cadence);
        new.catch_up = CatchUp::All;
        Schedule {
            schedule_id: "sch-1".into(),
            user_id: new.user_id,
            name: None,
            goal: new.goal,
            cadence: new.cadence,
            cadence_text: None,
            source: new.source,
            notify: new.notify,
            overlap: new.overlap,
            catch_up: new.catch_up,
            max_attempts: 3,
            timeout_secs: None,
            max_turns: None,
            max_cost: None,
            status: crate::schedule::types::ScheduleStatus::Active,
            status_reason: None,
            created_at: 0,
            updated_at: 0,
            next_run_at: None,
            last_run_at: None,
            last_run_status: None,
            consecutive_failures: 0,
            channel_id: None,
            channel_context_id: None,
            bounds: Default::default(),
            runs_started: 0,
            jitter_secs: None,
            next_nominal_at: None,
            catch_up_window_secs: None,
            after: None,
            agent_id: None,
            made_by_run: None,
            tools: Vec::new(),
            approve: Vec::new(),
            alerts: Default::default(),
            last_success_at: None,
        }
    }

    /// The arithmetic and windowed searches agree with walking every occurrence.
    #[test]
    fn missed_occurrences_match_a_walk_of_every_one() {
        let start = 1_767_225_600_000; // 2026-01-01
        let cadences = [
            Cadence::Interval {
                every_secs: 60,
                anchor: start,
                tz: "UTC".into(),
            },
            Cadence::cron("*/5 * * * *", "UTC").unwrap(),
            Cadence::cron("0 9 * * 1-5", "Europe/Lisbon").unwrap(),
        ];
        for cadence in cadences {
            let s = schedule(cadence.clone());
            for hours in [0i64, 1, 5, 30, 200, 2000] {
                let now = start + hours * 3_600_000 + 1234;
                let first = cadence.next_after(start - 1).unwrap();
                let mut all = Vec::new();
                let mut at = cadence.next_after(first);
                while let Some(t) = at.filter(|&t| t <= now) {
                    all.push(t);
                    at = cadence.next_after(t);
                }
                let after = after_claim(&s, first, now);
                let keep = all.len().min(CATCH_UP_ALL_LIMIT);
                let expected_next = all[all.len() - keep..]
                    .first()
                    .copied()
                    .or(cadence.next_after(now));
                assert_eq!(after.next, expected_next, "{cadence:?} {hours}h");
                let passed = all.len() - keep;
                match after.passed_over {
                    None => assert_eq!(passed, 0, "{cadence:?} {hours}h"),
                    Some(p) => {
                        assert_eq!(p.count, passed, "{cadence:?} {hours}h");
                        assert_eq!(p.first, all[0]);
                        assert_eq!(p.last, all[passed - 1]);
                    }
                }
            }
        }
    }

    /// Months of missed occurrences are accounted for within a bounded amount of work.
    #[test]
    fn a_long_downtime_is_bounded() {
        let start = 1_767_225_600_000;
        let s = schedule(Cadence::cron("*/5 * * * *", "UTC").unwrap());
        let now = start + 120 * 86_400_000;
        let after = after_claim(&s, start, now);
        let passed = after.passed_over.unwrap();
        assert_eq!(passed.count, 120 * 288 - CATCH_UP_ALL_LIMIT);
        assert!(!passed.at_least);
        assert_eq!(after.next, Some(now - 99 * 300_000));
    }
}
