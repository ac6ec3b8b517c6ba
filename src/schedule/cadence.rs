//! When a schedule runs: a cron expression in a time zone, one instant, or a fixed
//! interval anchored to its first scheduled time (so a late run never drifts the ones
//! after it). Every cadence keeps the zone its times are shown in.
//!
//! Arithmetic on times is checked: a cadence whose next occurrence would fall outside the
//! instants nightshift accepts (1970 to 9999) simply has none.

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use super::cron::{CronError, CronSpec};
use crate::error::{ErrorKind, Kind};
use crate::input::{MAX_DURATION_SECS, MAX_INSTANT_MS};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CadenceError {
    #[error(transparent)]
    Cron(#[from] CronError),
    #[error("unknown time zone `{0}` (use an IANA name such as Europe/Lisbon)")]
    UnknownZone(String),
    #[error(
        "runs every {every_secs}s, under the minimum of {min_secs}s (scheduler.min_interval_secs)"
    )]
    TooFrequent { every_secs: i64, min_secs: i64 },
    #[error("{0} is in the past")]
    InPast(String),
    #[error("{0} is more than 10 years ahead")]
    TooFar(String),
    #[error("`{0}` never runs")]
    NeverRuns(String),
    #[error("invalid duration `{0}`: use a whole number with s, m, h, d or w, like 30s, 15m, 2h")]
    BadDuration(String),
    #[error("duration `{0}` is longer than the maximum of 10 years (3650d)")]
    DurationTooLong(String),
    #[error(
        "invalid time `{0}`: use RFC 3339 (2026-01-31T09:00:00Z) or `YYYY-MM-DD HH:MM` in the schedule's zone"
    )]
    BadTime(String),
    #[error("cannot read `{0}` as a schedule; try forms like \"every weekday at 9am\", \"every 15 minutes\", \"tomorrow at 8pm\", \"in 2 hours\"")]
    NotUnderstood(String),
    #[error("`{text}` contradicts itself: {reason}")]
    Contradiction { text: String, reason: String },
}

impl Kind for CadenceError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::BadInput
    }
}

