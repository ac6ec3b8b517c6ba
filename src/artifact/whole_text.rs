//! The artifact store as the keeper of a conversation turn's whole text under
//! `memory.oversize = "artifact"`: the turn itself is stored cut to fit, its marker naming
//! the artifact that holds all of it, both in the append's one transaction.

use async_trait::async_trait;

use super::{ArtifactError, ArtifactStore, NewArtifact};
use crate::db::WriteTx;
use crate::error::Kind;
use crate::memory::oversize::{PlacedText, WholeTextKeeper};
use crate::memory::{MemoryError, SessionKey};

/// The name a kept turn's artifact is stored under.
pub const TURN_ARTIFACT_NAME: &str = "turn.txt";
/// Its MIME type: the text as it was sent.
pub const TURN_ARTIFACT_TYPE: &str = "text/plain; charset=utf-8";

fn turn(text: &str) -> NewArtifact {
    NewArtifact {
        name: TURN_ARTIFACT_NAME.to_string(),
        mime_type: TURN_ARTIFACT_TYPE.to_string(),
        content: text.as_bytes().to_vec(),
    }
}

/// Why a turn's whole text was not kept, as the memory store reports it: a database
/// failure as itself, a limit (or a folder that cannot be written) naming the artifact.
fn not_kept(text: &str, err: ArtifactError) -> MemoryError {
    match err {
        ArtifactError::Db(err) => MemoryError::Db(err),
        err => MemoryError::WholeTextNotKept {
            size: text.len(),
            kind: err.kind(),
            reason: err.to_string(),
        },
    }
}

#[async_trait]
impl WholeTextKeeper for ArtifactStore {
    async fn place(
        &self,
        user_id: &str,
        text: &str,
        pending: u64,
    ) -> Result<PlacedText, MemoryError> {
        let artifact = turn(text);
        let placed = self
            .placement(user_id, &artifact, pending)
            .await
            .map_err(|e| not_kept(text, e))?;
        self.write_placed(&placed, &artifact.content)
            .await
            .map_err(|e| not_kept(text, e))?;
        Ok(placed)
    }

    async fn record_in(
        &self,
        tx: &WriteTx,
        key: &SessionKey,
        text: &str,
        placed: &PlacedText,
    ) -> Result<String, MemoryError> {
        self.insert_in(tx, key, None, &turn(text), &placed.hash, placed.in_folder)
            .await
            .map(|record| record.artifact_id)
            .map_err(|e| not_kept(text, e))
    }

    async fn release(&self, placed: &[&PlacedText]) {
        for placed in placed.iter().filter(|p| p.in_folder) {
            if let Err(err) = self.remove_unreferenced_file(&placed.hash).await {
                tracing::warn!(
                    hash = %placed.hash,
                    error = %err,
                    "a file placed for a refused append was not removed (the expiry pass will)"
                );
            }
        }
    }

    async fn settle(&self, text: &str, placed: &PlacedText) {
        // Under the folder lock: a refused append's release of the same bytes must not
        // remove the file between this commit and this write.
        let _guard = self.folder_lock.lock().await;
        if let Err(err) = ArtifactStore::settle(self, placed, text.as_bytes()).await {
            tracing::error!(
                hash = %placed.hash,
                error = %err,
                "a kept turn's content file could not be put back after its commit"
            );
        }
    }
}
