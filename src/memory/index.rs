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

/// A statement run many times: prepared once on a local file (preparing costs about as
/// much as running), sent as text on a libSQL server, whose prepared statements live
/// outside the transaction's stream.
pub(super) enum Sql {
    Prepared(libsql::Statement),
    Text(libsql::Connection, &'static str),
}

impl Sql {
    pub(super) async fn new(
        conn: &libsql::Connection,
        sql: &'static str,
        prepare: bool,
    ) -> Result<Self> {
        Ok(if prepare {
            Sql::Prepared(conn.prepare(sql).await?)
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
    find: Sql,
    extend: Sql,
    insert: Sql,
    insert_vector: Sql,
}

impl ChunkWriter {
    pub(super) async fn prepare(
        conn: &libsql::Connection,
        model: &str,
        prepare: bool,
    ) -> Result<Self> {
        Ok(Self {
            model: model.to_string(),
            find: Sql::new(
                conn,
                "SELECT chunk_id FROM chunks
                 WHERE session_id = ?1 AND content_hash = ?2 AND note_id IS ?3",
                prepare,
            )
            .await?,
            extend: Sql::new(
                conn,
                "UPDATE chunks SET sequence_end = max(sequence_end, ?2) WHERE chunk_id = ?1",
                prepare,
            )
            .await?,
            insert: Sql::new(
                conn,
                "INSERT INTO chunks (session_id, user_id, note_id, scope, text, content_hash,
                                     sequence_start, sequence_end, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8) RETURNING chunk_id",
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
                .find
                .query_i64(libsql::params![
                    owner.session_id,
                    chunk.hash.as_str(),
                    owner.note_id
                ])
                .await?;
            if let Some(chunk_id) = existing {
                self.extend
                    .execute(libsql::params![chunk_id, owner.sequence])
                    .await?;
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
                    owner.created_at
                ])
                .await?
                .expect("INSERT … RETURNING yields the new row");
            self.insert_vector
                .execute(libsql::params![
                    chunk_id,
                    owner.session_id,
                    self.model.as_str(),
                    chunk.vector.clone()
                ])
                .await?;
        }
        Ok(())
    }
}
