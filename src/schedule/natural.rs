//! Natural-language cadences ("every weekday at 9am", "in 2 hours") resolved to a cron
//! expression, an interval, or one instant. The user's own words are kept beside the
//! result by the caller.

use chrono::{DateTime, Datelike, Duration, NaiveTime, Utc, Weekday};
use chrono_tz::Tz;

use super::cadence::{Cadence, CadenceError};
use super::cron::resolve_local;
use crate::input::MAX_DURATION_SECS;
use crate::time_words::{amount, unit_secs, weekday};

/// Reads `text`, with "now" and the user's zone to resolve relative times.
pub fn parse(text: &str, now_ms: i64, tz: Tz) -> Result<Cadence, CadenceError> {
    let not_understood = || CadenceError::NotUnderstood(crate::input::printable(text).into_owned());
    let contradiction = |reason: String| CadenceError::Contradiction {
        text: crate::input::printable(text.trim()).into_owned(),
        reason,
    };
    // "in N units" and "every N units": checked, at most ten years.
    let seconds = |n: &str, unit: &str| -> Result<i64, CadenceError> {
        let n = amount(n).ok_or_else(not_understood)?;
        let unit = unit_secs(unit).ok_or_else(not_understood)?;
        n.checked_mul(unit)
            .filter(|s| *s <= MAX_DURATION_SECS)
            .ok_or_else(|| CadenceError::DurationTooLong(format!("{n} x {unit}s")))
    };
    let cleaned = text
        .trim()
        .trim_end_matches(['.', '!'])
        .to_lowercase()
        .replace(',', " ");
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    let now = DateTime::<Utc>::from_timestamp_millis(now_ms).ok_or_else(not_understood)?;
    let zone = tz.name().to_string();

    // Split off a trailing "at TIME" (or a bare time like "noon").
    let (head, time) = split_time(&words).ok_or_else(not_understood)?;
    let cron = |days: &str, time: Option<NaiveTime>| {
        let t = time.unwrap_or(NaiveTime::from_hms_opt(9, 0, 0).expect("valid"));
        Cadence::cron(
            &format!("{} {} * * {days}", t.minute_of(), t.hour_of()),
            &zone,
        )
    };

    match head.as_slice() {
        ["in", n, unit] | ["in", n, unit, "from", "now"] => {
            if time.is_some() {
                return Err(not_understood());
            }
            let secs = seconds(n, unit)?;
            let at = now_ms
                .checked_add(secs * 1000)
                .ok_or_else(|| CadenceError::DurationTooLong(text.trim().to_string()))?;
            Ok(Cadence::once(at, tz))
        }
        ["every", n, unit]
            if amount(n).is_some() && unit_secs(unit).is_some() && time.is_none() =>
        {
            let secs = seconds(n, unit)?;
            Cadence::every(secs, now_ms, tz)
                .ok_or_else(|| CadenceError::DurationTooLong(text.trim().to_string()))
        }
        ["every", unit] | ["each", unit]
            if matches!(*unit, "second" | "minute" | "hour") && time.is_none() =>
        {
            let secs = unit_secs(unit).expect("checked");
            Cadence::every(secs, now_ms, tz).ok_or_else(not_understood)
        }
        ["hourly"] if time.is_none() => Cadence::cron("0 * * * *", &zone),
        ["daily"] | ["every", "day"] | ["each", "day"] => cron("*", time),
        ["every", part] | ["each", part] if day_part(part).is_some() => {
            let (default, hours, name) = day_part(part).expect("checked");
            let t = time.unwrap_or(default);
            if !hours.contains(&t.hour_of()) {
                return Err(contradiction(format!(
                    "{} is not in the {name}",
                    t.format("%H:%M")
                )));
            }
            cron("*", Some(t))
        }
        ["every", "weekday"] | ["weekdays"] | ["on", "weekdays"] | ["every", "workday"] => {
            cron("1-5", time)
        }
        ["every", "weekend"] | ["weekends"] | ["on", "weekends"] => cron("0,6", time),
        ["weekly"] | ["every", "week"] => cron("1", time),
        ["every", "week", "on", rest @ ..]
        | ["weekly", "on", rest @ ..]
        | ["every", rest @ ..]
        | ["on", rest @ ..]
            if weekday_list(rest).is_some() =>
        {
            let days = weekday_list(rest).expect("checked");
            if head[0] == "on" && days.len() == 1 {
                // "on friday at 5pm": once, the next such day.
                return once_on(days[0], time, now, tz).ok_or_else(not_understood);
            }
            let list: Vec<String> = days
                .iter()
                .map(|d| d.num_days_from_sunday().to_string())
                .collect();
            cron(&list.join(","), time)
        }
        ["tomorrow"] => {
            let date = now.with_timezone(&tz).date_naive() + Duration::days(1);
            let t = time.unwrap_or(NaiveTime::from_hms_opt(9, 0, 0).expect("valid"));
            Ok(Cadence::once(
                resolve_local(date.and_time(t), tz).timestamp_millis(),
                tz,
            ))
        }
        ["today"] | [] => {
            let t = time.ok_or_else(not_understood)?;
            let today = now.with_timezone(&tz).date_naive();
            let mut at = resolve_local(today.and_time(t), tz);
            if at <= now && head.is_empty() {
                // A bare "at 5pm" that has passed today means tomorrow.
                at = resolve_local((today + Duration::days(1)).and_time(t), tz);
            }
            Ok(Cadence::once(at.timestamp_millis(), tz))
        }
        _ => Err(not_understood()),
    }
}

