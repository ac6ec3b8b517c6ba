//! Overnight consolidation: rolling summaries, fact extraction with dedupe, supersession
//! and tombstones, expiry and retention, pruning, embedding backfill, index upkeep and
//! snapshots, and macros (tool chains learned from scheduled runs). Every pass is recorded with its counts in `maintenance_runs`; per-session
//! cursors advance only when a pass succeeded for that session, so a pass cut short is
//! finished by the next one and running a pass twice changes nothing the second time.

mod counts;
mod error;
pub mod facts;
mod facts_pass;
mod macro_store;
mod macros;
mod pass;
mod passes;

pub use error::ConsolidateError;
pub use facts_pass::{ExtractedFact, FactOutcome, FactsDryRun};
pub use pass::{Pass, Progress};
pub use passes::{Consolidator, PassReport};
