//! The content-addressed folder: `ROOT/<first 2 hex>/<hash>`. Files are written whole or
//! not at all (a temporary file beside the target, fsynced, then renamed), readable by
//! their owner only. Everything here blocks: callers run it on a blocking thread.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Prefix of a file being written; one left by a crash is removed like any other
/// unreferenced file.
const TEMP_PREFIX: &str = ".tmp-";

/// Whether `text` is a content hash as stored (64 lowercase hex digits).
pub(super) fn is_hash(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Where the content with `hash` (checked by [`is_hash`]) lives under `root`.
pub(super) fn path_of(root: &Path, hash: &str) -> PathBuf {
    root.join(&hash[..2]).join(hash)
}

/// Makes sure the file for `hash` holds `bytes`: written anew when missing or not what it
/// should be, else only its modification time is moved on, so the collector's grace
/// period counts from this put and never races it.
pub(super) fn ensure(root: &Path, hash: &str, bytes: &[u8]) -> Result<(), String> {
    let path = path_of(root, hash);
    if let Ok(meta) = std::fs::metadata(&path) {
        let intact = meta.is_file()
            && meta.len() == bytes.len() as u64
            && std::fs::read(&path)
                .is_ok_and(|found| blake3::hash(&found).to_hex().as_str() == hash);
        if intact {
            let touched = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|file| file.set_modified(SystemTime::now()));
            return touched.map_err(|e| format!("cannot touch {}: {e}", path.display()));
        }
    }
    let dir = path.parent().unwrap_or(root);
    crate::db::create_private_dir(dir)?;
    let temp = dir.join(format!("{TEMP_PREFIX}{hash}-{}", uuid::Uuid::now_v7()));
    let written = write_new(&temp, bytes).and_then(|()| std::fs::rename(&temp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(format!("cannot write {}: {e}", path.display()));
    }
    // The rename is durable once the folder is: a crash after the row's commit must not
    // lose the file.
    if let Ok(folder) = std::fs::File::open(dir) {
        let _ = folder.sync_all();
    }
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// The file's bytes; `None` when there is no such file.
pub(super) fn read(root: &Path, hash: &str) -> Result<Option<Vec<u8>>, String> {
    let path = path_of(root, hash);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Removes the file for `hash`; whether there was one.
pub(super) fn remove(root: &Path, hash: &str) -> Result<bool, String> {
    remove_path(&path_of(root, hash))
}

pub(super) fn remove_path(path: &Path) -> Result<bool, String> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
    }
}

/// A file of the folder old enough to be collected.
pub(super) struct OldFile {
    pub path: PathBuf,
    /// The content hash it holds; `None` for a temporary file or a stranger.
    pub hash: Option<String>,
}

/// The folder's files last modified more than `grace` ago (by the file system's clock,
/// the one that stamped them). Only the two-hex-digit subfolders are looked into.
pub(super) fn old_files(root: &Path, grace: Duration) -> Result<Vec<OldFile>, String> {
    let cutoff = SystemTime::now()
        .checked_sub(grace)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut out = Vec::new();
    let top = match std::fs::read_dir(root) {
        Ok(top) => top,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(format!("cannot list {}: {e}", root.display())),
    };
    for sub in top.flatten() {
        let prefix = sub.file_name().to_string_lossy().into_owned();
        let is_prefix = prefix.len() == 2 && is_hash(&format!("{prefix:0<64}"));
        if !is_prefix || !sub.path().is_dir() {
            continue;
        }
        let files = std::fs::read_dir(sub.path())
            .map_err(|e| format!("cannot list {}: {e}", sub.path().display()))?;
        for file in files.flatten() {
            let Ok(meta) = file.metadata() else { continue };
            let old = meta.modified().map(|m| m < cutoff).unwrap_or(false);
            if !meta.is_file() || !old {
                continue;
            }
            let name = file.file_name().to_string_lossy().into_owned();
            let hash = (is_hash(&name) && name.starts_with(&prefix)).then_some(name.clone());
            if hash.is_some() || name.starts_with(TEMP_PREFIX) {
                out.push(OldFile {
                    path: file.path(),
                    hash,
                });
            }
        }
    }
    Ok(out)
}
