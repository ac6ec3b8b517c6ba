//! `PortableError`, what an export or import can fail with, and the `Result` they return.

use crate::artifact::ArtifactError;
use crate::db::DbError;
use crate::error::{ErrorKind, Kind};
use crate::input::InputError;
use crate::memory::MemoryError;

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
