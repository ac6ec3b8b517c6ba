//! `ConsolidateError`: what a consolidation pass can fail with.

use crate::db::DbError;
use crate::memory::MemoryError;

#[derive(Debug, thiserror::Error)]
pub enum ConsolidateError {
    #[error(
        "unknown pass `{0}`: use summaries, facts, expiry, prune, backfill, optimize, snapshot \
         or macros"
    )]
    UnknownPass(String),
    #[error("snapshot failed: {0}")]
    Snapshot(String),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Outbox(#[from] crate::notify::outbox::OutboxError),
    #[error(transparent)]
    Schedule(#[from] crate::schedule::ScheduleError),
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    #[error(transparent)]
    Artifact(#[from] crate::artifact::ArtifactError),
    /// The facts of one event could not be read.
    #[error("{0}")]
    Extraction(String),
    /// A pass that panicked: recorded as failed, and the passes after it still run.
    #[error("the pass stopped on an internal error: {0}")]
    Panicked(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl crate::error::Kind for ConsolidateError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            ConsolidateError::UnknownPass(_) => ErrorKind::BadInput,
            ConsolidateError::Snapshot(_) => ErrorKind::Unavailable,
            ConsolidateError::Memory(err) => err.kind(),
            ConsolidateError::Outbox(err) => err.kind(),
            ConsolidateError::Db(err) => err.kind(),
            ConsolidateError::Schedule(err) => err.kind(),
            ConsolidateError::State(err) => err.kind(),
            ConsolidateError::Artifact(err) => err.kind(),
            ConsolidateError::Panicked(_) | ConsolidateError::Extraction(_) => ErrorKind::Internal,
        }
    }
}

impl From<libsql::Error> for ConsolidateError {
    fn from(err: libsql::Error) -> Self {
        ConsolidateError::Db(DbError::Sql(err))
    }
}
