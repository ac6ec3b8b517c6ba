//! When a schedule may run at all, beside its cadence: a window (`starts_at`, `ends_at`),
//! a number of runs (`max_runs`), and dates to skip (`skip`: dates, or cron expressions
//! whose matching minutes are skipped, in the schedule's zone). A schedule's occurrences
//! are its cadence's that fall inside the window and on no skipped date; a skipped
//! occurrence is neither run nor missed.

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use super::cadence::{parse_instant, CadenceError};
use super::cron::{resolve_local, CronSpec};
use super::Cadence;
use crate::input::{printable, InputError};

/// Most entries in `skip`.
pub const MAX_SKIP_ENTRIES: usize = 400;
/// Most runs `max_runs` may allow.
pub const MAX_RUNS: i64 = 1_000_000;
/// Steps of the walk past skipped occurrences before a schedule counts as one that never
/// runs again: bounds it when a skip list covers everything. A skipped whole day is one
/// step (the walk jumps to its end), so this is decades of skipped days.
const MAX_SKIPPED_IN_A_ROW: usize = 100_000;

/// A schedule's window, run limit and skipped dates.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct Bounds {
    /// No occurrence before this instant (UTC milliseconds).
    pub starts_at: Option<i64>,
    /// No occurrence after this instant (UTC milliseconds).
    pub ends_at: Option<i64>,
    /// Occurrences started at most, counted from when the limit was set.
    pub max_runs: Option<i64>,
    /// Dates (`2026-12-25`) and cron expressions (`* * 24-26 12 *`) in the schedule's zone.
    pub skip: Vec<String>,
    /// Named calendars (`[calendars.NAME]`) whose dates are skipped too.
    pub calendars: Vec<String>,
    /// Those calendars' dates as configured now, sorted: read with the schedule, not part
    /// of its definition.
    #[serde(skip)]
    pub calendar_dates: Vec<NaiveDate>,
}

impl Bounds {
    /// Whether `at_ms` falls, in `tz`, on a date of the schedule's calendars.
    pub fn on_calendar(&self, at_ms: i64, tz: Tz) -> bool {
        !self.calendar_dates.is_empty()
            && DateTime::<Utc>::from_timestamp_millis(at_ms).is_some_and(|at| {
                self.calendar_dates
                    .binary_search(&at.with_timezone(&tz).date_naive())
                    .is_ok()
            })
    }
}

impl PartialEq for Bounds {
    /// The definition: the calendars by name, whatever dates they hold today.
    fn eq(&self, other: &Self) -> bool {
        self.starts_at == other.starts_at
            && self.ends_at == other.ends_at
            && self.max_runs == other.max_runs
            && self.skip == other.skip
            && self.calendars == other.calendars
    }
}

/// A `skip` entry, read.
enum SkipRule {
    Date(NaiveDate),
    /// `whole_day`: minute and hour are `*`, so a day it matches is skipped whole.
    Cron {
        spec: CronSpec,
        whole_day: bool,
    },
}

impl SkipRule {
    fn parse(entry: &str) -> Result<Self, String> {
        let entry = entry.trim();
        if let Ok(date) = NaiveDate::parse_from_str(entry, "%Y-%m-%d") {
            return Ok(SkipRule::Date(date));
        }
        if entry.split_whitespace().count() == 5 {
            let whole_day = entry.split_whitespace().take(2).all(|field| field == "*");
            return CronSpec::parse(entry)
                .map(|spec| SkipRule::Cron { spec, whole_day })
                .map_err(|e| e.to_string());
        }
        Err(format!(
            "`{}` is neither a date (2026-12-25) nor a 5-field cron expression",
            printable(entry)
        ))
    }

    /// Whether the occurrence at `at` falls on this rule, in `tz`.
    fn covers(&self, at: DateTime<Utc>, tz: Tz) -> bool {
        match self {
            SkipRule::Date(date) => at.with_timezone(&tz).date_naive() == *date,
            SkipRule::Cron { spec, .. } => {
                // The minute `at` falls in matches when the expression's first time after
                // the minute before it is that minute.
                let minute = at.timestamp() - at.timestamp().rem_euclid(60);
                let before = DateTime::<Utc>::from_timestamp(minute - 1, 0);
                before
                    .and_then(|b| spec.next_after(b, tz))
                    .map(|n| n.timestamp())
                    == Some(minute)
            }
        }
    }
}

impl Bounds {
    pub fn is_unbounded(&self) -> bool {
        *self == Bounds::default()
    }

