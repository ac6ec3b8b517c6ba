//! Stored blocks of a session's vector codes (`vector_blocks`): what lets a search load a
//! large session's vectors in a fraction of a second after a start. Reading a million
//! vector rows takes seconds; reading their codes packed 4,096 chunks' to a row takes a
//! tenth of that. Blocks are derived, like the vectors: made by the embedder when it idles (or by
//! [`Memory::pack_vectors`]), each in its own short transaction, and ignored when made
//! before a removal from their session, after which they are made again.

use super::codes::CodeRows;
use super::terms::Field;
use super::{Memory, Result, SessionKey};
use crate::embed::blob_to_vectors;

/// Stored vector rows (chunks) a block holds, each one code row or, for a user's chunk,
/// one and one a sentence; a session's newest rows, fewer than this, stay rows.
pub(super) const BLOCK_ROWS: usize = 4096;

/// Blocks (or attempts) one call of [`Memory::pack_vectors`] makes at most: a million
/// vectors are 245 blocks.
const MAX_PACK_PASSES: usize = 4096;

/// Appends to `codes` the rows of `session_id`'s blocks of `model` vectors made at
/// `removals`, in order, starting with the block after vector id `from`, for as long as
/// they follow one another and read whole. Returns the last vector id they cover (`from`
/// when none). A block that cannot be read, or holds what no packer writes, ends the
/// chain: the vector rows after it are read instead.
pub(super) async fn load_chain(
    conn: &crate::db::Conn,
    session_id: &str,
    model: &str,
    removals: i64,
    from: i64,
    codes: &mut CodeRows,
) -> i64 {
    let mut last = from;
    let rows = conn
        .query(
            "SELECT after_vector_id, last_vector_id, row_count, chunk_ids, steps, codes
             FROM vector_blocks
             WHERE session_id = ?1 AND model = ?2 AND removals = ?3 AND dimensions = ?4
               AND after_vector_id >= ?5
             ORDER BY after_vector_id",
            libsql::params![session_id, model, removals, codes.dimensions() as i64, from],
        )
        .await;
    let Ok(mut rows) = rows else {
        return last;
    };
    while let Ok(Some(row)) = rows.next().await {
        let Ok(block) = read_block(&row) else {
            break;
        };
        if block.after != last || block.last <= block.after || !block.steps_are_sound() {
            break;
        }
        if !codes.extend_from_blobs(block.rows, &block.ids, &block.steps, &block.codes) {
            break;
        }
        last = block.last;
    }
    last
}

/// One stored block as read.
struct StoredBlock {
    after: i64,
    last: i64,
    rows: usize,
    ids: Vec<u8>,
    steps: Vec<u8>,
    codes: Vec<u8>,
}

impl StoredBlock {
    /// Every step is one a packer writes: a positive normal number, or infinite.
    fn steps_are_sound(&self) -> bool {
        self.steps.chunks_exact(4).all(|b| {
            let step = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            (step.is_normal() && step > 0.0) || step == f32::INFINITY
        })
    }
}

fn read_block(row: &libsql::Row) -> Result<StoredBlock, libsql::Error> {
    Ok(StoredBlock {
        after: row.get(0)?,
        last: row.get(1)?,
        rows: usize::try_from(row.get::<i64>(2)?).unwrap_or(usize::MAX),
        ids: row.get(3)?,
        steps: row.get(4)?,
        codes: row.get(5)?,
    })
}

impl Memory {
    /// Packs `session_id`'s vectors of the configured model into stored blocks, as many
    /// whole blocks as there are vectors past its last block (blocks made before a removal
    /// from the session are dropped and made again). Each block's vectors are read and
    /// encoded outside any transaction; a short write transaction then checks that the
    /// session and its chain are as they were read and stores the block. Returns how many
    /// blocks it made.
    pub async fn pack_vectors(&self, key: &SessionKey) -> Result<usize> {
        let session_id = key.as_str();
        let model = self.embedder.model_id().to_string();
        let dimensions = self.embedder.dimensions();
        let mut made = 0;
        // Each pass either stores a block or finds the chain moved (another packer, a
        // removal): bounded, so a session changing without pause cannot hold it.
        for _ in 0..MAX_PACK_PASSES {
            let conn = self.db.conn().await?;
            let Some(tag) = super::vectors::tag_of(&conn, session_id).await? else {
                return Ok(made);
            };
            let chain_end = "SELECT coalesce(max(last_vector_id), 0) FROM vector_blocks
                 WHERE session_id = ?1 AND model = ?2 AND removals = ?3 AND dimensions = ?4";
            let chain_params =
                || libsql::params![session_id, model.as_str(), tag.removals, dimensions as i64];
            let after: i64 = crate::db::query_scalar(&conn, chain_end, chain_params())
                .await?
                .unwrap_or(0);
            let mut rows = conn
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
                let chunk_id = row.get(1)?;
                for v in blob_to_vectors(&blob, dimensions).unwrap_or_default() {
                    codes.push(chunk_id, &v);
                }
            }
            drop(rows);
            let tx = conn.write_tx().await?;
            if super::vectors::tag_of(&tx, session_id).await? != Some(tag) {
                tx.rollback().await?;
                continue;
            }
            tx.execute(
                "DELETE FROM vector_blocks WHERE session_id = ?1
                 AND (model <> ?2 OR removals <> ?3 OR dimensions <> ?4)",
                libsql::params![session_id, model.as_str(), tag.removals, dimensions as i64],
            )
            .await?;
            if read < BLOCK_ROWS {
                tx.commit().await?;
                return Ok(made);
            }
            let now: Option<i64> = crate::db::query_scalar(&tx, chain_end, chain_params()).await?;
            if now.unwrap_or(0) != after {
                tx.rollback().await?;
                continue;
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
                    tag.removals,
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
        Ok(made)
    }

    /// Packs the vectors and keywords of the sessions that got a block's worth of rows
    /// since they were last packed (counted by this process's embedder, or seen by its
    /// searches); returns how many blocks were made. The embedder calls it when it idles.
    pub async fn pack_due(&self) -> Result<usize> {
        let mut made = 0;
        // A session's embedded chunks are chunks: due for vectors is due for keywords.
        let vectors_due = self.vectors.due.take_due();
        let mut keywords_due = self.keywords.due.take_due();
        keywords_due.extend(vectors_due.iter().cloned());
        keywords_due.sort();
        keywords_due.dedup();
        // One session's failure leaves the others to be packed; its own blocks are made
        // when a search next reads a block's worth of its rows.
        for session_id in vectors_due {
            let key = SessionKey::stored(session_id);
            match self.pack_vectors(&key).await {
                Ok(n) => made += n,
                Err(err) => {
                    tracing::warn!(session = %key, error = %err, "packing vectors failed")
                }
            }
        }
        // Stop words are packed only for the sessions searched by them.
        let stop_words_due = self.stop_words.due.take_due();
        let fields = keywords_due
            .into_iter()
            .map(|s| (s, Field::Words))
            .chain(stop_words_due.into_iter().map(|s| (s, Field::StopWords)));
        for (session_id, field) in fields {
            match self.pack_keyword_field(&session_id, field).await {
                Ok(n) => made += n,
                Err(err) => {
                    let session = SessionKey::stored(session_id);
                    tracing::warn!(%session, ?field, error = %err, "packing keywords failed")
                }
            }
        }
        Ok(made)
    }

    /// How `session_id`'s vectors are held in this process's cache, if they are.
    pub fn cached_vectors(&self, key: &SessionKey) -> Option<super::vectors::CachedVectors> {
        self.vectors.cached(key.as_str())
    }
}
