//! The background embedding queue. Writes store chunks and queue them in `embed_queue`;
//! this module claims batches with a lease (so two workers sharing a database never embed
//! the same chunk), runs the model on a blocking thread, and writes the vectors and removes
//! the queue rows in one transaction. A chunk is searchable by keywords as soon as it is
//! written and by meaning once its batch commits.
//!
//! It also owns the embedding model record in `meta`: which model made the stored vectors,
//! and whether a model change is still being re-embedded. Until it is, the vector leg is
//! off and search says so (`degraded`).

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::index::{embed_chunks, vector_inputs};
use super::{Memory, Result};

/// How long a claimed batch is held before another worker may take it over.
const CLAIM_LEASE_MS: i64 = 120_000;
/// How often an idle embedder looks for work queued by other processes.
const IDLE_POLL: Duration = Duration::from_secs(1);
/// The pause after a failed batch before the next attempt.
const ERROR_BACKOFF: Duration = Duration::from_secs(5);

/// What the embedding model record says about the vector leg.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmbeddingStatus {
    /// The model configured for this process.
    pub model: String,
    pub dimensions: usize,
    /// The model whose vectors the database holds (adopted by `nightshift run`).
    pub recorded_model: Option<String>,
    /// Chunks still waiting for a vector.
    pub pending: i64,
    /// True while a model change is being re-embedded: search uses keywords only.
    pub reembedding: bool,
}

impl EmbeddingStatus {
    /// Why the vector leg is off, if it is.
    pub fn degraded_reason(&self) -> Option<String> {
        match &self.recorded_model {
            Some(recorded) if recorded != &self.model => Some(format!(
                "the database's vectors were made by `{recorded}`, this process is configured \
                 for `{}`: keyword search only until `nightshift run` or `nightshift index \
                 rebuild` re-embeds",
                self.model
            )),
            _ if self.reembedding => Some(format!(
                "re-embedding for model `{}` ({} chunks to go): keyword search only until it \
                 finishes",
                self.model, self.pending
            )),
            _ => None,
        }
    }
}

/// What the database says about its vectors, readable without loading a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEmbedding {
    /// The model whose vectors the database holds.
    pub model: Option<String>,
    /// Chunks waiting for a vector.
    pub pending: i64,
    /// A model change is still being re-embedded.
    pub reembedding: bool,
}

/// Reads [`StoredEmbedding`] on `conn`.
pub async fn stored_embedding(conn: &crate::db::Conn) -> Result<StoredEmbedding> {
    let model: Option<String> = crate::db::query_scalar(
        conn,
        "SELECT value FROM meta WHERE key = 'embedding_model'",
        (),
    )
    .await?;
    let reembedding: Option<String> = crate::db::query_scalar(
        conn,
        "SELECT value FROM meta WHERE key = 'embedding_reembed'",
        (),
    )
    .await?;
    let pending: i64 = crate::db::query_scalar(conn, "SELECT count(*) FROM embed_queue", ())
        .await?
        .unwrap_or(0);
    Ok(StoredEmbedding {
        model,
        pending,
        reembedding: reembedding.is_some(),
    })
}

/// What a search reads before its legs ([`Memory::search_state`]).
pub(super) struct SearchState {
    /// Why the vector leg is left out, if it is.
    pub degraded: Option<String>,
    /// The tag (`vector_removals`, `created_at`) of each session in scope that exists.
    pub tags: HashMap<String, super::vectors::SessionTag>,
}

impl Memory {
    /// Wakes this process's embedder after a write queued chunks.
    pub(super) fn wake_embedder(&self) {
        self.embed_wake.notify_one();
    }

    /// The model record, the queue length, and whether a re-embed is running.
    pub async fn embedding_status(&self) -> Result<EmbeddingStatus> {
        let conn = self.db.conn().await?;
        let stored = stored_embedding(&conn).await?;
        Ok(EmbeddingStatus {
            model: self.embedder.model_id().to_string(),
            dimensions: self.embedder.dimensions(),
            recorded_model: stored.model,
            pending: stored.pending,
            reembedding: stored.reembedding,
        })
    }

