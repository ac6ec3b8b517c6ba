//! What a run's notification says of the files it produced: their metadata and, where
//! the API's public address is known, a link to each one's content.

use serde_json::{json, Value};

use super::types::Artifact;
use crate::db::{fetch_all, DbError, FromRow, Queryable};

/// The artifacts of `run_id`, oldest first, read on `conn` (inside the transaction that
/// records the run, so the notification written with it lists them).
pub async fn of_run_in(
    conn: &(impl Queryable + ?Sized),
    run_id: &str,
) -> Result<Vec<Artifact>, DbError> {
    let sql = format!(
        "SELECT {} FROM artifacts WHERE run_id = ?1 ORDER BY created_at, artifact_id",
        Artifact::COLUMNS
    );
    fetch_all(conn, &sql, [run_id]).await
}

/// The `artifacts` array of a notification's payload. `public_url` (without a trailing
/// `/`) gives each a `url`; without it there is none.
pub fn notice_json(artifacts: &[Artifact], public_url: Option<&str>) -> Value {
    Value::Array(
        artifacts
            .iter()
            .map(|a| {
                let mut entry = json!({
                    "id": a.artifact_id,
                    "name": a.name,
                    "type": a.mime_type,
                    "size": a.size,
                    "hash": a.hash,
                });
                if let Some(base) = public_url {
                    entry["url"] = json!(format!("{base}/v1/artifacts/{}/content", a.artifact_id));
                }
                entry
            })
            .collect(),
    )
}

/// A file name safe inside a quoted header parameter: ASCII, with anything else (and `"`
/// and `\`) replaced by `_`.
pub fn ascii_file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if (c.is_ascii_graphic() && c != '"' && c != '\\') || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
