//! Time words in a search query — "yesterday", "last week", "in March", "three days ago",
//! "on Friday", "over the past two weeks" — read as a window of time in the user's zone,
//! counted from the instant the query was asked. Search prefers the turns said inside it
//! (`search.time_weight`); it never filters by it, so a misread only costs order. The
//! counting words and the names of days and months are the cadence parser's
//! ([`crate::time_words`]).

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc, Weekday};
use chrono_tz::Tz;

use crate::time_words::{amount, month, weekday};

/// UTC milliseconds, `since` inclusive and `until` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeWindow {
    pub since: i64,
    pub until: i64,
}

impl TimeWindow {
    pub fn contains(&self, at: i64) -> bool {
        (self.since..self.until).contains(&at)
    }
}

const DAY_MS: i64 = 86_400_000;

/// The last instant read (the end of the year 9999, UTC): every calendar step from a day
/// before it stays within chrono's range.
pub const LATEST_MS: i64 = 253_402_300_799_999;

/// Words before a month name that make "may" and "march" (and a short name) a month.
const MONTH_CUES: [&str; 11] = [
    "in", "during", "of", "since", "early", "late", "mid", "last", "this", "back", "around",
];

/// Phrases that ask about the order things were said or happened in (single words such
/// as "first" or "before" are too common alone: "what's my first name?").
const ORDER_CUES: [&[&str]; 12] = [
    &["in", "what", "order"],
    &["which", "order"],
    &["before", "or", "after"],
    &["which", "came", "first"],
    &["at", "first"],
    &["first", "time"],
    &["first", "say"],
    &["first", "said"],
    &["first", "mention"],
    &["earliest"],
    &["timeline"],
    &["chronological"],
];

/// Whether `query` asks about order ("what did I first say about …", "did I move before
/// or after …"): its hits are then told in time order, oldest first.
pub fn asks_for_order(query: &str) -> bool {
    let words: Vec<String> = crate::text::tokens(query).collect();
    ORDER_CUES.iter().any(|cue| {
        words
            .windows(cue.len())
            .any(|w| w.iter().zip(cue.iter()).all(|(a, b)| a == b))
    }) || words.iter().any(|w| w == "chronologically")
}

/// The window `query`'s first time words name, read at `now_ms` in `zone`; `None` when it
/// has none (or names a time this calendar cannot hold).
pub fn window(query: &str, now_ms: i64, zone: Tz) -> Option<TimeWindow> {
    if !(0..=LATEST_MS).contains(&now_ms) {
        return None;
    }
    let lowered = query.to_lowercase();
    let words: Vec<&str> = lowered
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let now = DateTime::<Utc>::from_timestamp_millis(now_ms)?.with_timezone(&zone);
    let today = now.date_naive();
    (0..words.len())
        .find_map(|i| at_word(&words, i, today, now_ms, zone))
        // "since March 2030": a window that ends before it starts is none.
        .filter(|w| w.since < w.until)
}

