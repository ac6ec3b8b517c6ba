//! Wiring shared by the CLI and the daemon: from a validated config to an open, migrated
//! database and a memory store on it.

use crate::config::Config;
use crate::db::{migrate, Db, DbError, DbOptions, DbTarget};
use crate::embed::{self, EmbedError};
use crate::memory::{Memory, MemoryError};

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

/// Opens the configured database without touching its schema.
pub async fn open_db(config: &Config) -> Result<Db, DbError> {
    // The token comes from the environment or a file: never a command-line argument.
    let token = match std::env::var("NIGHTSHIFT_DB_AUTH_TOKEN") {
        Ok(token) => Some(token),
        Err(_) => match &config.database.auth_token_file {
            Some(file) => {
                let path = crate::config::credential_path(file);
                let token = std::fs::read_to_string(&path).map_err(|e| {
                    DbError::BadTarget(format!(
                        "cannot read database.auth_token_file {}: {e}",
                        path.display()
                    ))
                })?;
                Some(token.trim().to_string())
            }
            None => None,
        },
    };
    let target = DbTarget::parse(&config.database.path)?
        .with_auth_token(token)
        .with_replica(
            config.database.replica_path.as_deref(),
            std::time::Duration::from_secs(config.database.sync_interval_secs),
        )?;
    let options = DbOptions {
        busy_timeout: std::time::Duration::from_millis(config.database.busy_timeout_ms),
        pool_size: config.database.pool_size,
    };
    Db::open(&target, options).await
}

/// Opens the configured database, applies pending migrations, and builds the memory store.
pub async fn open_memory(config: &Config) -> Result<Memory, OpenError> {
    // The model first: a missing or wrong one is refused before the database is touched.
    let embedder = embed::from_config(&config.embedding)?;
    let db = open_db(config).await?;
    migrate::migrate(&db).await?;
    Ok(
        Memory::new(db, embedder, config.memory.clone(), config.search.clone())
            .await?
            .with_embed_batch_size(config.embedding.batch_size),
    )
}
