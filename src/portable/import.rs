//! Reading an archive in two passes: the first checks every line (JSON, `type`, fields,
//! users in the header's order, the end line and its count) and writes nothing; the second
//! writes one user's lines at a time, each user in one transaction. A row whose key exists
//! with the same content is already present; with other content, or under another user,
//! it is a conflict: skipped, the stored row untouched.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read as _};
use std::path::Path;

use serde_json::Value;

use super::columns::ColumnTypes;
use super::error::{PortableError, Result};
use super::foreign;
use super::format::{End, Header, ImportFormat, ImportReport, FORMAT, VERSION};
use super::request::ImportRequest;
use super::rows::{self, LineLimits, Row, CONTENT, TYPE};
use super::store::Portable;
use super::tables::{table_of, Table};
use super::user_import::{write_user, UserImport};
use crate::access::Actor;
use crate::db::{query_scalar, WriteTx};
use crate::memory::{SessionKey, SessionKind};

/// One checked data line.
pub(super) struct Line {
    pub number: u64,
    pub table: &'static Table,
    pub row: Row,
}

pub(super) async fn import(
    portable: &Portable,
    actor: &Actor,
    request: &ImportRequest,
) -> Result<ImportReport> {
    let format = match request.format {
        Some(format) => format,
        None => foreign::detect(&request.path)?,
    };
    let mut report = ImportReport {
        format: format.as_str().to_string(),
        dry_run: request.dry_run,
        ..ImportReport::default()
    };
    let mut reindex: BTreeSet<SessionKey> = BTreeSet::new();
    let written = write_all(portable, actor, request, format, &mut report, &mut reindex)
        .await
        .map_err(|err| match err {
            // Users committed before the line's own stay imported: say so.
            PortableError::Line { line, reason, .. } => PortableError::Line {
                line,
                reason,
                imported_before: report.written.clone(),
            },
            other => other,
        });
    // Users committed before a failure are imported: their index is rebuilt all the same.
    if !request.dry_run && !reindex.is_empty() {
        let sessions: Vec<SessionKey> = reindex.into_iter().collect();
        report.sessions_reindexed = portable.memory.rebuild_sessions(&sessions).await? as u64;
    }
    written?;
    Ok(report)
}

/// Checks and writes every user's lines; `reindex` gathers the sessions of the users whose
/// transactions committed.
async fn write_all(
    portable: &Portable,
    actor: &Actor,
    request: &ImportRequest,
    format: ImportFormat,
    report: &mut ImportReport,
    reindex: &mut BTreeSet<SessionKey>,
) -> Result<()> {
    let limits = portable.memory.limits().clone();
    if format != ImportFormat::Nightshift {
        let batches = match format {
            ImportFormat::Mem0 => foreign::mem0(&request.path, request.user.as_deref(), &limits)?,
            _ => foreign::markdown(&request.path, request.user.as_deref(), &limits)?,
        };
        for (user, _) in &batches {
            if !actor.may_act_for(user) {
                return Err(PortableError::NotYours);
            }
        }
        for (user, lines) in &batches {
            report.users.push(user.clone());
            write_user(
                portable,
                user,
                lines,
                request.dry_run,
                true,
                report,
                reindex,
            )
            .await?;
        }
    } else {
        let max_artifact = portable.artifacts.config().max_artifact_bytes;
        let types = ColumnTypes::load(&portable.db).await?;
        let users = validate(&request.path, &limits, &types, max_artifact)?;
        if request.user.is_some() {
            // An archive names its own users; a user given here would be ignored.
            return Err(crate::input::InputError::new(
                "user",
                "applies to mem0 and Markdown imports: an archive's lines name their users",
            )
            .into());
        }
        for user in &users {
            if !actor.may_act_for(user) {
                return Err(PortableError::NotYours);
            }
        }
        let mut reader = Archive::open(&request.path, &limits, &types, max_artifact)?;
        // One user's lines are written as they are read, in the user's transaction: an
        // archive's size is never held in memory, only the line at hand.
        let mut current: Option<UserImport<'_>> = None;
        while let Some((user, line)) = reader.next_line()? {
            if current.as_ref().is_some_and(|c| c.user() != user) {
                if let Some(done) = current.take() {
                    done.finish(report, reindex).await?;
                }
            }
            let writer = match current.as_mut() {
                Some(writer) => writer,
                None => current
                    .insert(UserImport::begin(portable, &user, request.dry_run, false).await?),
            };
            writer.line(&line, report).await?;
        }
        if let Some(done) = current.take() {
            done.finish(report, reindex).await?;
        }
        report.users = users;
    }
    Ok(())
}

