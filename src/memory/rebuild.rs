//! Rebuilding the derived index from the source of truth. Each session is rebuilt in its
//! own transaction, so a search running meanwhile sees either the old or the new chunks of
//! a session, never none, and writers are held up for one session at a time; the keyword
//! and vector indexes in memory are made again from the new chunks by the next search.

use serde::Serialize;

use super::index::{chunk_context, ChunkOwner, ChunkSource, ChunkWriter};
use super::{Memory, Result, SessionKey, SessionKind};

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RebuildReport {
    pub sessions: usize,
    pub events: usize,
    pub notes: usize,
    pub chunks: usize,
}

/// A text to index and where its chunks belong.
struct Source {
    note_id: Option<String>,
    sequence: i64,
    created_at: i64,
    text: String,
    /// The turn's role; `None` for a note.
    role: Option<String>,
}

/// Attempts at a session whose writers keep changing it before the last, locked attempt.
const OPTIMISTIC_ATTEMPTS: usize = 3;

impl Memory {
    /// Re-chunks and re-embeds every session and note with the current settings and
    /// embedder. `progress(done, total)` is called after each session.
    pub async fn rebuild_index(&self, progress: &dyn Fn(usize, usize)) -> Result<RebuildReport> {
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                "SELECT session_id, user_id FROM sessions ORDER BY session_id",
                (),
            )
            .await?;
        let mut sessions: Vec<(String, String)> = Vec::new();
        while let Some(row) = rows.next().await? {
            sessions.push((row.get(0)?, row.get(1)?));
        }
        drop(rows);
        drop(conn);

        let mut report = RebuildReport::default();
        let total = sessions.len();
        progress(0, total);
        for (done, (session_id, user_id)) in sessions.iter().enumerate() {
            if let Some((sources, chunks)) = self.rebuild_session(session_id, user_id).await? {
                report.sessions += 1;
                let notes = sources.iter().filter(|s| s.note_id.is_some()).count();
                report.notes += notes;
                report.events += sources.len() - notes;
                report.chunks += chunks;
            }
            progress(done + 1, total);
        }
        self.record_model().await?;
        Ok(report)
    }

    /// Rebuilds the index of the sessions stored under `keys` (an import's); returns how
    /// many were rebuilt (a session deleted meanwhile is skipped).
    pub async fn rebuild_sessions(&self, keys: &[SessionKey]) -> Result<usize> {
        let mut rebuilt = 0;
        for key in keys {
            if self
                .rebuild_session(key.as_str(), key.user_id())
                .await?
                .is_some()
            {
                rebuilt += 1;
            }
        }
        Ok(rebuilt)
    }

    /// Rebuilds one session; `None` if it was deleted meanwhile.
    async fn rebuild_session(
        &self,
        session_id: &str,
        user_id: &str,
    ) -> Result<Option<(Vec<Source>, usize)>> {
        for attempt in 0..=OPTIMISTIC_ATTEMPTS {
            let conn = self.db.conn().await?;
            let locked = attempt == OPTIMISTIC_ATTEMPTS;
            // The last attempt reads under the write lock, so it cannot be overtaken.
            let tx = if locked {
                Some(conn.write_tx().await?)
            } else {
                None
            };
            let Some(seen) = last_sequence(&conn, session_id).await? else {
                return Ok(None);
            };
            let sources = read_sources(&conn, session_id, user_id).await?;
            let texts: Vec<&str> = sources.iter().map(|s| s.text.as_str()).collect();
            // An event's context is the event before it; notes stand alone.
            let contexts: Vec<String> = sources
                .iter()
                .enumerate()
                .map(|(i, source)| match (&source.note_id, i.checked_sub(1)) {
                    (None, Some(prev)) => chunk_context(&sources[prev].text),
                    _ => String::new(),
                })
                .collect();
            let by_user: Vec<bool> = sources
                .iter()
                .map(|s| s.role.as_deref() == Some("user"))
                .collect();
            let prepared = self
                .prepare_chunks_embedded(&texts, &contexts, &by_user)
                .await?;

            let tx = match tx {
                Some(tx) => tx,
                None => conn.write_tx().await?,
            };
            if last_sequence(&tx, session_id).await? != Some(seen) {
                // A writer changed the session after we read it: read it again.
                tx.rollback().await?;
                continue;
            }
            tx.execute("DELETE FROM chunks WHERE session_id = ?1", [session_id])
                .await?;
            // The session's stored blocks describe the chunks just deleted (the removal
            // already makes them stale): drop them rather than leave them to the packer.
            for table in ["vector_blocks", "keyword_blocks"] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE session_id = ?1"),
                    [session_id],
                )
                .await?;
            }
            let writer =
                ChunkWriter::prepare(&tx.runner(), self.embedder.model_id(), self.db.is_local())
                    .await?;
            let chunks = prepared.iter().map(Vec::len).sum();
            let written: Vec<(&Source, ChunkSource)> = sources
                .iter()
                .zip(&prepared)
                .zip(&contexts)
                .map(|((source, chunks), context)| {
                    let chunks = ChunkSource {
                        sequence: source.sequence,
                        created_at: source.created_at,
                        role: source.role.as_deref(),
                        context,
                        chunks,
                    };
                    (source, chunks)
                })
                .collect();
            // One write for each run of sources of the same note (or of none: events).
            for group in written.chunk_by(|a, b| a.0.note_id == b.0.note_id) {
                let owner = ChunkOwner {
                    session_id,
                    user_id,
                    note_id: group[0].0.note_id.as_deref(),
                };
                let group: Vec<ChunkSource> = group.iter().map(|(_, c)| *c).collect();
                writer.write(&owner, &group).await?;
            }
            tx.commit().await?;
            return Ok(Some((sources, chunks)));
        }
        unreachable!("the locked attempt always returns")
    }
}

