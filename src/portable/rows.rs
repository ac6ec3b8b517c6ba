//! Rows as JSON: a stored value becomes a JSON null, integer, float or string (the
//! `*_json` columns stay the exact text stored, so a row comes back byte for byte), and an
//! imported field passes the checks the write paths apply.

use std::collections::BTreeMap;

use serde_json::Value;

use super::tables::Table;
use crate::input::{self, Lines};
use crate::memory::SessionKind;

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
    max_text_bytes: usize,
) -> Result<String, String> {
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
            if super::tables::ADDED_LATER.contains(column) {
                continue;
            }
            return Err(format!("field `{column}` is missing"));
        };
        to_sql(column, value)?;
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
        } else if table.texts.contains(column) {
            check_stored_text(column, text, max_text_bytes).map_err(|e| e.to_string())?;
        }
    }
    if let Some(Value::String(owner)) = line.get("user_id") {
        if *owner != user {
            return Err(format!("user_id `{owner}` is not the line's user `{user}`"));
        }
    }
    if table.kind == "artifact" && !matches!(line.get(CONTENT), Some(Value::String(_))) {
        return Err(format!("field `{CONTENT}` must be a string"));
    }
    Ok(user)
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