/// The first pass: every line checked, nothing written. Returns the header's users.
fn validate(
    path: &Path,
    limits: &crate::config::MemoryConfig,
    types: &ColumnTypes,
    max_artifact: usize,
) -> Result<Vec<String>> {
    let mut reader = Archive::open(path, limits, types, max_artifact)?;
    while reader.next_line()?.is_some() {}
    Ok(reader.header.users)
}

/// An archive read line by line, each line at most `memory.max_import_line_bytes`.
struct Archive<'t> {
    reader: BufReader<std::fs::File>,
    types: &'t ColumnTypes,
    header: Header,
    number: u64,
    data_lines: u64,
    /// Index in the header's users of the user whose lines come now.
    user_at: Option<usize>,
    max_line: usize,
    line_limits: LineLimits,
    /// `artifacts.max_artifact_bytes`: a larger artifact is refused before anything is
    /// written.
    max_artifact: usize,
    ended: bool,
}

impl<'t> Archive<'t> {
    fn open(
        path: &Path,
        limits: &crate::config::MemoryConfig,
        types: &'t ColumnTypes,
        max_artifact: usize,
    ) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| PortableError::io(path, e))?;
        let mut reader = BufReader::new(file);
        let first = read_bounded(&mut reader, limits.max_import_line_bytes, 1)?
            .ok_or_else(|| PortableError::line(1, "the file is empty: no header"))?;
        let header: Header = serde_json::from_str(&first)
            .map_err(|e| PortableError::line(1, format!("not an archive header: {e}")))?;
        if header.format != FORMAT {
            return Err(PortableError::line(1, format!("format is not `{FORMAT}`")));
        }
        if header.version != VERSION {
            return Err(PortableError::line(
                1,
                format!(
                    "version {} is not supported (this build reads {VERSION})",
                    header.version
                ),
            ));
        }
        for (i, user) in header.users.iter().enumerate() {
            crate::input::check_user_id(user).map_err(|e| PortableError::line(1, e.to_string()))?;
            if header.users[..i].contains(user) {
                return Err(PortableError::line(
                    1,
                    format!("user `{user}` is named twice in the header"),
                ));
            }
        }
        Ok(Self {
            reader,
            types,
            header,
            number: 1,
            data_lines: 0,
            user_at: None,
            max_line: limits.max_import_line_bytes,
            line_limits: LineLimits::of(limits),
            max_artifact,
            ended: false,
        })
    }

    /// The next data line and its user; `None` after the end line.
    fn next_line(&mut self) -> Result<Option<(String, Line)>> {
        let number = self.number + 1;
        let text = read_bounded(&mut self.reader, self.max_line, number)?;
        let Some(text) = text else {
            if self.ended {
                return Ok(None);
            }
            return Err(PortableError::line(
                number,
                "the archive ends without its end line: it is truncated",
            ));
        };
        self.number = number;
        if self.ended {
            return Err(PortableError::line(number, "a line after the end line"));
        }
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| PortableError::line(number, format!("not JSON: {e}")))?;
        let Value::Object(object) = value else {
            return Err(PortableError::line(number, "not a JSON object"));
        };
        let kind = match object.get(TYPE) {
            Some(Value::String(kind)) => kind.clone(),
            _ => return Err(PortableError::line(number, "no `type`")),
        };
        if kind == "end" {
            let end: End = serde_json::from_value(Value::Object(object))
                .map_err(|e| PortableError::line(number, format!("bad end line: {e}")))?;
            if end.lines != self.data_lines {
                return Err(PortableError::line(
                    number,
                    format!(
                        "the end line counts {} lines but {} came before it",
                        end.lines, self.data_lines
                    ),
                ));
            }
            self.ended = true;
            return self.next_line();
        }
        let table = table_of(&kind)
            .ok_or_else(|| PortableError::line(number, format!("unknown type `{kind}`")))?;
        let row: Row = object.into_iter().collect();
        let user = rows::check_line(table, &row, self.types, &self.line_limits)
            .map_err(|reason| PortableError::line(number, reason))?;
        if table.kind == "artifact" {
            let size = row.get("size").and_then(Value::as_u64).unwrap_or(0);
            if size > self.max_artifact as u64 {
                return Err(PortableError::line(
                    number,
                    format!(
                        "the artifact is {size} bytes, over artifacts.max_artifact_bytes ({})",
                        self.max_artifact
                    ),
                ));
            }
        }
        let at = self
            .header
            .users
            .iter()
            .position(|u| *u == user)
            .ok_or_else(|| {
                PortableError::line(number, format!("user `{user}` is not in the header"))
            })?;
        match self.user_at {
            Some(now) if at < now => {
                return Err(PortableError::line(
                    number,
                    format!("user `{user}`'s lines are not together, in the header's order"),
                ))
            }
            _ => self.user_at = Some(at),
        }
        self.data_lines += 1;
        Ok(Some((user, Line { number, table, row })))
    }
}

