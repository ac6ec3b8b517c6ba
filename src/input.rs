//! The rules every input passes, whichever door it came through (DESIGN.md section 10):
//! text is valid UTF-8 within its documented size and is never silently cut. Conversation
//! content (an event's, a note's, a summary's, a run's input) is kept byte for byte,
//! whatever characters it holds, NUL and escape sequences included ([`check_content`]);
//! every other text (ids, names, keys, tags, queries, goals) holds no NUL or other control
//! character (newlines and tabs where text allows them: [`check_text`]). Numbers,
//! durations and instants are range-checked where they are parsed, with checked
//! arithmetic; input from a stream is read only up to its limit. What is shown on a
//! terminal or a page is escaped there ([`printable`], [`visible`]), never changed where
//! it is stored.

use std::io::Read;

use crate::error::{ErrorKind, Kind};

/// Bad input, naming the field that was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {field}: {reason}")]
pub struct InputError {
    pub field: String,
    pub reason: String,
}

impl InputError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl Kind for InputError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::BadInput
    }
}

pub type Result<T, E = InputError> = std::result::Result<T, E>;

/// Longest identifier (user, session, note key, category, channel context), in bytes.
pub const MAX_ID_BYTES: usize = 256;
/// Longest name (a schedule's), in bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// Longest search query or context query, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;
/// Largest token budget of an assembled context.
pub const MAX_CONTEXT_BUDGET: usize = 8000;
/// Longest duration anywhere (intervals, delays, "in …"): ten years.
pub const MAX_DURATION_SECS: i64 = 10 * 365 * 86_400;
/// Earliest and latest instant accepted: 1970-01-01 and the end of year 9999, UTC.
pub const MIN_INSTANT_MS: i64 = 0;
pub const MAX_INSTANT_MS: i64 = 253_402_300_799_999;

/// Whether a text may span lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// Goals, pause notes, instructions: newlines, carriage returns and tabs are kept.
    /// (Conversation content has a rule of its own: [`check_content`].)
    Many,
    /// Ids, names, tags, queries: no control character at all.
    One,
}

/// Checks a text against the common rule: not blank, at most `max_bytes`, and no control
/// character but the line breaks and tabs `lines` allows. The text is never changed.
pub fn check_text(field: &str, text: &str, max_bytes: usize, lines: Lines) -> Result<()> {
    if text.len() > max_bytes {
        return Err(InputError::new(
            field,
            format!(
                "is {} bytes, over the limit of {max_bytes} bytes",
                text.len()
            ),
        ));
    }
    if let Some((at, c)) = text
        .chars()
        .enumerate()
        .find(|(_, c)| is_refused_control(*c, lines))
    {
        return Err(InputError::new(
            field,
            format!(
                "contains the control character U+{:04X} at character {}; control characters \
                 are not accepted{}",
                c as u32,
                at + 1,
                match lines {
                    Lines::Many => " (newlines and tabs are)",
                    Lines::One => "",
                }
            ),
        ));
    }
    if text.trim().is_empty() {
        return Err(InputError::new(field, "is empty"));
    }
    Ok(())
}

/// Checks conversation content (an event's, a note's, a session summary's, a run's input):
/// at most `max_bytes` and not blank. Nothing else is refused: what an agent or a tool
/// wrote, ANSI colour codes, backspaces, form feeds, U+0085, lone carriage returns and NUL
/// included, is stored and returned byte for byte, and escaped only where it is shown
/// ([`printable`] on a terminal, [`visible`] on a page; JSON escapes it by itself). The
/// text is never changed.
pub fn check_content(field: &str, text: &str, max_bytes: usize) -> Result<()> {
    if text.len() > max_bytes {
        return Err(InputError::new(
            field,
            format!(
                "is {} bytes, over the limit of {max_bytes} bytes",
                text.len()
            ),
        ));
    }
    if text.trim().is_empty() {
        return Err(InputError::new(field, "is empty"));
    }
    Ok(())
}

fn is_refused_control(c: char, lines: Lines) -> bool {
    c.is_control() && !(lines == Lines::Many && matches!(c, '\n' | '\r' | '\t'))
}

/// A name (a schedule's, a token's, a speaker's, a skip rule): one line, at most
/// [`MAX_NAME_BYTES`], by the common rule.
pub fn check_name(field: &str, name: &str) -> Result<()> {
    check_text(field, name, MAX_NAME_BYTES, Lines::One)
}