    /// The first occurrence of `cadence` strictly after `after_ms` that these bounds admit
    /// (the run limit aside: a claim counts runs), or `None` when there is none.
    pub fn next_after(&self, cadence: &Cadence, after_ms: i64) -> Option<i64> {
        let rules: Vec<SkipRule> = self
            .skip
            .iter()
            .filter_map(|entry| SkipRule::parse(entry).ok())
            .collect();
        let tz = cadence.zone();
        let mut t = match self.starts_at {
            Some(start) if start.saturating_sub(1) > after_ms => start - 1,
            _ => after_ms,
        };
        for _ in 0..MAX_SKIPPED_IN_A_ROW {
            let next = cadence.next_after(t)?;
            if self.ends_at.is_some_and(|end| next > end) {
                return None;
            }
            let covered = if self.on_calendar(next, tz) {
                Some(true)
            } else {
                covered(&rules, next, tz)
            };
            match covered {
                None => return Some(next),
                // The rest of a skipped day is skipped too: go on from its last moment.
                Some(true) => t = end_of_local_day(next, tz).max(next),
                Some(false) => t = next,
            }
        }
        None
    }

    /// Whether an occurrence at `at_ms` is one these bounds admit.
    pub fn admits(&self, cadence: &Cadence, at_ms: i64) -> bool {
        at_ms
            .checked_sub(1)
            .and_then(|before| self.next_after(cadence, before))
            == Some(at_ms)
    }

    /// Checks bounds before they are stored: entries readable, numbers in range, an end
    /// after the start and after `now_ms`.
    pub fn check(&self, now_ms: i64) -> Result<(), InputError> {
        if let Some(n) = self.max_runs {
            crate::input::check_range("max_runs", n, 1..=MAX_RUNS)?;
        }
        if self.skip.len() > MAX_SKIP_ENTRIES {
            return Err(InputError::new(
                "skip",
                format!(
                    "at most {MAX_SKIP_ENTRIES} entries, got {}",
                    self.skip.len()
                ),
            ));
        }
        for entry in &self.skip {
            crate::input::check_name("skip", entry)?;
            SkipRule::parse(entry).map_err(|reason| InputError::new("skip", reason))?;
        }
        if let (Some(start), Some(end)) = (self.starts_at, self.ends_at) {
            if end <= start {
                return Err(InputError::new("ends_at", "must be after starts_at"));
            }
        }
        if self.ends_at.is_some_and(|end| end <= now_ms) {
            return Err(InputError::new("ends_at", "is in the past"));
        }
        // A schedule must run within ten years, like any cadence.
        let horizon = now_ms.saturating_add(crate::input::MAX_DURATION_SECS.saturating_mul(1000));
        if self.starts_at.is_some_and(|start| start > horizon) {
            return Err(InputError::new("starts_at", "is more than 10 years ahead"));
        }
        Ok(())
    }
}

/// Whether a rule skips the occurrence at `at_ms` (`None`: none does), and whether one
/// that does skips its whole day.
fn covered(rules: &[SkipRule], at_ms: i64, tz: Tz) -> Option<bool> {
    let at = DateTime::<Utc>::from_timestamp_millis(at_ms)?;
    let mut found = None;
    for rule in rules.iter().filter(|rule| rule.covers(at, tz)) {
        let whole_day = matches!(
            rule,
            SkipRule::Date(_)
                | SkipRule::Cron {
                    whole_day: true,
                    ..
                }
        );
        if whole_day {
            return Some(true);
        }
        found = Some(false);
    }
    found
}

/// The last millisecond of the local day `at_ms` falls on, in `tz`.
fn end_of_local_day(at_ms: i64, tz: Tz) -> i64 {
    DateTime::<Utc>::from_timestamp_millis(at_ms)
        .and_then(|at| at.with_timezone(&tz).date_naive().succ_opt())
        .and_then(|next_day| next_day.and_hms_opt(0, 0, 0))
        .map_or(at_ms, |midnight| {
            resolve_local(midnight, tz).timestamp_millis() - 1
        })
}

