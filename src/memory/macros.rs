//! Macros: tool chains learned from what a user's scheduled runs did (mined by the
//! `macros` consolidation pass, `consolidate::macros`). This is their read side: listing a
//! user's macros, the one the runtime hints at after a call, and counting that hint.
//!
//! A call's *argument pattern* is the sorted, comma-separated set of its argument names
//! (`{"query": "x", "top_k": 3}` → `query,top_k`; no arguments, or arguments that are not
//! a JSON object → `""`). Values are left out: they are mostly the run's own (a query, a
//! note's text), and the names alone tell which way a tool was used.

use serde::Serialize;
use serde_json::Value;

use super::{check_id, Memory, Result};
use crate::db::{fetch_all, fetch_optional, json_column, DbError, FromRow};

/// A learned tool chain of one user: after `trigger_tool` (called with arguments named
/// `trigger_args_pattern`), runs usually call `next_tool` (and then `next2_tool`).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Macro {
    pub trigger_tool: String,
    /// The trigger call's argument names, sorted and comma-separated ("" for none).
    pub trigger_args_pattern: String,
    pub next_tool: String,
    /// The call after `next_tool`, for a chain of three.
    pub next2_tool: Option<String>,
    /// The next call's arguments: each name seen, with its value while every occurrence
    /// had the same one, null where they differed.
    #[schema(value_type = Object)]
    pub next_args: Value,
    /// Runs in which the chain occurred, weighted: each later run in which the trigger
    /// occurs multiplies it by `consolidation.macros_decay` first.
    pub support: f64,
    /// Runs in which the trigger occurred, weighted the same way.
    pub trigger_runs: f64,
    /// support / trigger_runs: how often runs went on this way after the trigger.
    pub confidence: f64,
    /// Runs in which the chain occurred, unweighted.
    pub seen_count: i64,
    /// Hints the runtime gave from this macro.
    pub use_count: i64,
    /// When the chain was first and last seen (UTC ms of the run's events).
    pub first_seen_at: i64,
    pub last_seen_at: i64,
}

impl FromRow for Macro {
    const COLUMNS: &'static str = "trigger_tool, trigger_args_pattern, next_tool, next2_tool, \
         next_args_json, support, trigger_runs, confidence, seen_count, use_count, \
         first_seen_at, last_seen_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        let next2: String = row.get(3)?;
        Ok(Macro {
            trigger_tool: row.get(0)?,
            trigger_args_pattern: row.get(1)?,
            next_tool: row.get(2)?,
            next2_tool: (!next2.is_empty()).then_some(next2),
            next_args: json_column(row, 4, "macro next arguments")?,
            support: row.get(5)?,
            trigger_runs: row.get(6)?,
            confidence: row.get(7)?,
            seen_count: row.get(8)?,
            use_count: row.get(9)?,
            first_seen_at: row.get(10)?,
            last_seen_at: row.get(11)?,
        })
    }
}

/// What listing a user's macros answers.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct MacroList {
    pub user_id: String,
    /// Promoted macros, most confident first.
    pub macros: Vec<Macro>,
}

/// The argument pattern of a call's arguments (see the module's documentation).
pub fn args_pattern(arguments: &Value) -> String {
    match arguments {
        Value::Object(map) => {
            let mut names: Vec<&str> = map.keys().map(String::as_str).collect();
            names.sort_unstable();
            names.join(",")
        }
        _ => String::new(),
    }
}

/// The arguments of an OpenAI-format call (`function.arguments`, a JSON text, or already
/// an object); `Null` when they cannot be read.
pub fn call_arguments(call: &Value) -> Value {
    match &call["function"]["arguments"] {
        Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        other => other.clone(),
    }
}

impl Memory {
    /// The user's promoted macros, most confident first.
    pub async fn macros(&self, user_id: &str) -> Result<MacroList> {
        check_id("user id", user_id)?;
        let conn = self.db.conn().await?;
        let macros = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM macros WHERE user_id = ?1 AND promoted = 1
                 ORDER BY confidence DESC, support DESC, trigger_tool, next_tool, next2_tool",
                Macro::COLUMNS
            ),
            [user_id],
        )
        .await?;
        Ok(MacroList {
            user_id: user_id.to_string(),
            macros,
        })
    }

    /// The user's most confident promoted pair after `tool` called with arguments named
    /// `pattern`, at `min_confidence` or more, with the most confident chain of three
    /// that continues it (if one is as confident).
    pub async fn macro_after(
        &self,
        user_id: &str,
        tool: &str,
        pattern: &str,
        min_confidence: f64,
    ) -> Result<Option<Macro>> {
        check_id("user id", user_id)?;
        let conn = self.db.conn().await?;
        let sql = format!(
            "SELECT {} FROM macros WHERE user_id = ?1 AND trigger_tool = ?2
             AND trigger_args_pattern = ?3 AND promoted = 1 AND confidence >= ?4
             AND (?5 = '' AND next2_tool = '' OR ?5 != '' AND next_tool = ?5 AND next2_tool != '')
             ORDER BY confidence DESC, support DESC, next_tool, next2_tool LIMIT 1",
            Macro::COLUMNS
        );
        let params = |next: &str| libsql::params![user_id, tool, pattern, min_confidence, next];
        let Some(pair) = fetch_optional::<Macro>(&conn, &sql, params("")).await? else {
            return Ok(None);
        };
        let chain = fetch_optional::<Macro>(&conn, &sql, params(&pair.next_tool)).await?;
        Ok(Some(chain.unwrap_or(pair)))
    }

    /// Counts a hint given from `hinted`, one of `user_id`'s macros.
    pub async fn macro_used(&self, user_id: &str, hinted: &Macro) -> Result<()> {
        check_id("user id", user_id)?;
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE macros SET use_count = use_count + 1 WHERE user_id = ?1
             AND trigger_tool = ?2 AND trigger_args_pattern = ?3 AND next_tool = ?4
             AND next2_tool = ?5",
            libsql::params![
                user_id,
                hinted.trigger_tool.as_str(),
                hinted.trigger_args_pattern.as_str(),
                hinted.next_tool.as_str(),
                hinted.next2_tool.as_deref().unwrap_or("")
            ],
        )
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pattern_is_the_sorted_argument_names() {
        assert_eq!(
            args_pattern(&json!({"top_k": 3, "query": "x"})),
            "query,top_k"
        );
        assert_eq!(args_pattern(&json!({})), "");
        assert_eq!(args_pattern(&json!("text")), "");
    }

    #[test]
    fn arguments_are_read_from_text_or_object() {
        let text = json!({"function": {"name": "t", "arguments": "{\"a\": 1}"}});
        assert_eq!(call_arguments(&text), json!({"a": 1}));
        let object = json!({"function": {"name": "t", "arguments": {"b": 2}}});
        assert_eq!(call_arguments(&object), json!({"b": 2}));
        let bad = json!({"function": {"name": "t", "arguments": "{not json"}});
        assert_eq!(call_arguments(&bad), Value::Null);
    }
}
