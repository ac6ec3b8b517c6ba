//! Export and import: one user's memory (or every user's) as a versioned archive of
//! newline-delimited JSON, restored exactly by import; and imports of notes from mem0's
//! `get_all` output and from a folder of Markdown files. The format is documented in
//! docs/export.md.
//!
//! - [`format`]: the header and end lines, the report types.
//! - [`rows`]: stored values to JSON and back, and the checks an imported field passes.
//! - [`export`]: writing an archive.
//! - [`import`]: reading one (two passes: validate every line, then write a user at a time).
//! - [`foreign`]: mem0 and Markdown, turned into note rows.
//!
//! Chunks, vectors and index blocks are derived and never exported: an import rebuilds
//! the index of every session it wrote to.

mod columns;
mod export;
mod foreign;
pub mod format;
mod import;
mod readback;
mod rows;
mod tables;
mod user_import;

use std::sync::Arc;

use crate::access::Actor;
use crate::artifact::{ArtifactError, ArtifactStore};
use crate::db::clock::Clock;
use crate::db::{Db, DbError};
use crate::error::{ErrorKind, Kind};
use crate::input::InputError;
use crate::memory::{Memory, MemoryError};
use crate::notify::grants::ChannelGrants;
use crate::schedule::store::ScheduleStore;

pub use format::{ExportReport, ImportFormat, ImportReport, TypeCounts};

#[derive(Debug, thiserror::Error)]
pub enum PortableError {
    #[error(transparent)]
    Input(#[from] InputError),
    /// A line of an archive that is not what the format says. Found while checking,
    /// nothing was imported; found while writing (a row the database refuses), the users
    /// committed before its user's transaction stay imported.
    #[error("{}", line_message(*.line, .reason, .imported_before))]
    Line {
        line: u64,
        reason: String,
        imported_before: Vec<String>,
    },
    #[error("{what}: {reason}; nothing was imported")]
    File { what: String, reason: String },
    #[error("no file or folder {0}; nothing was imported")]
    Missing(String),
    #[error("a user may export or import only their own data")]
    NotYours,
    /// A user's lines would pass one of their limits: that user's transaction was rolled
    /// back; users written before them stay imported.
    #[error("{}", limit_message(.user, .reason, .imported_before))]
    OverLimit {
        user: String,
        reason: String,
        imported_before: Vec<String>,
    },
    #[error("cannot write the archive: {0}")]
    Write(std::io::Error),
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl Kind for PortableError {
    fn kind(&self) -> ErrorKind {
        match self {
            PortableError::Input(_)
            | PortableError::Line { .. }
            | PortableError::File { .. }
            | PortableError::NotYours => ErrorKind::BadInput,
            PortableError::Missing(_) => ErrorKind::NotFound,
            PortableError::OverLimit { .. } => ErrorKind::Conflict,
            PortableError::Write(_) => ErrorKind::Unavailable,
            PortableError::Artifact(err) => err.kind(),
            PortableError::Memory(err) => err.kind(),
            PortableError::Db(err) => err.kind(),
        }
    }
}

fn line_message(line: u64, reason: &str, imported_before: &[String]) -> String {
    if imported_before.is_empty() {
        format!("line {line}: {reason}; nothing was imported")
    } else {
        format!(
            "line {line}: {reason}; nothing of its user was imported, but the users before \
             it were: {}",
            imported_before.join(", ")
        )
    }
}

fn limit_message(user: &str, reason: &str, imported_before: &[String]) -> String {
    let mut message = format!("user `{user}`: {reason}; nothing of this user was imported");
    if !imported_before.is_empty() {
        message.push_str(&format!(
            " (imported before it: {})",
            imported_before.join(", ")
        ));
    }
    message
}

impl PortableError {
    /// A file that could not be opened or read: missing (not found) or unreadable.
    pub(crate) fn io(path: &std::path::Path, err: std::io::Error) -> Self {
        if err.kind() == std::io::ErrorKind::NotFound {
            PortableError::Missing(path.display().to_string())
        } else {
            PortableError::File {
                what: path.display().to_string(),
                reason: err.to_string(),
            }
        }
    }
}

impl From<libsql::Error> for PortableError {
    fn from(err: libsql::Error) -> Self {
        PortableError::Db(DbError::Sql(err))
    }
}

impl PortableError {
    pub(crate) fn line(line: u64, reason: impl Into<String>) -> Self {
        PortableError::Line {
            line,
            reason: reason.into(),
            imported_before: Vec::new(),
        }
    }
}

pub type Result<T, E = PortableError> = std::result::Result<T, E>;

/// What export and import work on: the database, the memory store (its limits, and the
/// index rebuilt after an import) and the artifact store (content read on export).
#[derive(Clone)]
pub struct Portable {
    db: Db,
    memory: Memory,
    artifacts: ArtifactStore,
    /// What an imported schedule is checked by: the store's limits and chain rules, and
    /// the channels granted to its user.
    schedules: ScheduleStore,
    grants: ChannelGrants,
    clock: Arc<dyn Clock>,
}

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

/// A temporary file holding what `reader` gives, at most `max_bytes` of it
/// (`memory.max_import_bytes`): an import reads its input twice (checked, then written),
/// so a pipe, a device or a request body is first kept on disk, and an endless one must
/// not fill the disk. The file is removed when the handle is dropped.
pub fn spool(reader: impl std::io::Read, max_bytes: usize) -> Result<tempfile::NamedTempFile> {
    let unreadable = |e: std::io::Error| PortableError::File {
        what: "the input".to_string(),
        reason: format!("cannot be read or kept: {e}"),
    };
    let mut file = tempfile::NamedTempFile::new().map_err(unreadable)?;
    let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    let copied = std::io::copy(
        &mut reader.take(limit.saturating_add(1)),
        file.as_file_mut(),
    )
    .map_err(unreadable)?;
    if copied > limit {
        return Err(PortableError::File {
            what: "the input".to_string(),
            reason: format!("it is longer than memory.max_import_bytes ({max_bytes} bytes)"),
        });
    }
    file.as_file_mut().sync_data().map_err(unreadable)?;
    Ok(file)
}

/// What [`Portable`] is made of.
pub struct PortableParts {
    pub db: Db,
    pub memory: Memory,
    pub artifacts: ArtifactStore,
    pub schedules: ScheduleStore,
    pub grants: ChannelGrants,
    pub clock: Arc<dyn Clock>,
}

impl Portable {
    pub fn new(parts: PortableParts) -> Self {
        Self {
            db: parts.db,
            memory: parts.memory,
            artifacts: parts.artifacts,
            schedules: parts.schedules,
            grants: parts.grants,
            clock: parts.clock,
        }
    }

    /// Writes the archive of `scope` to `out`. A user may export only themselves; `All`
    /// is for the operator. `exported_at` (UTC ms) goes in the header.
    pub async fn export(
        &self,
        actor: &Actor,
        scope: &ExportScope,
        exported_at: i64,
        out: &mut (dyn std::io::Write + Send),
    ) -> Result<ExportReport> {
        export::export(self, actor, scope, exported_at, out).await
    }

    /// Imports the archive (or mem0 file, or Markdown folder) `request` names. Rows that
    /// exist with the same content are counted as already present; rows whose id exists
    /// with other content are conflicts, skipped. One transaction per user.
    pub async fn import(&self, actor: &Actor, request: &ImportRequest) -> Result<ImportReport> {
        import::import(self, actor, request).await
    }
}
