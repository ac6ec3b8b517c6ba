//! Deliveries from outside (`[sources.NAME]`): a sender's signed request checked by its
//! scheme ([`verify`]), read into a run's input or a handshake ([`payload`]). The operation
//! that triggers the source's schedules is `App::receive_delivery`.

pub mod payload;
pub mod verify;

use crate::config::SourceConfig;
use crate::error::{ErrorKind, Kind};

pub use payload::Asked;
pub use verify::{Verified, Verifier};

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// No source of that name (told apart from nothing else).
    #[error("no such source")]
    NotFound,
    /// The delivery is not the sender's: no signature, a wrong one, a stale timestamp.
    #[error("the delivery is refused: {0}")]
    Refused(String),
    #[error("{0}")]
    BadInput(String),
    #[error("{0}")]
    TooLarge(String),
    /// The source's secret cannot be read (the reason names where, never the value).
    #[error("source `{source_name}` cannot check deliveries: {reason}")]
    Secret { source_name: String, reason: String },
    /// A schedule the source names is not in the database yet.
    #[error("schedule `{0}` is not in the database yet (a worker adds config schedules when it starts); try again")]
    NotSynced(String),
    #[error(transparent)]
    Schedule(#[from] crate::schedule::ScheduleError),
}

impl SourceError {
    pub fn bad_input(reason: impl Into<String>) -> Self {
        SourceError::BadInput(reason.into())
    }
}

impl Kind for SourceError {
    fn kind(&self) -> ErrorKind {
        match self {
            SourceError::NotFound => ErrorKind::NotFound,
            // The doors answer a refusal as unauthenticated (401); as a kind it is the
            // caller's input that is wrong.
            SourceError::Refused(_) | SourceError::BadInput(_) | SourceError::TooLarge(_) => {
                ErrorKind::BadInput
            }
            SourceError::Secret { .. } => ErrorKind::Config,
            SourceError::NotSynced(_) => ErrorKind::Unavailable,
            SourceError::Schedule(err) => err.kind(),
        }
    }
}

/// The verifier of source `name`, its secret read now (so a rotated file needs no
/// restart).
pub fn verifier(name: &str, source: &SourceConfig) -> Result<Verifier, SourceError> {
    let secret = read_secret(source).map_err(|reason| SourceError::Secret {
        source_name: name.to_string(),
        reason,
    })?;
    Verifier::new(source.verify, &secret, source.tolerance_secs).map_err(|reason| {
        SourceError::Secret {
            source_name: name.to_string(),
            reason,
        }
    })
}

fn read_secret(source: &SourceConfig) -> Result<String, String> {
    if let Some(var) = &source.secret_env {
        return std::env::var(var)
            .map(|value| value.trim().to_string())
            .map_err(|_| format!("environment variable `{var}` is not set"));
    }
    if let Some(path) = &source.secret_file {
        let resolved = crate::config::credential_path(path);
        return std::fs::read_to_string(&resolved)
            .map(|value| value.trim().to_string())
            .map_err(|e| format!("cannot read {}: {e}", resolved.display()));
    }
    Err("no secret_env or secret_file".to_string())
}
