//! The occurrences a schedule has coming within a span of time, for the dashboard's week:
//! each at the time it will be due (jitter included), the ones its skip dates and
//! calendars leave out marked as skipped (a few of each gap, so a holiday reads as a gap
//! on purpose), and a missed one as the scheduler will take it: one run for all that were
//! missed, none, or each, by the schedule's `catch_up`.

use super::types::Schedule;
use crate::spec::CatchUp;

/// Skipped occurrences listed between two runs (a schedule every minute skips 1,440 on a
/// holiday).
const SKIPPED_SHOWN: usize = 3;

/// One occurrence of a schedule within the span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    /// Its nominal time (UTC ms): what it is known by.
    pub nominal: i64,
    /// When it will be due, with the schedule's jitter; `None` when it is skipped.
    pub due: Option<i64>,
    /// It was due before now and has not run yet.
    pub overdue: bool,
}

impl Occurrence {
    /// Where it sits in time: when it is due, or its nominal time when skipped.
    pub fn at(&self) -> i64 {
        self.due.unwrap_or(self.nominal)
    }
}

/// The occurrences of `schedule` from its next one until before `until` (UTC ms), as of
/// `now`: at most `max`, and no more runs than its run limit leaves. Its next occurrence
/// is the scheduler's own (when it is due, whatever the cadence says now: a "run now"
/// or an edit may have moved it); the ones after it are the cadence's and bounds'.
pub fn occurrences(schedule: &Schedule, now: i64, until: i64, max: usize) -> Vec<Occurrence> {
    let Some(first) = schedule.next_nominal() else {
        return Vec::new();
    };
    let (cadence, bounds) = (&schedule.cadence, &schedule.bounds);
    let mut found = Found {
        list: Vec::new(),
        runs_left: bounds
            .max_runs
            .map(|max| (max - schedule.runs_started).max(0)),
        until,
        max,
    };
    let first_due = schedule
        .next_run_at
        .unwrap_or_else(|| schedule.due_at(first));
    let skipped = |nominal| Occurrence {
        nominal,
        due: None,
        overdue: false,
    };
    // Where the cadence goes on from after the first occurrence.
    let mut after = first;
    if bounds.on_calendar(first, cadence.zone()) {
        // Its date joined a calendar after it was worked out: the scheduler skips it.
        found.push(skipped(first));
    } else if first_due < now && schedule.catch_up != CatchUp::All {
        // Missed: one run for all that were missed, or none; then on from now.
        let run = schedule.catch_up == CatchUp::Once;
        found.push(Occurrence {
            nominal: first,
            due: run.then_some(first_due),
            overdue: run,
        });
        after = now.max(first);
    } else {
        found.push(Occurrence {
            nominal: first,
            due: Some(first_due),
            overdue: first_due < now,
        });
    }
    while !found.full() {
        let Some(next) = schedule.next_after(after) else {
            break;
        };
        // The cadence's own times before it are ones the bounds leave out.
        let mut left_out = cadence.next_after(after);
        for _ in 0..SKIPPED_SHOWN {
            match left_out.filter(|&t| t < next && t < until) {
                Some(t) => {
                    found.push(skipped(t));
                    left_out = cadence.next_after(t);
                }
                None => break,
            }
        }
        let due = schedule.due_at(next);
        if next >= until || due >= until || found.full() {
            break;
        }
        found.push(Occurrence {
            nominal: next,
            due: Some(due),
            overdue: due < now,
        });
        after = next;
    }
    found.list
}

/// The occurrences found so far, and what bounds them.
struct Found {
    list: Vec<Occurrence>,
    /// Runs the run limit leaves, when there is one.
    runs_left: Option<i64>,
    until: i64,
    max: usize,
}

impl Found {
    /// Keeps `occurrence` when it falls before the span's end and there is room.
    fn push(&mut self, occurrence: Occurrence) {
        if occurrence.at() < self.until && !self.full() {
            if occurrence.due.is_some() {
                self.runs_left = self.runs_left.map(|left| left - 1);
            }
            self.list.push(occurrence);
        }
    }

    /// No more fit: the list is full or the run limit is reached.
    fn full(&self) -> bool {
        self.list.len() >= self.max || self.runs_left == Some(0)
    }
}
