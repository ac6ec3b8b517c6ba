//! Natural-language cadences ("every weekday at 9am", "in 2 hours") resolved to a cron
//! expression, an interval, or one instant. The user's own words are kept beside the
//! result by the caller.

use chrono::{DateTime, Datelike, Duration, NaiveTime, Utc, Weekday};
use chrono_tz::Tz;

use super::cadence::{Cadence, CadenceError};
use super::cron::resolve_local;

/// Reads `text`, with "now" and the user's zone to resolve relative times.
pub fn parse(text: &str, now_ms: i64, tz: Tz) -> Result<Cadence, CadenceError> {
    let not_understood = || CadenceError::NotUnderstood(text.to_string());
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
            let secs = amount(n).ok_or_else(not_understood)?
                * unit_secs(unit).ok_or_else(not_understood)?;
            if time.is_some() {
                return Err(not_understood());
            }
            Ok(Cadence::Once {
                at: now_ms + secs * 1000,
            })
        }
        ["every", n, unit]
            if amount(n).is_some() && unit_secs(unit).is_some() && time.is_none() =>
        {
            let secs = amount(n).expect("checked") * unit_secs(unit).expect("checked");
            Ok(Cadence::Interval {
                every_secs: secs,
                anchor: now_ms + secs * 1000,
            })
        }
        ["every", unit] | ["each", unit]
            if matches!(*unit, "second" | "minute" | "hour") && time.is_none() =>
        {
            let secs = unit_secs(unit).expect("checked");
            Ok(Cadence::Interval {
                every_secs: secs,
                anchor: now_ms + secs * 1000,
            })
        }
        ["hourly"] if time.is_none() => Cadence::cron("0 * * * *", &zone),
        ["daily"] | ["every", "day"] | ["each", "day"] | ["every", "morning"] => cron("*", time),
        ["every", "evening"] => cron("*", time.or(NaiveTime::from_hms_opt(18, 0, 0))),
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
            Ok(Cadence::Once {
                at: resolve_local(date.and_time(t), tz).timestamp_millis(),
            })
        }
        ["today"] | [] => {
            let t = time.ok_or_else(not_understood)?;
            let today = now.with_timezone(&tz).date_naive();
            let mut at = resolve_local(today.and_time(t), tz);
            if at <= now && head.is_empty() {
                // A bare "at 5pm" that has passed today means tomorrow.
                at = resolve_local((today + Duration::days(1)).and_time(t), tz);
            }
            Ok(Cadence::Once {
                at: at.timestamp_millis(),
            })
        }
        _ => Err(not_understood()),
    }
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
                return Some(Cadence::Once {
                    at: at.timestamp_millis(),
                });
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

fn amount(word: &str) -> Option<i64> {
    let n = match word {
        "a" | "an" | "one" => 1,
        "two" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "ten" => 10,
        "fifteen" => 15,
        "twenty" => 20,
        "thirty" => 30,
        other => other.parse().ok()?,
    };
    (n > 0).then_some(n)
}

fn unit_secs(word: &str) -> Option<i64> {
    Some(match word.trim_end_matches('s') {
        "second" | "sec" => 1,
        "minute" | "min" => 60,
        "hour" | "hr" => 3600,
        "day" => 86_400,
        "week" => 604_800,
        _ => return None,
    })
}

fn weekday(word: &str) -> Option<Weekday> {
    let w = word.trim_end_matches('s');
    Some(match w {
        "monday" | "mon" => Weekday::Mon,
        "tuesday" | "tue" | "tues" => Weekday::Tue,
        "wednesday" | "wed" => Weekday::Wed,
        "thursday" | "thu" | "thur" | "thurs" => Weekday::Thu,
        "friday" | "fri" => Weekday::Fri,
        "saturday" | "sat" => Weekday::Sat,
        "sunday" | "sun" => Weekday::Sun,
        _ => return None,
    })
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
            Cadence::Once { at } => format!(
                "once {}",
                DateTime::<Utc>::from_timestamp_millis(*at)
                    .unwrap()
                    .with_timezone(&ny())
                    .format("%a %Y-%m-%d %H:%M")
            ),
            Cadence::Interval { every_secs, .. } => format!("every {every_secs}s"),
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
        ] {
            assert!(parse(text, NOW, ny()).is_err(), "{text}");
        }
    }
}
