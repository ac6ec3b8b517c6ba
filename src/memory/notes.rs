//! User-scoped notes (seed 002's memory_save / update / delete). A note is visible only to
//! its user: every statement here filters on `user_id`, so another user's note id behaves
//! exactly like one that does not exist.

use super::agents::{same_scope, visible};
use super::events::ensure_session;
use super::index::{ChunkOwner, ChunkSource, ChunkWriter, PreparedChunk};
use super::versions::NoteChange;
use super::{
    check_id, Memory, MemoryError, NewNote, Note, Result, SaveOutcome, SessionKey, SessionKind,
};
use crate::db::{fetch_all, fetch_optional, json_column, query_first_row, DbError, FromRow};
use crate::ids;

/// Most tags a note has.
pub const MAX_TAGS: usize = 32;
/// Longest tag, in characters (after trimming).
pub const MAX_TAG_CHARS: usize = 64;

/// Trims and de-duplicates tags, rejecting empty or oversized ones.
fn clean_tags(tags: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for tag in tags {
        let tag = tag.trim();
        if tag.is_empty()
            || tag.chars().count() > MAX_TAG_CHARS
            || tag.chars().any(char::is_control)
        {
            return Err(MemoryError::invalid(
                "tag",
                format!(
                    "`{tag}` must be 1..={MAX_TAG_CHARS} characters without control characters"
                ),
            ));
        }
        if !out.iter().any(|t| t == tag) {
            out.push(tag.to_string());
        }
    }
    if out.len() > MAX_TAGS {
        return Err(MemoryError::invalid(
            "tags",
            format!("{} tags, at most {MAX_TAGS}", out.len()),
        ));
    }
    Ok(out)
}

impl FromRow for Note {
    const COLUMNS: &'static str = "note_id, user_id, content, tags_json, key, category,
        created_at, updated_at, source, fact_key, superseded_by, agent_id";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(Note {
            note_id: row.get(0)?,
            user_id: row.get(1)?,
            content: row.get(2)?,
            tags: json_column(row, 3, "note tags")?,
            key: row.get(4)?,
            category: row.get(5)?,
            created_at: row.get(6)?,
            updated_at: row.get(7)?,
            source: row.get(8)?,
            fact_key: row.get(9)?,
            superseded_by: row.get(10)?,
            agent_id: row.get(11)?,
        })
    }
}

/// The hash a tombstone keeps of a deleted note: its text, lower-cased and with
/// whitespace collapsed, so the same fact in other spacing or case matches.
pub fn tombstone_hash(content: &str) -> String {
    let normal = crate::text::normalize_whitespace(&content.to_lowercase());
    blake3::hash(normal.as_bytes()).to_hex().to_string()
}

/// Moves the notes session of the user's `agent` (the shared one for `None`) on by one
/// sequence (creating it on first use) and returns that sequence: it orders note writes
/// and tells a rebuild something changed.
pub(super) async fn next_memory_sequence(
    conn: &crate::db::WriteTx,
    user_id: &str,
    agent: Option<&str>,
    now: i64,
) -> Result<i64> {
    let key = SessionKey::new(user_id, &SessionKind::notes_session(user_id, agent));
    let sequence = ensure_session(&conn.runner(), &key, now).await? + 1;
    conn.execute(
        "UPDATE sessions SET last_sequence = ?2, updated_at = ?3 WHERE session_id = ?1",
        libsql::params![key.as_str(), sequence, now],
    )
    .await?;
    Ok(sequence)
}

