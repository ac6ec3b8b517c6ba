//! Named calendars: lists of dates kept once in the configuration (`[calendars.NAME]`,
//! `dates` and/or a `file` of one date per line) that schedules refer to by name
//! (`calendars = ["holidays"]`): an occurrence on one of their dates is skipped as a `skip`
//! date would be.
//!
//! `nightshift run` writes its configuration's calendars to the `calendars` table as it
//! starts: that table is the one truth every process (CLI, API, MCP) reads names and dates
//! from. A schedule stores the names and, beside them, the dates as they were when it was
//! stored; when the worker finds a calendar changed, it brings the dates of every schedule
//! naming it up to date and works its next run out again.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::db::{query_scalar, Db, DbError, Queryable};
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
    /// A file of dates, one per line; blank lines and `#` comments are ignored. A relative
    /// path is read from the worker's working directory: give an absolute one.
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

/// The dates of the calendars `names` refers to, merged, from `calendars`; an unknown or
/// repeated name is bad input.
pub fn dates_of(calendars: &Calendars, names: &[String]) -> Result<Vec<NaiveDate>, InputError> {
    check_names(names)?;
    let mut dates = Vec::new();
    for name in names {
        dates.extend_from_slice(calendars.get(name).ok_or_else(|| unknown(name))?);
    }
    dates.sort_unstable();
    dates.dedup();
    Ok(dates)
}

/// As [`dates_of`], from the `calendars` table the worker wrote.
pub async fn dates_in(
    conn: &(impl Queryable + ?Sized),
    names: &[String],
) -> Result<Vec<NaiveDate>, crate::schedule::ScheduleError> {
    check_names(names)?;
    let mut dates = Vec::new();
    // No calendars: no read.
    for name in names {
        let json: Option<String> = query_scalar(
            conn,
            "SELECT dates_json FROM calendars WHERE name = ?1",
            [name.as_str()],
        )
        .await?;
        let json = json.ok_or_else(|| unknown(name))?;
        let found: Vec<NaiveDate> = serde_json::from_str(&json).map_err(|e| DbError::Corrupt {
            what: format!("calendar `{name}`"),
            reason: e.to_string(),
        })?;
        dates.extend(found);
    }
    dates.sort_unstable();
    dates.dedup();
    Ok(dates)
}

fn check_names(names: &[String]) -> Result<(), InputError> {
    if names.len() > MAX_CALENDARS_PER_SCHEDULE {
        return Err(InputError::new(
            "calendars",
            format!("at most {MAX_CALENDARS_PER_SCHEDULE} calendars"),
        ));
    }
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(InputError::new(
                "calendars",
                format!("`{}` is named twice", printable(name)),
            ));
        }
    }
    Ok(())
}

fn unknown(name: &str) -> InputError {
    InputError::new(
        "calendars",
        format!(
            "no calendar `{}` is configured ([calendars.{}] in the configuration of \
             `nightshift run`); `--clear calendars` takes the list away",
            printable(name),
            printable(name)
        ),
    )
}

/// Brings the `calendars` table in line with `calendars` (the worker's configuration),
/// writing only what differs; returns the names of the calendars added, changed or
/// removed.
pub async fn store(db: &Db, calendars: &Calendars) -> Result<Vec<String>, DbError> {
    let conn = db.conn().await?;
    let mut stored = BTreeMap::<String, String>::new();
    let mut rows = conn
        .query("SELECT name, dates_json FROM calendars", ())
        .await?;
    while let Some(row) = rows.next().await? {
        stored.insert(row.get(0)?, row.get(1)?);
    }
    drop(rows);
    let wanted: BTreeMap<&String, String> = calendars
        .iter()
        .map(|(name, dates)| (name, serde_json::to_string(dates).expect("dates serialize")))
        .collect();
    let mut changed: Vec<String> = stored
        .keys()
        .filter(|name| !wanted.contains_key(name))
        .cloned()
        .collect();
    changed.extend(
        wanted
            .iter()
            .filter(|(name, json)| stored.get(name.as_str()) != Some(json))
            .map(|(name, _)| (*name).clone()),
    );
    if changed.is_empty() {
        return Ok(changed);
    }
    let tx = conn.write_tx().await?;
    for name in &changed {
        match wanted.get(name) {
            Some(json) => {
                tx.execute(
                    "INSERT INTO calendars (name, dates_json) VALUES (?1, ?2)
                     ON CONFLICT (name) DO UPDATE SET dates_json = excluded.dates_json",
                    libsql::params![name.as_str(), json.as_str()],
                )
                .await?
            }
            None => {
                tx.execute("DELETE FROM calendars WHERE name = ?1", [name.as_str()])
                    .await?
            }
        };
    }
    tx.commit().await?;
    Ok(changed)
}
