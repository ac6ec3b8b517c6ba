//! Writing an archive: the header, then each user's rows table by table in key order,
//! then the end line. Keys are written in name order and rows in key order, so exporting
//! the same data twice gives the same bytes.

use std::io::Write;

use base64::Engine;
use serde::Serialize;
use serde_json::Value;

use super::error::{PortableError, Result};
use super::format::{End, ExportReport, Header, FORMAT, VERSION};
use super::request::ExportScope;
use super::rows::{self, Row, CONTENT, TYPE, USER};
use super::store::Portable;
use super::tables::TABLES;
use crate::access::Actor;
use crate::db::DbError;
use crate::input;

pub(super) async fn export(
    portable: &Portable,
    actor: &Actor,
    scope: &ExportScope,
    exported_at: i64,
    out: &mut (dyn Write + Send),
) -> Result<ExportReport> {
    let users = match scope {
        ExportScope::User(user) => {
            input::check_user_id(user)?;
            if !actor.may_act_for(user) {
                return Err(PortableError::NotYours);
            }
            vec![user.clone()]
        }
        ExportScope::All if actor.is_operator() => all_users(portable).await?,
        ExportScope::All => return Err(PortableError::NotYours),
    };
    let header = Header {
        format: FORMAT.to_string(),
        version: VERSION,
        exported_at,
        users: users.clone(),
    };
    write_line(out, &header)?;
    let mut report = ExportReport {
        users: users.clone(),
        ..ExportReport::default()
    };
    let mut lines = 0u64;
    for user in &users {
        for table in TABLES {
            let rows = read_table(portable, table, user).await?;
            for mut row in rows {
                // Sessions are stored under keys of their user: archived by their ids.
                rows::to_archived(table, &mut row);
                row.insert(TYPE.to_string(), Value::from(table.kind));
                row.insert(USER.to_string(), Value::from(user.as_str()));
                if table.kind == "artifact" {
                    let content = artifact_content(portable, &row).await?;
                    row.insert(CONTENT.to_string(), Value::from(content));
                }
                write_line(out, &row)?;
                lines += 1;
                *report.lines.entry(table.kind.to_string()).or_default() += 1;
            }
        }
    }
    let end = End {
        kind: "end".to_string(),
        lines,
    };
    write_line(out, &end)?;
    out.flush().map_err(PortableError::Write)?;
    Ok(report)
}

fn write_line(out: &mut (dyn Write + Send), value: &impl Serialize) -> Result<()> {
    let mut text = serde_json::to_vec(value).map_err(|e| {
        PortableError::Write(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    })?;
    text.push(b'\n');
    out.write_all(&text).map_err(PortableError::Write)
}

/// Every user with anything stored, in id order.
async fn all_users(portable: &Portable) -> Result<Vec<String>> {
    let conn = portable.db.conn().await?;
    let mut rows = conn
        .query(
            "SELECT user_id FROM sessions UNION SELECT user_id FROM notes
             UNION SELECT user_id FROM note_versions UNION SELECT user_id FROM note_tombstones
             UNION SELECT user_id FROM schedules
             UNION SELECT user_id FROM state_entries WHERE user_id IS NOT NULL
             UNION SELECT user_id FROM artifacts ORDER BY 1",
            (),
        )
        .await?;
    let mut users = Vec::new();
    while let Some(row) = rows.next().await? {
        users.push(row.get::<String>(0)?);
    }
    Ok(users)
}

async fn read_table(
    portable: &Portable,
    table: &super::tables::Table,
    user: &str,
) -> Result<Vec<Row>> {
    let conn = portable.db.conn().await?;
    let sql = format!(
        "SELECT {} FROM {} {}",
        table.columns.join(", "),
        table.table,
        table.select
    );
    let mut rows = conn.query(&sql, [user]).await?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().await? {
        let row = rows::read_row(&row, table.columns).map_err(|reason| DbError::Corrupt {
            what: table.table.to_string(),
            reason,
        })?;
        out.push(row);
    }
    Ok(out)
}

async fn artifact_content(portable: &Portable, row: &Row) -> Result<String> {
    let Some(Value::String(id)) = row.get("artifact_id") else {
        return Err(DbError::Corrupt {
            what: "artifacts".to_string(),
            reason: "a row without an artifact_id".to_string(),
        }
        .into());
    };
    let (_, bytes) = portable.artifacts.get(&Actor::Operator, id).await?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}
