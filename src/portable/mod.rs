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
mod error;
mod export;
mod foreign;
pub mod format;
mod import;
mod readback;
mod request;
mod rows;
mod store;
mod tables;
mod user_import;

use crate::access::Actor;

pub use error::{PortableError, Result};
pub use format::{ExportReport, ImportFormat, ImportReport, TypeCounts};
pub use request::{ExportScope, ImportRequest};
pub use store::{Portable, PortableParts};

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