/// The window the words starting at `i` name, if they name one.
fn at_word(
    words: &[&str],
    i: usize,
    today: NaiveDate,
    now_ms: i64,
    zone: Tz,
) -> Option<TimeWindow> {
    let word = |n: usize| words.get(n).copied().unwrap_or("");
    let days = |first: NaiveDate, count: i64| days_window(first, count, zone);
    match (word(i), word(i + 1)) {
        ("today" | "tonight", _) | ("this", "morning" | "afternoon" | "evening") => days(today, 1),
        ("yesterday", _) | ("last", "night") => days(today.pred_opt()?, 1),
        (which @ ("this" | "last"), unit @ ("week" | "weekend" | "month" | "year")) => {
            let back = i32::from(which == "last");
            calendar(unit, back, today, zone)
        }
        ("past" | "last" | "previous", _) => {
            // "the past two weeks", "the last few days", "over the past week".
            let (count, unit_at) = count_at(words, i + 1).unwrap_or((1, i + 1));
            let unit = unit_ms(word(unit_at))?;
            let since = now_ms.checked_sub(count.checked_mul(unit)?)?;
            Some(TimeWindow {
                since,
                until: now_ms.checked_add(1)?,
            })
        }
        (name, _) if is_weekday_name(name) => {
            // "on friday" is the latest one, "last friday" the latest before today.
            let day = weekday(name)?;
            let before = if i > 0 { word(i - 1) } else { "" };
            if !matches!(before, "on" | "last" | "this" | "past") {
                return None;
            }
            days(latest(today, day, matches!(before, "last" | "past")), 1)
        }
        (name, next) if month(name).is_some() => {
            // "June said…", "April's trip": a month is a month only after a cue ("in
            // March"), or with a day or a year.
            let number = month(name)?;
            let before = if i > 0 { word(i - 1) } else { "" };
            let cued = MONTH_CUES.contains(&before);
            let as_year = |w: &str| w.parse::<i32>().ok().filter(|y| (1900..=2200).contains(y));
            let day_of_month = next
                .trim_end_matches(|c: char| c.is_ascii_alphabetic())
                .parse::<u32>()
                .ok()
                .filter(|d| (1..=31).contains(d) && next.len() <= 4);
            // "March 2024", or "March 29 2026" (the comma is gone with the punctuation).
            let year = as_year(next).or_else(|| day_of_month.and_then(|_| as_year(word(i + 2))));
            if !(cued || year.is_some() || day_of_month.is_some()) {
                return None;
            }
            // The latest such month that has begun; "last March" in March is a year ago.
            let this_year = number < today.month() || number == today.month() && before != "last";
            let year = year.unwrap_or(today.year() - i32::from(!this_year));
            match day_of_month {
                Some(d) => {
                    let mut date = NaiveDate::from_ymd_opt(year, number, d)?;
                    if date > today && as_year(word(i + 2)).is_none() {
                        date = NaiveDate::from_ymd_opt(year - 1, number, d)?;
                    }
                    days(date, 1)
                }
                None => {
                    let first = NaiveDate::from_ymd_opt(year, number, 1)?;
                    let mut window = month_window(first, zone)?;
                    if before == "since" {
                        window.until = now_ms.checked_add(1)?;
                    }
                    Some(window)
                }
            }
        }
        _ => ago(words, i, now_ms),
    }
}

/// "three days ago", "a couple of weeks ago", "a few months ago": a window around that
/// instant as wide as the unit (a day either side for days), never past now.
fn ago(words: &[&str], i: usize, now_ms: i64) -> Option<TimeWindow> {
    let (count, unit_at) = count_at(words, i)?;
    let unit = unit_ms(words.get(unit_at)?)?;
    if *words.get(unit_at + 1)? != "ago" {
        return None;
    }
    let centre = now_ms.checked_sub(count.checked_mul(unit)?)?;
    let half = if unit == DAY_MS { DAY_MS } else { unit / 2 };
    Some(TimeWindow {
        since: centre.checked_sub(half)?,
        until: centre.checked_add(half)?.min(now_ms.checked_add(1)?),
    })
}

/// A count at `i` ("two", "3", "a few", "a couple of", "several") and where its unit is.
fn count_at(words: &[&str], i: usize) -> Option<(i64, usize)> {
    let word = |n: usize| words.get(n).copied().unwrap_or("");
    match (word(i), word(i + 1), word(i + 2)) {
        ("a" | "the", "few", _) => Some((3, i + 2)),
        ("a" | "the", "couple", "of") => Some((2, i + 3)),
        ("few" | "several", _, _) => Some((3, i + 1)),
        ("couple", "of", _) => Some((2, i + 2)),
        (n, _, _) => Some((amount(n)?.min(10_000), i + 1)),
    }
}

