//! Standard 5-field cron expressions (minute hour day-of-month month day-of-week),
//! evaluated in an IANA time zone by nightshift itself rather than a cron crate, so that
//! weekday numbers and daylight-saving transitions follow one documented policy:
//!
//! - day of week: 0 or 7 = Sunday, 1 = Monday … 6 = Saturday; names (`mon`, `fri`) work;
//! - a local time that does not exist (spring forward) runs at the first valid instant
//!   after it; a local time that happens twice (fall back) runs once, the first time;
//! - when both day of month and day of week are restricted, either may match (as in cron).

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cron expression `{expr}`: {reason}")]
pub struct CronError {
    pub expr: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSpec {
    minutes: u64,
    hours: u32,
    days_of_month: u32,
    months: u16,
    days_of_week: u8,
    dom_restricted: bool,
    dow_restricted: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// Days searched for a next occurrence: five years covers every valid expression,
/// including 29 February.
const SEARCH_DAYS: i64 = 366 * 5;

impl CronSpec {
    pub fn parse(expr: &str) -> Result<Self, CronError> {
        let err = |reason: String| CronError {
            expr: expr.to_string(),
            reason,
        };
        let expanded = match expr.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(err(format!(
                "expected 5 fields (minute hour day-of-month month day-of-week), got {}",
                fields.len()
            )));
        }
        let field = |i: usize, name: &str, min: u32, max: u32, names: &[&str]| {
            parse_field(fields[i], min, max, names)
                .map_err(|reason| err(format!("{name} field `{}`: {reason}", fields[i])))
        };
        let minutes = field(0, "minute", 0, 59, &[])?;
        let hours = field(1, "hour", 0, 23, &[])?;
        let days_of_month = field(2, "day-of-month", 1, 31, &[])?;
        let months = field(3, "month", 1, 12, &MONTHS)?;
        // 7 is Sunday too; fold it onto 0.
        let mut dow = field(4, "day-of-week", 0, 7, &WEEKDAYS)?;
        if dow & (1 << 7) != 0 {
            dow = (dow | 1) & !(1 << 7);
        }
        Ok(Self {
            minutes,
            hours: hours as u32,
            days_of_month: days_of_month as u32,
            months: months as u16,
            days_of_week: dow as u8,
            dom_restricted: fields[2] != "*",
            dow_restricted: fields[4] != "*",
        })
    }

    fn day_matches(&self, date: NaiveDate) -> bool {
        if self.months & (1 << date.month()) == 0 {
            return false;
        }
        let dom = self.days_of_month & (1 << date.day()) != 0;
        let dow = self.days_of_week & (1 << date.weekday().num_days_from_sunday()) != 0;
        match (self.dom_restricted, self.dow_restricted) {
            (true, true) => dom || dow,
            (true, false) => dom,
            (false, true) => dow,
            (false, false) => true,
        }
    }

    /// The first occurrence strictly after `after`, in UTC. Local times resolve to
    /// instants in order (a gap to its end, a fold to its first pass), so each day's
    /// candidates are searched by bisection: a few zone lookups a call, however many
    /// times of day the expression has.
    pub fn next_after(&self, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        let hours: Vec<u32> = bits(self.hours as u64, 0, 23).collect();
        let minutes: Vec<u32> = bits(self.minutes, 0, 59).collect();
        let per_day = hours.len() * minutes.len();
        if per_day == 0 {
            return None;
        }
        let at = |date: NaiveDate, i: usize| {
            date.and_hms_opt(hours[i / minutes.len()], minutes[i % minutes.len()], 0)
        };
        let mut date = after.with_timezone(&tz).naive_local().date();
        for _ in 0..SEARCH_DAYS {
            if self.day_matches(date) {
                // The first candidate of the day whose instant is after `after`.
                let (mut low, mut high) = (0, per_day);
                while low < high {
                    let mid = (low + high) / 2;
                    if resolve_local(at(date, mid)?, tz) <= after {
                        low = mid + 1;
                    } else {
                        high = mid;
                    }
                }
                if low < per_day {
                    return Some(resolve_local(at(date, low)?, tz));
                }
            }
            date = date.succ_opt()?;
        }
        None
    }
}

const DAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

impl CronSpec {
    /// The expression in plain words where it has a common shape ("at 09:00 on Monday to
    /// Friday", "every 15 minutes", "every hour at :30 on Saturday and Sunday"); the
    /// expression itself otherwise.
    pub fn describe(&self, expr: &str) -> String {
        let fallback = || format!("cron `{}`", expr.trim());
        let minutes: Vec<u32> = bits(self.minutes, 0, 59).collect();
        let hours: Vec<u32> = bits(self.hours as u64, 0, 23).collect();
        let every_month = bits(self.months as u64, 1, 12).count() == 12;
        if !every_month || self.dom_restricted {
            return fallback();
        }
        let time = match (minutes.as_slice(), hours.len()) {
            ([minute], 24) => format!("every hour at :{minute:02}"),
            ([minute], 1..=4) => {
                let times: Vec<String> = hours
                    .iter()
                    .map(|h| format!("{h:02}:{minute:02}"))
                    .collect();
                format!("at {}", join_words(&times))
            }
            (_, 24) if minutes.len() > 1 => {
                let step = minutes[1] - minutes[0];
                let regular = minutes[0] == 0
                    && 60 % step == 0
                    && minutes.windows(2).all(|w| w[1] - w[0] == step);
                if !regular {
                    return fallback();
                }
                format!("every {step} minutes")
            }
            _ => return fallback(),
        };
        if !self.dow_restricted {
            return if time.starts_with("every") {
                time
            } else {
                format!("{time} every day")
            };
        }
        let days: Vec<u32> = bits(self.days_of_week as u64, 0, 6).collect();
        let contiguous = days.len() >= 3 && days.windows(2).all(|w| w[1] == w[0] + 1);
        let names: Vec<String> = days
            .iter()
            .map(|d| DAY_NAMES[*d as usize].to_string())
            .collect();
        if contiguous {
            format!("{time} on {} to {}", names[0], names[names.len() - 1])
        } else {
            format!("{time} on {}", join_words(&names))
        }
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_words(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A local wall-clock time as an instant: the earlier one when it happens twice, the first
/// valid instant after it when it does not happen at all.
pub fn resolve_local(naive: NaiveDateTime, tz: Tz) -> DateTime<Utc> {
    match tz.from_local_datetime(&naive) {
        chrono::LocalResult::Single(t) => t.with_timezone(&Utc),
        chrono::LocalResult::Ambiguous(first, _) => first.with_timezone(&Utc),
        chrono::LocalResult::None => {
            // Walk forward minute by minute to the end of the gap (at most a few hours).
            let mut probe = naive.with_second(0).unwrap_or(naive);
            for _ in 0..(24 * 60) {
                probe += Duration::minutes(1);
                if let Some(t) = tz.from_local_datetime(&probe).earliest() {
                    return t.with_timezone(&Utc);
                }
            }
            Utc.from_utc_datetime(&naive)
        }
    }
}

fn bits(set: u64, min: u32, max: u32) -> impl Iterator<Item = u32> {
    (min..=max).filter(move |i| set & (1 << i) != 0)
}

fn parse_value(text: &str, min: u32, max: u32, names: &[&str]) -> Result<u32, String> {
    let lower = text.to_ascii_lowercase();
    if let Some(i) = names.iter().position(|n| *n == lower) {
        // Month names count from 1, weekday names from 0 (Sunday).
        let first = if names.len() == MONTHS.len() { 1 } else { 0 };
        return Ok(i as u32 + first);
    }
    let value: u32 = text.parse().map_err(|_| {
        format!(
            "`{text}` is not a number{}",
            if names.is_empty() { "" } else { " or a name" }
        )
    })?;
    if value < min || value > max {
        return Err(format!("{value} is outside {min}-{max}"));
    }
    Ok(value)
}

fn parse_field(field: &str, min: u32, max: u32, names: &[&str]) -> Result<u64, String> {
    let mut set = 0u64;
    for part in field.split(',') {
        if part.is_empty() {
            return Err("empty list item".into());
        }
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .map_err(|_| format!("step `{step}` is not a number"))?;
                if step == 0 {
                    return Err("step must be at least 1".into());
                }
                (range, step)
            }
            None => (part, 1),
        };
        let (low, high) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (
                parse_value(a, min, max, names)?,
                parse_value(b, min, max, names)?,
            );
            if a > b {
                return Err(format!("range {a}-{b} runs backwards"));
            }
            (a, b)
        } else {
            let a = parse_value(range, min, max, names)?;
            // `5/15` means from 5 to the end in steps of 15.
            (a, if part.contains('/') { max } else { a })
        };
        let mut v = low;
        while v <= high {
            set |= 1 << v;
            // A step past the field's end ends the loop (checked: any u32 step is read).
            let Some(next) = v.checked_add(step) else {
                break;
            };
            v = next;
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn next(expr: &str, after: &str, tz: &str) -> String {
        let tz: Tz = tz.parse().unwrap();
        CronSpec::parse(expr)
            .unwrap()
            .next_after(utc(after), tz)
            .unwrap()
            .with_timezone(&tz)
            .to_rfc3339()
    }

    #[test]
    fn weekdays_one_to_five_are_monday_to_friday() {
        // 2026-11-20 is a Friday.
        let mut t = utc("2026-11-20T12:00:00Z");
        let spec = CronSpec::parse("0 9 * * 1-5").unwrap();
        let mut days = Vec::new();
        for _ in 0..5 {
            t = spec.next_after(t, Tz::UTC).unwrap();
            days.push(t.weekday().to_string());
        }
        assert_eq!(days, ["Mon", "Tue", "Wed", "Thu", "Fri"]);
        assert_eq!(CronSpec::parse("0 9 * * mon-fri").unwrap(), spec);
        assert_eq!(
            CronSpec::parse("0 9 * * 0").unwrap(),
            CronSpec::parse("0 9 * * 7").unwrap()
        );
    }

    #[test]
    fn spring_forward_gap_runs_at_first_valid_instant() {
        // 2026-03-08: New York clocks jump from 02:00 to 03:00.
        assert_eq!(
            next("30 2 * * *", "2026-03-07T12:00:00Z", "America/New_York"),
            "2026-03-08T03:00:00-04:00"
        );
        // And the day after, 02:30 exists again.
        assert_eq!(
            next("30 2 * * *", "2026-03-08T08:00:00Z", "America/New_York"),
            "2026-03-09T02:30:00-04:00"
        );
    }

    #[test]
    fn fall_back_fold_runs_once() {
        // 2026-11-01: New York clocks fall back from 02:00 EDT to 01:00 EST.
        let first = next("30 1 * * *", "2026-10-31T12:00:00Z", "America/New_York");
        assert_eq!(first, "2026-11-01T01:30:00-04:00");
        let after_first = DateTime::parse_from_rfc3339(&first).unwrap().to_rfc3339();
        let second = next("30 1 * * *", &after_first, "America/New_York");
        assert_eq!(
            second, "2026-11-02T01:30:00-05:00",
            "not again at 01:30 EST"
        );
    }

    #[test]
    fn steps_lists_and_names() {
        assert_eq!(
            next("*/15 * * * *", "2026-01-01T00:07:00Z", "UTC"),
            "2026-01-01T00:15:00+00:00"
        );
        assert_eq!(
            next("5/20 * * * *", "2026-01-01T00:26:00Z", "UTC"),
            "2026-01-01T00:45:00+00:00"
        );
        assert_eq!(
            next("0 12 1 jan,jul *", "2026-02-01T00:00:00Z", "UTC"),
            "2026-07-01T12:00:00+00:00"
        );
        assert_eq!(
            next("0 0 29 2 *", "2026-03-01T00:00:00Z", "UTC"),
            "2028-02-29T00:00:00+00:00"
        );
        // Day of month OR day of week when both are given.
        assert_eq!(
            next("0 0 13 * 5", "2026-11-01T00:00:00Z", "UTC"),
            "2026-11-06T00:00:00+00:00"
        );
        assert_eq!(
            next("@hourly", "2026-01-01T00:30:00Z", "UTC"),
            "2026-01-01T01:00:00+00:00"
        );
    }

    #[test]
    fn descriptions_in_words() {
        for (expr, words) in [
            ("0 9 * * 1-5", "at 09:00 on Monday to Friday"),
            ("30 7 * * *", "at 07:30 every day"),
            ("0 15 * * 1,5", "at 15:00 on Monday and Friday"),
            ("*/15 * * * *", "every 15 minutes"),
            ("30 * * * 0,6", "every hour at :30 on Sunday and Saturday"),
            ("0 0 1 * *", "cron `0 0 1 * *`"),
            ("7,11 * * * *", "cron `7,11 * * * *`"),
        ] {
            assert_eq!(
                CronSpec::parse(expr).unwrap().describe(expr),
                words,
                "{expr}"
            );
        }
    }

    proptest::proptest! {
        /// Any text parses to a cron expression or is refused naming what was wrong; the
        /// next occurrence of one that parses is always later.
        #[test]
        fn any_text_parses_or_is_refused(text in proptest::prelude::any::<String>()) {
            if let Ok(spec) = CronSpec::parse(&text) {
                let after = utc("2026-01-01T00:00:00Z");
                if let Some(next) = spec.next_after(after, Tz::UTC) {
                    proptest::prop_assert!(next > after);
                }
                let _ = spec.describe(&text);
            }
        }

        #[test]
        fn any_field_of_numbers_steps_and_ranges(
            a in 0u32..100, b in 0u32..100, step in proptest::prelude::any::<u32>(),
        ) {
            let expr = format!("{a}-{b}/{step} * * * *");
            let _ = CronSpec::parse(&expr);
        }
    }

    #[test]
    fn bad_expressions_name_the_field() {
        for (expr, needle) in [
            ("* * * *", "5 fields"),
            ("60 * * * *", "minute"),
            ("* 24 * * *", "hour"),
            ("* * 0 * *", "day-of-month"),
            ("* * * 13 *", "month"),
            ("* * * * 8", "day-of-week"),
            ("*/0 * * * *", "step"),
            ("5-1 * * * *", "backwards"),
            ("x * * * *", "not a number"),
        ] {
            let err = CronSpec::parse(expr).unwrap_err().to_string();
            assert!(err.contains(needle), "{expr}: {err}");
        }
    }
}