/// An identifier: one line, at most [`MAX_ID_BYTES`], no leading or trailing whitespace
/// (so `alice` and `alice ` are never two users).
pub fn check_id(field: &str, id: &str) -> Result<()> {
    check_text(field, id, MAX_ID_BYTES, Lines::One)?;
    if id.trim() != id {
        return Err(InputError::new(
            field,
            "must not start or end with whitespace",
        ));
    }
    Ok(())
}

/// A user id, checked the same way by every operation that takes one.
pub fn check_user_id(user_id: &str) -> Result<()> {
    check_id("user id", user_id)
}

/// An integer within `range`, or bad input naming the field and the range.
pub fn check_range<T>(field: &str, value: T, range: std::ops::RangeInclusive<T>) -> Result<T>
where
    T: PartialOrd + std::fmt::Display + Copy,
{
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(InputError::new(
            field,
            format!("must be {}..={}, got {value}", range.start(), range.end()),
        ))
    }
}

/// A finite, non-negative number at most `max`.
pub fn check_amount(field: &str, value: f64, max: f64) -> Result<f64> {
    if value.is_finite() && (0.0..=max).contains(&value) {
        Ok(value)
    } else {
        Err(InputError::new(
            field,
            format!("must be a number from 0 to {max}, got {value}"),
        ))
    }
}

/// An instant in UTC milliseconds within [`MIN_INSTANT_MS`]..=[`MAX_INSTANT_MS`].
pub fn check_instant(field: &str, ms: i64) -> Result<i64> {
    if (MIN_INSTANT_MS..=MAX_INSTANT_MS).contains(&ms) {
        Ok(ms)
    } else {
        Err(InputError::new(
            field,
            format!("{ms} is not an instant between 1970 and 9999 (UTC milliseconds)"),
        ))
    }
}

/// Reads at most `max_bytes` from `reader`; more than that is refused without reading the
/// rest.
pub fn read_limited(field: &str, reader: impl Read, max_bytes: usize) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::new(field, format!("cannot be read: {e}")))?;
    if bytes.len() > max_bytes {
        return Err(InputError::new(
            field,
            format!("is over the limit of {max_bytes} bytes"),
        ));
    }
    Ok(bytes)
}

