//! Artifacts: files an agent produced (a report, a chart, a CSV), stored with a session.
//!
//! Content is stored once per blake3 hash, however many artifacts share it: in the
//! database up to `[artifacts] inline_max_bytes`, above it in a content-addressed folder
//! (`DIR/<first 2 hex>/<hash>`) so a large file does not bloat the WAL. A folder file is
//! written first (temporary file, fsync, rename), then its rows in one transaction; a
//! delete removes the rows first, then the file. Whatever a crash leaves between the two
//! (a file no row references) is removed by [`ArtifactStore::collect_garbage`], run by
//! the consolidation's expiry pass, once the file is older than a grace period.
//!
//! Every operation takes who acts: another user's artifact behaves exactly like one that
//! does not exist.

mod folder;
mod gc;
mod notice;
mod store;
mod types;
mod validate;
mod whole_text;

pub use gc::GcReport;
pub use notice::{ascii_file_name, notice_json, of_run_in};
pub use store::ArtifactStore;
pub use types::{Artifact, ArtifactDeleted, NewArtifact};
pub use validate::{
    check_mime_type, check_name, DEFAULT_MIME_TYPE, MAX_MIME_BYTES, MAX_NAME_CHARS,
};
pub use whole_text::{TURN_ARTIFACT_NAME, TURN_ARTIFACT_TYPE};

use crate::db::DbError;
use crate::error::{ErrorKind, Kind};
use crate::input::InputError;

/// Most artifacts one user may keep, whatever their sizes (empty files count too).
pub const MAX_ARTIFACTS_PER_USER: i64 = 100_000;
/// Most artifacts one run's answer may carry; more are not stored, each named in the run's
/// output.
pub const MAX_ARTIFACTS_PER_RUN: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("no artifact `{0}` for this user")]
    NotFound(String),
    #[error(
        "artifact is {size} bytes, over the limit of {limit} bytes (artifacts.max_artifact_bytes)"
    )]
    TooLarge { size: u64, limit: usize },
    #[error(
        "user `{user_id}` has {used} bytes of artifacts; {size} more would pass the limit of \
         {limit} bytes (artifacts.max_bytes_per_user): delete some to store another"
    )]
    OverQuota {
        user_id: String,
        used: u64,
        size: u64,
        limit: u64,
    },
    #[error(
        "user `{user_id}` has {limit} artifacts, the most one user may keep; delete some to \
         store another"
    )]
    TooMany { user_id: String, limit: i64 },
    #[error("session `{0}` is reserved for nightshift's own use")]
    ReservedSession(String),
    #[error(
        "the content of artifact `{artifact_id}` is missing from the artifact folder \
         ({path}): it was removed outside nightshift or lost in a crash; store it again"
    )]
    ContentMissing { artifact_id: String, path: String },
    #[error("the content of artifact `{artifact_id}` does not match its hash {hash}")]
    ContentCorrupt { artifact_id: String, hash: String },
    #[error("artifact folder: {0}")]
    Folder(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl ArtifactError {
    /// Bad input in `what`, for `reason`.
    pub fn invalid(what: &str, reason: impl Into<String>) -> Self {
        ArtifactError::Input(InputError::new(what, reason))
    }
}

impl Kind for ArtifactError {
    fn kind(&self) -> ErrorKind {
        match self {
            ArtifactError::Input(_)
            | ArtifactError::TooLarge { .. }
            | ArtifactError::ReservedSession(_) => ErrorKind::BadInput,
            ArtifactError::NotFound(_) => ErrorKind::NotFound,
            ArtifactError::OverQuota { .. } | ArtifactError::TooMany { .. } => ErrorKind::Conflict,
            ArtifactError::ContentMissing { .. } | ArtifactError::ContentCorrupt { .. } => {
                ErrorKind::Internal
            }
            ArtifactError::Folder(_) => ErrorKind::Unavailable,
            ArtifactError::Db(err) => err.kind(),
        }
    }
}

impl From<libsql::Error> for ArtifactError {
    fn from(err: libsql::Error) -> Self {
        ArtifactError::Db(DbError::Sql(err))
    }
}

pub type Result<T, E = ArtifactError> = std::result::Result<T, E>;
