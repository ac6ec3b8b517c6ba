//! Writing the derived index: chunks (with their FTS5 rows, via triggers) and vectors.
//! Chunking happens before the write transaction opens; only SQL runs inside. Ordinary
//! writes queue their chunks for the background embedder (`embed_queue`), so a write never
//! waits for the model; a rebuild embeds first and writes chunks with their vectors.

use super::{chunk_text, Memory, Result};
use crate::db::Runner;
use crate::embed::vector_to_blob;

/// A chunk ready to be written: its text, content hash and, when already embedded, its
/// vector blob (otherwise it is queued for the background embedder).
pub(super) struct PreparedChunk {
    text: String,
    hash: String,
    vector: Option<Vec<u8>>,
}

/// Where chunks belong.
pub(super) struct ChunkOwner<'a> {
    pub session_id: &'a str,
    pub user_id: &'a str,
    pub note_id: Option<&'a str>,
    pub sequence: i64,
    pub created_at: i64,
    /// What came just before in the session (see [`chunk_context`]); empty for notes.
    pub context: &'a str,
}

/// Characters of the previous event kept as a chunk's context: enough for the question
/// a reply answers, short enough that the chunk's own text stays inside the model's window.
pub const CONTEXT_CHARS: usize = 120;

/// A chunk's context: the end of the event before it in its session, whitespace
/// normalised.
pub(super) fn chunk_context(previous_event: &str) -> String {
    let normalized = crate::text::normalize_whitespace(previous_event);
    crate::text::tail_chars(&normalized, CONTEXT_CHARS).to_string()
}

/// What the embedder reads for a chunk: its context, then its text.
pub(super) fn embedding_input(context: &str, text: &str) -> String {
    if context.is_empty() {
        text.to_string()
    } else {
        format!("{context}\n{text}")
    }
}

/// The token FTS5 indexes in the `scope` column of a session's chunks.
pub(super) fn scope_token(session_id: &str) -> String {
    format!("s{}", &blake3::hash(session_id.as_bytes()).to_hex()[..20])
}

impl Memory {
    /// Chunks each text, to be embedded later by the queue; one entry per input text.
    pub(super) fn prepare_chunks(&self, texts: &[&str]) -> Vec<Vec<PreparedChunk>> {
        texts
            .iter()
            .map(|t| {
                chunk_text(t, self.limits.chunk_chars, self.limits.chunk_overlap_chars)
                    .into_iter()
                    .map(|text| PreparedChunk {
                        hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
                        vector: None,
                        text,
                    })
                    .collect()
            })
            .collect()
    }

    /// Chunks and embeds each text with its context (on a blocking thread), for a rebuild
    /// that swaps a session's whole index in one transaction.
    pub(super) async fn prepare_chunks_embedded(
        &self,
        texts: &[&str],
        contexts: &[String],
    ) -> Result<Vec<Vec<PreparedChunk>>> {
        let mut per_text = self.prepare_chunks(texts);
        let flat: Vec<String> = per_text
            .iter()
            .zip(contexts)
            .flat_map(|(chunks, context)| chunks.iter().map(|c| embedding_input(context, &c.text)))
            .collect();
        let vectors = self.embed_blocking(flat).await?;
        for (chunk, vector) in per_text.iter_mut().flatten().zip(vectors) {
            chunk.vector = Some(vector_to_blob(&vector));
        }
        Ok(per_text)
    }

    /// Runs the embedder on a blocking thread: model calls take milliseconds to seconds.
    pub(super) async fn embed_blocking(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        if self.embedder.is_cheap() {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            return Ok(self.embedder.embed(&refs)?);
        }
        let embedder = self.embedder.clone();
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.embed(&refs)
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
        .map_err(Into::into)
    }
}

/// A statement run many times: prepared once on a local file (preparing costs about as
/// much as running); on a libSQL server run as text on the transaction's stream, where
/// the connection keeps what it has described (`db::Runner`). (A statement libsql
/// prepares outside a transaction would close the stream, and the transaction, when run.)
pub(super) enum Sql {
    Prepared(libsql::Statement),
    Text(Runner, &'static str),
}

impl Sql {
    pub(super) async fn new(conn: &Runner, sql: &'static str, prepare: bool) -> Result<Self> {
        Ok(if prepare {
            Sql::Prepared(conn.connection().prepare(sql).await?)
        } else {
            Sql::Text(conn.clone(), sql)
        })
    }