    /// What a search reads before its legs, in one read: whether it must leave out the
    /// vector leg, and why (the stored vectors are of another model, or a model change is
    /// still being re-embedded); the `vector_removals` count of each of `sessions` that
    /// exists, which says whether a cached copy of its vectors and keywords is still
    /// whole.
    pub(super) async fn search_state(
        &self,
        conn: &crate::db::Conn,
        sessions: &[String],
    ) -> Result<SearchState> {
        let placeholders = super::in_list::placeholders(1, sessions.len());
        let params: Vec<libsql::Value> = sessions.iter().map(|s| s.as_str().into()).collect();
        let mut rows = conn
            .query(
                &format!(
                    "SELECT 'meta', key, value, NULL, NULL FROM meta
                     WHERE key IN ('embedding_model', 'embedding_reembed')
                     UNION ALL
                     SELECT 'session', session_id, NULL, vector_removals, created_at FROM sessions
                     WHERE session_id IN ({placeholders})"
                ),
                params,
            )
            .await?;
        let (mut recorded, mut reembedding) = (None, false);
        let mut tags = HashMap::new();
        while let Some(row) = rows.next().await? {
            let key = row.get::<String>(1)?;
            match (row.get::<String>(0)?.as_str(), key.as_str()) {
                ("session", _) => {
                    let tag = super::vectors::SessionTag {
                        removals: row.get(3)?,
                        created_at: row.get(4)?,
                    };
                    tags.insert(key, tag);
                }
                (_, "embedding_model") => recorded = Some(row.get::<String>(2)?),
                _ => reembedding = true,
            }
        }
        let model = self.embedder.model_id();
        let off = match recorded {
            Some(recorded) if recorded != model => Some(format!(
                "stored vectors are of model `{recorded}`, not the configured `{model}`"
            )),
            _ if reembedding => Some(format!("re-embedding for model `{model}`")),
            _ => None,
        };
        Ok(SearchState {
            degraded: off,
            tags,
        })
    }

    /// Why search leaves out its vector leg now, if it does.
    pub async fn search_degraded(&self) -> Result<Option<String>> {
        let conn = self.db.conn().await?;
        Ok(self.search_state(&conn, &[]).await?.degraded)
    }

    /// Chunks waiting for a vector.
    pub async fn embedding_backlog(&self) -> Result<i64> {
        let conn = self.db.conn().await?;
        Ok(stored_embedding(&conn).await?.pending)
    }

    /// Makes the configured model the database's: if the recorded one differs, every
    /// chunk is queued for a new vector and the vector leg stays off until the queue has
    /// drained. The daemon calls this at start; returns true when a re-embed began.
    pub async fn adopt_model(&self) -> Result<bool> {
        let model = self.embedder.model_id();
        if self.recorded_model().await?.as_deref() == Some(model) {
            return Ok(false);
        }
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        // Read again under the write lock: another worker may have adopted it meanwhile.
        let recorded: Option<String> = crate::db::query_scalar(
            &tx,
            "SELECT value FROM meta WHERE key = 'embedding_model'",
            (),
        )
        .await?;
        if recorded.as_deref() == Some(model) {
            tx.rollback().await?;
            return Ok(false);
        }
        let queued = tx
            .execute(
                // `WHERE true` keeps SQLite from reading ON CONFLICT as a join's.
                "INSERT INTO embed_queue (chunk_id, enqueued_at)
                 SELECT chunk_id, CAST(unixepoch('subsec') * 1000 AS BIGINT) FROM chunks
                 WHERE true ON CONFLICT DO NOTHING",
                (),
            )
            .await?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('embedding_model', ?1), ('embedding_dimensions', ?2),
                    ('embedding_reembed', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            libsql::params![model, self.embedder.dimensions().to_string()],
        )
        .await?;
        tx.commit().await?;
        tracing::info!(
            from = recorded.as_deref().unwrap_or("none"),
            to = model,
            chunks = queued,
            "embedding model changed: re-embedding in the background; search uses keywords until it finishes"
        );
        self.wake_embedder();
        Ok(true)
    }