/// A calendar unit's length in milliseconds (a month as 30 days, a year as 365).
fn unit_ms(word: &str) -> Option<i64> {
    Some(match word.trim_end_matches('s') {
        "day" | "night" => DAY_MS,
        "week" => 7 * DAY_MS,
        "month" => 30 * DAY_MS,
        "year" => 365 * DAY_MS,
        _ => return None,
    })
}

/// Whether `word` is a weekday's full name ("fri" and "sat" are too often other words).
fn is_weekday_name(word: &str) -> bool {
    weekday(word).is_some() && word.trim_end_matches('s').ends_with("day")
}

/// The latest `day` on or before `today` (strictly before it when `before_today`).
fn latest(today: NaiveDate, day: Weekday, before_today: bool) -> NaiveDate {
    let mut back =
        (7 + today.weekday().num_days_from_monday() as i64 - day.num_days_from_monday() as i64) % 7;
    if back == 0 && before_today {
        back = 7;
    }
    today - Duration::days(back)
}

/// This (`back` 0) or the previous (`back` 1) calendar week (from Monday), weekend
/// (Saturday and Sunday), month or year.
fn calendar(unit: &str, back: i32, today: NaiveDate, zone: Tz) -> Option<TimeWindow> {
    match unit {
        "week" => {
            let monday = today - Duration::days(today.weekday().num_days_from_monday().into());
            days_window(monday - Duration::weeks(back.into()), 7, zone)
        }
        "weekend" => {
            // The latest weekend that has begun; "last weekend" during one is the one
            // before it, on a weekday the one just past.
            let saturday = latest(today, Weekday::Sat, false);
            let during = matches!(today.weekday(), Weekday::Sat | Weekday::Sun);
            let weeks = i64::from(back == 1 && during);
            days_window(saturday - Duration::weeks(weeks), 2, zone)
        }
        "month" => {
            let first = today.with_day(1)?;
            let first = if back == 1 {
                (first - Duration::days(1)).with_day(1)?
            } else {
                first
            };
            month_window(first, zone)
        }
        _ => {
            let first = NaiveDate::from_ymd_opt(today.year() - back, 1, 1)?;
            let next = NaiveDate::from_ymd_opt(today.year() - back + 1, 1, 1)?;
            Some(TimeWindow {
                since: day_start(first, zone)?,
                until: day_start(next, zone)?,
            })
        }
    }
}

