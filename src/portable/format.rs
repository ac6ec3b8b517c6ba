//! The archive's first and last lines, and what export and import report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `format` of the header line.
pub const FORMAT: &str = "nightshift-export";
/// The archive version this build writes and reads.
pub const VERSION: i64 = 1;

/// Line 1 of an archive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub format: String,
    pub version: i64,
    /// UTC milliseconds.
    pub exported_at: i64,
    /// The users whose data follows, in the order their lines come.
    pub users: Vec<String>,
}

/// The last line: `lines` counts the data lines between the header and this one, so a
/// truncated archive is detected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct End {
    #[serde(rename = "type")]
    pub kind: String,
    pub lines: u64,
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ExportReport {
    pub users: Vec<String>,
    /// Data lines (header and end not counted), by `type`.
    pub lines: BTreeMap<String, u64>,
}

/// What an import did with the rows of one `type`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct TypeCounts {
    pub imported: u64,
    /// Rows that were there already, with the same content.
    pub already_present: u64,
    /// Ids that exist with other content (or belong to another user): skipped, untouched.
    pub conflicts: Vec<String>,
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ImportReport {
    /// nightshift, mem0 or markdown.
    pub format: String,
    /// True when nothing was written (`--dry-run`).
    pub dry_run: bool,
    pub users: Vec<String>,
    /// By line `type`.
    pub types: BTreeMap<String, TypeCounts>,
    /// Sessions whose search index was rebuilt after the import.
    pub sessions_reindexed: u64,
    /// The users whose transactions committed, in order.
    #[serde(skip)]
    pub(crate) written: Vec<String>,
}

impl ImportReport {
    /// Whether the import added nothing (everything already present or in conflict).
    pub fn changed_nothing(&self) -> bool {
        self.types.values().all(|t| t.imported == 0)
    }
}

/// What an import file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImportFormat {
    /// An archive written by `nightshift export`.
    Nightshift,
    /// mem0's `get_all` output: a JSON array of memories, or an object with `results`.
    Mem0,
    /// A folder of `.md` files, one note each.
    Markdown,
}

impl ImportFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ImportFormat::Nightshift => "nightshift",
            ImportFormat::Mem0 => "mem0",
            ImportFormat::Markdown => "markdown",
        }
    }
}
