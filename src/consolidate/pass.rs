//! The consolidation passes by name (`Pass`) and the progress callback they report through.

use std::str::FromStr;
use std::sync::Arc;

use serde::Serialize;

use super::error::ConsolidateError;

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

/// Progress of a pass: (pass, done, total).
pub type Progress = Arc<dyn Fn(Pass, usize, usize) + Send + Sync>;
