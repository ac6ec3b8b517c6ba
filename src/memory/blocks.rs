//! Stored blocks of a session's vector codes (`vector_blocks`): what lets a search load a
//! large session's vectors in a fraction of a second after a start. Reading a million
//! vector rows takes seconds; reading their codes packed 4,096 to a row takes a tenth of
//! that. Blocks are derived, like the vectors: made by the embedder when it idles (or by
//! [`Memory::pack_vectors`]), each in its own short transaction, and ignored when made
//! before a removal from their session, after which they are made again.

use super::codes::CodeRows;
use super::{Memory, Result};
use crate::embed::blob_to_vector;

/// Vectors a block holds; a session's newest vectors, fewer than this, stay rows.
pub(super) const BLOCK_ROWS: usize = 4096;

/// Appends to `codes` the rows of `session_id`'s blocks of `model` vectors made at
/// `removals`, in order, starting with the block after vector id `from`, for as long as
/// they follow one another. Returns the last vector id they cover (`from` when none).
pub(super) async fn load_chain(
    conn: &crate::db::Conn,
    session_id: &str,
    model: &str,
    removals: i64,
    from: i64,
    codes: &mut CodeRows,
) -> Result<i64, libsql::Error> {
    let mut rows = conn
        .query(
            "SELECT after_vector_id, last_vector_id, row_count, chunk_ids, steps, codes
             FROM vector_blocks
             WHERE session_id = ?1 AND model = ?2 AND removals = ?3 AND dimensions = ?4
               AND after_vector_id >= ?5
             ORDER BY after_vector_id",
            libsql::params![session_id, model, removals, codes.dimensions() as i64, from],
        )
        .await?;
    let mut last = from;
    while let Some(row) = rows.next().await? {
        if row.get::<i64>(0)? != last {
            break;
        }
        let count = usize::try_from(row.get::<i64>(2)?).unwrap_or(usize::MAX);
        let (ids, steps, packed): (Vec<u8>, Vec<u8>, Vec<u8>) =
            (row.get(3)?, row.get(4)?, row.get(5)?);
        if !codes.extend_from_blobs(count, &ids, &steps, &packed) {
            break;
        }
        last = row.get(1)?;
    }
    Ok(last)
}

impl Memory {
    /// Packs `session_id`'s vectors of the configured model into stored blocks, as many
    /// whole blocks as there are vectors past its last block (blocks made before a removal
    /// from the session are dropped and made again). One short transaction a block.
    /// Returns how many blocks it made.
    pub async fn pack_vectors(&self, session_id: &str) -> Result<usize> {
        let model = self.embedder.model_id().to_string();
        let dimensions = self.embedder.dimensions();
        let mut made = 0;
        loop {
            let conn = self.db.conn().await?;
            let tx = conn.write_tx().await?;
            let Some(removals) = super::vectors::removals_of(&tx, session_id).await? else {
                return Ok(made);
            };
            tx.execute(
                "DELETE FROM vector_blocks WHERE session_id = ?1
                 AND (model <> ?2 OR removals <> ?3 OR dimensions <> ?4)",
                libsql::params![session_id, model.as_str(), removals, dimensions as i64],
            )
            .await?;
            let after: i64 = crate::db::query_scalar(
                &tx,
                "SELECT coalesce(max(last_vector_id), 0) FROM vector_blocks
                 WHERE session_id = ?1 AND model = ?2",
                libsql::params![session_id, model.as_str()],
            )
            .await?
            .unwrap_or(0);
            let mut rows = tx
                .query(
                    "SELECT vector_id, chunk_id, embedding FROM chunk_vectors
                     WHERE session_id = ?1 AND model = ?2 AND vector_id > ?3
                     ORDER BY vector_id LIMIT ?4",
                    libsql::params![session_id, model.as_str(), after, BLOCK_ROWS as i64],
                )
                .await?;
            let mut codes = CodeRows::new(dimensions);
            let (mut read, mut last) = (0, after);
            while let Some(row) = rows.next().await? {
                read += 1;
                last = row.get(0)?;
                let blob: Vec<u8> = row.get(2)?;
                // A vector of another width is left out, as the loader leaves it out.
                if let Some(v) = blob_to_vector(&blob).filter(|v| v.len() == dimensions) {
                    codes.push(row.get(1)?, &v);
                }
            }
            drop(rows);
            if read < BLOCK_ROWS {
                tx.commit().await?;
                return Ok(made);
            }
            let (ids, steps, packed) = codes.to_blobs(0);
            tx.execute(
                "INSERT INTO vector_blocks (session_id, model, after_vector_id, last_vector_id,
                     removals, dimensions, row_count, chunk_ids, steps, codes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                libsql::params![
                    session_id,
                    model.as_str(),
                    after,
                    last,
                    removals,
                    dimensions as i64,
                    codes.rows() as i64,
                    ids,
                    steps,
                    packed
                ],
            )
            .await?;
            tx.commit().await?;
            made += 1;
        }
    }

    /// Packs the sessions that got a block's worth of vectors since they were last
    /// packed (counted by this process's embedder, or seen by its searches); returns how
    /// many blocks were made. The embedder calls it when it idles.
    pub async fn pack_due_vectors(&self) -> Result<usize> {
        let mut made = 0;
        for session_id in self.vectors.take_due() {
            // One session's failure leaves the others to be packed; its own blocks are
            // made when a search next reads a block's worth of its vector rows.
            match self.pack_vectors(&session_id).await {
                Ok(n) => made += n,
                Err(err) => {
                    tracing::warn!(session = %session_id, error = %err, "packing vectors failed")
                }
            }
        }
        Ok(made)
    }

    /// How `session_id`'s vectors are held in this process's cache, if they are.
    pub fn cached_vectors(&self, session_id: &str) -> Option<super::vectors::CachedVectors> {
        self.vectors.cached(session_id)
    }
}