    /// Runs it and leaves it ready for its next use, even after an error.
    pub(super) async fn execute(&self, params: impl libsql::params::IntoParams) -> Result<usize> {
        match self {
            Sql::Prepared(statement) => {
                let result = statement.execute(params).await;
                statement.reset();
                Ok(result?)
            }
            Sql::Text(conn, sql) => Ok(conn.execute(sql, params).await? as usize),
        }
    }

    /// The first row's columns, as values.
    pub(super) async fn first_row(
        &self,
        params: impl libsql::params::IntoParams,
    ) -> Result<Option<Vec<libsql::Value>>> {
        let read = |mut rows: libsql::Rows| async move {
            match rows.next().await? {
                Some(row) => {
                    let n = row.column_count();
                    (0..n)
                        .map(|i| row.get_value(i))
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map(Some)
                }
                None => Ok(None),
            }
        };
        match self {
            Sql::Prepared(statement) => {
                let result = match statement.query(params).await {
                    Ok(rows) => read(rows).await,
                    Err(e) => Err(e),
                };
                statement.reset();
                Ok(result?)
            }
            Sql::Text(conn, sql) => Ok(read(conn.query(sql, params).await?).await?),
        }
    }

    pub(super) async fn query_i64(
        &self,
        params: impl libsql::params::IntoParams,
    ) -> Result<Option<i64>> {
        Ok(self
            .first_row(params)
            .await?
            .and_then(|row| match row.first() {
                Some(libsql::Value::Integer(n)) => Some(*n),
                _ => None,
            }))
    }
}

/// The statements that write chunks and their vectors.
pub(super) struct ChunkWriter {
    model: String,
    extend: Sql,
    insert: Sql,
    insert_vector: Sql,
    enqueue: Sql,
}

impl ChunkWriter {
    pub(super) async fn prepare(conn: &Runner, model: &str, prepare: bool) -> Result<Self> {
        Ok(Self {
            model: model.to_string(),
            // Finds a chunk of the same text and moves it on, in one statement (the
            // same text again is the common case: a schedule's goal, a short reply).
            extend: Sql::new(
                conn,
                "UPDATE chunks SET sequence_end = max(sequence_end, ?4)
                 WHERE session_id = ?1 AND content_hash = ?2 AND note_id IS ?3
                 RETURNING chunk_id",
                prepare,
            )
            .await?,
            insert: Sql::new(
                conn,
                "INSERT INTO chunks (session_id, user_id, note_id, scope, text, content_hash,
                                     sequence_start, sequence_end, created_at, context)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9) RETURNING chunk_id",
                prepare,
            )
            .await?,
            insert_vector: Sql::new(
                conn,
                "INSERT INTO chunk_vectors (chunk_id, session_id, model, embedding)
                 VALUES (?1, ?2, ?3, ?4)",
                prepare,
            )
            .await?,
            enqueue: Sql::new(
                conn,
                "INSERT OR IGNORE INTO embed_queue (chunk_id, enqueued_at)
                 VALUES (?1, CAST(unixepoch('subsec') * 1000 AS INTEGER))",
                prepare,
            )
            .await?,
        })
    }

    /// Writes chunks inside the caller's transaction. A chunk whose text the session (or
    /// note) already holds is not stored twice: the existing one's `sequence_end` moves on.
    pub(super) async fn write(
        &self,
        owner: &ChunkOwner<'_>,
        chunks: &[PreparedChunk],
    ) -> Result<()> {
        let scope = scope_token(owner.session_id);
        for chunk in chunks {
            let existing = self
                .extend
                .query_i64(libsql::params![
                    owner.session_id,
                    chunk.hash.as_str(),
                    owner.note_id,
                    owner.sequence
                ])
                .await?;
            if existing.is_some() {
                continue;
            }
            let chunk_id = self
                .insert
                .query_i64(libsql::params![
                    owner.session_id,
                    owner.user_id,
                    owner.note_id,
                    scope.as_str(),
                    chunk.text.as_str(),
                    chunk.hash.as_str(),
                    owner.sequence,
                    owner.created_at,
                    owner.context
                ])
                .await?
                .expect("INSERT … RETURNING yields the new row");
            match &chunk.vector {
                Some(vector) => {
                    self.insert_vector
                        .execute(libsql::params![
                            chunk_id,
                            owner.session_id,
                            self.model.as_str(),
                            vector.clone()
                        ])
                        .await?;
                }
                None => {
                    self.enqueue.execute([chunk_id]).await?;
                }
            }
        }
        Ok(())
    }
}
