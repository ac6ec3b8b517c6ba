//! Writing the derived index: chunks (with their FTS5 rows, via triggers) and vectors.
//! Chunking and embedding happen before the write transaction opens; only SQL runs inside.

use super::{chunk_text, Memory, Result};
use crate::embed::vector_to_blob;

/// A chunk ready to be written: its text, content hash and vector blob.
pub(super) struct PreparedChunk {
    text: String,
    hash: String,
    vector: Vec<u8>,
}

/// Where chunks belong.
pub(super) struct ChunkOwner<'a> {
    pub session_id: &'a str,
    pub user_id: &'a str,
    pub note_id: Option<&'a str>,
    pub sequence: i64,
    pub created_at: i64,
}

/// The token FTS5 indexes in the `scope` column of a session's chunks.
pub(super) fn scope_token(session_id: &str) -> String {
    format!("s{}", &blake3::hash(session_id.as_bytes()).to_hex()[..20])
}

impl Memory {
    /// Chunks and embeds each text; the result has one entry per input text.
    pub(super) fn prepare_chunks(&self, texts: &[&str]) -> Result<Vec<Vec<PreparedChunk>>> {
        let per_text: Vec<Vec<String>> = texts
            .iter()
            .map(|t| chunk_text(t, self.limits.chunk_chars, self.limits.chunk_overlap_chars))
            .collect();
        let flat: Vec<&str> = per_text.iter().flatten().map(String::as_str).collect();
        let mut vectors = self.embedder.embed(&flat)?.into_iter();
        Ok(per_text
            .into_iter()
            .map(|chunks| {
                chunks
                    .into_iter()
                    .map(|text| PreparedChunk {
                        hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
                        vector: vector_to_blob(&vectors.next().unwrap_or_default()),
                        text,
                    })
                    .collect()
            })
            .collect())
    }
}

/// Prepared statements that write chunks and their vectors. Preparing costs about as much
/// as running a statement, so a writer prepares these once and reuses them.
pub(super) struct ChunkWriter {
    model: String,
    find: libsql::Statement,
    extend: libsql::Statement,
    insert: libsql::Statement,
    insert_vector: libsql::Statement,
}

impl ChunkWriter {
    pub(super) async fn prepare(conn: &libsql::Connection, model: &str) -> Result<Self> {
        Ok(Self {
            model: model.to_string(),
            find: conn
                .prepare(
                    "SELECT chunk_id FROM chunks
                     WHERE session_id = ?1 AND content_hash = ?2 AND note_id IS ?3",
                )
                .await?,
            extend: conn
                .prepare(
                    "UPDATE chunks SET sequence_end = max(sequence_end, ?2) WHERE chunk_id = ?1",
                )
                .await?,
            insert: conn
                .prepare(
                    "INSERT INTO chunks (session_id, user_id, note_id, scope, text, content_hash,
                                         sequence_start, sequence_end, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8) RETURNING chunk_id",
                )
                .await?,
            insert_vector: conn
                .prepare(
                    "INSERT INTO chunk_vectors (chunk_id, session_id, model, embedding)
                     VALUES (?1, ?2, ?3, ?4)",
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
            let existing = query_i64(
                &self.find,
                libsql::params![owner.session_id, chunk.hash.as_str(), owner.note_id],
            )
            .await?;
            if let Some(chunk_id) = existing {
                execute(&self.extend, libsql::params![chunk_id, owner.sequence]).await?;
                continue;
            }
            let chunk_id = query_i64(
                &self.insert,
                libsql::params![
                    owner.session_id,
                    owner.user_id,
                    owner.note_id,
                    scope.as_str(),
                    chunk.text.as_str(),
                    chunk.hash.as_str(),
                    owner.sequence,
                    owner.created_at
                ],
            )
            .await?
            .expect("INSERT … RETURNING yields the new row");
            execute(
                &self.insert_vector,
                libsql::params![
                    chunk_id,
                    owner.session_id,
                    self.model.as_str(),
                    chunk.vector.clone()
                ],
            )
            .await?;
        }
        Ok(())
    }
}

/// Runs a prepared statement and leaves it ready for its next use, even after an error.
pub(super) async fn execute(
    statement: &libsql::Statement,
    params: impl libsql::params::IntoParams,
) -> Result<usize> {
    let result = statement.execute(params).await;
    statement.reset();
    Ok(result?)
}

/// The first column of a prepared query's first row, leaving the statement reusable.
pub(super) async fn query_i64(
    statement: &libsql::Statement,
    params: impl libsql::params::IntoParams,
) -> Result<Option<i64>> {
    let result = async {
        let mut rows = statement.query(params).await?;
        match rows.next().await? {
            Some(row) => row.get::<i64>(0).map(Some),
            None => Ok(None),
        }
    }
    .await;
    statement.reset();
    Ok(result?)
}
