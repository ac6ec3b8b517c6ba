//! `[artifacts]`: files an agent produced, stored with a session (see `crate::artifact`).

use serde::{Deserialize, Serialize};

use super::ConfigError;

const MIB: usize = 1024 * 1024;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ArtifactsConfig {
    /// Content up to this many bytes is kept in the database; larger content in the
    /// content-addressed folder `dir` (0: every content in the folder).
    pub inline_max_bytes: usize,
    /// The folder for content above `inline_max_bytes`. Unset: `artifacts/` beside a local
    /// database file; with a libSQL server (or a replica of one) and no `dir`, every
    /// content is kept in the database.
    pub dir: Option<String>,
    /// Largest artifact accepted, in bytes.
    pub max_artifact_bytes: usize,
    /// Sum of the sizes of one user's artifacts (shared content counted per artifact).
    pub max_bytes_per_user: u64,
    /// A folder file no row references is removed by the expiry pass only once it is this
    /// old, so a put between writing its file and its row is never raced.
    pub gc_grace_secs: i64,
}

impl Default for ArtifactsConfig {
    fn default() -> Self {
        Self {
            inline_max_bytes: 65_536,
            dir: None,
            max_artifact_bytes: 16 * MIB,
            max_bytes_per_user: 1024 * 1024 * 1024,
            gc_grace_secs: 3600,
        }
    }
}

pub(super) fn validate(config: &ArtifactsConfig) -> Result<(), ConfigError> {
    let invalid = |key: &str, reason: String| ConfigError::Invalid {
        key: key.to_string(),
        reason,
    };
    let range = |key: &str, value: u64, min: u64, max: u64| {
        if (min..=max).contains(&value) {
            Ok(())
        } else {
            Err(invalid(key, format!("must be {min}..={max}, got {value}")))
        }
    };
    range(
        "artifacts.inline_max_bytes",
        config.inline_max_bytes as u64,
        0,
        16 * MIB as u64,
    )?;
    range(
        "artifacts.max_artifact_bytes",
        config.max_artifact_bytes as u64,
        1,
        1024 * MIB as u64,
    )?;
    range(
        "artifacts.max_bytes_per_user",
        config.max_bytes_per_user,
        1,
        1 << 40,
    )?;
    if config.max_bytes_per_user < config.max_artifact_bytes as u64 {
        return Err(invalid(
            "artifacts.max_bytes_per_user",
            format!(
                "must be at least artifacts.max_artifact_bytes ({}), got {}",
                config.max_artifact_bytes, config.max_bytes_per_user
            ),
        ));
    }
    if !(60..=7 * 86_400).contains(&config.gc_grace_secs) {
        return Err(invalid(
            "artifacts.gc_grace_secs",
            format!("must be 60..=604800, got {}", config.gc_grace_secs),
        ));
    }
    if let Some(dir) = &config.dir {
        crate::input::check_text("artifacts.dir", dir, 4096, crate::input::Lines::One)
            .map_err(|e| invalid("artifacts.dir", e.reason))?;
    }
    Ok(())
}
