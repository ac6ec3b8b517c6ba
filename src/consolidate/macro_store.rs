//! What the `macros` pass reads and writes: a user's scheduled sessions and their cursors,
//! their new turns, the stored triggers and rows, and one transaction that stores what a
//! pass learned with the cursors it moved. Every statement names the user.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::ConsolidateError;
use super::macros::{Learning, NextKey, TriggerKey, Turn};
use crate::db::{fetch_all, json_column, query_scalar, DbError, FromRow};
use crate::memory::{Memory, Role};

/// Turns read from a session at a time.
pub(super) const BATCH_TURNS: usize = 5_000;

/// A session's cursor: what it was when the pass read it, and where it is going.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Cursor {
    pub session_id: String,
    pub read: i64,
    pub upper: i64,
}

/// What becomes of a row at the end of a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Learned {
    Kept,
    Removed,
}

/// A trigger's weighted run count.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Trigger {
    pub runs: f64,
    pub last_seen_at: i64,
    /// Changed by this pass.
    pub touched: bool,
}

impl Trigger {
    pub fn new(at: i64) -> Self {
        Self {
            runs: 0.0,
            last_seen_at: at,
            touched: false,
        }
    }
}

/// A pair or chain of three, as stored, and what this pass did to it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    pub next_args: Value,
    pub support: f64,
    pub trigger_runs: f64,
    pub confidence: f64,
    pub seen_count: i64,
    pub promoted: bool,
    pub first_seen_at: i64,
    pub last_seen_at: i64,
    /// Read from the database (rather than first seen by this pass).
    pub stored: bool,
    /// Its trigger occurred in a new run, and it decayed.
    pub touched: bool,
    /// It occurred in a new run.
    pub seen_now: bool,
    pub learned: Learned,
}

impl Row {
    pub fn new(at: i64) -> Self {
        Self {
            next_args: Value::Object(Default::default()),
            support: 0.0,
            trigger_runs: 0.0,
            confidence: 0.0,
            seen_count: 0,
            promoted: false,
            first_seen_at: at,
            last_seen_at: at,
            stored: false,
            touched: false,
            seen_now: false,
            learned: Learned::Kept,
        }
    }

    fn changed(&self) -> bool {
        self.touched || self.seen_now
    }
}

impl FromRow for Turn {
    const COLUMNS: &'static str = "e.sequence, e.role, e.payload_json, e.created_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        let role: String = row.get(1)?;
        Ok(Turn {
            sequence: row.get(0)?,
            role: role.parse::<Role>().map_err(|e| DbError::Corrupt {
                what: "event role".into(),
                reason: e.to_string(),
            })?,
            payload: json_column(row, 2, "event payload")?,
            created_at: row.get(3)?,
        })
    }
}

struct StoredRow(TriggerKey, NextKey, Row);

impl FromRow for StoredRow {
    const COLUMNS: &'static str = "trigger_tool, trigger_args_pattern, next_tool, next2_tool, \
         next_args_json, support, trigger_runs, confidence, seen_count, promoted, \
         first_seen_at, last_seen_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        let promoted: i64 = row.get(9)?;
        Ok(StoredRow(
            (row.get(0)?, row.get(1)?),
            (row.get(2)?, row.get(3)?),
            Row {
                next_args: json_column(row, 4, "macro next arguments")?,
                support: row.get(5)?,
                trigger_runs: row.get(6)?,
                confidence: row.get(7)?,
                seen_count: row.get(8)?,
                promoted: promoted != 0,
                first_seen_at: row.get(10)?,
                last_seen_at: row.get(11)?,
                stored: true,
                touched: false,
                seen_now: false,
                learned: Learned::Kept,
            },
        ))
    }
}

struct StoredTrigger(TriggerKey, Trigger);

