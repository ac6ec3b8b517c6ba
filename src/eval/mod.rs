//! Retrieval-quality evaluation through the real ingest and search paths: LoCoMo's
//! conversations between two friends, and long user–assistant chats
//! (`scripts/make_chats_dev.py`). Each format is read into [`Conversation`]s, which
//! [`run`] ingests and asks.

pub mod chats;
pub mod locomo;
mod run;
mod tally;
mod vary;

pub use run::{evaluate, evaluate_stages, Conversation, Question};
pub use tally::{parse_ks, CategoryScore, Report};
pub use vary::{parse_variation, variants, Variation, MAX_VARIANTS};

use crate::memory::MemoryError;

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("the file is not valid JSON: {0}")]
    Json(String),
    #[error("the file is malformed: {0}")]
    Format(String),
    #[error("invalid k `{0}`: use numbers from 1 to the search limit, like 5,10")]
    BadK(String),
    #[error("invalid --vary {0}")]
    BadVary(String),
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

impl crate::error::Kind for EvalError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            EvalError::Memory(err) => err.kind(),
            _ => crate::error::ErrorKind::BadInput,
        }
    }
}