/// Reads a bound: an instant (RFC 3339, or `YYYY-MM-DD HH:MM` in `tz`), or a date in `tz`,
/// which means its first moment for a start and its last for an end.
pub fn parse_bound(text: &str, tz: Tz, end: bool) -> Result<i64, CadenceError> {
    let t = text.trim();
    match NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        Ok(date) => {
            let day = if end { date.succ_opt() } else { Some(date) };
            let midnight = day
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .ok_or_else(|| CadenceError::BadTime(printable(text).into_owned()))?;
            let ms = resolve_local(midnight, tz).timestamp_millis() - i64::from(end);
            crate::input::check_instant("time", ms)
                .map_err(|_| CadenceError::BadTime(printable(text).into_owned()))
        }
        Err(_) => parse_instant(t, tz),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const JAN_1_2027: i64 = 1_798_761_600_000;

    fn daily_nine() -> Cadence {
        Cadence::cron("0 9 * * *", "Europe/Lisbon").unwrap()
    }

    #[test]
    fn the_window_and_skipped_dates_shape_the_occurrences() {
        let cadence = daily_nine();
        let bounds = Bounds {
            starts_at: Some(JAN_1_2027 + 5 * 86_400_000),
            ends_at: Some(JAN_1_2027 + 10 * 86_400_000),
            skip: vec!["2027-01-07".into(), "* * * * 6,0".into()],
            ..Default::default()
        };
        let mut runs = Vec::new();
        let mut t = bounds.next_after(&cadence, JAN_1_2027);
        while let Some(at) = t {
            runs.push(at);
            t = bounds.next_after(&cadence, at);
        }
        let days: Vec<String> = runs
            .iter()
            .map(|ms| {
                DateTime::<Utc>::from_timestamp_millis(*ms)
                    .unwrap()
                    .format("%m-%d %H:%M")
                    .to_string()
            })
            .collect();
        // Jan 6 (Wed) to Jan 10; the 7th skipped, the 9th and 10th are a weekend.
        assert_eq!(days, ["01-06 09:00", "01-08 09:00"]);
        assert!(bounds.admits(&cadence, runs[0]));
        assert!(!bounds.admits(&cadence, runs[0] + 86_400_000), "the 7th");
    }

    #[test]
    fn a_long_run_of_skipped_days_is_walked_a_day_at_a_time() {
        // Every minute, but not from the 20th to the end of December: 17,000 minutes.
        let every_minute = Cadence::Interval {
            every_secs: 60,
            anchor: JAN_1_2027,
            tz: "UTC".into(),
        };
        let bounds = Bounds {
            skip: vec!["* * 20-31 12 *".into()],
            ..Default::default()
        };
        // 2027-12-19T23:59Z: the next run is 2028-01-01T00:00Z.
        let next = bounds.next_after(&every_minute, 1_829_260_740_000);
        assert_eq!(next, Some(1_830_297_600_000));
    }

    #[test]
    fn a_skip_list_covering_everything_never_runs() {
        let bounds = Bounds {
            skip: vec!["* * * * *".into()],
            ..Default::default()
        };
        assert_eq!(bounds.next_after(&daily_nine(), JAN_1_2027), None);
    }

    #[test]
    fn bounds_are_checked() {
        let now = JAN_1_2027;
        let bad = [
            Bounds {
                max_runs: Some(0),
                ..Default::default()
            },
            Bounds {
                skip: vec!["tomorrow".into()],
                ..Default::default()
            },
            Bounds {
                skip: vec!["61 * * * *".into()],
                ..Default::default()
            },
            Bounds {
                skip: vec!["2027-02-30".into()],
                ..Default::default()
            },
            Bounds {
                starts_at: Some(now + 10),
                ends_at: Some(now + 5),
                ..Default::default()
            },
            Bounds {
                ends_at: Some(now - 1),
                ..Default::default()
            },
            Bounds {
                starts_at: Some(now + 11 * 365 * 86_400_000),
                ..Default::default()
            },
        ];
        for bounds in bad {
            assert!(bounds.check(now).is_err(), "{bounds:?}");
        }
        assert!(Bounds::default().check(now).is_ok());
    }

    #[test]
    fn a_date_bound_is_the_days_first_or_last_moment_in_the_zone() {
        let tz: Tz = "Europe/Lisbon".parse().unwrap();
        let start = parse_bound("2027-07-01", tz, false).unwrap();
        let end = parse_bound("2027-07-01", tz, true).unwrap();
        assert_eq!(end - start, 86_400_000 - 1);
        assert_eq!(
            DateTime::<Utc>::from_timestamp_millis(start)
                .unwrap()
                .to_rfc3339(),
            "2027-06-30T23:00:00+00:00"
        );
    }

    proptest! {
        #[test]
        fn any_text_is_a_bound_or_an_error(text in any::<String>(), end in any::<bool>()) {
            let _ = parse_bound(&text, Tz::UTC, end);
            let bounds = Bounds { skip: vec![text], ..Default::default() };
            if bounds.check(JAN_1_2027).is_ok() {
                let _ = bounds.next_after(&daily_nine(), JAN_1_2027);
            }
        }

        #[test]
        fn occurrences_are_inside_the_window(start in 0i64..1_000_000_000, len in 1i64..1_000_000_000) {
            let bounds = Bounds {
                starts_at: Some(JAN_1_2027 + start),
                ends_at: Some(JAN_1_2027 + start + len),
                ..Default::default()
            };
            if let Some(at) = bounds.next_after(&daily_nine(), JAN_1_2027) {
                prop_assert!(at >= JAN_1_2027 + start && at <= JAN_1_2027 + start + len);
            }
        }
    }
}