    /// Claims one batch of queued chunks, embeds it and stores the vectors. Returns how
    /// many chunks got a vector (0 when nothing is waiting, or every waiting chunk is
    /// claimed by another worker). Does nothing while the database's vectors are of
    /// another model: this process's vectors would be of the wrong kind.
    pub async fn embed_batch(&self) -> Result<usize> {
        let model = self.embedder.model_id().to_string();
        let token = crate::ids::new_id("emb");
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        // One read first, for all there is to know before writing: an idle embedder polls
        // every second and should not take the write lock (or, on a server, make more than
        // one round trip) to find nothing.
        let (recorded, reembedding, claimable) = crate::db::query_first_row(
            &conn,
            "SELECT (SELECT value FROM meta WHERE key = 'embedding_model'),
                    EXISTS (SELECT 1 FROM meta WHERE key = 'embedding_reembed'),
                    EXISTS (SELECT 1 FROM embed_queue
                            WHERE claim_expires_at IS NULL OR claim_expires_at <= ?1)",
            [now],
            |row| {
                Ok((
                    row.get::<Option<String>>(0)?,
                    row.get::<i64>(1)? != 0,
                    row.get::<i64>(2)? != 0,
                ))
            },
        )
        .await?
        .expect("a SELECT without FROM yields one row");
        if recorded.is_some_and(|recorded| recorded != model) {
            return Ok(0);
        }
        if !claimable {
            if reembedding {
                self.finish_reembed(&conn).await?;
            }
            return Ok(0);
        }
        let claimed = conn
            .execute(
                "UPDATE embed_queue SET claim_token = ?1, claim_expires_at = ?2
                 WHERE chunk_id IN (
                     SELECT chunk_id FROM embed_queue
                     WHERE claim_expires_at IS NULL OR claim_expires_at <= ?3
                     ORDER BY chunk_id LIMIT ?4)",
                libsql::params![
                    token.as_str(),
                    now + CLAIM_LEASE_MS,
                    now,
                    self.embed_batch_size as i64
                ],
            )
            .await?;
        if claimed == 0 {
            if reembedding {
                self.finish_reembed(&conn).await?;
            }
            return Ok(0);
        }
        let mut rows = conn
            .query(
                // A user's turn's sentences are embedded on their own too.
                "SELECT q.chunk_id, c.context, c.text, c.session_id, coalesce(c.role, '') = 'user'
                 FROM embed_queue q JOIN chunks c USING (chunk_id)
                 WHERE q.claim_token = ?1 ORDER BY q.chunk_id",
                [token.as_str()],
            )
            .await?;
        let mut ids = Vec::new();
        let mut texts = Vec::new();
        let mut sessions: HashMap<String, usize> = HashMap::new();
        while let Some(row) = rows.next().await? {
            ids.push(row.get::<i64>(0)?);
            *sessions.entry(row.get::<String>(3)?).or_default() += 1;
            texts.push(vector_inputs(
                &row.get::<String>(1)?,
                &row.get::<String>(2)?,
                self.sentences_of(row.get::<i64>(4)? != 0),
            ));
        }
        drop(rows);
        drop(conn);
        if ids.is_empty() {
            // The claimed chunks were deleted meanwhile, their queue rows with them.
            return Ok(0);
        }

        let blobs = match embed_chunks(self, texts).await {
            Ok(blobs) => blobs,
            Err(err) => {
                // Hand the batch back at once rather than when its lease runs out.
                let conn = self.db.conn().await?;
                conn.execute(
                    "UPDATE embed_queue SET claim_token = NULL, claim_expires_at = NULL
                     WHERE claim_token = ?1",
                    [token.as_str()],
                )
                .await?;
                return Err(err);
            }
        };

        let conn = self.db.conn().await?;
        // Three statements for the batch, whatever its size, and only for chunks whose
        // claim is still ours: after a lost lease another worker owns the chunk, and a
        // chunk deleted meanwhile took its queue row with it. Each on its own, not in a
        // transaction: on a server a transaction holds the write lock every worker shares
        // across its round trips. Stopped between them, the chunks stay queued (the queue
        // rows go last) and are embedded again after the claim's lease.
        let claimed = "SELECT chunk_id FROM embed_queue WHERE claim_token = ?1";
        conn.execute(
            &format!("DELETE FROM chunk_vectors WHERE chunk_id IN ({claimed})"),
            [token.as_str()],
        )
        .await?;
        let mut params = vec![
            libsql::Value::Text(token.clone()),
            libsql::Value::Text(model),
        ];
        let mut rows = Vec::with_capacity(ids.len());
        for (chunk_id, blob) in ids.iter().zip(blobs) {
            rows.push(format!("(?{}, ?{})", params.len() + 1, params.len() + 2));
            params.push(libsql::Value::Integer(*chunk_id));
            params.push(libsql::Value::Blob(blob));
        }
        let rows = rows.join(", ");
        conn.execute(
            &format!(
                "WITH vectors (chunk_id, embedding) AS (VALUES {rows})
                 INSERT INTO chunk_vectors (chunk_id, session_id, model, embedding)
                 SELECT c.chunk_id, c.session_id, ?2, v.embedding
                 FROM vectors v JOIN chunks c ON c.chunk_id = CAST(v.chunk_id AS BIGINT)
                 WHERE c.chunk_id IN ({claimed})"
            ),
            params,
        )
        .await?;
        let stored = conn
            .execute(
                "DELETE FROM embed_queue WHERE claim_token = ?1",
                [token.as_str()],
            )
            .await? as usize;
        crate::telemetry::vectors_written(stored);
        for (session_id, count) in &sessions {
            self.vectors.due.note_written(session_id, *count);
        }
        Ok(stored)
    }