async fn last_sequence(
    conn: &(impl crate::db::Queryable + ?Sized),
    session_id: &str,
) -> Result<Option<i64>> {
    Ok(crate::db::query_scalar(
        conn,
        "SELECT last_sequence FROM sessions WHERE session_id = ?1",
        [session_id],
    )
    .await?)
}

/// The agent of `user_id` whose notes session is stored under `session_id`, among the
/// agents their notes name.
async fn agent_of(
    conn: &(impl crate::db::Queryable + ?Sized),
    session_id: &str,
    user_id: &str,
) -> Result<Option<String>> {
    let mut rows = conn
        .query_rows(
            "SELECT DISTINCT agent_id FROM notes WHERE user_id = ?1 AND agent_id IS NOT NULL",
            [user_id],
        )
        .await?;
    while let Some(row) = rows.next().await? {
        let agent: String = row.get(0)?;
        if SessionKind::notes_session(user_id, Some(&agent)) == SessionKey::id_of(session_id) {
            return Ok(Some(agent));
        }
    }
    Ok(None)
}

async fn read_sources(
    conn: &(impl crate::db::Queryable + ?Sized),
    session_id: &str,
    user_id: &str,
) -> Result<Vec<Source>> {
    let mut sources = Vec::new();
    let mut rows = if SessionKind::of(session_id) == SessionKind::Memory {
        // Notes are ordered by when they were written, which is also their index order.
        // A notes session holds the user's notes of one agent (or the shared ones); an
        // agent's is named by a hash, so its agent is found among the user's.
        let agent = if SessionKey::id_of(session_id) == SessionKind::memory_session(user_id) {
            String::new()
        } else {
            match agent_of(conn, session_id, user_id).await? {
                Some(agent) => agent,
                // No note of any of the user's agents is indexed here: nothing to read.
                None => return Ok(sources),
            }
        };
        conn.query_rows(
            "SELECT note_id, 0, updated_at, content, NULL FROM notes
             WHERE user_id = ?1 AND superseded_by IS NULL AND coalesce(agent_id, '') = ?2
             ORDER BY updated_at, note_id",
            libsql::params![user_id, agent],
        )
        .await?
    } else {
        conn.query_rows(
            "SELECT NULL, sequence, created_at, content, role FROM events
             WHERE session_id = ?1
             ORDER BY sequence",
            [session_id],
        )
        .await?
    };
    while let Some(row) = rows.next().await? {
        sources.push(Source {
            note_id: row.get(0)?,
            sequence: row.get(1)?,
            created_at: row.get(2)?,
            text: row.get(3)?,
            role: row.get(4)?,
        });
    }
    Ok(sources)
}
