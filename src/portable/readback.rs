//! An imported row read back, inside the import's transaction, by the very record type
//! every door reads it with: a value the readers cannot take (stored JSON of the wrong
//! shape, a name outside a closed set, a value of another type) refuses the line before
//! anything is committed, instead of failing those reads, or the scheduler, later.

use serde_json::Value;

use super::rows::{self, Row};
use super::tables::Table;
use crate::artifact::Artifact;
use crate::db::{fetch_readable, FromRow, WriteTx};
use crate::memory::{Event, Note, NoteVersion, Session};
use crate::schedule::types::{Run, Schedule};
use crate::state::StateEntry;

/// Reads `row` of `table` back as its readers do; `Err` says why it cannot be.
pub(super) async fn read_back(tx: &WriteTx, table: &Table, row: &Row) -> Result<(), String> {
    match table.kind {
        "session" => read::<Session>(tx, table, row).await,
        "event" => read::<Event>(tx, table, row).await,
        "note" => read::<Note>(tx, table, row).await,
        "note_version" => read::<NoteVersion>(tx, table, row).await,
        "schedule" => read::<Schedule>(tx, table, row).await,
        "run" => read::<Run>(tx, table, row).await,
        "approval" => read::<crate::approval::Approval>(tx, table, row).await,
        "state" => read::<StateEntry>(tx, table, row).await,
        "artifact" => read::<Artifact>(tx, table, row).await,
        // Summaries and tombstones have no record type: their JSON and text columns are
        // checked with the line.
        _ => Ok(()),
    }
}

async fn read<T: FromRow>(tx: &WriteTx, table: &Table, row: &Row) -> Result<(), String> {
    let condition: Vec<String> = table
        .key
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} = ?{}", i + 1))
        .collect();
    let sql = format!(
        "SELECT {} FROM {} WHERE {}",
        T::COLUMNS,
        table.table,
        condition.join(" AND ")
    );
    let key = table
        .key
        .iter()
        .map(|c| rows::to_sql(c, row.get(*c).unwrap_or(&Value::Null)))
        .collect::<Result<Vec<_>, _>>()?;
    let (_, unreadable) = fetch_readable::<T>(tx, &sql, libsql::params::Params::Positional(key))
        .await
        .map_err(|e| e.to_string())?;
    match unreadable.first() {
        Some(bad) => Err(format!("cannot be read back as stored: {}", bad.reason)),
        None => Ok(()),
    }
}