impl Memory {
    /// Saves a note for the handle's agent (shared without one) and returns its id. With
    /// a key, a note of the same user and agent saved under that key is replaced in place:
    /// same id, same `created_at`.
    pub async fn save_note(&self, user_id: &str, note: &NewNote) -> Result<SaveOutcome> {
        check_id("user id", user_id)?;
        self.check_content("note content", &note.content)?;
        let tags = clean_tags(&note.tags)?;
        if let Some(key) = &note.key {
            check_id("note key", key)?;
        }
        if let Some(category) = &note.category {
            check_id("note category", category)?;
        }
        let chunks = self
            .prepare_chunks(&[note.content.as_str()])
            .pop()
            .unwrap_or_default();
        let now = self.clock.now_ms();

        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let existing: Option<String> = match &note.key {
            Some(key) => {
                crate::db::query_scalar(
                    &tx,
                    &format!(
                        "SELECT note_id FROM notes WHERE user_id = ?1 AND key = ?2 AND {}",
                        same_scope("?3")
                    ),
                    libsql::params![user_id, key.as_str(), self.agent()],
                )
                .await?
            }
            None => None,
        };
        let sequence = next_memory_sequence(&tx, user_id, self.agent(), now).await?;
        let outcome = match existing {
            Some(note_id) => {
                self.replace_content(
                    &tx,
                    user_id,
                    &note_id,
                    &note.content,
                    Some(&tags),
                    &chunks,
                    (self.agent(), sequence),
                    now,
                )
                .await?;
                if note.category.is_some() {
                    tx.execute(
                        "UPDATE notes SET category = ?2 WHERE note_id = ?1",
                        libsql::params![note_id.as_str(), note.category.as_deref()],
                    )
                    .await?;
                }
                self.record_version(&tx, &note_id, NoteChange::Updated, now)
                    .await?;
                SaveOutcome {
                    note_id,
                    created: false,
                }
            }
            None => {
                if let Err(err) = self.check_note_room(&tx, user_id).await {
                    tx.rollback().await?;
                    return Err(err);
                }
                let note_id = ids::new_id("note");
                tx.execute(
                    "INSERT INTO notes (note_id, user_id, content, tags_json, key, category, created_at,
                     updated_at, source, fact_key, expires_at, agent_id)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11)",
                    libsql::params![
                        note_id.as_str(),
                        user_id,
                        note.content.as_str(),
                        serde_json::to_string(&tags).expect("tags serialise"),
                        note.key.as_deref(),
                        note.category.as_deref(),
                        now,
                        note.source.as_deref().unwrap_or("tool"),
                        note.fact_key.as_deref(),
                        note.expires_at,
                        self.agent()
                    ],
                )
                .await?;
                let owner = (user_id, self.agent());
                self.write_note_chunks(&tx, owner, &note_id, &chunks, sequence, now)
                    .await?;
                self.record_version(&tx, &note_id, NoteChange::Created, now)
                    .await?;
                SaveOutcome {
                    note_id,
                    created: true,
                }
            }
        };
        tx.commit().await?;
        self.wake_embedder();
        Ok(outcome)
    }

    /// Refuses a new note when the user already has `memory.max_notes_per_user` current
    /// notes (superseded versions are history, not counted), inside the transaction that
    /// would add it. Counts no further than the limit.
    pub(super) async fn check_note_room(
        &self,
        tx: &crate::db::WriteTx,
        user_id: &str,
    ) -> Result<()> {
        let limit = self.limits.max_notes_per_user;
        let count: i64 = crate::db::query_scalar(
            tx,
            "SELECT count(*) FROM (SELECT 1 FROM notes WHERE user_id = ?1
             AND superseded_by IS NULL LIMIT ?2) AS held",
            libsql::params![user_id, limit],
        )
        .await?
        .unwrap_or(0);
        if count >= limit {
            return Err(MemoryError::TooManyNotes {
                user_id: user_id.to_string(),
                limit,
            });
        }
        Ok(())
    }

    /// Saves `new` as the current version of a fact and keeps `old_note_id` as history:
    /// the old note points at the new one and leaves the search index. One transaction.
    pub async fn supersede_note(
        &self,
        user_id: &str,
        old_note_id: &str,
        new: &NewNote,
    ) -> Result<SaveOutcome> {
        check_id("user id", user_id)?;
        self.check_content("note content", &new.content)?;
        let tags = clean_tags(&new.tags)?;
        let chunks = self
            .prepare_chunks(&[new.content.as_str()])
            .pop()
            .unwrap_or_default();
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let note_id = ids::new_id("note");
        // The new version belongs to the old one's agent (or is shared as it was).
        let old_agent: Option<Option<String>> = query_first_row(
            &tx,
            &format!(
                "SELECT agent_id FROM notes WHERE note_id = ?1 AND user_id = ?2
                 AND superseded_by IS NULL AND {}",
                visible("?3")
            ),
            libsql::params![old_note_id, user_id, self.agent()],
            |row| row.get(0),
        )
        .await?;
        let Some(agent) = old_agent else {
            tx.rollback().await?;
            return Err(MemoryError::NoteNotFound(old_note_id.to_string()));
        };
        tx.execute(
            "UPDATE notes SET superseded_by = ?3, updated_at = ?4 WHERE note_id = ?1 AND user_id = ?2",
            libsql::params![old_note_id, user_id, note_id.as_str(), now],
        )
        .await?;
        tx.execute("DELETE FROM chunks WHERE note_id = ?1", [old_note_id])
            .await?;
        self.record_version(&tx, old_note_id, NoteChange::Superseded, now)
            .await?;
        let sequence = next_memory_sequence(&tx, user_id, agent.as_deref(), now).await?;
        tx.execute(
            "INSERT INTO notes (note_id, user_id, content, tags_json, key, category, created_at,
             updated_at, source, fact_key, expires_at, agent_id)
             VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, ?6, ?7, ?8, ?9, ?10)",
            libsql::params![
                note_id.as_str(),
                user_id,
                new.content.as_str(),
                serde_json::to_string(&tags).expect("tags serialise"),
                new.category.as_deref(),
                now,
                new.source.as_deref().unwrap_or("tool"),
                new.fact_key.as_deref(),
                new.expires_at,
                agent.as_deref()
            ],
        )
        .await?;
        let owner = (user_id, agent.as_deref());
        self.write_note_chunks(&tx, owner, &note_id, &chunks, sequence, now)
            .await?;
        self.record_version(&tx, &note_id, NoteChange::Created, now)
            .await?;
        tx.commit().await?;
        self.wake_embedder();
        Ok(SaveOutcome {
            note_id,
            created: true,
        })
    }

    /// Whether the user deleted a note with this text (in any spacing or case).
    pub async fn is_tombstoned(&self, user_id: &str, content: &str) -> Result<bool> {
        let conn = self.db.conn().await?;
        let hit: Option<i64> = crate::db::query_scalar(
            &conn,
            "SELECT 1 FROM note_tombstones WHERE user_id = ?1 AND content_hash = ?2",
            libsql::params![user_id, tombstone_hash(content)],
        )
        .await?;
        Ok(hit.is_some())
    }

    /// Replaces a note's text (and tags, when given), keeping its id and `created_at`.
    pub async fn update_note(
        &self,
        user_id: &str,
        note_id: &str,
        content: &str,
        tags: Option<&[String]>,
    ) -> Result<Note> {
        check_id("user id", user_id)?;
        check_id("note id", note_id)?;
        self.check_content("note content", content)?;
        let tags = tags.map(clean_tags).transpose()?;
        let chunks = self.prepare_chunks(&[content]).pop().unwrap_or_default();
        let now = self.clock.now_ms();

        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let owned: Option<Option<String>> = query_first_row(
            &tx,
            &format!(
                "SELECT agent_id FROM notes WHERE note_id = ?1 AND user_id = ?2 AND {}",
                visible("?3")
            ),
            libsql::params![note_id, user_id, self.agent()],
            |row| row.get(0),
        )
        .await?;
        let Some(agent) = owned else {
            tx.rollback().await?;
            return Err(MemoryError::NoteNotFound(note_id.to_string()));
        };
        let sequence = next_memory_sequence(&tx, user_id, agent.as_deref(), now).await?;
        self.replace_content(
            &tx,
            user_id,
            note_id,
            content,
            tags.as_deref(),
            &chunks,
            (agent.as_deref(), sequence),
            now,
        )
        .await?;
        self.record_version(&tx, note_id, NoteChange::Updated, now)
            .await?;
        tx.commit().await?;
        self.wake_embedder();
        self.note(user_id, note_id).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn replace_content(
        &self,
        conn: &crate::db::WriteTx,
        user_id: &str,
        note_id: &str,
        content: &str,
        tags: Option<&[String]>,
        chunks: &[PreparedChunk],
        (agent, sequence): (Option<&str>, i64),
        now: i64,
    ) -> Result<()> {
        conn.execute("DELETE FROM chunks WHERE note_id = ?1", [note_id])
            .await?;
        // Where the old text was said is no evidence for the new one.
        conn.execute(
            "DELETE FROM fact_evidence WHERE note_id = ?1 AND user_id = ?2
             AND ?3 != (SELECT content FROM notes WHERE note_id = ?1 AND user_id = ?2)",
            libsql::params![note_id, user_id, content],
        )
        .await?;
        let tags_json = tags.map(|t| serde_json::to_string(t).expect("tags serialise"));
        conn.execute(
            "UPDATE notes SET content = ?3, tags_json = coalesce(?4, tags_json), updated_at = ?5
             WHERE note_id = ?1 AND user_id = ?2",
            libsql::params![note_id, user_id, content, tags_json, now],
        )
        .await?;
        self.write_note_chunks(conn, (user_id, agent), note_id, chunks, sequence, now)
            .await
    }

    /// Indexes a note's chunks in the notes session of its user and agent.
    pub(super) async fn write_note_chunks(
        &self,
        conn: &crate::db::WriteTx,
        (user_id, agent): (&str, Option<&str>),
        note_id: &str,
        chunks: &[PreparedChunk],
        sequence: i64,
        now: i64,
    ) -> Result<()> {
        let key = SessionKey::new(user_id, &SessionKind::notes_session(user_id, agent));
        let owner = ChunkOwner {
            session_id: key.as_str(),
            user_id,
            note_id: Some(note_id),
        };
        let source = ChunkSource {
            sequence,
            created_at: now,
            role: None,
            context: "",
            chunks,
        };
        ChunkWriter::prepare(&conn.runner(), self.embedder.model_id(), self.db.is_local())
            .await?
            .write(&owner, &[source])
            .await?;
        Ok(())
    }

    /// Deletes a note with its chunks and vectors.
    pub async fn delete_note(&self, user_id: &str, note_id: &str) -> Result<()> {
        check_id("user id", user_id)?;
        check_id("note id", note_id)?;
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let found: Option<(String, Option<String>)> = query_first_row(
            &tx,
            &format!(
                "SELECT content, agent_id FROM notes WHERE note_id = ?1 AND user_id = ?2 AND {}",
                visible("?3")
            ),
            libsql::params![note_id, user_id, self.agent()],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .await?;
        let Some((content, agent)) = found else {
            tx.rollback().await?;
            return Err(MemoryError::NoteNotFound(note_id.to_string()));
        };
        self.record_version(&tx, note_id, NoteChange::Deleted, now)
            .await?;
        tx.execute(
            "DELETE FROM notes WHERE note_id = ?1 AND user_id = ?2",
            libsql::params![note_id, user_id],
        )
        .await?;
        // Remember that it was forgotten, so consolidation does not learn it again.
        tx.execute(
            "INSERT INTO note_tombstones (user_id, content_hash, deleted_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (user_id, content_hash) DO UPDATE SET deleted_at = excluded.deleted_at",
            libsql::params![user_id, tombstone_hash(&content), now],
        )
        .await?;
        next_memory_sequence(&tx, user_id, agent.as_deref(), now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// One of the user's notes the handle's agent sees.
    pub async fn note(&self, user_id: &str, note_id: &str) -> Result<Note> {
        let conn = self.db.conn().await?;
        fetch_optional(
            &conn,
            &format!(
                "SELECT {} FROM notes WHERE note_id = ?1 AND user_id = ?2 AND {}",
                Note::COLUMNS,
                visible("?3")
            ),
            libsql::params![note_id, user_id, self.agent()],
        )
        .await?
        .ok_or_else(|| MemoryError::NoteNotFound(note_id.to_string()))
    }

    /// The user's notes the handle's agent sees, most recently changed first.
    pub async fn notes(&self, user_id: &str) -> Result<Vec<Note>> {
        check_id("user id", user_id)?;
        let conn = self.db.conn().await?;
        Ok(fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM notes WHERE user_id = ?1 AND superseded_by IS NULL AND {}
                 ORDER BY updated_at DESC, note_id DESC",
                Note::COLUMNS,
                visible("?2")
            ),
            libsql::params![user_id, self.agent()],
        )
        .await?)
    }
}
