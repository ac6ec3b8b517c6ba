//! Quiet hours: a daily window, in a user's own time zone, when notifications that can
//! wait do wait (`[users.X] quiet_hours = "22:00-07:00"`). A value type below the config
//! and the notifier alike, so both read the same window the same way.

use chrono::{TimeZone, Timelike, Utc};
use chrono_tz::Tz;

use crate::time_of_day::TimeOfDay;

/// A daily window `start..end`, local to `zone`; past midnight when `start > end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    start: TimeOfDay,
    end: TimeOfDay,
    zone: Tz,
}

impl QuietHours {
    /// Reads `HH:MM-HH:MM` (24-hour, local to `zone`). The two ends differ: a window of
    /// no length, or of the whole day, is not one anyone means.
    pub fn parse(window: &str, zone: Tz) -> Result<Self, String> {
        let form = "write it as HH:MM-HH:MM, such as 22:00-07:00";
        let (start, end) = window
            .split_once('-')
            .ok_or_else(|| format!("`{window}` is not a window: {form}"))?;
        let (start, end) = (TimeOfDay::parse(start)?, TimeOfDay::parse(end)?);
        if start == end {
            return Err(format!(
                "`{window}` starts and ends at the same time: {form}"
            ));
        }
        Ok(Self { start, end, zone })
    }

    /// A window and the name of its zone as a config gives them (UTC when none): the error
    /// says which of the two is wrong, as `(key suffix, reason)`.
    pub fn from_settings(window: &str, zone: Option<&str>) -> Result<Self, (&'static str, String)> {
        let zone = match zone {
            Some(name) => name.parse::<Tz>().map_err(|_| {
                (
                    "timezone",
                    format!("unknown time zone `{name}` (use an IANA name such as Europe/Lisbon)"),
                )
            })?,
            None => Tz::UTC,
        };
        Self::parse(window, zone).map_err(|reason| ("quiet_hours", reason))
    }

    /// Whether `minute` (after local midnight) falls in the window.
    fn holds(&self, minute: u32) -> bool {
        let (start, end) = (self.start.minute(), self.end.minute());
        if start < end {
            (start..end).contains(&minute)
        } else {
            minute >= start || minute < end
        }
    }

