//! A time of day on a local clock (`08:00`), and the next instant a zone's clock reads it.
//! A value type below the config and the notifier alike: quiet hours end at one, a digest
//! goes out at one, and both read the clock the same way through its changes.

use chrono::{Days, Duration, LocalResult, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

/// Minutes in a day.
pub const DAY_MINUTES: u32 = 24 * 60;

/// `HH:MM` on a 24-hour clock, as minutes after local midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimeOfDay(u32);

impl TimeOfDay {
    /// Reads `H:MM` or `HH:MM`, 00:00 to 23:59; spaces around it are allowed.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (hours, mins) = text
            .split_once(':')
            .filter(|(h, m)| {
                (1..=2).contains(&h.len())
                    && m.len() == 2
                    && h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit())
            })
            .ok_or_else(|| format!("`{text}` is not a time of day: write HH:MM, such as 08:00"))?;
        // At most two ASCII digits each: these cannot fail.
        let (hours, mins): (u32, u32) = (hours.parse().unwrap_or(99), mins.parse().unwrap_or(99));
        if hours > 23 || mins > 59 {
            return Err(format!("`{text}` is not a time of day (00:00 to 23:59)"));
        }
        Ok(Self(hours * 60 + mins))
    }

    /// Minutes after local midnight.
    pub fn minute(self) -> u32 {
        self.0
    }

    /// A time from minutes after midnight; `None` past 23:59.
    pub fn from_minute(minute: u32) -> Option<Self> {
        (minute < DAY_MINUTES).then_some(Self(minute))
    }

    /// The first instant after `now_ms` (Unix ms) at which `zone`'s clock reads this time.
    /// A time a clock change skips on some day is that day's first minute after the gap;
    /// a time the clock passes twice (set back) counts each pass.
    pub fn next_after(self, zone: Tz, now_ms: i64) -> Option<i64> {
        let local = Utc
            .timestamp_millis_opt(now_ms)
            .single()?
            .with_timezone(&zone);
        let time = NaiveTime::from_hms_opt(self.0 / 60, self.0 % 60, 0)?;
        // Today's passes may all be behind `now`; tomorrow's cannot be. A third day guards
        // against a zone that skips a whole day (Samoa, 2011-12-30).
        for days_ahead in 0..=2 {
            let date = local.date_naive().checked_add_days(Days::new(days_ahead))?;
            let mut naive = date.and_time(time);
            for _ in 0..=DAY_MINUTES {
                let passes = match zone.from_local_datetime(&naive) {
                    LocalResult::Single(at) => [Some(at), None],
                    LocalResult::Ambiguous(first, second) => [Some(first), Some(second)],
                    LocalResult::None => {
                        // Skipped by a clock change: a minute on.
                        naive = naive.checked_add_signed(Duration::minutes(1))?;
                        continue;
                    }
                };
                if let Some(at) = passes
                    .into_iter()
                    .flatten()
                    .map(|at| at.with_timezone(&Utc).timestamp_millis())
                    .find(|&at| at > now_ms)
                {
                    return Some(at);
                }
                break;
            }
        }
        None
    }
}

impl std::fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02}:{:02}", self.0 / 60, self.0 % 60)
    }
}

/// A time of day in a zone: each day's `08:00` in Lisbon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DailyTime {
    pub at: TimeOfDay,
    pub zone: Tz,
}

impl DailyTime {
    /// 08:00 UTC.
    pub const MORNING_UTC: Self = Self {
        at: TimeOfDay(8 * 60),
        zone: Tz::UTC,
    };

