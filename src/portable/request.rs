//! What an export or import is asked to do: `ExportScope` (whose data) and `ImportRequest`.

use super::format::ImportFormat;

/// Whose data an export holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportScope {
    User(String),
    /// Every user (the operator only).
    All,
}

/// What an import reads, and how.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub path: std::path::PathBuf,
    /// Detected from the file when `None`.
    pub format: Option<ImportFormat>,
    /// mem0: overrides or fills each item's user; Markdown: required.
    pub user: Option<String>,
    /// Check and count everything, write nothing.
    pub dry_run: bool,
}
