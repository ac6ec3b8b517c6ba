//! The records the artifact store takes and returns.

use serde::Serialize;

use crate::db::{DbError, FromRow};

/// An artifact's metadata (its bytes are read with `ArtifactStore::get`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Artifact {
    pub artifact_id: String,
    pub user_id: String,
    pub session_id: String,
    /// The scheduled run that produced it, when one did.
    pub run_id: Option<String>,
    pub name: String,
    /// MIME type, as given (`type/subtype`, maybe with parameters).
    pub mime_type: String,
    /// Bytes.
    pub size: i64,
    /// blake3 of the content, 64 hex digits.
    pub hash: String,
    /// UTC milliseconds.
    pub created_at: i64,
}

impl FromRow for Artifact {
    const COLUMNS: &'static str =
        "artifact_id, user_id, session_id, run_id, name, mime_type, size, hash, created_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(Artifact {
            artifact_id: row.get(0)?,
            user_id: row.get(1)?,
            session_id: crate::memory::SessionKey::id_of(&row.get::<String>(2)?).to_string(),
            run_id: row.get(3)?,
            name: row.get(4)?,
            mime_type: row.get(5)?,
            size: row.get(6)?,
            hash: row.get(7)?,
            created_at: row.get(8)?,
        })
    }
}

/// An artifact to store: its name, MIME type and bytes.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct NewArtifact {
    pub name: String,
    pub mime_type: String,
    pub content: Vec<u8>,
}

impl std::fmt::Debug for NewArtifact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewArtifact")
            .field("name", &self.name)
            .field("mime_type", &self.mime_type)
            .field("size", &self.content.len())
            .finish()
    }
}

/// What `artifact delete` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ArtifactDeleted {
    pub artifact_id: String,
    pub deleted: bool,
}
