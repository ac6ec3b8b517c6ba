//! One user's lines written in one transaction, as they come: [`UserImport::begin`] opens
//! it, [`UserImport::line`] writes a line and keeps what the end needs (counts, the
//! sessions to reindex, the rows checked once all are in), [`UserImport::finish`] checks
//! the user's limits and commits (or rolls back a dry run). A writer dropped before its
//! finish rolls its transaction back.

use std::collections::BTreeSet;

use serde_json::Value;

use super::error::{PortableError, Result};
use super::format::ImportReport;
use super::import::{
    check_reserved_sessions, check_schedules, ensure_notes_session, notes_key, write_row, Line,
    Outcome, Placing,
};
use super::rows;
use super::store::Portable;
use crate::db::{query_scalar, Conn, WriteTx};
use crate::memory::SessionKey;

pub(super) struct UserImport<'p> {
    portable: &'p Portable,
    user: String,
    dry_run: bool,
    tx: WriteTx,
    /// The connection the transaction runs on, held as long as it.
    _conn: Conn,
    now: i64,
    /// The highest imported state version of each scope instance (scope, scope id as
    /// stored): its counter must not hand one out again.
    state_versions: std::collections::BTreeMap<(String, String), i64>,
    notes_imported: u64,
    artifacts_imported: u64,
    artifact_bytes: u64,
    /// Sessions to reindex once the transaction has committed.
    touched: BTreeSet<SessionKey>,
    folder_files: Vec<(String, Vec<u8>)>,
    /// Rows checked once all of the user's lines are in (a follower may come before what
    /// it follows, a notes session before the notes that name it): id and line number.
    schedules_written: Vec<(String, u64)>,
    sessions_written: Vec<(String, u64)>,
}

/// Writes `lines` of `user` in one transaction (rolled back for a dry run).
pub(super) async fn write_user(
    portable: &Portable,
    user: &str,
    lines: &[Line],
    dry_run: bool,
    ensure_memory_session: bool,
    report: &mut ImportReport,
    reindex: &mut BTreeSet<SessionKey>,
) -> Result<()> {
    let mut writer = UserImport::begin(portable, user, dry_run, ensure_memory_session).await?;
    for line in lines {
        writer.line(line, report).await?;
    }
    writer.finish(report, reindex).await
}

impl<'p> UserImport<'p> {
    pub async fn begin(
        portable: &'p Portable,
        user: &str,
        dry_run: bool,
        ensure_memory_session: bool,
    ) -> Result<Self> {
        let conn = portable.db.conn().await?;
        let tx = conn.write_tx().await?;
        let now = portable.clock.now_ms();
        if ensure_memory_session {
            ensure_notes_session(&tx, &notes_key(user, None), now).await?;
        }
        Ok(Self {
            portable,
            user: user.to_string(),
            dry_run,
            tx,
            _conn: conn,
            now,
            state_versions: Default::default(),
            notes_imported: 0,
            artifacts_imported: 0,
            artifact_bytes: 0,
            touched: BTreeSet::new(),
            folder_files: Vec::new(),
            schedules_written: Vec::new(),
            sessions_written: Vec::new(),
        })
    }

    /// Whose lines these are.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Writes one line, counting it in `report`.
    pub async fn line(&mut self, line: &Line, report: &mut ImportReport) -> Result<()> {
        let table = line.table;
        let placing = Placing {
            portable: self.portable,
            dry_run: self.dry_run,
            folder_files: &mut self.folder_files,
        };
        // The line's sessions are its user's: stored under that user's keys.
        let stored = Line {
            number: line.number,
            table,
            row: rows::to_stored(table, &line.row, &self.user),
        };
        let outcome = write_row(&self.tx, &self.user, &stored, placing).await?;
        let counts = report.types.entry(table.kind.to_string()).or_default();
        match outcome {
            Outcome::Present => counts.already_present += 1,
            Outcome::Conflict => counts.conflicts.push(rows::key_text(table, &line.row)),
            Outcome::Imported => {
                counts.imported += 1;
                self.imported(line, &stored).await?;
            }
        }
        Ok(())
    }