fn utc_name() -> String {
    "UTC".to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Cadence {
    Cron {
        expr: String,
        tz: String,
    },
    Once {
        at: i64,
        /// The zone the instant was given in, and is shown in.
        #[serde(default = "utc_name")]
        tz: String,
    },
    Interval {
        every_secs: i64,
        anchor: i64,
        #[serde(default = "utc_name")]
        tz: String,
    },
    /// No time of its own: runs only when triggered, or when the schedule it follows
    /// finishes a run.
    Triggered {
        #[serde(default = "utc_name")]
        tz: String,
    },
}

pub fn parse_zone(tz: &str) -> Result<Tz, CadenceError> {
    tz.parse::<Tz>()
        .map_err(|_| CadenceError::UnknownZone(crate::input::printable(tz).into_owned()))
}

fn at_ms(ms: i64) -> Option<DateTime<Utc>> {
    DateTime::<Utc>::from_timestamp_millis(ms)
}

/// An instant as RFC 3339 in `tz`, to the second.
pub fn render(ms: i64, tz: Tz) -> String {
    at_ms(ms)
        .map(|t| {
            t.with_timezone(&tz)
                .to_rfc3339_opts(SecondsFormat::Secs, true)
        })
        .unwrap_or_else(|| ms.to_string())
}

impl Cadence {
    pub fn cron(expr: &str, tz: &str) -> Result<Self, CadenceError> {
        CronSpec::parse(expr)?;
        parse_zone(tz)?;
        Ok(Cadence::Cron {
            expr: expr.trim().to_string(),
            tz: tz.to_string(),
        })
    }

    /// One run at `at`, shown in `tz`.
    pub fn once(at: i64, tz: Tz) -> Self {
        Cadence::Once {
            at,
            tz: tz.name().to_string(),
        }
    }

    /// Every `every_secs`, the first `every_secs` after `now_ms`, shown in `tz`. `None`
    /// when that first run would be out of range.
    pub fn every(every_secs: i64, now_ms: i64, tz: Tz) -> Option<Self> {
        let anchor = now_ms.checked_add(every_secs.checked_mul(1000)?)?;
        Some(Cadence::Interval {
            every_secs,
            anchor,
            tz: tz.name().to_string(),
        })
    }

    /// The same cadence in another zone: a cron expression is read in `tz`; a one-shot's
    /// instant and an interval's rhythm stay, shown in `tz`.
    pub fn in_zone(&self, tz: Tz) -> Result<Self, CadenceError> {
        Ok(match self {
            Cadence::Cron { expr, .. } => Cadence::cron(expr, tz.name())?,
            Cadence::Once { at, .. } => Cadence::once(*at, tz),
            Cadence::Interval {
                every_secs, anchor, ..
            } => Cadence::Interval {
                every_secs: *every_secs,
                anchor: *anchor,
                tz: tz.name().to_string(),
            },
            Cadence::Triggered { .. } => Cadence::Triggered {
                tz: tz.name().to_string(),
            },
        })
    }

    /// The first occurrence strictly after `after_ms`, or `None` when there is none.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let next = match self {
            Cadence::Cron { expr, tz } => {
                let spec = CronSpec::parse(expr).ok()?;
                let tz = parse_zone(tz).ok()?;
                // Nothing accepted follows the last accepted instant, and far outside the
                // range chrono has no wall-clock time to read (it panics near its limits).
                if after_ms >= MAX_INSTANT_MS {
                    return None;
                }
                spec.next_after(at_ms(after_ms.max(-MAX_INSTANT_MS))?, tz)
                    .map(|t| t.timestamp_millis())
            }
            Cadence::Once { at, .. } => (*at > after_ms).then_some(*at),
            Cadence::Interval {
                every_secs, anchor, ..
            } => {
                let every = every_secs.checked_mul(1000).filter(|e| *e > 0)?;
                if after_ms < *anchor {
                    // Checked against the range below like any other (an anchor made
                    // near the last instant may lie past it).
                    Some(*anchor)
                } else {
                    let periods = after_ms.checked_sub(*anchor)? / every + 1;
                    anchor.checked_add(periods.checked_mul(every)?)
                }
            }
            Cadence::Triggered { .. } => None,
        }?;
        (next <= MAX_INSTANT_MS).then_some(next)
    }

    /// Checks a cadence at creation: it must run at least once after `now`, within ten
    /// years, and never more often than every `min_interval_secs`.
    pub fn validate(&self, now_ms: i64, min_interval_secs: i64) -> Result<(), CadenceError> {
        let horizon = now_ms.saturating_add(MAX_DURATION_SECS * 1000);
        match self {
            Cadence::Once { at, tz } => {
                let shown = render(*at, parse_zone(tz).unwrap_or(Tz::UTC));
                if *at <= now_ms {
                    return Err(CadenceError::InPast(shown));
                }
                if *at > horizon {
                    return Err(CadenceError::TooFar(shown));
                }
            }
            Cadence::Interval { every_secs, .. } => {
                if *every_secs < min_interval_secs {
                    return Err(CadenceError::TooFrequent {
                        every_secs: *every_secs,
                        min_secs: min_interval_secs,
                    });
                }
                if *every_secs > MAX_DURATION_SECS {
                    return Err(CadenceError::DurationTooLong(format!("{every_secs}s")));
                }
                if self.next_after(now_ms).is_none() {
                    return Err(CadenceError::NeverRuns(self.describe()));
                }
            }
            Cadence::Cron { expr, .. } => {
                // The tightest gap over the next occurrences tells how often it fires.
                let mut previous = self
                    .next_after(now_ms)
                    .ok_or_else(|| CadenceError::NeverRuns(expr.clone()))?;
                for _ in 0..64 {
                    let Some(next) = self.next_after(previous) else {
                        break;
                    };
                    let gap = (next - previous) / 1000;
                    if gap < min_interval_secs {
                        return Err(CadenceError::TooFrequent {
                            every_secs: gap,
                            min_secs: min_interval_secs,
                        });
                    }
                    previous = next;
                }
            }
            // Nothing to check: it has no times.
            Cadence::Triggered { .. } => {}
        }
        Ok(())
    }

    /// The zone times are shown in.
    pub fn zone(&self) -> Tz {
        let name = match self {
            Cadence::Cron { tz, .. }
            | Cadence::Once { tz, .. }
            | Cadence::Interval { tz, .. }
            | Cadence::Triggered { tz } => tz,
        };
        parse_zone(name).unwrap_or(Tz::UTC)
    }

    /// The cadence in plain words, with its zone: "at 09:00 on Monday to Friday
    /// (Europe/Lisbon)", "every 15m", "once at 2026-11-27T17:00:00-08:00".
    pub fn describe(&self) -> String {
        match self {
            Cadence::Cron { expr, tz } => match CronSpec::parse(expr) {
                Ok(spec) => format!("{} ({tz})", spec.describe(expr)),
                Err(_) => format!("cron `{expr}` ({tz})"),
            },
            Cadence::Once { at, tz } => {
                format!("once at {}", render(*at, parse_zone(tz).unwrap_or(Tz::UTC)))
            }
            Cadence::Interval { every_secs, .. } => {
                format!("every {}", format_duration(*every_secs))
            }
            Cadence::Triggered { .. } => "only when triggered".to_string(),
        }
    }
}

