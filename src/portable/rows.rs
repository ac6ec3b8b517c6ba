//! Rows as JSON: a stored value becomes a JSON null, integer, float or string (the
//! `*_json` columns stay the exact text stored, so a row comes back byte for byte), and an
//! imported field passes the checks the write paths apply.

use std::collections::BTreeMap;

use serde_json::Value;

use super::columns::ColumnTypes;
use super::tables::Table;
use crate::input::{self, Lines};
use crate::memory::{SessionKey, SessionKind};

/// One row, by column; serialized in column-name order.
pub(crate) type Row = BTreeMap<String, Value>;

/// Keys every data line carries besides its columns.
pub(crate) const TYPE: &str = "type";
pub(crate) const USER: &str = "user";
/// The artifact line's content.
pub(crate) const CONTENT: &str = "content_base64";

/// Reads `columns` (selected in that order) from a stored row.
pub(crate) fn read_row(row: &libsql::Row, columns: &[&str]) -> Result<Row, String> {
    let mut out = Row::new();
    for (i, column) in columns.iter().enumerate() {
        let index = i32::try_from(i).map_err(|_| "too many columns".to_string())?;
        let value = row.get_value(index).map_err(|e| e.to_string())?;
        out.insert(column.to_string(), to_json(column, value)?);
    }
    Ok(out)
}

fn to_json(column: &str, value: libsql::Value) -> Result<Value, String> {
    Ok(match value {
        libsql::Value::Null => Value::Null,
        libsql::Value::Integer(n) => Value::from(n),
        libsql::Value::Real(x) => serde_json::Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| format!("column {column} holds a non-finite number"))?,
        libsql::Value::Text(text) => Value::String(text),
        libsql::Value::Blob(_) => return Err(format!("column {column} holds a blob")),
    })
}

/// A JSON field as the value to store.
pub(crate) fn to_sql(column: &str, value: &Value) -> Result<libsql::Value, String> {
    Ok(match value {
        Value::Null => libsql::Value::Null,
        Value::String(text) => libsql::Value::Text(text.clone()),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => libsql::Value::Integer(i),
            (None, Some(x)) if n.is_f64() => libsql::Value::Real(x),
            _ => return Err(format!("field `{column}` is out of range")),
        },
        Value::Bool(_) | Value::Array(_) | Value::Object(_) => {
            return Err(format!(
                "field `{column}` must be null, a number or a string"
            ))
        }
    })
}