/// Bytes as UTF-8 text, or bad input saying where they stop being UTF-8.
pub fn utf8(field: &str, bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        InputError::new(
            field,
            format!(
                "is not valid UTF-8 (at byte {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069): they
/// reorder what follows them on a line, so shown text could say something else than it
/// holds ("Trojan Source").
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with each character `hidden` says shown as `\u{…}`.
fn escaped(text: &str, hidden: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(&hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Text for a terminal: control characters (escape sequences above all, and carriage
/// returns, which can overwrite what a line shows) and bidirectional overrides are shown
/// as `\u{…}` instead of being sent to the terminal; newlines and tabs stay.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| {
        (c.is_control() && !matches!(c, '\n' | '\t')) || is_bidi_control(c)
    })
}

/// An id as an error message quotes it: every control character (newlines too: an id
/// has none) and bidirectional override shown as `\u{…}`, and at most
/// [`MAX_SHOWN_ID_CHARS`] characters of it, the rest marked cut. A caller may send any
/// bytes as an id; the message must stay one readable line.
pub fn shown_id(id: &str) -> String {
    let id = escaped(id, |c| c.is_control() || is_bidi_control(c));
    if id.chars().count() <= MAX_SHOWN_ID_CHARS {
        return id.into_owned();
    }
    format!("{}…", crate::text::truncate_chars(&id, MAX_SHOWN_ID_CHARS))
}

/// Most characters of an id an error message quotes.
pub const MAX_SHOWN_ID_CHARS: usize = 100;

/// Text for a web page (before HTML escaping): control characters, which a browser would
/// drop or show as nothing (NUL it replaces), and bidirectional overrides are shown as
/// `\u{…}`; newlines, carriage returns and tabs stay (a page does not act on them).
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| {
        (c.is_control() && !matches!(c, '\n' | '\r' | '\t')) || is_bidi_control(c)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever a caller sends as an id, the message quotes it as one line without a
        /// control character, at most MAX_SHOWN_ID_CHARS characters and the mark.
        #[test]
        fn a_shown_id_is_one_short_line(id in "\\PC{0,20}[\\x00-\\x1f\\u{202e}]?\\PC{0,300}") {
            let shown = shown_id(&id);
            prop_assert!(!shown.chars().any(|c| c.is_control() || is_bidi_control(c)));
            prop_assert!(shown.chars().count() <= MAX_SHOWN_ID_CHARS + 1);
        }
    }

    #[test]
    fn a_plain_id_is_shown_as_it_is() {
        assert_eq!(shown_id("run-01a2"), "run-01a2");
        assert_eq!(shown_id("a\nb"), "a\\u{a}b");
        assert!(shown_id(&"x".repeat(500)).ends_with('…'));
    }

    #[test]
    fn examples() {
        assert!(check_text("note", "abc\0def", 100, Lines::Many).is_err());
        assert!(check_text("note", "\0\0\0", 100, Lines::Many).is_err());
        assert!(check_text("note", "\u{1b}[31m", 100, Lines::Many).is_err());
        assert!(check_text("note", "two\nlines\tand\r\n", 100, Lines::Many).is_ok());
        assert!(check_text("name", "two\nlines", 100, Lines::One).is_err());
        assert!(check_text("note", "  \n ", 100, Lines::Many).is_err());
        assert!(check_text("note", "café", 4, Lines::Many).is_err());
        assert!(check_id("user id", "alice").is_ok());
        assert!(check_id("user id", " alice").is_err());
        let err = check_text("note", "ab\u{7}", 100, Lines::Many).unwrap_err();
        assert!(err.to_string().contains("U+0007"), "{err}");
    }

    #[test]
    fn content_is_kept_whatever_it_holds() {
        for text in [
            "\u{1b}[0;31merror\u{1b}[0m",
            "abc\0def",
            "\0",
            "\u{7}\u{1b}\u{7f}",
            "back\u{8}space, form\u{c}feed, next\u{85}line",
            "lone\rreturn",
            "\u{202e}txt.exe",
        ] {
            assert_eq!(
                check_content("event content", text, 100),
                Ok(()),
                "{text:?}"
            );
        }
        assert!(check_content("event content", " \n\u{85}\t", 100).is_err());
        assert!(check_content("event content", "", 100).is_err());
        let err = check_content("event content", "café", 4).unwrap_err();
        assert_eq!(err.field, "event content");
        assert!(err.reason.contains("over the limit"), "{err}");
    }

    #[test]
    fn shown_text_is_escaped() {
        assert_eq!(printable("\u{1b}[31mred"), "\\u{1b}[31mred");
        assert_eq!(printable("a\r\nb\0"), "a\\u{d}\nb\\u{0}");
        assert_eq!(printable("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(visible("a\r\nb\u{8}\u{85}"), "a\r\nb\\u{8}\\u{85}");
        assert_eq!(visible("🦀 e\u{301} \u{200d}"), "🦀 e\u{301} \u{200d}");
    }

    #[test]
    fn reads_stop_at_the_limit() {
        let big = std::io::repeat(b'x').take(10_000_000);
        assert!(read_limited("stdin", big, 1024).is_err());
        let exact = std::io::repeat(b'x').take(1024);
        assert_eq!(read_limited("stdin", exact, 1024).unwrap().len(), 1024);
    }

    proptest! {
        /// Any Unicode text is either accepted as it is (and then holds no refused control
        /// character and fits) or refused; checking never panics.
        #[test]
        fn any_text_is_accepted_intact_or_refused(text in any::<String>(), max in 0usize..200) {
            match check_text("t", &text, max, Lines::Many) {
                Ok(()) => {
                    prop_assert!(text.len() <= max);
                    prop_assert!(!text.trim().is_empty());
                    prop_assert!(!text.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')));
                }
                Err(err) => prop_assert_eq!(err.field, "t"),
            }
        }

        /// Content is accepted as it is whenever it fits and is not blank.
        #[test]
        fn any_content_that_fits_is_accepted(text in any::<String>(), max in 0usize..200) {
            let accepted = check_content("c", &text, max).is_ok();
            prop_assert_eq!(accepted, text.len() <= max && !text.trim().is_empty());
        }

        #[test]
        fn printable_text_has_no_escape_characters(text in any::<String>()) {
            let hidden = |c: char| (c.is_control() && !matches!(c, '\n' | '\t')) || is_bidi_control(c);
            let shown = printable(&text);
            prop_assert!(!shown.chars().any(hidden));
            if !text.chars().any(hidden) {
                prop_assert_eq!(shown.as_ref(), text.as_str());
            }
            let shown = visible(&text);
            prop_assert!(!shown.chars().any(|c| hidden(c) && c != '\r'));
        }

        #[test]
        fn any_range_check_names_its_field(value in any::<i64>()) {
            match check_range("limit", value, 1..=1000) {
                Ok(v) => prop_assert!((1..=1000).contains(&v)),
                Err(err) => prop_assert_eq!(err.field, "limit"),
            }
        }
    }
}
