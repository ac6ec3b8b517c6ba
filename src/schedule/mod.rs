//! Schedules: when they run (cadences), where they are stored, and how a due occurrence
//! is claimed by exactly one worker.

pub mod cadence;
pub mod cron;
pub mod natural;
pub mod store;
pub mod sync;
pub mod types;

pub use cadence::{Cadence, CadenceError};
