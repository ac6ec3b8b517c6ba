//! Note versions: every change to a note keeps the note as it stood after the change, and
//! who or what made it, so a user can see what their memory said and bring any of it
//! back. A change and its version are written in one transaction.

use serde::Serialize;

use super::agents::{same_scope, visible};
use super::notes::next_memory_sequence;
use super::{check_id, Memory, MemoryError, Note, Result};
use crate::db::{fetch_all, fetch_optional, json_column, query_scalar, DbError, FromRow, WriteTx};

text_enum!(
    /// What a change did to a note.
    NoteChange {
        Created => "created",
        Updated => "updated",
        Superseded => "superseded",
        Deleted => "deleted",
        Restored => "restored",
    }
);

/// Who or what changes notes through a [`Memory`]: recorded with each version.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Origin {
    /// A caller that did not say (tests, benchmarks, library users).
    #[default]
    Library,
    Cli,
    Api,
    Mcp,
    /// An operator on the dashboard.
    Dashboard,
    /// A scheduled run's tool call.
    Run(String),
    /// A consolidation pass, by name.
    Consolidation(&'static str),
}

impl Origin {
    /// As stored: `cli`, `api`, `mcp`, `dashboard`, `run:RUN_ID`, `consolidation:PASS`, `library`.
    pub fn label(&self) -> String {
        match self {
            Origin::Library => "library".into(),
            Origin::Cli => "cli".into(),
            Origin::Api => "api".into(),
            Origin::Mcp => "mcp".into(),
            Origin::Dashboard => "dashboard".into(),
            Origin::Run(run_id) => format!("run:{run_id}"),
            Origin::Consolidation(pass) => format!("consolidation:{pass}"),
        }
    }
}

/// A note as one change left it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct NoteVersion {
    pub note_id: String,
    /// 1 for the first, one more for each change.
    pub version: i64,
    pub content: String,
    pub tags: Vec<String>,
    pub key: Option<String>,
    pub category: Option<String>,
    pub source: String,
    pub change: NoteChange,
    /// `cli`, `api`, `mcp`, `dashboard`, `run:RUN_ID`, `consolidation:PASS`, `library`.
    pub changed_by: String,
    pub changed_at: i64,
    /// The agent the note belongs to; absent for a shared note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// The version `v` of user ?1 that was a note's current one at ?2: its newest by then,
/// unless that one deleted or superseded it.
const VALID_AT: &str = "v.user_id = ?1 AND v.changed_at <= ?2
    AND v.version = (SELECT max(w.version) FROM note_versions w
                     WHERE w.note_id = v.note_id AND w.changed_at <= ?2)
    AND v.change NOT IN ('deleted', 'superseded')";

/// [`NoteVersion::COLUMNS`] of the table aliased `v`.
fn qualified() -> String {
    NoteVersion::COLUMNS
        .split(',')
        .map(|c| format!("v.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromRow for NoteVersion {
    const COLUMNS: &'static str = "note_id, version, content, tags_json, key, category, source,
        change, changed_by, changed_at, agent_id";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(NoteVersion {
            note_id: row.get(0)?,
            version: row.get(1)?,
            content: row.get(2)?,
            tags: json_column(row, 3, "note version tags")?,
            key: row.get(4)?,
            category: row.get(5)?,
            source: row.get(6)?,
            change: crate::db::text_column(row, 7, "note change")?,
            changed_by: row.get(8)?,
            changed_at: row.get(9)?,
            agent_id: row.get(10)?,
        })
    }
}

