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

/// Writes chunks inside the caller's transaction. A chunk whose text the session (or
/// note) already holds is not stored twice: the existing one's `sequence_end` moves on.
pub(super) async fn write_chunks(
    conn: &libsql::Connection,
    model: &str,
    owner: &ChunkOwner<'_>,
    chunks: &[PreparedChunk],
) -> Result<()> {
    let scope = scope_token(owner.session_id);
    for chunk in chunks {
        let existing: Option<i64> = crate::db::query_scalar(
            conn,
            "SELECT chunk_id FROM chunks
             WHERE session_id = ?1 AND content_hash = ?2 AND note_id IS ?3",
            libsql::params![owner.session_id, chunk.hash.as_str(), owner.note_id],
        )
        .await?;
        if let Some(chunk_id) = existing {
            conn.execute(
                "UPDATE chunks SET sequence_end = max(sequence_end, ?2) WHERE chunk_id = ?1",
                libsql::params![chunk_id, owner.sequence],
            )
            .await?;
            continue;
        }
        conn.execute(
            "INSERT INTO chunks (session_id, user_id, note_id, scope, text, content_hash,
                                 sequence_start, sequence_end, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
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
        .await?;
        let chunk_id = conn.last_insert_rowid();
        conn.execute(
            "INSERT INTO chunk_vectors (chunk_id, session_id, model, embedding)
             VALUES (?1, ?2, ?3, ?4)",
            libsql::params![chunk_id, owner.session_id, model, chunk.vector.clone()],
        )
        .await?;
    }
    Ok(())
}
