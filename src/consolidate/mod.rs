//! Overnight consolidation: rolling summaries, fact extraction with dedupe, supersession
//! and tombstones, expiry and retention, pruning, embedding backfill, index upkeep and
//! snapshots, and macros (tool chains learned from scheduled runs). Every pass is recorded with its counts in `maintenance_runs`; per-session
//! cursors advance only when a pass succeeded for that session, so a pass cut short is
//! finished by the next one and running a pass twice changes nothing the second time.

mod counts;
pub mod facts;
mod facts_pass;
mod macro_store;
mod macros;
mod passes;

use std::str::FromStr;
use std::sync::Arc;

use serde::Serialize;

pub use facts_pass::{ExtractedFact, FactOutcome, FactsDryRun};
pub use passes::{Consolidator, PassReport};

use crate::db::DbError;
use crate::memory::MemoryError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Pass {
    Summaries,
    Facts,
    Expiry,
    Prune,
    Backfill,
    Optimize,
    Snapshot,
    Macros,
}

impl Pass {
    pub const ALL: [Pass; 8] = [
        Pass::Summaries,
        Pass::Facts,
        Pass::Expiry,
        Pass::Prune,
        Pass::Backfill,
        Pass::Optimize,
        Pass::Snapshot,
        Pass::Macros,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Pass::Summaries => "summaries",
            Pass::Facts => "facts",
            Pass::Expiry => "expiry",
            Pass::Prune => "prune",
            Pass::Backfill => "backfill",
            Pass::Optimize => "optimize",
            Pass::Snapshot => "snapshot",
            Pass::Macros => "macros",
        }
    }
}

impl FromStr for Pass {
    type Err = ConsolidateError;

    fn from_str(s: &str) -> Result<Self, ConsolidateError> {
        Pass::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| ConsolidateError::UnknownPass(s.to_string()))
    }
}

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

/// Progress of a pass: (pass, done, total).
pub type Progress = Arc<dyn Fn(Pass, usize, usize) + Send + Sync>;
