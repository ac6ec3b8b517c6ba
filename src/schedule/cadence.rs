//! When a schedule runs: a cron expression in a time zone, one instant, or a fixed
//! interval anchored to its first scheduled time (so a late run never drifts the ones
//! after it).

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use super::cron::{CronError, CronSpec};
use crate::db::clock::to_rfc3339;

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
    #[error("`{0}` never runs")]
    NeverRuns(String),
    #[error("invalid duration `{0}`: use a number with s, m, h or d, like 30s, 15m, 2h")]
    BadDuration(String),
    #[error(
        "invalid time `{0}`: use RFC 3339 (2026-01-31T09:00:00Z) or `YYYY-MM-DD HH:MM` in --tz"
    )]
    BadTime(String),
    #[error("cannot read `{0}` as a schedule; try forms like \"every weekday at 9am\", \"every 15 minutes\", \"tomorrow at 8pm\", \"in 2 hours\"")]
    NotUnderstood(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Cadence {
    Cron { expr: String, tz: String },
    Once { at: i64 },
    Interval { every_secs: i64, anchor: i64 },
}

pub fn parse_zone(tz: &str) -> Result<Tz, CadenceError> {
    tz.parse::<Tz>()
        .map_err(|_| CadenceError::UnknownZone(tz.to_string()))
}

fn at_ms(ms: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default()
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

    /// The first occurrence strictly after `after_ms`, or `None` when there is none.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match self {
            Cadence::Cron { expr, tz } => {
                let spec = CronSpec::parse(expr).ok()?;
                let tz = parse_zone(tz).ok()?;
                spec.next_after(at_ms(after_ms), tz)
                    .map(|t| t.timestamp_millis())
            }
            Cadence::Once { at } => (*at > after_ms).then_some(*at),
            Cadence::Interval { every_secs, anchor } => {
                let every = every_secs * 1000;
                if after_ms < *anchor {
                    return Some(*anchor);
                }
                let periods = (after_ms - anchor) / every + 1;
                Some(anchor + periods * every)
            }
        }
    }

    /// Checks a cadence at creation: it must run at least once after `now`, and never more
    /// often than every `min_interval_secs`.
    pub fn validate(&self, now_ms: i64, min_interval_secs: i64) -> Result<(), CadenceError> {
        match self {
            Cadence::Once { at } => {
                if *at <= now_ms {
                    return Err(CadenceError::InPast(to_rfc3339(*at)));
                }
            }
            Cadence::Interval { every_secs, .. } => {
                if *every_secs < min_interval_secs {
                    return Err(CadenceError::TooFrequent {
                        every_secs: *every_secs,
                        min_secs: min_interval_secs,
                    });
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
        }
        Ok(())
    }

    /// The zone times are shown in.
    pub fn zone(&self) -> Tz {
        match self {
            Cadence::Cron { tz, .. } => parse_zone(tz).unwrap_or(Tz::UTC),
            _ => Tz::UTC,
        }
    }

    /// A short human description.
    pub fn describe(&self) -> String {
        match self {
            Cadence::Cron { expr, tz } => format!("cron `{expr}` ({tz})"),
            Cadence::Once { at } => format!("once at {}", to_rfc3339(*at)),
            Cadence::Interval { every_secs, .. } => {
                format!("every {}", format_duration(*every_secs))
            }
        }
    }
}

/// Reads `30s`, `15m`, `2h`, `1d` (or a plain number of seconds).
pub fn parse_duration(text: &str) -> Result<i64, CadenceError> {
    let t = text.trim();
    let bad = || CadenceError::BadDuration(text.to_string());
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t, "s"),
    };
    let n: i64 = number.parse().map_err(|_| bad())?;
    let unit_secs = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 604_800,
        _ => return Err(bad()),
    };
    n.checked_mul(unit_secs).filter(|s| *s > 0).ok_or_else(bad)
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
    if let Ok(at) = DateTime::parse_from_rfc3339(t) {
        return Ok(at.timestamp_millis());
    }
    for format in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(naive) = chrono::NaiveDateTime::parse_from_str(t, format) {
            return Ok(super::cron::resolve_local(naive, tz).timestamp_millis());
        }
    }
    Err(CadenceError::BadTime(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_is_anchored_not_drifting() {
        let c = Cadence::Interval {
            every_secs: 60,
            anchor: 1_000_000,
        };
        assert_eq!(c.next_after(0), Some(1_000_000));
        assert_eq!(c.next_after(1_000_000), Some(1_060_000));
        // A run that started late does not move the ones after it.
        assert_eq!(c.next_after(1_065_432), Some(1_120_000));
    }

    #[test]
    fn validation() {
        let now = 1_800_000_000_000;
        assert!(Cadence::Once { at: now - 1 }.validate(now, 60).is_err());
        assert!(Cadence::Once { at: now + 1 }.validate(now, 60).is_ok());
        let fast = Cadence::Interval {
            every_secs: 30,
            anchor: now,
        };
        assert!(matches!(
            fast.validate(now, 60),
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
        for bad in ["", "m", "-5m", "0s", "5 parsecs", "1.5h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
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
    }
}

/// The ways a user can say when something runs; exactly one of them is given.
#[derive(Debug, Clone, Default)]
pub struct CadenceInput<'a> {
    pub cron: Option<&'a str>,
    pub tz: Option<&'a str>,
    pub every: Option<&'a str>,
    pub at: Option<&'a str>,
    pub when: Option<&'a str>,
}

impl CadenceInput<'_> {
    /// Resolves to a cadence and, for natural language, the user's words.
    pub fn resolve(
        &self,
        now_ms: i64,
        default_tz: &str,
    ) -> Result<(Cadence, Option<String>), CadenceError> {
        let tz_name = self.tz.unwrap_or(default_tz);
        let tz = parse_zone(tz_name)?;
        match (self.cron, self.every, self.at, self.when) {
            (Some(expr), None, None, None) => Ok((Cadence::cron(expr, tz_name)?, None)),
            (None, Some(every), None, None) => {
                let every_secs = parse_duration(every)?;
                Ok((
                    Cadence::Interval {
                        every_secs,
                        anchor: now_ms + every_secs * 1000,
                    },
                    None,
                ))
            }
            (None, None, Some(at), None) => Ok((
                Cadence::Once {
                    at: parse_instant(at, tz)?,
                },
                None,
            )),
            (None, None, None, Some(text)) => Ok((
                super::natural::parse(text, now_ms, tz)?,
                Some(text.trim().to_string()),
            )),
            _ => Err(CadenceError::NotUnderstood(
                "give exactly one of cron, every, at, when".to_string(),
            )),
        }
    }
}