/// Keeps the note as it stands now (inside the transaction that changed it) as its next
/// version. For a deletion, called before the row goes.
async fn record(
    tx: &WriteTx,
    note_id: &str,
    change: NoteChange,
    origin: &Origin,
    now: i64,
) -> Result<()> {
    tx.execute(
        "INSERT INTO note_versions (note_id, version, user_id, content, tags_json, key,
         category, source, change, changed_by, changed_at, agent_id)
         SELECT note_id,
                COALESCE((SELECT max(version) FROM note_versions WHERE note_id = ?1), 0) + 1,
                user_id, content, tags_json, key, category, source, ?2, ?3, ?4, agent_id
         FROM notes WHERE note_id = ?1",
        libsql::params![note_id, change.as_str(), origin.label(), now],
    )
    .await?;
    Ok(())
}

/// Records the deletion of every note that expired by `now`, before they are deleted in
/// the same transaction.
pub(super) async fn record_expiries(tx: &WriteTx, origin: &Origin, now: i64) -> Result<()> {
    tx.execute(
        "INSERT INTO note_versions (note_id, version, user_id, content, tags_json, key,
         category, source, change, changed_by, changed_at, agent_id)
         SELECT note_id,
                COALESCE((SELECT max(v.version) FROM note_versions v
                          WHERE v.note_id = notes.note_id), 0) + 1,
                user_id, content, tags_json, key, category, source, 'deleted', ?2, ?1, agent_id
         FROM notes WHERE expires_at IS NOT NULL AND expires_at <= ?1",
        libsql::params![now, origin.label()],
    )
    .await?;
    Ok(())
}

impl Memory {
    /// Keeps the note's new version and, when its user wants them, the change event.
    pub(super) async fn record_version(
        &self,
        tx: &WriteTx,
        note_id: &str,
        change: NoteChange,
        now: i64,
    ) -> Result<()> {
        record(tx, note_id, change, &self.origin, now).await?;
        self.note_changed(tx, note_id, now).await
    }

    /// The same store, recording `origin` with every note change it makes.
    pub fn by(&self, origin: Origin) -> Memory {
        let mut memory = self.clone();
        memory.origin = origin;
        memory
    }