/// "morning", "afternoon", "evening", "night": the time it means when none is given, the
/// hours it covers (a time given outside them contradicts the phrase), and its name.
fn day_part(word: &str) -> Option<(NaiveTime, std::ops::RangeInclusive<u32>, &'static str)> {
    let at = |h| NaiveTime::from_hms_opt(h, 0, 0).expect("valid hour");
    Some(match word {
        "morning" => (at(9), 0..=11, "morning"),
        "afternoon" => (at(14), 12..=17, "afternoon"),
        "evening" => (at(18), 16..=23, "evening"),
        "night" => (at(21), 18..=23, "night"),
        _ => return None,
    })
}

trait HourMinute {
    fn hour_of(&self) -> u32;
    fn minute_of(&self) -> u32;
}

impl HourMinute for NaiveTime {
    fn hour_of(&self) -> u32 {
        chrono::Timelike::hour(self)
    }
    fn minute_of(&self) -> u32 {
        chrono::Timelike::minute(self)
    }
}

fn once_on(day: Weekday, time: Option<NaiveTime>, now: DateTime<Utc>, tz: Tz) -> Option<Cadence> {
    let t = time.unwrap_or(NaiveTime::from_hms_opt(9, 0, 0)?);
    let today = now.with_timezone(&tz).date_naive();
    for offset in 0..=7 {
        let date = today + Duration::days(offset);
        if date.weekday() == day {
            let at = resolve_local(date.and_time(t), tz);
            if at > now {
                return Some(Cadence::once(at.timestamp_millis(), tz));
            }
        }
    }
    None
}

/// Splits `… at 9am` (or a trailing bare time) from the rest. `None` when a time is
/// present but unreadable.
fn split_time<'a>(words: &[&'a str]) -> Option<(Vec<&'a str>, Option<NaiveTime>)> {
    if let Some(i) = words.iter().rposition(|w| *w == "at") {
        let time = parse_time(&words[i + 1..].join(" "))?;
        return Some((words[..i].to_vec(), Some(time)));
    }
    if let Some(last) = words.last() {
        if matches!(*last, "noon" | "midnight") {
            return Some((words[..words.len() - 1].to_vec(), parse_time(last)));
        }
    }
    Some((words.to_vec(), None))
}

/// `9am`, `9 am`, `9:30pm`, `07:30`, `21:00`, `noon`, `midnight`.
fn parse_time(text: &str) -> Option<NaiveTime> {
    let t = text.trim().replace(' ', "");
    match t.as_str() {
        "noon" => return NaiveTime::from_hms_opt(12, 0, 0),
        "midnight" => return NaiveTime::from_hms_opt(0, 0, 0),
        _ => {}
    }
    let (clock, meridiem) = if let Some(c) = t.strip_suffix("am") {
        (c, Some(false))
    } else if let Some(c) = t.strip_suffix("pm") {
        (c, Some(true))
    } else {
        (t.as_str(), None)
    };
    let (h, m) = match clock.split_once(':') {
        Some((h, m)) => (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?),
        None => (clock.parse::<u32>().ok()?, 0),
    };
    let h = match meridiem {
        Some(pm) => {
            if !(1..=12).contains(&h) {
                return None;
            }
            (h % 12) + if pm { 12 } else { 0 }
        }
        None => h,
    };
    NaiveTime::from_hms_opt(h, m, 0)
}

