//! Filters on notes (for search and for listing notes) and on conversation events (for
//! search and recall), checked once here whichever door they came through.
//!
//! Bounds are inclusive at both ends: `created_after = t` keeps a note created at exactly
//! `t`, `created_before = t` too, so `after = before = t` keeps that one millisecond. A
//! filter that excludes everything answers nothing, never an error.

use super::{Memory, Note, Result};
use crate::db::{fetch_all, FromRow};
use crate::input::{self, InputError, Lines, MAX_ID_BYTES};

/// The `source` values a note can have: `tool` (saved by the CLI, the API, MCP or an
/// agent's tool call) and `consolidation` (a fact extracted from conversations).
pub const NOTE_SOURCES: &[&str] = &["tool", "consolidation"];

/// Which notes to keep. Every field narrows; the default keeps every note.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoteFilter {
    /// Notes carrying every one of these tags.
    pub tags: Vec<String>,
    /// Notes carrying at least one of these tags.
    pub any_tags: Vec<String>,
    /// Notes carrying none of these tags.
    pub no_tags: Vec<String>,
    /// Notes of exactly this category.
    pub category: Option<String>,
    /// Notes whose key starts with exactly this text (case-sensitive, no wildcards).
    pub key_prefix: Option<String>,
    /// Notes of this source: one of [`NOTE_SOURCES`].
    pub source: Option<String>,
    /// Created at or after this instant (UTC ms).
    pub created_after: Option<i64>,
    /// Created at or before this instant (UTC ms).
    pub created_before: Option<i64>,
    /// Last written at or after this instant (UTC ms).
    pub updated_after: Option<i64>,
    /// Last written at or before this instant (UTC ms).
    pub updated_before: Option<i64>,
}

/// Which conversation events to keep, by when they happened (UTC ms, both inclusive).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventWindow {
    pub since: Option<i64>,
    pub until: Option<i64>,
}

fn check_tags(field: &str, tags: &[String]) -> Result<(), InputError> {
    for tag in tags {
        input::check_text(field, tag, MAX_ID_BYTES, Lines::One)?;
    }
    Ok(())
}

fn check_range(
    after_field: &str,
    after: Option<i64>,
    before_field: &str,
    before: Option<i64>,
) -> Result<(), InputError> {
    if let Some(at) = after {
        input::check_instant(after_field, at)?;
    }
    if let Some(at) = before {
        input::check_instant(before_field, at)?;
    }
    match (after, before) {
        (Some(a), Some(b)) if a > b => Err(InputError::new(
            after_field,
            format!("{a} is later than {before_field} {b}: the range is empty the wrong way round"),
        )),
        _ => Ok(()),
    }
}

impl NoteFilter {
    /// Whether no field narrows.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Bad input names its field: an empty or control-character text, an instant outside
    /// 1970..=9999, a range whose start is after its end, a source outside the vocabulary.
    pub fn check(&self) -> Result<(), InputError> {
        check_tags("tags", &self.tags)?;
        check_tags("any_tags", &self.any_tags)?;
        check_tags("no_tags", &self.no_tags)?;
        if let Some(category) = &self.category {
            input::check_text("category", category, MAX_ID_BYTES, Lines::One)?;
        }
        if let Some(prefix) = &self.key_prefix {
            // Not trimmed: a prefix may end in a space that keys hold inside.
            input::check_text("key_prefix", prefix, MAX_ID_BYTES, Lines::One)?;
        }
        if let Some(source) = &self.source {
            if !NOTE_SOURCES.contains(&source.as_str()) {
                return Err(InputError::new(
                    "source",
                    format!(
                        "`{}` is not one of {}",
                        input::printable(source),
                        NOTE_SOURCES.join(", ")
                    ),
                ));
            }
        }
        check_range(
            "created_after",
            self.created_after,
            "created_before",
            self.created_before,
        )?;
        check_range(
            "updated_after",
            self.updated_after,
            "updated_before",
            self.updated_before,
        )
    }

    /// The SQL conditions on `notes` columns (each starting with ` AND `), numbered from
    /// `?first`, and their values. Tags are matched in [`NoteFilter::tags_match`].
    pub(super) fn sql(&self, first: usize) -> (String, Vec<libsql::Value>) {
        let mut sql = String::new();
        let mut params: Vec<libsql::Value> = Vec::new();
        let mut add = |condition: &str, value: libsql::Value| {
            let n = first + params.len();
            sql.push_str(" AND ");
            sql.push_str(&condition.replace('#', &n.to_string()));
            params.push(value);
        };
        if let Some(category) = &self.category {
            add("category = ?#", category.as_str().into());
        }
        if let Some(prefix) = &self.key_prefix {
            // Compared as text, so `%` and `_` in the prefix are themselves.
            add("substr(key, 1, length(?#)) = ?#", prefix.as_str().into());
        }
        if let Some(source) = &self.source {
            add("source = ?#", source.as_str().into());
        }
        let instants = [
            ("created_at >= ?#", self.created_after),
            ("created_at <= ?#", self.created_before),
            ("updated_at >= ?#", self.updated_after),
            ("updated_at <= ?#", self.updated_before),
        ];
        for (condition, at) in instants {
            if let Some(at) = at {
                add(condition, at.into());
            }
        }
        (sql, params)
    }