    pub(super) fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Every version of one of the user's notes, oldest first; a deleted note's too, until
    /// its retention ends.
    pub async fn note_history(&self, user_id: &str, note_id: &str) -> Result<Vec<NoteVersion>> {
        check_id("user id", user_id)?;
        check_id("note id", note_id)?;
        let conn = self.db.conn().await?;
        let versions: Vec<NoteVersion> = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM note_versions WHERE note_id = ?1 AND user_id = ?2 AND {}
                 ORDER BY version",
                NoteVersion::COLUMNS,
                visible("?3")
            ),
            libsql::params![note_id, user_id, self.agent()],
        )
        .await?;
        if versions.is_empty() {
            return Err(MemoryError::NoteNotFound(note_id.to_string()));
        }
        Ok(versions)
    }

    /// Brings version `version` of one of the user's notes back as its newest version: the
    /// same id, searchable again, whether the note was since changed, superseded or
    /// deleted (within its retention).
    pub async fn restore_note(&self, user_id: &str, note_id: &str, version: i64) -> Result<Note> {
        check_id("user id", user_id)?;
        check_id("note id", note_id)?;
        crate::input::check_range("version", version, 1..=i64::MAX)?;
        let conn = self.db.conn().await?;
        let wanted: NoteVersion = fetch_optional(
            &conn,
            &format!(
                "SELECT {} FROM note_versions WHERE note_id = ?1 AND user_id = ?2
                 AND version = ?3 AND {}",
                NoteVersion::COLUMNS,
                visible("?4")
            ),
            libsql::params![note_id, user_id, version, self.agent()],
        )
        .await?
        .ok_or_else(|| MemoryError::VersionNotFound {
            note_id: note_id.to_string(),
            version,
        })?;
        drop(conn);
        let chunks = self
            .prepare_chunks(&[wanted.content.as_str()])
            .pop()
            .unwrap_or_default();
        let tags_json = serde_json::to_string(&wanted.tags).expect("tags serialise");
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        // A note keeps the agent it was saved for, in every version.
        let agent = wanted.agent_id.as_deref();
        let result = async {
            if let Some(key) = &wanted.key {
                let holder: Option<String> = query_scalar(
                    &tx,
                    &format!(
                        "SELECT note_id FROM notes WHERE user_id = ?1 AND key = ?2
                         AND note_id != ?3 AND {}",
                        same_scope("?4")
                    ),
                    libsql::params![user_id, key.as_str(), note_id, agent],
                )
                .await?;
                if let Some(holder) = holder {
                    return Err(MemoryError::KeyTaken {
                        key: key.clone(),
                        note_id: holder,
                    });
                }
            }
            let exists: Option<i64> = query_scalar(
                &tx,
                "SELECT 1 FROM notes WHERE note_id = ?1 AND user_id = ?2",
                libsql::params![note_id, user_id],
            )
            .await?;
            if exists.is_some() {
                tx.execute("DELETE FROM chunks WHERE note_id = ?1", [note_id])
                    .await?;
                // Where the text it had was said is no evidence for another.
                tx.execute(
                    "DELETE FROM fact_evidence WHERE note_id = ?1 AND user_id = ?2
                     AND ?3 != (SELECT content FROM notes WHERE note_id = ?1 AND user_id = ?2)",
                    libsql::params![note_id, user_id, wanted.content.as_str()],
                )
                .await?;
                tx.execute(
                    "UPDATE notes SET content = ?3, tags_json = ?4, key = ?5, category = ?6,
                     superseded_by = NULL, updated_at = ?7 WHERE note_id = ?1 AND user_id = ?2",
                    libsql::params![
                        note_id,
                        user_id,
                        wanted.content.as_str(),
                        tags_json.as_str(),
                        wanted.key.as_deref(),
                        wanted.category.as_deref(),
                        now
                    ],
                )
                .await?;
            } else {
                self.check_note_room(&tx, user_id).await?;
                tx.execute(
                    "INSERT INTO notes (note_id, user_id, content, tags_json, key, category,
                     created_at, updated_at, source, agent_id)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6,
                       COALESCE((SELECT min(changed_at) FROM note_versions WHERE note_id = ?1), ?7),
                       ?7, ?8, ?9)",
                    libsql::params![
                        note_id,
                        user_id,
                        wanted.content.as_str(),
                        tags_json.as_str(),
                        wanted.key.as_deref(),
                        wanted.category.as_deref(),
                        now,
                        wanted.source.as_str(),
                        agent
                    ],
                )
                .await?;
            }
            // Wanted back: consolidation may learn it again.
            tx.execute(
                "DELETE FROM note_tombstones WHERE user_id = ?1 AND content_hash = ?2",
                libsql::params![user_id, super::tombstone_hash(&wanted.content)],
            )
            .await?;
            let sequence = next_memory_sequence(&tx, user_id, agent, now).await?;
            self.write_note_chunks(&tx, (user_id, agent), note_id, &chunks, sequence, now)
                .await?;
            self.record_version(&tx, note_id, NoteChange::Restored, now)
                .await
        }
        .await;
        match result {
            Ok(()) => tx.commit().await?,
            Err(err) => {
                tx.rollback().await?;
                return Err(err);
            }
        }
        self.wake_embedder();
        self.note(user_id, note_id).await
    }

    /// The user's notes as they were at `at` (UTC ms): each note's version valid then,
    /// leaving out notes not yet written, already deleted or superseded by then; most
    /// recently changed first.
    pub async fn notes_as_of(&self, user_id: &str, at: i64) -> Result<Vec<NoteVersion>> {
        check_id("user id", user_id)?;
        crate::input::check_instant("as of", at)?;
        let conn = self.db.conn().await?;
        Ok(fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM note_versions v WHERE {VALID_AT} AND {}
                 ORDER BY v.changed_at DESC, v.note_id",
                qualified(),
                visible("?3").replace("agent_id", "v.agent_id")
            ),
            libsql::params![user_id, at, self.agent()],
        )
        .await?)
    }

    /// Keyword search of the user's notes as they were at `at`: the versions valid then
    /// whose text matches, best first (bm25), at most `top_k`. Keywords only: vectors are
    /// kept for the notes as they are now.
    pub async fn search_as_of(
        &self,
        user_id: &str,
        query: &str,
        at: i64,
        top_k: usize,
    ) -> Result<Vec<NoteVersion>> {
        check_id("user id", user_id)?;
        crate::input::check_text(
            "query",
            query,
            crate::input::MAX_QUERY_BYTES,
            crate::input::Lines::Many,
        )?;
        crate::input::check_instant("as of", at)?;
        let conn = self.db.conn().await?;
        let (expression, matched) = if conn.is_postgres() {
            // ts_rank grows with the match, where bm25 falls: negated, both sort best first.
            let matched = "SELECT version_id, -ts_rank(words, to_tsquery('english', ?3)) AS rank
                 FROM note_versions WHERE user_id = ?1 AND words @@ to_tsquery('english', ?3)";
            (super::fts_query::tsquery_expression(query), matched)
        } else {
            let matched = "SELECT rowid AS version_id, bm25(note_versions_fts) AS rank
                 FROM note_versions_fts WHERE note_versions_fts MATCH ?3";
            (super::fts_query::keyword_expression(query), matched)
        };
        let Some(expression) = expression else {
            return Ok(Vec::new());
        };
        Ok(fetch_all(
            &conn,
            &format!(
                // The full-text match first, on its own: joined in place, the planner may
                // walk the user's versions and run the match once for each.
                "WITH matched AS MATERIALIZED ({matched})
                 SELECT {} FROM matched m JOIN note_versions v ON v.version_id = m.version_id
                 WHERE {VALID_AT} AND {}
                 ORDER BY m.rank, v.changed_at DESC LIMIT ?4",
                qualified(),
                visible("?5").replace("agent_id", "v.agent_id")
            ),
            libsql::params![user_id, at, expression, top_k as i64, self.agent()],
        )
        .await?)
    }

    /// [`Memory::search_as_of`] as a search's hits, best first, saying it used keywords.
    pub(super) async fn search_as_of_hits(
        &self,
        user_id: &str,
        query: &str,
        at: i64,
        top_k: usize,
    ) -> Result<super::SearchResults> {
        let versions = self.search_as_of(user_id, query, at, top_k).await?;
        let n = versions.len().max(1) as f64;
        let hits = versions
            .into_iter()
            .enumerate()
            .map(|(i, v)| super::SearchHit {
                keyword_score: None,
                vector_score: None,
                text: v.content,
                // By rank: bm25 scores are not comparable with the hybrid search's.
                score: 1.0 - i as f64 / n,
                source: super::HitSource::Note,
                note_id: Some(v.note_id),
                tags: Some(v.tags),
                session_id: None,
                sequence: None,
                role: None,
                name: None,
                at: v.changed_at,
            })
            .collect();
        Ok(super::SearchResults {
            hits,
            degraded: Some(format!(
                "as of {}: keyword search over the note versions valid then",
                crate::db::clock::to_rfc3339(at)
            )),
        })
    }

    /// Removes the versions of notes deleted before `cutoff` (the retention's end).
    /// Returns how many versions went.
    pub async fn purge_deleted_versions(&self, cutoff: i64) -> Result<u64> {
        let conn = self.db.conn().await?;
        Ok(conn
            .execute(
                "DELETE FROM note_versions WHERE note_id IN (
                   SELECT v.note_id FROM note_versions v
                   WHERE v.change = 'deleted' AND v.changed_at < ?1
                     AND v.version = (SELECT max(w.version) FROM note_versions w
                                      WHERE w.note_id = v.note_id)
                     AND NOT EXISTS (SELECT 1 FROM notes n WHERE n.note_id = v.note_id))",
                [cutoff],
            )
            .await?)
    }
}
