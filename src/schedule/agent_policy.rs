//! What the operator lets a run's agent do with the schedules of its user
//! (`[scheduler] agent_schedules`). Kept apart so the configuration can name it without
//! reaching into the schedule store.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AgentSchedules {
    /// Schedules an agent makes run when due.
    #[default]
    Active,
    /// They wait, paused, until the user resumes them.
    Confirm,
    /// Agents are offered no schedule tools.
    Off,
}