    /// Whether a note's tags pass the all / any / none conditions.
    pub fn tags_match(&self, tags: &[String]) -> bool {
        self.tags.iter().all(|t| tags.contains(t))
            && (self.any_tags.is_empty() || self.any_tags.iter().any(|t| tags.contains(t)))
            && !self.no_tags.iter().any(|t| tags.contains(t))
    }

    /// Whether a note passes every condition (the SQL ones included).
    pub fn matches(&self, note: &Note) -> bool {
        let within = |at: i64, after: Option<i64>, before: Option<i64>| {
            after.is_none_or(|a| at >= a) && before.is_none_or(|b| at <= b)
        };
        self.tags_match(&note.tags)
            && self
                .category
                .as_ref()
                .is_none_or(|c| note.category.as_ref() == Some(c))
            && self
                .key_prefix
                .as_ref()
                .is_none_or(|p| note.key.as_ref().is_some_and(|k| k.starts_with(p.as_str())))
            && self.source.as_ref().is_none_or(|s| &note.source == s)
            && within(note.created_at, self.created_after, self.created_before)
            && within(note.updated_at, self.updated_after, self.updated_before)
    }
}

impl EventWindow {
    pub fn is_empty(&self) -> bool {
        self.since.is_none() && self.until.is_none()
    }

    pub fn check(&self) -> Result<(), InputError> {
        check_range("since", self.since, "until", self.until)
    }

    pub fn contains(&self, at: i64) -> bool {
        self.since.is_none_or(|s| at >= s) && self.until.is_none_or(|u| at <= u)
    }

    /// The SQL conditions on `column` (each starting with ` AND `), numbered from `?first`.
    pub(super) fn sql(&self, column: &str, first: usize) -> (String, Vec<libsql::Value>) {
        let mut sql = String::new();
        let mut params: Vec<libsql::Value> = Vec::new();
        for (op, at) in [(">=", self.since), ("<=", self.until)] {
            if let Some(at) = at {
                sql.push_str(&format!(" AND {column} {op} ?{}", first + params.len()));
                params.push(at.into());
            }
        }
        (sql, params)
    }
}

/// Reads an instant given as text by the CLI, the API or MCP: UTC milliseconds (digits),
/// RFC 3339, `YYYY-MM-DD HH:MM[:SS]` in UTC, or a date in UTC, which means its first
/// moment for a start (`end` false) and its last for an end, so that a date as both
/// bounds keeps that whole day.
pub fn parse_time(field: &str, text: &str, end: bool) -> Result<i64, InputError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(InputError::new(field, "is empty"));
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        let ms = t
            .parse::<i64>()
            .map_err(|_| InputError::new(field, format!("{t} is out of range")))?;
        return input::check_instant(field, ms);
    }
    crate::schedule::bounds::parse_bound(t, chrono_tz::Tz::UTC, end).map_err(|_| {
        InputError::new(
            field,
            format!(
                "`{}` is not an instant (UTC ms, RFC 3339 or YYYY-MM-DD) between 1970 and 9999",
                input::printable(text)
            ),
        )
    })
}

/// As [`parse_time`], for an optional value.
pub fn parse_time_opt(
    field: &str,
    text: Option<&str>,
    end: bool,
) -> Result<Option<i64>, InputError> {
    text.map(|t| parse_time(field, t, end)).transpose()
}

impl Memory {
    /// The user's notes the handle's agent sees passing `filter` (every current one when it
    /// is empty), most recently changed first.
    pub async fn notes_matching(&self, user_id: &str, filter: &NoteFilter) -> Result<Vec<Note>> {
        input::check_user_id(user_id)?;
        filter.check()?;
        let (conditions, values) = filter.sql(3);
        let mut params: Vec<libsql::Value> = vec![user_id.into(), self.agent().into()];
        params.extend(values);
        let conn = self.db.conn().await?;
        let mut notes: Vec<Note> = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM notes WHERE user_id = ?1 AND superseded_by IS NULL
                 AND {}{conditions}
                 ORDER BY updated_at DESC, note_id DESC",
                Note::COLUMNS,
                super::agents::visible("?2")
            ),
            params,
        )
        .await?;
        notes.retain(|note| filter.tags_match(&note.tags));
        Ok(notes)
    }
}
