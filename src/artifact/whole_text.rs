//! The artifact store as the keeper of a conversation turn's whole text under
//! `memory.oversize = "artifact"`: the turn itself is stored cut to fit, its marker naming
//! the artifact that holds all of it.

use async_trait::async_trait;

use super::{ArtifactStore, NewArtifact};
use crate::access::Actor;
use crate::error::Kind;
use crate::memory::oversize::WholeTextKeeper;
use crate::memory::MemoryError;

/// The name a kept turn's artifact is stored under.
pub const TURN_ARTIFACT_NAME: &str = "turn.txt";
/// Its MIME type: the text as it was sent.
pub const TURN_ARTIFACT_TYPE: &str = "text/plain; charset=utf-8";

#[async_trait]
impl WholeTextKeeper for ArtifactStore {
    async fn keep(
        &self,
        user_id: &str,
        session_id: &str,
        text: &str,
    ) -> Result<String, MemoryError> {
        let artifact = NewArtifact {
            name: TURN_ARTIFACT_NAME.to_string(),
            mime_type: TURN_ARTIFACT_TYPE.to_string(),
            content: text.as_bytes().to_vec(),
        };
        match self.put(user_id, session_id, None, &artifact).await {
            Ok(stored) => Ok(stored.artifact_id),
            Err(err) => Err(MemoryError::WholeTextNotKept {
                size: text.len(),
                kind: err.kind(),
                reason: err.to_string(),
            }),
        }
    }

    async fn discard(&self, user_id: &str, artifact_id: &str) {
        let Ok(owner) = Actor::user(user_id) else {
            return;
        };
        if let Err(err) = self.delete(&owner, artifact_id).await {
            tracing::warn!(
                artifact_id,
                error = %err,
                "an append failed and the artifact kept for its over-long turn was not removed"
            );
        }
    }
}