    /// What a newly written row leaves for the end of the user's lines.
    async fn imported(&mut self, line: &Line, stored: &Line) -> Result<()> {
        let text = |column: &str| match line.row.get(column) {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        match line.table.kind {
            "event" | "session" => {
                if let Some(session) = text("session_id") {
                    self.touched.insert(SessionKey::new(&self.user, &session));
                    if line.table.kind == "session" {
                        self.sessions_written.push((session, line.number));
                    }
                }
            }
            "schedule" => {
                if let Some(id) = text("schedule_id") {
                    self.schedules_written.push((id, line.number));
                }
            }
            "artifact" => {
                self.artifacts_imported += 1;
                let size = line.row.get("size").and_then(Value::as_u64);
                self.artifact_bytes = self.artifact_bytes.saturating_add(size.unwrap_or(0));
            }
            "note" => {
                self.notes_imported += 1;
                // The note is indexed in its agent's session, whichever sessions the
                // archive holds.
                let key = notes_key(&self.user, text("agent_id").as_deref());
                ensure_notes_session(&self.tx, &key, self.now).await?;
                self.touched.insert(key);
            }
            "state" => {
                let field = |column: &str| match stored.row.get(column) {
                    Some(Value::String(s)) => s.clone(),
                    _ => String::new(),
                };
                if let Some(n) = line.row.get("version").and_then(Value::as_i64) {
                    let at = self
                        .state_versions
                        .entry((field("scope"), field("scope_id")))
                        .or_default();
                    *at = (*at).max(n);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks what needs all of the user's rows, and the user's limits (one that would
    /// not hold refuses the user whole: the transaction is rolled back), then commits, or
    /// rolls back a dry run.
    pub async fn finish(
        mut self,
        report: &mut ImportReport,
        reindex: &mut BTreeSet<SessionKey>,
    ) -> Result<()> {
        let (portable, tx, user) = (self.portable, &self.tx, self.user.as_str());
        for ((scope, scope_id), version) in &self.state_versions {
            // Each scope's counter moves past its imported versions: none is handed out
            // again.
            tx.execute(
                "INSERT INTO state_versions (scope, scope_id, version) VALUES (?1, ?2, ?3)
                 ON CONFLICT (scope, scope_id) DO UPDATE
                 SET version = MAX(state_versions.version, excluded.version)",
                libsql::params![scope.as_str(), scope_id.as_str(), *version],
            )
            .await?;
        }
        check_schedules(portable, tx, user, &self.schedules_written, self.now).await?;
        check_reserved_sessions(tx, user, &self.sessions_written).await?;
        let over_limit = |reason: String| PortableError::OverLimit {
            user: user.to_string(),
            reason,
            imported_before: report.written.clone(),
        };
        if !self.schedules_written.is_empty() {
            portable
                .schedules
                .check_imported_count(tx, user)
                .await
                .map_err(|e| over_limit(e.to_string()))?;
        }
        if self.notes_imported > 0 {
            let limit = portable.memory.limits().max_notes_per_user;
            let current: i64 = query_scalar(
                tx,
                "SELECT count(*) FROM notes WHERE user_id = ?1 AND superseded_by IS NULL",
                [user],
            )
            .await?
            .unwrap_or(0);
            if current > limit {
                return Err(over_limit(format!(
                    "{} notes more would make {current}, over memory.max_notes_per_user \
                     ({limit})",
                    self.notes_imported
                )));
            }
        }
        if self.artifacts_imported > 0 {
            portable
                .artifacts
                .check_imported_totals(tx, user, self.artifact_bytes)
                .await
                .map_err(|e| over_limit(e.to_string()))?;
        }
        if self.dry_run {
            self.tx.rollback().await?;
        } else {
            self.tx.commit().await?;
            for (hash, bytes) in &self.folder_files {
                portable.artifacts.keep_imported(hash, bytes).await?;
            }
            report.written.push(self.user.clone());
            reindex.append(&mut self.touched);
        }
        Ok(())
    }
}