/// Checks a data line's fields for `table`: exactly its columns (and `type`, `user`, and
/// an artifact's content), ids and user-written text by the common rules. Returns the
/// line's user.
pub(crate) fn check_line(
    table: &Table,
    line: &Row,
    types: &ColumnTypes,
    limits: &LineLimits,
) -> Result<String, String> {
    let max_text_bytes = limits.max_text_bytes;
    let user = match line.get(USER) {
        Some(Value::String(user)) => user.clone(),
        _ => return Err("field `user` must be a string".to_string()),
    };
    input::check_user_id(&user).map_err(|e| e.to_string())?;
    let extra =
        |key: &str| key == TYPE || key == USER || (table.kind == "artifact" && key == CONTENT);
    if let Some(unknown) = line
        .keys()
        .find(|k| !extra(k) && !table.columns.contains(&k.as_str()))
    {
        return Err(format!("unknown field `{unknown}` for type {}", table.kind));
    }
    for column in table.columns {
        let Some(value) = line.get(*column) else {
            if super::tables::ADDED_LATER.contains(&(table.kind, column)) {
                continue;
            }
            return Err(format!("field `{column}` is missing"));
        };
        to_sql(column, value)?;
        types.of(table, column).check(column, value)?;
        let named = super::tables::NAMES.contains(&(table.kind, column));
        if named && !(value.is_string() || value.is_null()) {
            return Err(format!("field `{column}` must be a string or null"));
        }
        let Value::String(text) = value else {
            // An id is text: a number there would be stored as its digits, quietly.
            if column.ends_with("_id") && !value.is_null() {
                return Err(format!("field `{column}` must be a string or null"));
            }
            continue;
        };
        if *column == "session_id" && SessionKind::of(text) == SessionKind::Memory {
            // A notes pseudo-session: `memory:` before a user id of any allowed length.
            input::check_text(
                column,
                text,
                SessionKind::MEMORY_PREFIX.len() + input::MAX_ID_BYTES,
                Lines::One,
            )
            .map_err(|e| e.to_string())?;
        } else if column.ends_with("_id") || table.key.contains(column) {
            if !(column == &"scope_id" && text.is_empty()) {
                input::check_id(column, text).map_err(|e| e.to_string())?;
            }
        } else if named {
            input::check_name(column, text).map_err(|e| e.to_string())?;
        } else if table.texts.contains(column) {
            check_stored_text(column, text, max_text_bytes).map_err(|e| e.to_string())?;
        } else if table.contents.contains(column) {
            check_stored_content(column, text, max_text_bytes).map_err(|e| e.to_string())?;
        }
    }
    if let Some(Value::String(owner)) = line.get("user_id") {
        if *owner != user {
            return Err(format!("user_id `{owner}` is not the line's user `{user}`"));
        }
    }
    // Stored JSON is read back by every door: text that does not parse would fail those
    // reads for good.
    for column in table.columns.iter().filter(|c| c.ends_with("_json")) {
        if let Some(Value::String(text)) = line.get(*column) {
            serde_json::from_str::<Value>(text)
                .map_err(|e| format!("field `{column}` is not JSON: {e}"))?;
        }
    }
    for column in ["version", "size"] {
        if let Some(value) = line.get(column).filter(|_| table.columns.contains(&column)) {
            match value.as_i64() {
                Some(n) if (0..=MAX_COUNTER).contains(&n) => {}
                _ => {
                    return Err(format!(
                        "field `{column}` must be a whole number from 0 to {MAX_COUNTER}"
                    ))
                }
            }
        }
    }
    if table.kind == "session" {
        check_session_line(line, &user)?;
    }
    if table.kind == "state" {
        check_state_scope(line, &user)?;
        if let Some(Value::String(value)) = line.get("value_json") {
            if value.len() > limits.max_state_value_bytes {
                return Err(format!(
                    "field `value_json` is {} bytes, over memory.max_state_value_bytes ({})",
                    value.len(),
                    limits.max_state_value_bytes
                ));
            }
        }
    }
    if table.kind == "artifact" {
        check_artifact_content(line)?;
    }
    Ok(user)
}

/// Most a version or size read from an archive may be (2⁵³): counters moved past an
/// imported version keep room to grow, and every JSON reader holds the number exactly.
const MAX_COUNTER: i64 = 1 << 53;

/// A session line's kind is the one its id says, and a notes pseudo-session is named
/// after its user: `memory:USER` is only that user's, and an agent's (`memory@HASH`) is
/// checked once the user's notes are written (see `import`). Sessions are the line's
/// user's own (see [`to_stored`]) whatever their ids, so no line can reach another
/// user's; these keep an archive from holding ids that mean what they are not.
fn check_session_line(line: &Row, user: &str) -> Result<(), String> {
    let Some(Value::String(id)) = line.get("session_id") else {
        return Ok(());
    };
    if id.starts_with(SessionKind::MEMORY_PREFIX) && *id != SessionKind::memory_session(user) {
        return Err(format!(
            "session `{}` holds another user's notes: only `{}` is this user's",
            input::printable(id),
            SessionKind::memory_session(user)
        ));
    }
    let kind = SessionKind::of(id).as_str();
    if line.get("kind").and_then(Value::as_str) != Some(kind) {
        return Err(format!(
            "field `kind` must be `{kind}` for session `{}`",
            input::printable(id)
        ));
    }
    Ok(())
}

/// `row` of `table` as stored for `user`: each session id (a `session_id`, and the
/// `scope_id` of session state) becomes the key of that user's session of that id
/// ([`SessionKey`]). An archive names sessions by their ids, and every session in a
/// user's lines is that user's.
pub(crate) fn to_stored(table: &Table, row: &Row, user: &str) -> Row {
    let mut stored = row.clone();
    for column in session_columns(table, row) {
        if let Some(Value::String(id)) = stored.get_mut(column) {
            *id = SessionKey::new(user, id).as_str().to_string();
        }
    }
    stored
}

