//! Named calendars: lists of dates kept once in the configuration (`[calendars.NAME]`,
//! `dates` and/or a `file` of one date per line) that schedules refer to by name
//! (`calendars = ["holidays"]`): an occurrence on one of their dates is skipped as a `skip`
//! date would be. The names are stored with the schedule; the dates are read from the
//! `calendars` table, which each process brings in line with its configuration when it
//! opens the database, so a schedule always skips the calendar as it is configured now.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::db::{query_scalar, Db, DbError};
use crate::input::{printable, InputError};

/// Most dates one calendar may hold (a century of holidays, and then some).
pub const MAX_CALENDAR_DATES: usize = 10_000;
/// Most calendars one schedule may refer to.
pub const MAX_CALENDARS_PER_SCHEDULE: usize = 16;
/// Largest calendar file read, in bytes.
pub const MAX_CALENDAR_FILE_BYTES: usize = 1024 * 1024;

/// A calendar as the configuration gives it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CalendarConfig {
    /// Dates, `YYYY-MM-DD`.
    pub dates: Vec<String>,
    /// A file of dates, one per line; blank lines and `#` comments are ignored.
    pub file: Option<String>,
}

/// Every configured calendar's dates, by name.
pub type Calendars = BTreeMap<String, Vec<NaiveDate>>;

/// Reads every configured calendar (its `dates` and its `file`); an error names the key.
pub fn resolve(
    configured: &BTreeMap<String, CalendarConfig>,
) -> Result<Arc<Calendars>, (String, String)> {
    let mut out = Calendars::new();
    for (name, calendar) in configured {
        let key = format!("calendars.{}", printable(name));
        crate::input::check_id("calendar name", name).map_err(|e| (key.clone(), e.reason))?;
        let mut dates = Vec::new();
        for (i, text) in calendar.dates.iter().enumerate() {
            dates.push(parse_date(text).map_err(|reason| (format!("{key}.dates[{i}]"), reason))?);
        }
        if let Some(path) = &calendar.file {
            let file_key = format!("{key}.file");
            let file = std::fs::File::open(path)
                .map_err(|e| (file_key.clone(), format!("cannot read {path}: {e}")))?;
            let bytes = crate::input::read_limited(path, file, MAX_CALENDAR_FILE_BYTES)
                .map_err(|e| (file_key.clone(), e.to_string()))?;
            let text =
                crate::input::utf8(path, bytes).map_err(|e| (file_key.clone(), e.to_string()))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.split('#').next().unwrap_or_default().trim();
                if line.is_empty() {
                    continue;
                }
                dates.push(
                    parse_date(line).map_err(|reason| {
                        (file_key.clone(), format!("line {}: {reason}", n + 1))
                    })?,
                );
            }
        }
        if dates.len() > MAX_CALENDAR_DATES {
            return Err((
                key,
                format!(
                    "holds {} dates, over the limit of {MAX_CALENDAR_DATES}",
                    dates.len()
                ),
            ));
        }
        dates.sort_unstable();
        dates.dedup();
        out.insert(name.clone(), dates);
    }
    Ok(Arc::new(out))
}

fn parse_date(text: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .map_err(|_| format!("`{}` is not a date (2026-12-25)", printable(text)))
}

/// The dates of the calendars `names` refers to, merged; an unknown name is bad input.
pub fn dates_of(calendars: &Calendars, names: &[String]) -> Result<Vec<NaiveDate>, InputError> {
    if names.len() > MAX_CALENDARS_PER_SCHEDULE {
        return Err(InputError::new(
            "calendars",
            format!("at most {MAX_CALENDARS_PER_SCHEDULE} calendars"),
        ));
    }
    let mut dates = Vec::new();
    for name in names {
        let Some(found) = calendars.get(name) else {
            return Err(InputError::new(
                "calendars",
                format!(
                    "no calendar `{}` is configured ([calendars.{}])",
                    printable(name),
                    printable(name)
                ),
            ));
        };
        dates.extend_from_slice(found);
    }
    dates.sort_unstable();
    dates.dedup();
    Ok(dates)
}

/// Brings the `calendars` table in line with `calendars`, writing only what differs (most
/// processes find it as it should be, and write nothing).
pub async fn store(db: &Db, calendars: &Calendars) -> Result<(), DbError> {
    let conn = db.conn().await?;
    let wanted = serde_json::to_string(
        &calendars
            .iter()
            .map(|(name, dates)| {
                (
                    name,
                    dates.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
                )
            })
            .collect::<BTreeMap<_, _>>(),
    )
    .expect("dates serialize");
    let stored: Option<String> = query_scalar(
        &conn,
        "SELECT json_group_object(name, json(dates_json)) FROM
             (SELECT name, dates_json FROM calendars ORDER BY name)",
        (),
    )
    .await?;
    let same = stored
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .zip(serde_json::from_str::<serde_json::Value>(&wanted).ok())
        .is_some_and(|(a, b)| a == b);
    if same {
        return Ok(());
    }
    let tx = conn.write_tx().await?;
    tx.execute("DELETE FROM calendars", ()).await?;
    for (name, dates) in calendars {
        let json = serde_json::to_string(&dates.iter().map(|d| d.to_string()).collect::<Vec<_>>())
            .expect("dates serialize");
        tx.execute(
            "INSERT INTO calendars (name, dates_json) VALUES (?1, ?2)",
            libsql::params![name.as_str(), json],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}
