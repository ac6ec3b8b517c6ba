//! The routes, by what they are about.

pub mod admin;
pub mod approvals;
pub mod artifacts;
pub mod macros;
pub mod mcp;
pub mod notes;
pub mod portable;
pub mod run_events;
pub mod schedules;
pub mod search;
pub mod sessions;
pub mod sources;
pub mod state;
pub mod system;
pub mod versions;
