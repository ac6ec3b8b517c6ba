//! The database's errors, and what kind of failure each is (worth retrying, the
//! configuration's, a fault).

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("invalid database location: {0}")]
    BadTarget(String),
    #[error("cannot open database {target}: {reason}")]
    Open { target: String, reason: String },
    #[error(
        "authentication to {target} failed: the server refused the token (set it with \
         NIGHTSHIFT_DB_AUTH_TOKEN or [database] auth_token_file): {reason}"
    )]
    Auth { target: String, reason: String },
    #[error(
        "authentication to PostgreSQL at {target} failed: the server refused the user or \
         password (set the password with [database] password_file or password_env): {reason}"
    )]
    PostgresAuth { target: String, reason: String },
    #[error(
        "database schema version {database} is newer than this nightshift supports ({binary}); \
         upgrade nightshift or point it at another database"
    )]
    SchemaTooNew { database: i64, binary: i64 },
    #[error(
        "migration {version} ({name}) was applied with different contents (checksum {applied}, \
         this binary has {expected}); refusing to start on a schema it does not know"
    )]
    ChecksumMismatch {
        version: i64,
        name: String,
        applied: String,
        expected: String,
    },
    #[error("database has {0} unapplied migration(s); run `nightshift db migrate`")]
    NotMigrated(usize),
    #[error("stored {what} cannot be read: {reason}")]
    Corrupt { what: String, reason: String },
    #[error("database error: {}", sql_message(.0))]
    Sql(#[from] libsql::Error),
}

impl crate::error::Kind for DbError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            DbError::BadTarget(_)
            | DbError::Auth { .. }
            | DbError::PostgresAuth { .. }
            | DbError::SchemaTooNew { .. }
            | DbError::ChecksumMismatch { .. }
            | DbError::NotMigrated(_) => ErrorKind::Config,
            DbError::Open { .. } => ErrorKind::Unavailable,
            DbError::Corrupt { .. } => ErrorKind::Internal,
            DbError::Sql(err) => sql_kind(err),
        }
    }
}

/// A statement's failure in words: PostgreSQL's message as the server gave it (its engine
/// carries it in libSQL's error type), else libSQL's.
fn sql_message(err: &libsql::Error) -> String {
    match err {
        libsql::Error::SqliteFailure(_, message) | libsql::Error::ConnectionFailed(message)
            if message.starts_with("PostgreSQL") =>
        {
            message.clone()
        }
        other => other.to_string(),
    }
}

/// A statement's failure: the database busy or out of reach (worth retrying) or a fault.
fn sql_kind(err: &libsql::Error) -> crate::error::ErrorKind {
    use crate::error::ErrorKind;
    let text = err.to_string();
    let transient = [
        "database is locked",
        "SQLITE_BUSY",
        "SQLITE_INTERRUPT",
        "STREAM_EXPIRED",
        "connection",
        "Connection",
        "error sending request",
        "Hrana",
        "timed out",
    ];
    // PostgreSQL's lock and serialization conflicts are SQLite's busy (db::postgres).
    if matches!(
        err,
        libsql::Error::ConnectionFailed(_) | libsql::Error::SqliteFailure(5, _)
    ) || transient.iter().any(|needle| text.contains(needle))
    {
        ErrorKind::Unavailable
    } else {
        ErrorKind::Internal
    }
}
