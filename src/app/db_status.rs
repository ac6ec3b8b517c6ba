//! `db status`: the schema, what the database holds, and where embedding stands.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::db::migrate::{self, MigrationStatus};
use crate::db::{query_scalar, Db, DbError};

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct EmbeddingStatusReport {
    /// The configured backend.
    pub backend: String,
    /// The model the stored vectors are of.
    pub model: Option<String>,
    /// Chunks waiting for a vector.
    pub pending: i64,
    /// A model change is still being re-embedded (search uses keywords until it is done).
    pub reembedding: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct DbStatus {
    pub database: String,
    pub schema_version: i64,
    pub binary_schema_version: i64,
    pub up_to_date: bool,
    pub migrations: Vec<MigrationStatus>,
    /// Rows by kind: sessions, events, notes, chunks, vectors, state keys, artifacts, promoted
    /// macros (when the schema is current).
    pub counts: BTreeMap<String, i64>,
    pub embedding_model: Option<String>,
    pub embedding: EmbeddingStatusReport,
}

/// Reads the status of `db`, migrated or not; `backend` is the configured embedding backend.
pub async fn db_status(db: &Db, backend: &str) -> Result<DbStatus, DbError> {
    let migrations = migrate::status(db).await?;
    let current = migrations.iter().all(|m| m.applied_at.is_some());
    let schema_version = migrations
        .iter()
        .filter(|m| m.applied_at.is_some())
        .map(|m| m.version)
        .max()
        .unwrap_or(0);
    let mut counts = BTreeMap::new();
    let mut embedding = EmbeddingStatusReport {
        backend: backend.to_string(),
        model: None,
        pending: 0,
        reembedding: false,
    };
    if current {
        let conn = db.conn().await?;
        for (name, sql) in [
            (
                "sessions",
                "SELECT count(*) FROM sessions WHERE kind != 'memory'",
            ),
            ("events", "SELECT count(*) FROM events"),
            ("notes", "SELECT count(*) FROM notes"),
            ("chunks", "SELECT count(*) FROM chunks"),
            ("vectors", "SELECT count(*) FROM chunk_vectors"),
            ("state_keys", "SELECT count(*) FROM state_entries"),
            ("artifacts", "SELECT count(*) FROM artifacts"),
            ("macros", "SELECT count(*) FROM macros WHERE promoted = 1"),
        ] {
            let n: i64 = query_scalar(&conn, sql, ()).await?.unwrap_or(0);
            counts.insert(name.to_string(), n);
        }
        let stored =
            crate::memory::stored_embedding(&conn)
                .await
                .map_err(|e| DbError::Corrupt {
                    what: "embedding state".into(),
                    reason: e.to_string(),
                })?;
        embedding.model = stored.model;
        embedding.pending = stored.pending;
        embedding.reembedding = stored.reembedding;
    }
    Ok(DbStatus {
        database: db.target().to_string(),
        schema_version,
        binary_schema_version: migrate::latest_version(),
        up_to_date: current,
        migrations,
        counts,
        embedding_model: embedding.model.clone(),
        embedding,
    })
}