    /// Queues every chunk that has no vector of the configured model and is not queued;
    /// returns how many. Writes queue their own chunks: this repairs what they could not.
    pub async fn queue_missing_vectors(&self) -> Result<usize> {
        let conn = self.db.conn().await?;
        Ok(conn
            .execute(
                "INSERT INTO embed_queue (chunk_id, enqueued_at)
                 SELECT c.chunk_id, CAST(unixepoch('subsec') * 1000 AS BIGINT) FROM chunks c
                 WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v
                                   WHERE v.chunk_id = c.chunk_id AND v.model = ?1)
                   AND NOT EXISTS (SELECT 1 FROM embed_queue q WHERE q.chunk_id = c.chunk_id)
                 ON CONFLICT DO NOTHING",
                [self.embedder.model_id()],
            )
            .await? as usize)
    }

    /// Ends a re-embed once nothing is queued: the vector leg comes back on.
    async fn finish_reembed(&self, conn: &crate::db::Conn) -> Result<()> {
        let ended = conn
            .execute(
                "DELETE FROM meta WHERE key = 'embedding_reembed' AND value = ?1
                 AND NOT EXISTS (SELECT 1 FROM embed_queue)",
                [self.embedder.model_id()],
            )
            .await?;
        if ended > 0 {
            tracing::info!(
                model = self.embedder.model_id(),
                "re-embedding finished: search uses vectors again"
            );
        }
        Ok(())
    }

    /// Embeds batches until nothing claimable is left; returns how many chunks got a
    /// vector. `progress(done, pending_at_start)` is called after each batch.
    pub async fn embed_pending(&self, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<usize> {
        let total = self.embedding_status().await?.pending.max(0) as usize;
        let mut done = 0;
        progress(0, total);
        loop {
            // An empty batch may only mean every claimed row was lost to another worker
            // while claimable rows remain: look once more before calling it done.
            let n = match self.embed_batch().await? {
                0 => self.embed_batch().await?,
                n => n,
            };
            if n == 0 {
                return Ok(done);
            }
            done += n;
            progress(done, total.max(done));
        }
    }

    /// Embeds queued chunks for about `budget` (a batch under way is finished, never cut),
    /// for a short-lived process such as a CLI write that should leave its own chunks
    /// embedded when no daemon is running. Returns how many chunks got a vector.
    pub async fn embed_queued_within(&self, budget: Duration) -> Result<usize> {
        let deadline = tokio::time::Instant::now() + budget;
        let mut done = 0;
        while tokio::time::Instant::now() < deadline {
            match self.embed_batch().await? {
                0 => break,
                n => done += n,
            }
        }
        Ok(done)
    }

    /// The background embedder: embeds queued chunks as they arrive (woken by this
    /// process's writes, and checking every second for other processes' writes) until
    /// `cancel` fires.
    pub fn spawn_embedder(&self, cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
        let memory = self.clone();
        tokio::spawn(async move {
            loop {
                let wait = match memory.embed_batch().await {
                    Ok(0) => {
                        // Idle: pack what the batches wrote, so a later start loads it fast.
                        match memory.pack_due().await {
                            Ok(0) => {}
                            Ok(blocks) => tracing::debug!(blocks, "packed vector blocks"),
                            Err(err) => tracing::warn!(error = %err, "packing vectors failed"),
                        }
                        Some(IDLE_POLL)
                    }
                    Ok(n) => {
                        tracing::debug!(chunks = n, "embedded a batch");
                        None
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, "embedding a batch failed; retrying");
                        Some(ERROR_BACKOFF)
                    }
                };
                if cancel.is_cancelled() {
                    return;
                }
                if let Some(wait) = wait {
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = memory.embed_wake.notified() => {}
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
            }
        })
    }
}