impl FromRow for StoredTrigger {
    const COLUMNS: &'static str = "trigger_tool, trigger_args_pattern, runs, last_seen_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(StoredTrigger(
            (row.get(0)?, row.get(1)?),
            Trigger {
                runs: row.get(2)?,
                last_seen_at: row.get(3)?,
                touched: false,
            },
        ))
    }
}

impl FromRow for Cursor {
    const COLUMNS: &'static str = "s.session_id, COALESCE(c.upper_sequence, 0)";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        let read: i64 = row.get(1)?;
        Ok(Cursor {
            session_id: row.get(0)?,
            read,
            upper: read,
        })
    }
}

/// Users with scheduled sessions (or just `user`, if it has any).
pub(super) async fn users(
    memory: &Memory,
    user: Option<&str>,
) -> Result<Vec<String>, ConsolidateError> {
    let conn = memory.db().conn().await?;
    let mut rows = conn
        .query(
            "SELECT DISTINCT user_id FROM sessions WHERE kind = 'scheduled'
             AND (CAST(?1 AS TEXT) IS NULL OR user_id = ?1) ORDER BY user_id",
            [user],
        )
        .await?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().await? {
        out.push(row.get(0)?);
    }
    Ok(out)
}

/// The user's scheduled sessions with events past their cursor.
pub(super) async fn cursors(
    memory: &Memory,
    user_id: &str,
) -> Result<Vec<Cursor>, ConsolidateError> {
    let conn = memory.db().conn().await?;
    Ok(fetch_all(
        &conn,
        &format!(
            "SELECT {} FROM sessions s LEFT JOIN macro_cursors c
             ON c.user_id = s.user_id AND c.session_id = s.session_id
             WHERE s.user_id = ?1 AND s.kind = 'scheduled'
             AND s.last_sequence > COALESCE(c.upper_sequence, 0) ORDER BY s.session_id",
            Cursor::COLUMNS
        ),
        [user_id],
    )
    .await?)
}

/// Up to [`BATCH_TURNS`] of the session's turns after the cursor.
pub(super) async fn turns_after(
    memory: &Memory,
    user_id: &str,
    cursor: &Cursor,
) -> Result<Vec<Turn>, ConsolidateError> {
    let conn = memory.db().conn().await?;
    Ok(fetch_all(
        &conn,
        &format!(
            "SELECT {} FROM events e JOIN sessions s ON s.session_id = e.session_id
             WHERE s.user_id = ?1 AND e.session_id = ?2 AND e.sequence > ?3
             ORDER BY e.sequence LIMIT ?4",
            Turn::COLUMNS
        ),
        libsql::params![
            user_id,
            cursor.session_id.as_str(),
            cursor.upper,
            BATCH_TURNS as i64
        ],
    )
    .await?)
}

/// The user's stored triggers and rows.
pub(super) async fn load(
    memory: &Memory,
    user_id: &str,
    decay: f64,
) -> Result<Learning, ConsolidateError> {
    let conn = memory.db().conn().await?;
    let triggers: Vec<StoredTrigger> = fetch_all(
        &conn,
        &format!(
            "SELECT {} FROM macro_triggers WHERE user_id = ?1",
            StoredTrigger::COLUMNS
        ),
        [user_id],
    )
    .await?;
    let rows: Vec<StoredRow> = fetch_all(
        &conn,
        &format!(
            "SELECT {} FROM macros WHERE user_id = ?1",
            StoredRow::COLUMNS
        ),
        [user_id],
    )
    .await?;
    let mut learning = Learning {
        decay,
        triggers: triggers.into_iter().map(|t| (t.0, t.1)).collect(),
        rows: BTreeMap::new(),
    };
    for StoredRow(trigger, next, row) in rows {
        learning.rows.entry(trigger).or_default().insert(next, row);
    }
    Ok(learning)
}

