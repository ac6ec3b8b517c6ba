//! What kind of failure an error is. Every library error answers [`Kind::kind`]; each front
//! door maps the kinds once (the CLI to exit codes, the HTTP API to statuses), so the same
//! failure reads the same through every door.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The caller's input is wrong: a value out of range, text that breaks a rule, an
    /// unknown name. Retrying the same request cannot help.
    BadInput,
    /// The thing asked for does not exist, or is not the caller's (the two are never told
    /// apart).
    NotFound,
    /// The caller is known, and what it asks for is not its to do (a user writing the
    /// operator's app state).
    Forbidden,
    /// The request is valid but the state does not allow it now (resuming a schedule that
    /// is not paused, a compare-and-set that lost).
    Conflict,
    /// The configuration is wrong or names something that is missing (a model file, a
    /// secret, a time zone). Restarting cannot help until the configuration changes.
    Config,
    /// Something nightshift depends on is out of reach for now (the database, a server).
    /// Retrying later may help.
    Unavailable,
    /// A fault in nightshift itself.
    Internal,
}

impl ErrorKind {
    /// A short machine-readable name, the same in every front door.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::BadInput => "bad_input",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Config => "config",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Internal => "internal",
        }
    }
}

/// Implemented by every error the library returns.
pub trait Kind {
    fn kind(&self) -> ErrorKind;
}

/// Any library error with its kind: what a front door holds once it no longer cares which
/// module failed. `?` turns every library error into one.
pub struct Error {
    kind: ErrorKind,
    inner: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl Error {
    /// An error of `kind` saying `message` (for a front door's own failures, such as
    /// reading standard input).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            inner: message.into().into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl<E: Kind + std::error::Error + Send + Sync + 'static> From<E> for Error {
    fn from(err: E) -> Self {
        Self {
            kind: err.kind(),
            inner: Box::new(err),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.inner, f)
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}: {:?}", self.kind, self.inner)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

/// An error's text followed by its causes', each once (a cause whose words the text
/// already holds is not repeated): many errors (reqwest's, libsql's sync, the PostgreSQL
/// driver's "error performing TLS handshake") say little at the top and what went wrong
/// (a timeout, a reset, an unknown certificate issuer) only below.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
