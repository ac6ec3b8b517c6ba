//! Put, get, list and delete, each checked against who acts.

use std::path::PathBuf;
use std::sync::Arc;

use super::folder;
use super::types::{Artifact, ArtifactDeleted, NewArtifact};
use super::validate::{check_mime_type, check_name};
use super::{ArtifactError, Result};
use crate::access::Actor;
use crate::config::ArtifactsConfig;
use crate::db::clock::Clock;
use crate::db::{fetch_all, fetch_optional, query_first_row, query_scalar, Db, DbTarget, FromRow};
use crate::input;
use crate::memory::oversize::PlacedText as Placed;
use crate::memory::{SessionKey, SessionKind};

/// The artifact store. Cheap to clone; clones share the folder lock.
#[derive(Clone)]
pub struct ArtifactStore {
    pub(super) db: Db,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) config: ArtifactsConfig,
    /// The content-addressed folder; `None` keeps every content in the database.
    pub(super) folder: Option<PathBuf>,
    /// Orders this process's folder writes and removals with the rows that reference
    /// them (a put and a delete of the same content never interleave here).
    pub(super) folder_lock: Arc<tokio::sync::Mutex<()>>,
}

/// Where content above `inline_max_bytes` goes: `[artifacts] dir`, else `artifacts/`
/// beside a local database file. A server (a libSQL server, a replica of one, PostgreSQL)
/// without `dir` has no folder every worker shares, so its content stays in the database.
pub fn folder_for(target: &DbTarget, config: &ArtifactsConfig) -> Option<PathBuf> {
    if let Some(dir) = &config.dir {
        return Some(PathBuf::from(dir));
    }
    match target {
        DbTarget::Local(path) => Some(
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("artifacts"), |p| p.join("artifacts")),
        ),
        DbTarget::Remote { .. } | DbTarget::Replica { .. } | DbTarget::Postgres { .. } => None,
    }
}

/// Runs folder work on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ArtifactError::Folder(e.to_string()))?
        .map_err(ArtifactError::Folder)
}

