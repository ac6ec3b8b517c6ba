//! What a call to a model used: tokens and their cost by the configured prices. Runs
//! record their own; consolidation passes that call a model add theirs to their counts.

/// What one model call used; all zero when no model was called.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelUsage {
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost: f64,
}

impl ModelUsage {
    /// Whether no model was called (or it reported nothing).
    pub fn is_empty(&self) -> bool {
        self.prompt_tokens == 0 && self.completion_tokens == 0 && self.cost == 0.0
    }
}