    /// The first instant after `now_ms` this time comes (see [`TimeOfDay::next_after`]).
    pub fn next_after(self, now_ms: i64) -> Option<i64> {
        self.at.next_after(self.zone, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Timelike;
    use proptest::prelude::*;

    fn at(zone: Tz, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
        zone.with_ymd_and_hms(y, mo, d, h, mi, 0)
            .single()
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn the_next_is_today_until_it_has_come_then_tomorrow() {
        let lisbon: Tz = "Europe/Lisbon".parse().unwrap();
        let eight = TimeOfDay::parse("08:00").unwrap();
        assert_eq!(
            eight.next_after(lisbon, at(lisbon, 2026, 7, 1, 7, 59)),
            Some(at(lisbon, 2026, 7, 1, 8, 0))
        );
        assert_eq!(
            eight.next_after(lisbon, at(lisbon, 2026, 7, 1, 8, 0)),
            Some(at(lisbon, 2026, 7, 2, 8, 0))
        );
    }

    #[test]
    fn a_skipped_time_is_the_first_minute_after_the_gap_and_a_repeated_one_comes_twice() {
        // New York skips 02:00-03:00 on 2026-03-08 and repeats 01:00-02:00 on 2026-11-01.
        let ny: Tz = "America/New_York".parse().unwrap();
        let half_two = TimeOfDay::parse("2:30").unwrap();
        assert_eq!(
            half_two.next_after(ny, at(ny, 2026, 3, 8, 1, 0)),
            Some(at(ny, 2026, 3, 8, 3, 0))
        );
        let half_one = TimeOfDay::parse("01:30").unwrap();
        let utc = |h, m| at(Tz::UTC, 2026, 11, 1, h, m);
        assert_eq!(half_one.next_after(ny, utc(5, 0)), Some(utc(5, 30)));
        assert_eq!(half_one.next_after(ny, utc(5, 30)), Some(utc(6, 30)));
    }

    #[test]
    fn bad_times_say_what_is_wrong() {
        for (text, says) in [
            ("8", "not a time of day"),
            ("24:00", "00:00 to 23:59"),
            ("12:60", "00:00 to 23:59"),
            ("+8:00", "not a time of day"),
            ("08:0", "not a time of day"),
            ("", "not a time of day"),
        ] {
            let err = TimeOfDay::parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        assert_eq!(TimeOfDay::parse(" 7:05 ").unwrap().to_string(), "07:05");
    }

    fn zones() -> impl Strategy<Value = Tz> {
        prop::sample::select(vec![
            Tz::UTC,
            "Europe/Lisbon".parse().unwrap(),
            "America/New_York".parse().unwrap(),
            "Australia/Lord_Howe".parse().unwrap(),
            "Asia/Kathmandu".parse().unwrap(),
            "Pacific/Apia".parse().unwrap(),
        ])
    }

    proptest! {
        /// Any text: a time or an error, never a panic; a time reads back as written.
        #[test]
        fn any_text_parses_or_is_refused(text in "\\PC{0,8}") {
            if let Ok(time) = TimeOfDay::parse(&text) {
                prop_assert_eq!(TimeOfDay::parse(&time.to_string()), Ok(time));
            }
        }

        /// Any time, zone and instant: the next is later, within a day and two hours (a
        /// skipped day aside, which these zones do not have in range), reads the time on
        /// the clock unless a gap took it, and is the next from any instant before it.
        #[test]
        fn the_next_is_later_on_the_clock_and_stable_until_it_comes(
            minute in 0u32..DAY_MINUTES,
            zone in zones(),
            now in 1_400_000_000_000i64..4_102_444_800_000,
            back in 0i64..86_400_000,
        ) {
            let time = TimeOfDay::from_minute(minute).unwrap();
            let next = time.next_after(zone, now).unwrap();
            prop_assert!(next > now);
            prop_assert!(next - now <= 26 * 3_600_000, "{time} {zone} {now}");
            let local = Utc.timestamp_millis_opt(next).unwrap().with_timezone(&zone);
            let on_clock = local.hour() * 60 + local.minute();
            if on_clock != minute {
                // A gap: a minute before this one did not exist on that clock.
                let before = local.naive_local() - Duration::minutes(1);
                prop_assert!(
                    zone.from_local_datetime(&before).earliest().is_none(),
                    "{time} in {zone}: {local} is neither the time nor after a gap"
                );
            }
            let earlier = (next - 1 - back).max(now);
            prop_assert_eq!(time.next_after(zone, earlier), Some(next));
        }
    }
}
