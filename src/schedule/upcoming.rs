//! The occurrences a schedule has coming within a span of time, for the dashboard's week:
//! each at the time it will be due (jitter included), and the ones its skip dates and
//! calendars leave out marked as skipped, so a reader sees a holiday as a gap on purpose.

use super::types::Schedule;

/// One occurrence of a schedule within the span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    /// Its nominal time (UTC ms): what it is known by.
    pub nominal: i64,
    /// When it will be due, with the schedule's jitter; `None` when it is skipped.
    pub due: Option<i64>,
}

/// The occurrences of `schedule` from its next one until before `until` (UTC ms): at most
/// `max`, and no more runs than its run limit leaves. Its next occurrence may lie before
/// the span's start (overdue, not yet run): it is listed too, at its time.
pub fn occurrences(schedule: &Schedule, until: i64, max: usize) -> Vec<Occurrence> {
    let Some(first) = schedule.next_nominal() else {
        return Vec::new();
    };
    let (cadence, bounds) = (&schedule.cadence, &schedule.bounds);
    let mut runs_left = bounds
        .max_runs
        .map(|max| (max - schedule.runs_started).max(0));
    let mut found = Vec::new();
    let mut next = Some(first);
    while let Some(nominal) = next.filter(|&n| n < until) {
        if found.len() >= max || runs_left == Some(0) {
            break;
        }
        if bounds.ends_at.is_some_and(|end| nominal > end) {
            break;
        }
        let admitted = bounds.admits(cadence, nominal);
        if admitted {
            runs_left = runs_left.map(|left| left - 1);
        }
        found.push(Occurrence {
            nominal,
            due: admitted.then(|| schedule.due_at(nominal)),
        });
        // The cadence's own next occurrence, skipped or not: a skipped one is shown.
        next = cadence.next_after(nominal);
    }
    found
}
