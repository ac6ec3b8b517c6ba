//! Scoped key-value state (the session state of seed 003's Go framework): a JSON value per
//! key, where the key's prefix decides who shares it.
//!
//! - no prefix: the session's, deleted with it by `memory forget`;
//! - `user:`: shared by all of one user's sessions;
//! - `app:`: shared by every user, written only by the operator (an admin);
//! - `temp:`: one run's, cleared when that run ends whatever its outcome, never visible to
//!   another run (the expiry pass clears what a crashed run left).
//!
//! Every write takes a version from one counter, so a compare-and-set (`expected_version`)
//! can tell two racing runs apart, and a version is never seen twice.

mod key;
mod store;

use serde::{Deserialize, Serialize};

pub use key::{StateKey, MAX_KEY_BYTES};
pub use store::{clear_run, StateStore};

use crate::db::DbError;
use crate::error::{ErrorKind, Kind};
use crate::input::InputError;
use crate::memory::MemoryError;

text_enum!(
    /// Who shares a key: decided by its prefix.
    Scope {
        Session => "session",
        User => "user",
        App => "app",
        Temp => "temp",
    }
);

/// Where a caller reads and writes state: whose, from which session, inside which run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateAccess {
    /// The user whose session and `user:` keys are meant; `None` for the operator acting
    /// for no user (who then reaches `app:` keys only).
    pub user_id: Option<String>,
    /// Whether the caller may write `app:` keys: the operator or an admin token.
    pub admin: bool,
    /// The session whose unprefixed keys are meant.
    pub session_id: Option<String>,
    /// The run whose `temp:` keys are meant: set only inside a run (the runtime's tools).
    pub run_id: Option<String>,
}

impl StateAccess {
    /// A user's access to their state (`user:`, and a session's when one is given), with
    /// read-only access to `app:` keys.
    pub fn user(user_id: impl Into<String>, session_id: Option<String>) -> Self {
        Self {
            user_id: Some(user_id.into()),
            admin: false,
            session_id,
            run_id: None,
        }
    }

    /// The operator's: `app:` keys to read and write, and one user's state when named.
    pub fn operator(user_id: Option<String>, session_id: Option<String>) -> Self {
        Self {
            user_id,
            admin: true,
            session_id,
            run_id: None,
        }
    }

    /// A run's: its user's state, its session's, and its own `temp:` keys.
    pub fn run(user_id: &str, session_id: &str, run_id: &str) -> Self {
        Self {
            user_id: Some(user_id.to_string()),
            admin: false,
            session_id: Some(session_id.to_string()),
            run_id: Some(run_id.to_string()),
        }
    }
}

/// One key's value, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct StateEntry {
    /// The key as written, prefix included.
    pub key: String,
    pub scope: Scope,
    /// Any JSON value.
    #[schema(value_type = Value)]
    pub value: serde_json::Value,
    /// Changes on every write; give it back as `expected_version` to write only if no one
    /// else wrote since.
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct StateDeleted {
    pub key: String,
    pub deleted: bool,
}

/// Keys visible to the caller under a prefix.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct StateList {
    pub entries: Vec<StateEntry>,
}

/// A write: the value, and the version the writer last saw (`0`: the key must not exist).
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StateWrite {
    #[schema(value_type = Value)]
    pub value: serde_json::Value,
    /// Write only if the key is at this version now (0: only if it does not exist).
    pub expected_version: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("no state key `{0}` here")]
    NotFound(String),
    #[error("{0}")]
    Scope(String),
    /// Only an admin may do this.
    #[error("{0}")]
    AdminOnly(String),
    #[error("state key `{key}` is {found}, not at the expected version {expected}; read it again and retry")]
    VersionMismatch {
        key: String,
        expected: i64,
        found: String,
    },
    #[error(
        "{scope} state already holds {limit} keys (memory.max_state_keys); delete one to set \
         another"
    )]
    TooManyKeys { scope: Scope, limit: usize },
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl Kind for StateError {
    fn kind(&self) -> ErrorKind {
        match self {
            StateError::Input(_) | StateError::Scope(_) => ErrorKind::BadInput,
            StateError::AdminOnly(_) => ErrorKind::Forbidden,
            StateError::NotFound(_) => ErrorKind::NotFound,
            StateError::VersionMismatch { .. } | StateError::TooManyKeys { .. } => {
                ErrorKind::Conflict
            }
            StateError::Memory(err) => err.kind(),
            StateError::Db(err) => err.kind(),
        }
    }
}

impl From<libsql::Error> for StateError {
    fn from(err: libsql::Error) -> Self {
        StateError::Db(DbError::Sql(err))
    }
}

/// A value given as JSON text (the CLI's argument, a file), or bad input saying where the
/// JSON stops making sense.
pub fn parse_value(text: &str) -> Result<serde_json::Value, StateError> {
    serde_json::from_str(text).map_err(|e| {
        StateError::Input(InputError::new(
            "state value",
            format!("is not JSON: {e} (a text value is quoted: '\"like this\"')"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text is a JSON value or refused as the state value; never a panic.
        #[test]
        fn any_text_is_a_value_or_refused(text in any::<String>()) {
            match parse_value(&text) {
                Ok(value) => prop_assert_eq!(serde_json::from_str::<serde_json::Value>(&text).ok(), Some(value)),
                Err(StateError::Input(err)) => prop_assert_eq!(err.field, "state value"),
                Err(other) => prop_assert!(false, "{other}"),
            }
        }

        /// Any JSON-ish text (nesting, escapes, numbers at the edges) either parses or is
        /// refused.
        #[test]
        fn jsonish_text_is_a_value_or_refused(text in r#"[\[\]{}"\\:,0-9eE+\-.a-z\u{0}-\u{1f}\u{fffd}]{0,64}"#) {
            let _ = parse_value(&text);
        }
    }
}