    /// When the window holding `now_ms` ends (Unix ms, always later than `now_ms`), or
    /// `None` when `now_ms` is outside it. An end a clock change skips is the first minute
    /// after the gap; an end the clock passes twice (set back) is its first pass still to
    /// come.
    pub fn ends_after(&self, now_ms: i64) -> Option<i64> {
        let local = Utc
            .timestamp_millis_opt(now_ms)
            .single()?
            .with_timezone(&self.zone);
        if !self.holds(local.hour() * 60 + local.minute()) {
            return None;
        }
        self.end.next_after(self.zone, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_of_day::DAY_MINUTES as DAY;
    use chrono::NaiveTime;
    use proptest::prelude::*;

    fn at(zone: Tz, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
        zone.with_ymd_and_hms(y, mo, d, h, mi, 0)
            .single()
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn a_window_past_midnight_holds_the_night_and_ends_in_the_morning() {
        let lisbon: Tz = "Europe/Lisbon".parse().unwrap();
        let quiet = QuietHours::parse("22:00-07:00", lisbon).unwrap();
        assert_eq!(quiet.ends_after(at(lisbon, 2026, 11, 27, 21, 59)), None);
        assert_eq!(
            quiet.ends_after(at(lisbon, 2026, 11, 27, 23, 30)),
            Some(at(lisbon, 2026, 11, 28, 7, 0))
        );
        assert_eq!(
            quiet.ends_after(at(lisbon, 2026, 11, 28, 3, 0)),
            Some(at(lisbon, 2026, 11, 28, 7, 0))
        );
        assert_eq!(quiet.ends_after(at(lisbon, 2026, 11, 28, 7, 0)), None);
    }

    #[test]
    fn a_window_within_a_day_ends_that_day() {
        let quiet = QuietHours::parse("12:30-14:00", Tz::UTC).unwrap();
        assert_eq!(
            quiet.ends_after(at(Tz::UTC, 2026, 1, 1, 13, 0)),
            Some(at(Tz::UTC, 2026, 1, 1, 14, 0))
        );
        assert_eq!(quiet.ends_after(at(Tz::UTC, 2026, 1, 1, 14, 0)), None);
        assert_eq!(quiet.ends_after(at(Tz::UTC, 2026, 1, 1, 12, 29)), None);
    }

    #[test]
    fn an_end_in_a_clock_change_gap_is_the_gap_end() {
        // New York skips 02:00-03:00 on 2026-03-08.
        let ny: Tz = "America/New_York".parse().unwrap();
        let quiet = QuietHours::parse("01:00-02:30", ny).unwrap();
        let end = quiet.ends_after(at(ny, 2026, 3, 8, 1, 30)).unwrap();
        assert_eq!(end, at(ny, 2026, 3, 8, 3, 0));
    }

    #[test]
    fn in_the_hour_a_clock_repeats_the_end_still_to_come_is_waited_for() {
        // New York sets its clocks back at 02:00 EDT on 2026-11-01: 01:00-02:00 comes twice.
        let ny: Tz = "America/New_York".parse().unwrap();
        let quiet = QuietHours::parse("22:00-01:30", ny).unwrap();
        let utc = |h, m| at(Tz::UTC, 2026, 11, 1, h, m);
        // 01:10 EDT (05:10 UTC): the first 01:30 is to come.
        assert_eq!(quiet.ends_after(utc(5, 10)), Some(utc(5, 30)));
        // 01:10 EST (06:10 UTC): the first 01:30 has passed; the second is to come.
        assert_eq!(quiet.ends_after(utc(6, 10)), Some(utc(6, 30)));
        assert_eq!(quiet.ends_after(utc(6, 30)), None);
    }

    #[test]
    fn bad_windows_say_what_is_wrong() {
        for (text, says) in [
            ("22:00", "not a window"),
            ("22-07", "not a time of day"),
            ("24:00-07:00", "00:00 to 23:59"),
            ("22:60-07:00", "00:00 to 23:59"),
            ("07:00-07:00", "same time"),
            ("+7:00-08:00", "not a time of day"),
            ("", "not a window"),
        ] {
            let err = QuietHours::parse(text, Tz::UTC).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
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
        /// Any text: a window or an error, never a panic.
        #[test]
        fn any_text_parses_or_is_refused(text in "\\PC{0,14}") {
            let _ = QuietHours::parse(&text, Tz::UTC);
        }

        /// Any window, zone and instant: outside the window there is no end; inside it,
        /// the end is later, within a day and an hour, and at it the window is over.
        #[test]
        fn the_end_is_after_now_within_a_day_and_outside_the_window(
            start in 0u32..DAY,
            end in 0u32..DAY,
            zone in zones(),
            now in 0i64..4_102_444_800_000,
        ) {
            prop_assume!(start != end);
            let text = format!("{:02}:{:02}-{:02}:{:02}", start / 60, start % 60, end / 60, end % 60);
            let quiet = QuietHours::parse(&text, zone).unwrap();
            let local = Utc.timestamp_millis_opt(now).unwrap().with_timezone(&zone);
            let inside = quiet.holds(local.hour() * 60 + local.minute());
            match quiet.ends_after(now) {
                None => prop_assert!(!inside, "{text} in {zone} at {local}"),
                Some(until) => {
                    prop_assert!(inside);
                    prop_assert!(until > now);
                    prop_assert!(until - now <= 25 * 3_600_000, "{text} {zone} {local}");
                    // The end is the window's end on the clock, or the first minute
                    // after a gap a clock change made there; on the clock's end, it is
                    // over.
                    let at_end = Utc.timestamp_millis_opt(until).unwrap().with_timezone(&zone);
                    let end_time = NaiveTime::from_hms_opt(end / 60, end % 60, 0).unwrap();
                    if at_end.hour() * 60 + at_end.minute() == end {
                        prop_assert_eq!(quiet.ends_after(until), None, "{} {} {}", text, zone, local);
                    } else {
                        let skipped = |date: chrono::NaiveDate| {
                            zone.from_local_datetime(&date.and_time(end_time)).earliest().is_none()
                        };
                        let date = at_end.date_naive();
                        prop_assert!(
                            skipped(date) || date.pred_opt().is_some_and(skipped),
                            "{text} in {zone} at {local}: ends at {at_end}, not on its end"
                        );
                    }
                }
            }
        }
    }
}