/// "monday and friday", "mon wed fri", "tuesday, thursday".
fn weekday_list(words: &[&str]) -> Option<Vec<Weekday>> {
    let mut days = Vec::new();
    for w in words {
        if matches!(*w, "and" | "&") {
            continue;
        }
        let day = weekday(w)?;
        if !days.contains(&day) {
            days.push(day);
        }
    }
    (!days.is_empty()).then_some(days)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Monday 2026-11-23 10:00 in New York.
    const NOW: i64 = 1_795_446_000_000;

    fn ny() -> Tz {
        "America/New_York".parse().unwrap()
    }

    fn show(c: &Cadence) -> String {
        match c {
            Cadence::Cron { expr, tz } => format!("cron {expr} {tz}"),
            Cadence::Once { at, .. } => format!(
                "once {}",
                DateTime::<Utc>::from_timestamp_millis(*at)
                    .unwrap()
                    .with_timezone(&ny())
                    .format("%a %Y-%m-%d %H:%M")
            ),
            Cadence::Interval { every_secs, .. } => format!("every {every_secs}s"),
            Cadence::Triggered { .. } => "triggered".to_string(),
        }
    }

    #[test]
    fn phrases_resolve_to_cadences() {
        assert_eq!(
            chrono::DateTime::<Utc>::from_timestamp_millis(NOW)
                .unwrap()
                .with_timezone(&ny())
                .to_rfc3339(),
            "2026-11-23T10:00:00-05:00"
        );
        let cases = [
            ("every weekday at 9am", "cron 0 9 * * 1-5 America/New_York"),
            ("every 15 minutes", "every 900s"),
            ("every hour", "every 3600s"),
            ("every 2 hours", "every 7200s"),
            ("every six hours", "every 21600s"),
            ("tomorrow at 8pm", "once Tue 2026-11-24 20:00"),
            ("in 2 hours", "once Mon 2026-11-23 12:00"),
            ("in 30 minutes", "once Mon 2026-11-23 10:30"),
            (
                "every monday and friday at 3pm",
                "cron 0 15 * * 1,5 America/New_York",
            ),
            ("daily at 07:30", "cron 30 7 * * * America/New_York"),
            ("every day at 6:45 pm", "cron 45 18 * * * America/New_York"),
            (
                "Every Weekday at 9 AM.",
                "cron 0 9 * * 1-5 America/New_York",
            ),
            ("weekends at noon", "cron 0 12 * * 0,6 America/New_York"),
            ("hourly", "cron 0 * * * * America/New_York"),
            (
                "every week on tuesday at 10:15",
                "cron 15 10 * * 2 America/New_York",
            ),
            (
                "every mon, wed and fri at 21:00",
                "cron 0 21 * * 1,3,5 America/New_York",
            ),
            ("at 9am", "once Tue 2026-11-24 09:00"),
            ("today at 5pm", "once Mon 2026-11-23 17:00"),
            ("on friday at 5pm", "once Fri 2026-11-27 17:00"),
            ("in an hour", "once Mon 2026-11-23 11:00"),
            ("every morning", "cron 0 9 * * * America/New_York"),
            ("every morning at 7:15", "cron 15 7 * * * America/New_York"),
            ("every evening at 8pm", "cron 0 20 * * * America/New_York"),
            ("daily at 5", "cron 0 5 * * * America/New_York"),
        ];
        for (text, expected) in cases {
            let c = parse(text, NOW, ny()).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(show(&c), expected, "{text}");
        }
    }

    #[test]
    fn nonsense_is_refused() {
        for text in [
            "",
            "whenever you like",
            "every blue moon",
            "at 25:00",
            "tomorrow at 13pm",
            "in two fortnights",
            "in 9223372036854775807 seconds",
            "every 2305843009213693952 seconds",
            "in 99999999999999999999 hours",
        ] {
            assert!(parse(text, NOW, ny()).is_err(), "{text}");
        }
        for text in [
            "every morning at 7pm",
            "every evening at 7am",
            "every night at noon",
        ] {
            assert!(
                matches!(
                    parse(text, NOW, ny()),
                    Err(CadenceError::Contradiction { .. })
                ),
                "{text}"
            );
        }
        assert!(matches!(
            parse("in 9223372036854775807 seconds", NOW, ny()),
            Err(CadenceError::DurationTooLong(_))
        ));
    }

    proptest::proptest! {
        /// Any text is a cadence or an error: never a panic, never an instant out of range.
        #[test]
        fn any_text_is_a_cadence_or_an_error(text in proptest::prelude::any::<String>()) {
            if let Ok(cadence) = parse(&text, NOW, ny()) {
                if let Some(next) = cadence.next_after(NOW) {
                    proptest::prop_assert!(next <= crate::input::MAX_INSTANT_MS);
                }
            }
        }

        /// Phrases built from the parser's own words, with any number in them.
        #[test]
        fn phrases_with_any_numbers(
            lead in proptest::sample::select(vec!["in", "every", "each"]),
            n in proptest::prelude::any::<u64>(),
            unit in proptest::sample::select(vec!["seconds", "minutes", "hours", "days", "weeks"]),
        ) {
            let text = format!("{lead} {n} {unit}");
            if let Ok(cadence) = parse(&text, NOW, ny()) {
                proptest::prop_assert!(cadence.next_after(NOW).is_some());
            }
        }
    }
}
