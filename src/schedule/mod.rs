//! Schedules: when they run (cadences), where they are stored, and how a due occurrence
//! is claimed by exactly one worker.
//!
//! - [`cadence`]: the stored cadence kinds and when each runs next;
//! - [`cron`] and [`natural`]: the two ways of writing one as text;
//! - [`spec`]: the ways a caller says when (cron, every, at, when) resolved to a cadence;
//! - [`calendar`]: named lists of dates to skip, kept once in the configuration;
//! - [`validate`]: the checks a schedule passes before it is stored or changed;
//! - [`store`]: schedules and runs in the database, claims, leases and run records;
//! - [`progress`]: a run's progress while it goes, as its live view follows it;
//! - [`sync`]: the config file's `[[schedules]]` brought into the database;
//! - [`view`]: schedules and runs as the front doors show them.

pub mod agent_policy;
pub mod bounds;
pub mod cadence;
pub mod calendar;
pub(crate) mod cron;
mod error;
pub mod jitter;
pub(crate) mod natural;
pub mod progress;
pub mod spec;
pub mod store;
pub mod sync;
pub mod types;
pub mod upcoming;
pub(crate) mod validate;
pub mod view;

pub use cadence::{Cadence, CadenceError};
pub use error::{Result, ScheduleError};
pub use spec::{CadenceSpec, ScheduleSpec};
pub use store::ScheduleStore;