/// Reads `30s`, `15m`, `2h`, `1d`, `1w` (or a plain number of seconds): a whole, positive
/// number of seconds, at most ten years.
pub fn parse_duration(text: &str) -> Result<i64, CadenceError> {
    let t = text.trim();
    let shown = || crate::input::printable(text).into_owned();
    let bad = || CadenceError::BadDuration(shown());
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t, "s"),
    };
    if number.is_empty() {
        return Err(bad());
    }
    let unit_secs: i64 = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 604_800,
        _ => return Err(bad()),
    };
    // Only digits are left: a number too large for i64 is too long, not malformed.
    let too_long = || CadenceError::DurationTooLong(shown());
    let n: i64 = number.parse().map_err(|_| too_long())?;
    let secs = n.checked_mul(unit_secs).ok_or_else(too_long)?;
    if secs <= 0 {
        return Err(bad());
    }
    if secs > MAX_DURATION_SECS {
        return Err(too_long());
    }
    Ok(secs)
}

pub fn format_duration(secs: i64) -> String {
    match secs {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// Reads an instant: RFC 3339, or `YYYY-MM-DD HH:MM[:SS]` / `YYYY-MM-DDTHH:MM` in `tz`.
pub fn parse_instant(text: &str, tz: Tz) -> Result<i64, CadenceError> {
    let t = text.trim();
    let bad = || CadenceError::BadTime(crate::input::printable(text).into_owned());
    let ms = if let Ok(at) = DateTime::parse_from_rfc3339(t) {
        at.timestamp_millis()
    } else {
        let naive = [
            "%Y-%m-%d %H:%M:%S",
            "%Y-%m-%d %H:%M",
            "%Y-%m-%dT%H:%M:%S",
            "%Y-%m-%dT%H:%M",
        ]
        .iter()
        .find_map(|format| chrono::NaiveDateTime::parse_from_str(t, format).ok())
        .ok_or_else(bad)?;
        super::cron::resolve_local(naive, tz).timestamp_millis()
    };
    crate::input::check_instant("time", ms).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn interval(every_secs: i64, anchor: i64) -> Cadence {
        Cadence::Interval {
            every_secs,
            anchor,
            tz: "UTC".into(),
        }
    }

    #[test]
    fn an_anchor_past_the_last_instant_has_no_next_run() {
        let c = Cadence::every(63_630_379, 253_338_670_421_000, Tz::UTC).unwrap();
        assert_eq!(c.next_after(0), None);
    }

    #[test]
    fn interval_is_anchored_not_drifting() {
        let c = interval(60, 1_000_000);
        assert_eq!(c.next_after(0), Some(1_000_000));
        assert_eq!(c.next_after(1_000_000), Some(1_060_000));
        // A run that started late does not move the ones after it.
        assert_eq!(c.next_after(1_065_432), Some(1_120_000));
    }

    #[test]
    fn validation() {
        let now = 1_800_000_000_000;
        assert!(Cadence::once(now - 1, Tz::UTC).validate(now, 60).is_err());
        assert!(Cadence::once(now + 1, Tz::UTC).validate(now, 60).is_ok());
        assert!(matches!(
            Cadence::once(now + 11 * 365 * 86_400_000, Tz::UTC).validate(now, 60),
            Err(CadenceError::TooFar(_))
        ));
        assert!(matches!(
            interval(30, now).validate(now, 60),
            Err(CadenceError::TooFrequent { .. })
        ));
        let every_minute = Cadence::cron("* * * * *", "UTC").unwrap();
        assert!(every_minute.validate(now, 60).is_ok());
        assert!(every_minute.validate(now, 300).is_err());
        assert!(Cadence::cron("0 9 * * *", "Mars/Olympus").is_err());
        assert!(matches!(
            Cadence::cron("0 0 31 2 *", "UTC")
                .unwrap()
                .validate(now, 60),
            Err(CadenceError::NeverRuns(_))
        ));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), 30);
        assert_eq!(parse_duration("15m").unwrap(), 900);
        assert_eq!(parse_duration("2h").unwrap(), 7200);
        assert_eq!(parse_duration("1d").unwrap(), 86_400);
        assert_eq!(parse_duration("45").unwrap(), 45);
        assert_eq!(parse_duration("3650d").unwrap(), MAX_DURATION_SECS);
        for bad in ["", "m", "-5m", "0s", "5 parsecs", "1.5h", "+5m", "٣s"] {
            assert!(
                matches!(parse_duration(bad), Err(CadenceError::BadDuration(_))),
                "{bad}"
            );
        }
        for long in [
            "2305843009213693952s",
            "9223372036854775807s",
            "99999999999999999999999s",
            "1000000000000h",
            "3651d",
        ] {
            assert!(
                matches!(parse_duration(long), Err(CadenceError::DurationTooLong(_))),
                "{long}"
            );
        }
    }

    #[test]
    fn instants() {
        let ny: Tz = "America/New_York".parse().unwrap();
        assert_eq!(
            parse_instant("2026-01-01T00:00:00Z", ny).unwrap(),
            1_767_225_600_000
        );
        assert_eq!(
            parse_instant("2025-12-31 19:00", ny).unwrap(),
            1_767_225_600_000
        );
        assert!(parse_instant("tomorrow-ish", ny).is_err());
        assert!(parse_instant("1969-12-31T23:59:59Z", ny).is_err());
    }

    proptest! {
        /// Any text is a duration within 1s..=10 years, or an error; never a panic or a
        /// wrapped value.
        #[test]
        fn any_text_is_a_bounded_duration_or_an_error(text in any::<String>()) {
            if let Ok(secs) = parse_duration(&text) {
                prop_assert!((1..=MAX_DURATION_SECS).contains(&secs));
            }
        }

        /// Any number with any unit, including ones that overflow.
        #[test]
        fn any_number_and_unit(n in any::<u64>(), unit in prop::sample::select(vec!["", "s", "m", "h", "d", "w", "x"])) {
            let text = format!("{n}{unit}");
            match parse_duration(&text) {
                Ok(secs) => prop_assert!((1..=MAX_DURATION_SECS).contains(&secs)),
                Err(err) => prop_assert!(!err.to_string().is_empty()),
            }
        }

        /// An interval of any accepted length, from any accepted instant, has a next run
        /// after any instant, or none; never a panic or a wrapped value.
        #[test]
        fn interval_arithmetic_never_overflows(
            every in 1..=MAX_DURATION_SECS,
            now in 0..=MAX_INSTANT_MS,
            after in any::<i64>(),
        ) {
            if let Some(cadence) = Cadence::every(every, now, Tz::UTC) {
                if let Some(next) = cadence.next_after(after) {
                    prop_assert!(next > after);
                    prop_assert!(next <= MAX_INSTANT_MS);
                }
            }
        }

        #[test]
        fn any_text_is_an_instant_in_range_or_an_error(text in any::<String>()) {
            if let Ok(ms) = parse_instant(&text, Tz::UTC) {
                prop_assert!((0..=MAX_INSTANT_MS).contains(&ms));
            }
        }
    }
}
