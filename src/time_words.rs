//! The words people count and name time with ("two", "weeks", "friday", "march"), shared
//! by the cadence parser (`schedule::natural`) and the time words of search queries
//! (`memory::when`), so both read the same words the same way.

use chrono::Weekday;

/// A count: "a", "one"…"thirty" as words, or digits; never zero.
pub fn amount(word: &str) -> Option<i64> {
    let n = match word {
        "a" | "an" | "one" => 1,
        "two" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "twelve" => 12,
        "fifteen" => 15,
        "twenty" => 20,
        "thirty" => 30,
        other => other.parse().ok()?,
    };
    (n > 0).then_some(n)
}

/// A unit of time in seconds ("day", "weeks", "hr").
pub fn unit_secs(word: &str) -> Option<i64> {
    Some(match word.trim_end_matches('s') {
        "second" | "sec" => 1,
        "minute" | "min" => 60,
        "hour" | "hr" => 3600,
        "day" => 86_400,
        "week" => 604_800,
        _ => return None,
    })
}

/// A day of the week, by name or short name, singular or plural ("fridays").
pub fn weekday(word: &str) -> Option<Weekday> {
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

/// A month by its full name or short name ("march", "sept", "oct"). "may" and "march"
/// are also everyday words: callers decide from the words around them.
pub fn month(word: &str) -> Option<u32> {
    Some(match word {
        "january" | "jan" => 1,
        "february" | "feb" => 2,
        "march" | "mar" => 3,
        "april" | "apr" => 4,
        "may" => 5,
        "june" | "jun" => 6,
        "july" | "jul" => 7,
        "august" | "aug" => 8,
        "september" | "sep" | "sept" => 9,
        "october" | "oct" => 10,
        "november" | "nov" => 11,
        "december" | "dec" => 12,
        _ => return None,
    })
}