/// One line without its line break, or `None` at the end of the file.
fn read_bounded(reader: &mut impl BufRead, max: usize, number: u64) -> Result<Option<String>> {
    let mut buf = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .by_ref()
        .take(limit)
        .read_until(b'\n', &mut buf)
        .map_err(|e| PortableError::line(number, format!("cannot read: {e}")))?;
    if buf.is_empty() {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > max {
        return Err(PortableError::line(
            number,
            format!("longer than memory.max_import_line_bytes ({max} bytes)"),
        ));
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| PortableError::line(number, "not valid UTF-8"))
}

/// Creates a notes pseudo-session (and its summary row) unless it exists.
pub(super) async fn ensure_notes_session(tx: &WriteTx, key: &SessionKey, now: i64) -> Result<()> {
    tx.execute(
        "INSERT INTO sessions (session_id, user_id, kind, created_at, updated_at)
         VALUES (?1, ?2, 'memory', ?3, ?3) ON CONFLICT DO NOTHING",
        libsql::params![key.as_str(), key.user_id(), now],
    )
    .await?;
    tx.execute(
        "INSERT INTO session_state (session_id, updated_at) VALUES (?1, ?2)
         ON CONFLICT DO NOTHING",
        libsql::params![key.as_str(), now],
    )
    .await?;
    Ok(())
}

/// The key of `user`'s notes session of `agent` (the shared one for `None`).
pub(super) fn notes_key(user: &str, agent: Option<&str>) -> SessionKey {
    SessionKey::new(user, &SessionKind::notes_session(user, agent))
}

/// Each schedule the user's lines wrote, checked as the write paths check a new one (its
/// fields, cadence, chain) and its channel as granted to the user: an archive is the
/// user's own file, so it gets no more than the user's token would.
pub(super) async fn check_schedules(
    portable: &Portable,
    tx: &WriteTx,
    user: &str,
    written: &[(String, u64)],
    now: i64,
) -> Result<()> {
    let actor = Actor::User(user.to_string());
    for (schedule_id, number) in written {
        let schedule = portable
            .schedules
            .check_imported(tx, schedule_id, now)
            .await
            .map_err(|err| match err {
                crate::schedule::ScheduleError::Db(err) => PortableError::Db(err),
                other => PortableError::line(*number, other.to_string()),
            })?;
        portable
            .grants
            .check(
                &actor,
                schedule.channel_id.as_deref(),
                schedule.channel_context_id.as_deref(),
            )
            .map_err(|err| PortableError::line(*number, err.to_string()))?;
    }
    Ok(())
}

/// A schedule's transcripts (`scheduled:ID`) must not be another user's schedule's: the
/// id would say it holds runs it does not. Every session of a user's lines is that user's
/// own (stored under their key), so none can take the place of another user's notes or
/// transcripts (D8, D11): an agent's notes session (`memory@HASH`) is the line user's
/// whichever agent it was made for (an archive may hold one of an agent whose notes
/// moved to another), and `memory:USER` is checked with its line.
pub(super) async fn check_reserved_sessions(
    tx: &WriteTx,
    user: &str,
    written: &[(String, u64)],
) -> Result<()> {
    for (session_id, number) in written {
        if let Some(schedule_id) = session_id.strip_prefix(SessionKind::SCHEDULED_PREFIX) {
            let owner: Option<String> = query_scalar(
                tx,
                "SELECT user_id FROM schedules WHERE schedule_id = ?1",
                [schedule_id],
            )
            .await?;
            if owner.is_some_and(|owner| owner != user) {
                return Err(PortableError::line(
                    *number,
                    format!(
                        "session `{}` holds another user's schedule's transcripts",
                        crate::input::printable(session_id)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Where an imported artifact's bytes go: the artifact store decides (inline or its
/// folder, as a put would); a dry run writes no file.
pub(super) struct Placing<'a> {
    pub portable: &'a Portable,
    pub dry_run: bool,
    /// The folder files written, kept again after the commit.
    pub folder_files: &'a mut Vec<(String, Vec<u8>)>,
}

pub(super) enum Outcome {
    Imported,
    Present,
    Conflict,
}

pub(super) async fn write_row(
    tx: &WriteTx,
    user: &str,
    line: &Line,
    placing: Placing<'_>,
) -> Result<Outcome> {
    let (table, row, number) = (line.table, &line.row, line.number);
    let bad = |reason: String| PortableError::line(number, reason);
    // A parent that belongs to another user makes this row a conflict.
    for (column, parent, own) in [
        ("session_id", "sessions", "session"),
        ("schedule_id", "schedules", "schedule"),
    ] {
        let Some(Value::String(id)) = row.get(column) else {
            continue;
        };
        if table.kind == own {
            continue;
        }
        let sql = format!("SELECT user_id FROM {parent} WHERE {column} = ?1");
        let owner: Option<String> = query_scalar(tx, &sql, [id.as_str()]).await?;
        match owner {
            None => {
                return Err(bad(format!(
                    "no {own} `{}` in the archive or the database",
                    SessionKey::id_of(id)
                )))
            }
            Some(owner) if owner != user => return Ok(Outcome::Conflict),
            Some(_) => {}
        }
    }
    // A row naming a run names that run's schedule's user: another user's run makes it a
    // conflict (an approval would resume their run, an artifact join their notice). A run
    // pruned since (an artifact outlives it) names no one. An approval's run must be of
    // the approval's own schedule.
    if table.kind != "run" {
        if let Some(Value::String(run_id)) = row.get("run_id") {
            let run: Option<(String, String)> = crate::db::query_first_row(
                tx,
                "SELECT r.schedule_id, s.user_id FROM schedule_runs r
                 JOIN schedules s ON s.schedule_id = r.schedule_id WHERE r.run_id = ?1",
                [run_id.as_str()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .await?;
            match run {
                Some((_, owner)) if owner != user => return Ok(Outcome::Conflict),
                Some((schedule_id, _))
                    if table.kind == "approval"
                        && row.get("schedule_id") != Some(&Value::String(schedule_id.clone())) =>
                {
                    return Err(bad(format!(
                        "run `{}` is not of schedule `{}`",
                        crate::input::printable(run_id),
                        crate::input::printable(row["schedule_id"].as_str().unwrap_or_default())
                    )))
                }
                None if table.kind == "approval" => {
                    return Err(bad(format!(
                        "no run `{}` in the archive or the database",
                        crate::input::printable(run_id)
                    )))
                }
                _ => {}
            }
        }
    }
    // A version of a note that is (or was) another user's is theirs, not this user's; so
    // is where it was said.
    if matches!(table.kind, "note_version" | "fact_evidence") {
        if let Some(Value::String(note_id)) = row.get("note_id") {
            let others: Option<i64> = query_scalar(
                tx,
                "SELECT count(*) FROM (
                     SELECT user_id FROM notes WHERE note_id = ?1
                     UNION SELECT user_id FROM note_versions WHERE note_id = ?1) AS owners
                 WHERE user_id IS DISTINCT FROM ?2",
                libsql::params![note_id.as_str(), user],
            )
            .await?;
            if others.unwrap_or(0) > 0 {
                return Ok(Outcome::Conflict);
            }
        }
    }
    let values = |columns: &[&str]| -> Result<Vec<libsql::Value>> {
        columns
            .iter()
            .map(|c| rows::to_sql(c, row.get(*c).unwrap_or(&Value::Null)).map_err(bad))
            .collect()
    };
    let condition: Vec<String> = table
        .key
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} = ?{}", i + 1))
        .collect();
    let sql = format!(
        "SELECT {} FROM {} WHERE {}",
        table.columns.join(", "),
        table.table,
        condition.join(" AND ")
    );
    let mut found = tx
        .query(&sql, libsql::params::Params::Positional(values(table.key)?))
        .await?;
    if let Some(stored) = found.next().await? {
        let stored = rows::read_row(&stored, table.columns).map_err(bad)?;
        let wanted: Row = table
            .columns
            .iter()
            .map(|c| (c.to_string(), row.get(*c).cloned().unwrap_or(Value::Null)))
            .collect();
        return Ok(if stored == wanted {
            Outcome::Present
        } else {
            Outcome::Conflict
        });
    }
    drop(found);
    if table.kind == "artifact" {
        write_content(tx, row, placing).await.map_err(bad)?;
    }
    let placeholders: Vec<String> = (1..=table.columns.len()).map(|i| format!("?{i}")).collect();
    let sql = format!(
        "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING",
        table.table,
        table.columns.join(", "),
        placeholders.join(", ")
    );
    let written = tx
        .execute(
            &sql,
            libsql::params::Params::Positional(values(table.columns)?),
        )
        .await
        .map_err(|e| bad(format!("cannot be stored: {e}")))?;
    // Another unique constraint (a note's key, a run's occurrence) holds another row.
    if written == 0 {
        return Ok(Outcome::Conflict);
    }
    super::readback::read_back(tx, table, row)
        .await
        .map_err(bad)?;
    Ok(Outcome::Imported)
}

/// An artifact's bytes, checked against its hash and size, stored once per hash.
async fn write_content(tx: &WriteTx, row: &Row, placing: Placing<'_>) -> Result<(), String> {
    let (Some(Value::String(content)), Some(Value::String(hash)), Some(size), Some(created)) = (
        row.get(CONTENT),
        row.get("hash"),
        row.get("size").and_then(Value::as_i64),
        row.get("created_at").and_then(Value::as_i64),
    ) else {
        return Err("an artifact needs content_base64, hash, size and created_at".to_string());
    };
    let bytes = rows::content_bytes(content)?;
    if blake3::hash(&bytes).to_hex().as_str() != hash
        || i64::try_from(bytes.len()).ok() != Some(size)
    {
        return Err("content_base64 does not match the artifact's hash and size".to_string());
    }
    let in_folder = if placing.dry_run {
        false
    } else {
        placing
            .portable
            .artifacts
            .place_imported(hash, &bytes)
            .await
            .map_err(|e| e.to_string())?
    };
    let data = if in_folder {
        placing.folder_files.push((hash.clone(), bytes));
        None
    } else {
        Some(bytes)
    };
    tx.execute(
        "INSERT INTO artifact_contents (hash, size, in_folder, data, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (hash) DO NOTHING",
        libsql::params![hash.as_str(), size, i64::from(in_folder), data, created],
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(())
}