/// A stored row of `table` as archived: each session key back to its session id.
pub(crate) fn to_archived(table: &Table, row: &mut Row) {
    for column in session_columns(table, row) {
        if let Some(Value::String(key)) = row.get_mut(column) {
            *key = SessionKey::id_of(key).to_string();
        }
    }
}

/// The columns of `row` that name a session.
fn session_columns(table: &Table, row: &Row) -> Vec<&'static str> {
    let mut columns = Vec::new();
    if table.columns.contains(&"session_id") {
        columns.push("session_id");
    }
    if table.kind == "state" && row.get("scope").and_then(Value::as_str) == Some("session") {
        columns.push("scope_id");
    }
    columns
}

/// Limits a line is held to.
#[derive(Debug, Clone)]
pub(crate) struct LineLimits {
    pub max_text_bytes: usize,
    pub max_state_value_bytes: usize,
}

impl LineLimits {
    pub(crate) fn of(memory: &crate::config::MemoryConfig) -> Self {
        Self {
            max_text_bytes: memory.max_text_bytes,
            max_state_value_bytes: memory.max_state_value_bytes,
        }
    }
}

/// A state row's scope instance is the one its other columns name: a user's own, the
/// row's session; app and temp state are never imported.
fn check_state_scope(line: &Row, user: &str) -> Result<(), String> {
    let text = |column: &str| match line.get(column) {
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let scope_id = text("scope_id").unwrap_or_default();
    let expected = match text("scope") {
        Some("user") => Some(user),
        Some("session") => text("session_id"),
        // App state is the operator's, not exported with a user and never taken from a
        // user's archive; temp state lives for one run and is not exported either.
        Some("app" | "temp") => {
            return Err(
                "field `scope` must be user or session: app and temp state are not \
                        imported"
                    .to_string(),
            )
        }
        _ => return Err("field `scope` must be user or session".to_string()),
    };
    if expected != Some(scope_id) {
        return Err(format!(
            "field `scope_id` `{}` is not the scope its row names",
            input::printable(scope_id)
        ));
    }
    Ok(())
}

/// An artifact line's bytes: base64 of exactly `size` bytes hashing to `hash`.
fn check_artifact_content(line: &Row) -> Result<(), String> {
    let Some(Value::String(content)) = line.get(CONTENT) else {
        return Err(format!("field `{CONTENT}` must be a string"));
    };
    let bytes = content_bytes(content)?;
    let hash = match line.get("hash") {
        Some(Value::String(hash)) => hash.as_str(),
        _ => return Err("field `hash` must be a string".to_string()),
    };
    let size = line.get("size").and_then(Value::as_i64);
    if blake3::hash(&bytes).to_hex().as_str() != hash || i64::try_from(bytes.len()).ok() != size {
        return Err(format!(
            "`{CONTENT}` does not match the artifact's hash and size"
        ));
    }
    Ok(())
}

/// The bytes of an artifact line's content.
pub(crate) fn content_bytes(content: &str) -> Result<Vec<u8>, String> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(content)
        .map_err(|e| format!("`{CONTENT}` is not base64 ({e})"))
}

/// The write paths' text rule, without its "not blank" part: a stored title or summary
/// may be empty.
fn check_stored_text(field: &str, text: &str, max_bytes: usize) -> Result<(), input::InputError> {
    if text.trim().is_empty() {
        return if text.len() <= max_bytes && !text.chars().any(char::is_control) {
            Ok(())
        } else {
            Err(input::InputError::new(
                field,
                "holds only control characters",
            ))
        };
    }
    input::check_text(field, text, max_bytes, Lines::Many)
}

/// The write paths' content rule, without its "not blank" part (a stored summary may be
/// empty): anything within `max_bytes`, kept byte for byte.
fn check_stored_content(
    field: &str,
    text: &str,
    max_bytes: usize,
) -> Result<(), input::InputError> {
    if text.trim().is_empty() && text.len() <= max_bytes {
        return Ok(());
    }
    input::check_content(field, text, max_bytes)
}

/// A row's key as one id for a report: its key columns joined by `/`.
pub(crate) fn key_text(table: &Table, row: &Row) -> String {
    table
        .key
        .iter()
        .map(|c| match row.get(*c) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        })
        .collect::<Vec<_>>()
        .join("/")
}