/// The calendar month starting on `first`.
fn month_window(first: NaiveDate, zone: Tz) -> Option<TimeWindow> {
    let next = if first.month() == 12 {
        NaiveDate::from_ymd_opt(first.year() + 1, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(first.year(), first.month() + 1, 1)?
    };
    Some(TimeWindow {
        since: day_start(first, zone)?,
        until: day_start(next, zone)?,
    })
}

/// `count` local days from `first`.
fn days_window(first: NaiveDate, count: i64, zone: Tz) -> Option<TimeWindow> {
    Some(TimeWindow {
        since: day_start(first, zone)?,
        until: day_start(first.checked_add_signed(Duration::days(count))?, zone)?,
    })
}

/// When `date` begins in `zone`: its midnight, or the first instant after a skipped one.
fn day_start(date: NaiveDate, zone: Tz) -> Option<i64> {
    (0..=3).find_map(|hour| {
        zone.from_local_datetime(&date.and_hms_opt(hour, 0, 0)?)
            .earliest()
            .map(|t| t.timestamp_millis())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Wednesday 2026-06-17 15:00 UTC.
    const NOW: i64 = 1_781_708_400_000;

    fn utc(y: i32, mo: u32, d: u32) -> i64 {
        Utc.with_ymd_and_hms(y, mo, d, 0, 0, 0)
            .unwrap()
            .timestamp_millis()
    }

    fn read(query: &str) -> Option<(i64, i64)> {
        window(query, NOW, Tz::UTC).map(|w| (w.since, w.until))
    }

    #[test]
    fn calendar_words_name_their_days() {
        assert_eq!(
            read("what did I cook yesterday?"),
            Some((utc(2026, 6, 16), utc(2026, 6, 17)))
        );
        assert_eq!(
            read("plans for today"),
            Some((utc(2026, 6, 17), utc(2026, 6, 18)))
        );
        assert_eq!(
            read("what did I say last week"),
            Some((utc(2026, 6, 8), utc(2026, 6, 15)))
        );
        assert_eq!(
            read("this week's runs"),
            Some((utc(2026, 6, 15), utc(2026, 6, 22)))
        );
        assert_eq!(
            read("books I read last month"),
            Some((utc(2026, 5, 1), utc(2026, 6, 1)))
        );
        assert_eq!(
            read("trips last year"),
            Some((utc(2025, 1, 1), utc(2026, 1, 1)))
        );
        assert_eq!(
            read("what did we do last weekend"),
            Some((utc(2026, 6, 13), utc(2026, 6, 15)))
        );
        assert_eq!(
            read("what did I eat on Monday"),
            Some((utc(2026, 6, 15), utc(2026, 6, 16)))
        );
        assert_eq!(
            read("last Wednesday's call"),
            Some((utc(2026, 6, 10), utc(2026, 6, 11)))
        );
        // Asked on a Wednesday, "this past Wednesday" is last week's.
        assert_eq!(
            read("this past Wednesday"),
            Some((utc(2026, 6, 10), utc(2026, 6, 11)))
        );
    }

    #[test]
    fn months_are_the_latest_of_that_name_or_the_year_given() {
        assert_eq!(
            read("What was I planning in March?"),
            Some((utc(2026, 3, 1), utc(2026, 4, 1)))
        );
        assert_eq!(
            read("my trip in September"),
            Some((utc(2025, 9, 1), utc(2025, 10, 1)))
        );
        assert_eq!(
            read("in March 2024"),
            Some((utc(2024, 3, 1), utc(2024, 4, 1)))
        );
        assert_eq!(
            read("the party on June 3rd"),
            Some((utc(2026, 6, 3), utc(2026, 6, 4)))
        );
        assert_eq!(
            read("what happened on Dec 24"),
            Some((utc(2025, 12, 24), utc(2025, 12, 25)))
        );
        let since = read("everything since February").unwrap();
        assert_eq!(since, (utc(2026, 2, 1), NOW + 1));
        // A month is a month after a cue, or with a day or a year: not a name.
        assert_eq!(read("what did June say about the move"), None);
        assert_eq!(read("April's trip"), None);
        // "last March" asked in June is this year's; "last June" in June a year ago.
        assert_eq!(read("last March"), Some((utc(2026, 3, 1), utc(2026, 4, 1))));
        assert_eq!(read("last June"), Some((utc(2025, 6, 1), utc(2025, 7, 1))));
        assert_eq!(read("in June"), Some((utc(2026, 6, 1), utc(2026, 7, 1))));
        // A window that would end before it starts is none.
        assert_eq!(read("since March 2030"), None);
        // Everyday words that are also month names are not read as months.
        assert_eq!(read("may I ask what you march to"), None);
        assert_eq!(read("how do I sat nav"), None);
        assert_eq!(read("in may"), Some((utc(2026, 5, 1), utc(2026, 6, 1))));
    }

    #[test]
    fn spans_back_from_now() {
        assert_eq!(
            read("over the past two weeks"),
            Some((NOW - 14 * DAY_MS, NOW + 1))
        );
        assert_eq!(
            read("in the last few days"),
            Some((NOW - 3 * DAY_MS, NOW + 1))
        );
        assert_eq!(
            read("three days ago"),
            Some((NOW - 4 * DAY_MS, NOW - 2 * DAY_MS))
        );
        assert_eq!(
            read("a couple of weeks ago"),
            Some((
                NOW - 17 * DAY_MS - DAY_MS / 2,
                NOW - 10 * DAY_MS - DAY_MS / 2
            ))
        );
        assert_eq!(read("a day ago"), Some((NOW - 2 * DAY_MS, NOW)));
        assert_eq!(read("the last time I mentioned my sister"), None);
        assert_eq!(read("what is my dog called"), None);
    }

    #[test]
    fn days_are_the_users_own() {
        // 2026-06-17 15:00 UTC is already the 18th in Auckland (UTC+12).
        let zone: Tz = "Pacific/Auckland".parse().unwrap();
        let w = window("yesterday", NOW, zone).unwrap();
        assert_eq!(w.since, utc(2026, 6, 17) - 12 * 3_600_000);
        assert_eq!(w.until - w.since, DAY_MS);
        // A day the clocks change is 23 hours long.
        let zone: Tz = "Europe/Lisbon".parse().unwrap();
        let w = window("on March 29", NOW, zone).unwrap();
        assert_eq!(w.until - w.since, DAY_MS - 3_600_000);
        assert_eq!(window("on March 29, 2026", NOW, zone), Some(w));
        assert_eq!(
            read("on March 29, 2025"),
            Some((utc(2025, 3, 29), utc(2025, 3, 30)))
        );
    }

    #[test]
    fn order_questions_are_told_apart() {
        for query in [
            "What did I first say about the boiler?",
            "Did I move before or after I changed jobs?",
            "In what order did I try the three diets?",
            "my earliest note on Rust",
            "Give me a timeline of the kitchen work",
        ] {
            assert!(asks_for_order(query), "{query}");
        }
        for query in [
            "What is my favourite tea?",
            "Which firstborn rule did we discuss",
            "orders of magnitude",
            "what's my first name?",
            "what did I do after lunch",
            "",
        ] {
            assert!(!asks_for_order(query), "{query}");
        }
    }

    proptest! {
        #[test]
        fn any_query_reads_as_no_window_or_a_non_empty_one(
            query in ".{0,80}",
            now in any::<i64>(),
            zone in prop::sample::select(chrono_tz::TZ_VARIANTS.to_vec()),
        ) {
            if let Some(w) = window(&query, now, zone) {
                prop_assert!(w.since < w.until, "{query:?}: {w:?}");
            }
        }

        /// Queries of time words, numbers, names of days and months and their cues, in any
        /// order, at any instant in any zone: no window, or one that is not empty.
        #[test]
        fn any_time_words_read_as_no_window_or_a_non_empty_one(
            words in prop::collection::vec(prop::sample::select(vec![
                "in", "on", "since", "last", "this", "past", "the", "a", "few", "couple", "of",
                "ago", "week", "weeks", "weekend", "month", "months", "year", "day", "days",
                "night", "today", "yesterday", "tonight", "morning", "march", "may", "june",
                "december", "sept", "friday", "sunday", "1", "3rd", "29", "31", "2024",
                "2030", "1900", "2200", "9999", "seven", "twelve", "10000", "0",
            ]), 0..6),
            now in any::<i64>(),
            zone in prop::sample::select(chrono_tz::TZ_VARIANTS.to_vec()),
        ) {
            let query = words.join(" ");
            if let Some(w) = window(&query, now, zone) {
                prop_assert!(w.since < w.until, "{query:?}: {w:?}");
            }
        }

        #[test]
        fn time_words_in_any_zone_name_a_window_around_or_before_now(
            phrase in prop::sample::select(vec![
                "yesterday", "last week", "this month", "last year", "on friday",
                "in march", "two weeks ago", "the past few days", "last weekend", "today",
            ]),
            now in 0i64..8_000_000_000_000,
            zone in prop::sample::select(chrono_tz::TZ_VARIANTS.to_vec()),
        ) {
            let w = window(phrase, now, zone).unwrap();
            prop_assert!(w.since < w.until);
            prop_assert!(w.since <= now, "{phrase}: {w:?} starts after now");
            prop_assert!(w.until - w.since <= 366 * DAY_MS + 2 * 3_600_000);
        }
    }
}