/// Stores what the pass learned and moves the cursors, in one transaction; false (and
/// nothing stored) when another pass moved one of these cursors since they were read.
pub(super) async fn save(
    memory: &Memory,
    user_id: &str,
    learning: &Learning,
    cursors: &[Cursor],
) -> Result<bool, ConsolidateError> {
    let now = memory.clock().now_ms();
    let conn = memory.db().conn().await?;
    let tx = conn.write_tx().await?;
    for cursor in cursors {
        let stored: Option<i64> = query_scalar(
            &tx,
            "SELECT upper_sequence FROM macro_cursors WHERE user_id = ?1 AND session_id = ?2",
            libsql::params![user_id, cursor.session_id.as_str()],
        )
        .await?;
        if stored.unwrap_or(0) != cursor.read {
            tx.rollback().await?;
            return Ok(false);
        }
    }
    for ((tool, pattern), trigger) in learning.triggers.iter().filter(|(_, t)| t.touched) {
        tx.execute(
            "INSERT INTO macro_triggers (user_id, trigger_tool, trigger_args_pattern, runs,
             last_seen_at) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (user_id, trigger_tool, trigger_args_pattern)
             DO UPDATE SET runs = excluded.runs, last_seen_at = excluded.last_seen_at",
            libsql::params![
                user_id,
                tool.as_str(),
                pattern.as_str(),
                trigger.runs,
                trigger.last_seen_at
            ],
        )
        .await?;
    }
    for ((tool, pattern), rows) in &learning.rows {
        for ((next, next2), row) in rows.iter().filter(|(_, r)| r.changed()) {
            let key = [
                tool.as_str(),
                pattern.as_str(),
                next.as_str(),
                next2.as_str(),
            ];
            match row.learned {
                Learned::Removed => remove_row(&tx, user_id, key).await?,
                Learned::Kept => upsert_row(&tx, user_id, key, row, now).await?,
            }
        }
    }
    for cursor in cursors {
        tx.execute(
            "INSERT INTO macro_cursors (user_id, session_id, upper_sequence) VALUES (?1, ?2, ?3)
             ON CONFLICT (user_id, session_id) DO UPDATE SET upper_sequence = excluded.upper_sequence",
            libsql::params![user_id, cursor.session_id.as_str(), cursor.upper],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(true)
}

async fn remove_row(
    tx: &crate::db::WriteTx,
    user_id: &str,
    [tool, pattern, next, next2]: [&str; 4],
) -> Result<(), ConsolidateError> {
    tx.execute(
        "DELETE FROM macros WHERE user_id = ?1 AND trigger_tool = ?2
         AND trigger_args_pattern = ?3 AND next_tool = ?4 AND next2_tool = ?5",
        libsql::params![user_id, tool, pattern, next, next2],
    )
    .await?;
    Ok(())
}

async fn upsert_row(
    tx: &crate::db::WriteTx,
    user_id: &str,
    [tool, pattern, next, next2]: [&str; 4],
    row: &Row,
    now: i64,
) -> Result<(), ConsolidateError> {
    tx.execute(
        "INSERT INTO macros (user_id, trigger_tool, trigger_args_pattern, next_tool, next2_tool,
         next_args_json, support, trigger_runs, confidence, seen_count, promoted,
         first_seen_at, last_seen_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
         ON CONFLICT (user_id, trigger_tool, trigger_args_pattern, next_tool, next2_tool)
         DO UPDATE SET next_args_json = excluded.next_args_json, support = excluded.support,
         trigger_runs = excluded.trigger_runs, confidence = excluded.confidence,
         seen_count = excluded.seen_count, promoted = excluded.promoted,
         last_seen_at = excluded.last_seen_at, updated_at = excluded.updated_at",
        libsql::params![
            user_id,
            tool,
            pattern,
            next,
            next2,
            row.next_args.to_string(),
            row.support,
            row.trigger_runs,
            row.confidence,
            row.seen_count,
            row.promoted as i64,
            row.first_seen_at,
            row.last_seen_at,
            now
        ],
    )
    .await?;
    Ok(())
}
