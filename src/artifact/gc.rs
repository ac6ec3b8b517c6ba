//! Garbage collection, run by the consolidation's expiry pass: content rows no artifact
//! references, and folder files no content row references once they are older than
//! `[artifacts] gc_grace_secs` (a put writes its file before its rows: a fresh file may
//! be a put in flight).

use std::time::Duration;

use serde::Serialize;

use super::store::ArtifactStore;
use super::{folder, Result};
use crate::db::query_scalar;

/// What a collection removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    /// Content rows no artifact referenced.
    pub contents_removed: u64,
    /// Folder files no content row referenced (and temporary files a crash left).
    pub files_removed: u64,
}

impl ArtifactStore {
    /// Removes unreferenced content rows, then unreferenced folder files past the grace
    /// period.
    pub async fn collect_garbage(&self) -> Result<GcReport> {
        let mut report = GcReport::default();
        let conn = self.db.conn().await?;
        // The trigger removes content with its last artifact; this catches anything else.
        report.contents_removed = conn
            .execute(
                "DELETE FROM artifact_contents WHERE NOT EXISTS
                 (SELECT 1 FROM artifacts WHERE artifacts.hash = artifact_contents.hash)",
                (),
            )
            .await?;
        drop(conn);
        let Some(root) = self.folder.clone() else {
            return Ok(report);
        };
        let grace = Duration::from_secs(self.config.gc_grace_secs.max(0) as u64);
        let old = tokio::task::spawn_blocking(move || folder::old_files(&root, grace))
            .await
            .map_err(|e| super::ArtifactError::Folder(e.to_string()))?
            .map_err(super::ArtifactError::Folder)?;
        for file in old {
            let removed = match &file.hash {
                Some(hash) => {
                    let conn = self.db.conn().await?;
                    let in_folder: Option<i64> = query_scalar(
                        &conn,
                        "SELECT in_folder FROM artifact_contents WHERE hash = ?1",
                        [hash.as_str()],
                    )
                    .await?;
                    drop(conn);
                    match in_folder {
                        Some(1) => false,
                        // Unreferenced, or the content is kept inline: the file is spare.
                        _ => self.remove_spare_file(hash).await?,
                    }
                }
                None => {
                    let path = file.path.clone();
                    tokio::task::spawn_blocking(move || folder::remove_path(&path))
                        .await
                        .map_err(|e| super::ArtifactError::Folder(e.to_string()))?
                        .map_err(super::ArtifactError::Folder)?
                }
            };
            if removed {
                report.files_removed += 1;
            }
        }
        if report.files_removed > 0 || report.contents_removed > 0 {
            tracing::info!(
                files = report.files_removed,
                contents = report.contents_removed,
                "removed unreferenced artifact content"
            );
        }
        Ok(report)
    }

    /// Removes the file of `hash` unless a row keeps its content in the folder (checked
    /// again under the folder lock).
    async fn remove_spare_file(&self, hash: &str) -> Result<bool> {
        let Some(root) = self.folder.clone() else {
            return Ok(false);
        };
        let _guard = self.folder_lock.lock().await;
        let conn = self.db.conn().await?;
        let in_folder: Option<i64> = query_scalar(
            &conn,
            "SELECT in_folder FROM artifact_contents WHERE hash = ?1",
            [hash],
        )
        .await?;
        drop(conn);
        if in_folder == Some(1) {
            return Ok(false);
        }
        let hash = hash.to_string();
        tokio::task::spawn_blocking(move || folder::remove(&root, &hash))
            .await
            .map_err(|e| super::ArtifactError::Folder(e.to_string()))?
            .map_err(super::ArtifactError::Folder)
    }
}