impl ArtifactStore {
    pub fn new(db: Db, clock: Arc<dyn Clock>, config: ArtifactsConfig) -> Self {
        let folder = folder_for(db.target(), &config);
        Self {
            db,
            clock,
            config,
            folder,
            folder_lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The limits and folder it works with.
    pub fn config(&self) -> &ArtifactsConfig {
        &self.config
    }

    /// The content-addressed folder, when content is kept in one.
    pub fn folder(&self) -> Option<&std::path::Path> {
        self.folder.as_deref()
    }

    /// Checks an artifact before anything is written: name, type, size.
    pub fn check(&self, artifact: &NewArtifact) -> Result<()> {
        check_name(&artifact.name)?;
        check_mime_type(&artifact.mime_type)?;
        let size = artifact.content.len();
        if size > self.config.max_artifact_bytes {
            return Err(ArtifactError::TooLarge {
                size: size as u64,
                limit: self.config.max_artifact_bytes,
            });
        }
        Ok(())
    }

    /// Bytes `user_id`'s artifacts take (shared content counted per artifact).
    async fn used(&self, conn: &impl crate::db::Queryable, user_id: &str) -> Result<u64> {
        let used: Option<i64> = query_scalar(
            conn,
            "SELECT COALESCE(SUM(size), 0) FROM artifacts WHERE user_id = ?1",
            [user_id],
        )
        .await?;
        Ok(used.unwrap_or(0).max(0) as u64)
    }

    fn over_quota(&self, user_id: &str, used: u64, size: u64) -> Result<()> {
        let limit = self.config.max_bytes_per_user;
        if used.saturating_add(size) > limit {
            return Err(ArtifactError::OverQuota {
                user_id: user_id.to_string(),
                used,
                size,
                limit,
            });
        }
        Ok(())
    }

    /// Stores an artifact for `user_id` in `session_id` (created on first use, like an
    /// append's), recording the run that produced it when one did. Over a limit or with
    /// bad input nothing is written.
    pub async fn put(
        &self,
        user_id: &str,
        session_id: &str,
        run_id: Option<&str>,
        artifact: &NewArtifact,
    ) -> Result<Artifact> {
        input::check_user_id(user_id)?;
        input::check_id("session id", session_id)?;
        if let Some(run_id) = run_id {
            input::check_id("run id", run_id)?;
        }
        if SessionKind::of(session_id) == SessionKind::Memory {
            return Err(ArtifactError::ReservedSession(session_id.to_string()));
        }
        let placed = self.placement(user_id, artifact, 0).await?;
        let _guard = match placed.in_folder {
            true => Some(self.folder_lock.lock().await),
            false => None,
        };
        if placed.in_folder {
            self.write_file(&placed.hash, &artifact.content).await?;
        }
        let record = self
            .insert(
                user_id,
                session_id,
                run_id,
                artifact,
                &placed.hash,
                placed.in_folder,
            )
            .await?;
        self.settle(&placed, &artifact.content).await?;
        Ok(record)
    }

    /// Where a new artifact's content goes, checked against the limits first (and again
    /// in the transaction that records it): content already stored keeps its place; new
    /// content goes to the folder above `inline_max_bytes`. Nothing is written.
    pub(crate) async fn placement(
        &self,
        user_id: &str,
        artifact: &NewArtifact,
        pending: u64,
    ) -> Result<Placed> {
        self.check(artifact)?;
        let size = artifact.content.len() as u64;
        let hash = blake3::hash(&artifact.content).to_hex().to_string();
        let conn = self.db.conn().await?;
        // With what the caller placed already and has yet to record.
        let used = self.used(&conn, user_id).await?.saturating_add(pending);
        self.over_quota(user_id, used, size)?;
        let stored: Option<i64> = query_scalar(
            &conn,
            "SELECT in_folder FROM artifact_contents WHERE hash = ?1",
            [hash.as_str()],
        )
        .await?;
        drop(conn);
        let in_folder = match (&self.folder, stored) {
            (Some(_), Some(flag)) => flag == 1,
            (Some(_), None) => size > self.config.inline_max_bytes as u64,
            (None, _) => false,
        };
        Ok(Placed { hash, in_folder })
    }

    /// Writes placed content's folder file, if it has one, before the transaction that
    /// records it (a crash between leaves a file the expiry pass collects).
    pub(crate) async fn write_placed(&self, placed: &Placed, content: &[u8]) -> Result<()> {
        if placed.in_folder {
            let _guard = self.folder_lock.lock().await;
            self.write_file(&placed.hash, content).await?;
        }
        Ok(())
    }

    /// After the transaction that recorded placed content committed: a delete in another
    /// process may have removed its folder file between the write and the commit, and
    /// the content is referenced now, so it is put back.
    pub(crate) async fn settle(&self, placed: &Placed, content: &[u8]) -> Result<()> {
        if placed.in_folder {
            self.write_file(&placed.hash, content).await?;
        }
        Ok(())
    }

    /// Places the bytes of an artifact being imported as a put would: content already
    /// stored keeps its place, new content over `inline_max_bytes` goes to the folder
    /// (written here, before the importing transaction commits). Returns whether the
    /// content lives in the folder, for its `artifact_contents` row.
    pub(crate) async fn place_imported(&self, hash: &str, content: &[u8]) -> Result<bool> {
        let conn = self.db.conn().await?;
        let stored: Option<i64> = query_scalar(
            &conn,
            "SELECT in_folder FROM artifact_contents WHERE hash = ?1",
            [hash],
        )
        .await?;
        drop(conn);
        let in_folder = match (&self.folder, stored) {
            (Some(_), Some(flag)) => flag == 1,
            (Some(_), None) => content.len() as u64 > self.config.inline_max_bytes as u64,
            (None, _) => false,
        };
        if in_folder {
            let _guard = self.folder_lock.lock().await;
            self.write_file(hash, content).await?;
        }
        Ok(in_folder)
    }

    /// After an import committed: the folder files it referenced are there (a delete in
    /// another process may have removed one between its write and the commit).
    pub(crate) async fn keep_imported(&self, hash: &str, content: &[u8]) -> Result<()> {
        let _guard = self.folder_lock.lock().await;
        self.write_file(hash, content).await
    }

    /// Refuses an import that would leave `user_id` over the artifact limits, checked in
    /// the importing transaction after its rows (`imported_bytes` of artifacts) are written.
    pub(crate) async fn check_imported_totals(
        &self,
        tx: &crate::db::WriteTx,
        user_id: &str,
        imported_bytes: u64,
    ) -> Result<()> {
        let used = self.used(tx, user_id).await?;
        self.over_quota(user_id, used.saturating_sub(imported_bytes), imported_bytes)?;
        let count: i64 = query_scalar(
            tx,
            "SELECT count(*) FROM artifacts WHERE user_id = ?1",
            [user_id],
        )
        .await?
        .unwrap_or(0);
        if count > super::MAX_ARTIFACTS_PER_USER {
            return Err(ArtifactError::TooMany {
                user_id: user_id.to_string(),
                limit: super::MAX_ARTIFACTS_PER_USER,
            });
        }
        Ok(())
    }

    async fn write_file(&self, hash: &str, content: &[u8]) -> Result<()> {
        let Some(root) = self.folder.clone() else {
            return Ok(());
        };
        let (hash, content) = (hash.to_string(), content.to_vec());
        blocking(move || folder::ensure(&root, &hash, &content)).await
    }

    /// The rows, in one transaction: the session (created if new), the quota, the
    /// content (once per hash) and the artifact.
    async fn insert(
        &self,
        user_id: &str,
        session_id: &str,
        run_id: Option<&str>,
        artifact: &NewArtifact,
        hash: &str,
        in_folder: bool,
    ) -> Result<Artifact> {
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let key = SessionKey::new(user_id, session_id);
        let record = self
            .insert_in(&tx, &key, run_id, artifact, hash, in_folder)
            .await?;
        tx.commit().await?;
        Ok(record)
    }

    /// The rows inside the caller's transaction: the session (created if new), the
    /// quota, the content (once per hash) and the artifact. Its content, when it goes to
    /// the folder, was written before (see [`ArtifactStore::put`]).
    pub(crate) async fn insert_in(
        &self,
        tx: &crate::db::WriteTx,
        key: &SessionKey,
        run_id: Option<&str>,
        artifact: &NewArtifact,
        hash: &str,
        in_folder: bool,
    ) -> Result<Artifact> {
        let now = self.clock.now_ms();
        let size = artifact.content.len() as i64;
        let (user_id, session_id) = (key.user_id(), key.session_id());
        // The user's session of that id, created on first use like an append's.
        crate::memory::ensure_session(&tx.runner(), key, now).await?;
        let used = self.used(tx, user_id).await?;
        self.over_quota(user_id, used, size as u64)?;
        let count: i64 = query_scalar(
            tx,
            "SELECT count(*) FROM (SELECT 1 FROM artifacts WHERE user_id = ?1 LIMIT ?2) AS held",
            libsql::params![user_id, super::MAX_ARTIFACTS_PER_USER],
        )
        .await?
        .unwrap_or(0);
        if count >= super::MAX_ARTIFACTS_PER_USER {
            return Err(ArtifactError::TooMany {
                user_id: user_id.to_string(),
                limit: super::MAX_ARTIFACTS_PER_USER,
            });
        }
        let data = (!in_folder).then(|| artifact.content.clone());
        tx.execute(
            "INSERT INTO artifact_contents (hash, size, in_folder, data, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (hash) DO NOTHING",
            libsql::params![hash, size, i64::from(in_folder), data, now],
        )
        .await?;
        let record = Artifact {
            artifact_id: crate::ids::new_id("art"),
            user_id: user_id.to_string(),
            session_id: session_id.to_string(),
            run_id: run_id.map(str::to_string),
            name: artifact.name.clone(),
            mime_type: artifact.mime_type.clone(),
            size,
            hash: hash.to_string(),
            created_at: now,
        };
        tx.execute(
            "INSERT INTO artifacts (artifact_id, user_id, session_id, run_id, name, mime_type,
             size, hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            libsql::params![
                record.artifact_id.as_str(),
                user_id,
                key.as_str(),
                run_id,
                record.name.as_str(),
                record.mime_type.as_str(),
                size,
                hash,
                now
            ],
        )
        .await?;
        Ok(record)
    }

    /// An artifact's metadata, if `actor` may see it.
    pub async fn metadata(&self, actor: &Actor, artifact_id: &str) -> Result<Artifact> {
        input::check_id("artifact id", artifact_id)?;
        let conn = self.db.conn().await?;
        let sql = format!(
            "SELECT {} FROM artifacts WHERE artifact_id = ?1 AND (?2 IS NULL OR user_id = ?2)",
            Artifact::COLUMNS
        );
        fetch_optional(&conn, &sql, libsql::params![artifact_id, actor.user_id()])
            .await?
            .ok_or_else(|| ArtifactError::NotFound(artifact_id.to_string()))
    }

    /// An artifact's metadata and bytes, if `actor` may see it. Content whose file is
    /// missing, or whose bytes no longer match their hash, is a clear error.
    pub async fn get(&self, actor: &Actor, artifact_id: &str) -> Result<(Artifact, Vec<u8>)> {
        let artifact = self.metadata(actor, artifact_id).await?;
        let conn = self.db.conn().await?;
        let stored = query_first_row(
            &conn,
            "SELECT in_folder, data FROM artifact_contents WHERE hash = ?1",
            [artifact.hash.as_str()],
            |row| Ok((row.get::<i64>(0)?, row.get::<Option<Vec<u8>>>(1)?)),
        )
        .await?;
        drop(conn);
        let missing = |path: String| ArtifactError::ContentMissing {
            artifact_id: artifact_id.to_string(),
            path,
        };
        let bytes = match stored {
            Some((0, Some(data))) => data,
            Some((1, _)) => {
                let (Some(root), true) = (self.folder.clone(), folder::is_hash(&artifact.hash))
                else {
                    return Err(missing("no artifact folder is configured".into()));
                };
                let hash = artifact.hash.clone();
                let path = folder::path_of(&root, &hash).display().to_string();
                blocking(move || folder::read(&root, &hash))
                    .await?
                    .ok_or_else(|| missing(path))?
            }
            _ => return Err(missing("no stored content".into())),
        };
        if blake3::hash(&bytes).to_hex().as_str() != artifact.hash {
            return Err(ArtifactError::ContentCorrupt {
                artifact_id: artifact_id.to_string(),
                hash: artifact.hash,
            });
        }
        Ok((artifact, bytes))
    }

    /// `user_id`'s artifacts, newest first, optionally of one session. Another user's
    /// list is empty, as for a user with none.
    pub async fn list(
        &self,
        actor: &Actor,
        user_id: &str,
        session_id: Option<&str>,
    ) -> Result<Vec<Artifact>> {
        input::check_user_id(user_id)?;
        if let Some(session_id) = session_id {
            input::check_id("session id", session_id)?;
        }
        if !actor.may_act_for(user_id) {
            return Ok(Vec::new());
        }
        let key = session_id.map(|session_id| SessionKey::new(user_id, session_id));
        let conn = self.db.conn().await?;
        let sql = format!(
            "SELECT {} FROM artifacts WHERE user_id = ?1 AND (?2 IS NULL OR session_id = ?2)
             ORDER BY created_at DESC, artifact_id DESC",
            Artifact::COLUMNS
        );
        Ok(fetch_all(
            &conn,
            &sql,
            libsql::params![user_id, key.as_ref().map(SessionKey::as_str)],
        )
        .await?)
    }

    /// The artifacts a run produced (for its notification), oldest first.
    pub async fn of_run(&self, run_id: &str) -> Result<Vec<Artifact>> {
        let conn = self.db.conn().await?;
        let sql = format!(
            "SELECT {} FROM artifacts WHERE run_id = ?1 ORDER BY created_at, artifact_id",
            Artifact::COLUMNS
        );
        Ok(fetch_all(&conn, &sql, [run_id]).await?)
    }

    /// Deletes an artifact, if `actor` may see it: its row first (its content's with it
    /// when no other artifact shares it), then the content's file.
    pub async fn delete(&self, actor: &Actor, artifact_id: &str) -> Result<ArtifactDeleted> {
        let artifact = self.metadata(actor, artifact_id).await?;
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let deleted = tx
            .execute(
                "DELETE FROM artifacts WHERE artifact_id = ?1",
                [artifact_id],
            )
            .await?;
        if deleted == 0 {
            return Err(ArtifactError::NotFound(artifact_id.to_string()));
        }
        // The trigger removed the content row if this was its last artifact.
        let left: Option<i64> = query_scalar(
            &tx,
            "SELECT 1 FROM artifact_contents WHERE hash = ?1",
            [artifact.hash.as_str()],
        )
        .await?;
        tx.commit().await?;
        drop(conn);
        // Whether the content went too is not told: it would say whether another user
        // holds the same bytes.
        if left.is_none() {
            self.remove_unreferenced_file(&artifact.hash).await?;
        }
        Ok(ArtifactDeleted {
            artifact_id: artifact_id.to_string(),
            deleted: true,
        })
    }

    /// Removes the folder file of `hash` unless a content row references it (again: a
    /// put may have stored the same bytes since). Whether a file was removed.
    pub(super) async fn remove_unreferenced_file(&self, hash: &str) -> Result<bool> {
        let Some(root) = self.folder.clone() else {
            return Ok(false);
        };
        if !folder::is_hash(hash) {
            return Ok(false);
        }
        let _guard = self.folder_lock.lock().await;
        let conn = self.db.conn().await?;
        let referenced: Option<i64> = query_scalar(
            &conn,
            "SELECT 1 FROM artifact_contents WHERE hash = ?1",
            [hash],
        )
        .await?;
        drop(conn);
        if referenced.is_some() {
            return Ok(false);
        }
        let hash = hash.to_string();
        blocking(move || folder::remove(&root, &hash)).await
    }
}
