//! The database: how it is opened, how connections are handed out, how its schema is
//! migrated. Every other module talks SQL through a [`Conn`] from [`Db::conn`].

pub mod clock;
pub mod migrate;
mod pool;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use pool::Conn;

/// Where the database is. Only a local file today; the enum is the seam for a remote
/// libSQL server, so callers never assume a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbTarget {
    Local(PathBuf),
}

impl DbTarget {
    /// Reads a `--db` / `NIGHTSHIFT_DB` / `[database] path` value.
    pub fn parse(value: &str) -> Result<Self, DbError> {
        let value = value.trim();
        if value.is_empty() {
            return Err(DbError::BadTarget("the database location is empty".into()));
        }
        if let Some((scheme, _)) = value.split_once("://") {
            return Err(DbError::BadTarget(format!(
                "`{value}`: `{scheme}://` URLs are not supported yet; give a file path"
            )));
        }
        Ok(Self::Local(PathBuf::from(value)))
    }
}

impl std::fmt::Display for DbTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbTarget::Local(path) => write!(f, "{}", path.display()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("invalid database location: {0}")]
    BadTarget(String),
    #[error("cannot open database {target}: {reason}")]
    Open { target: String, reason: String },
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
    #[error("database error: {0}")]
    Sql(#[from] libsql::Error),
}

/// Options that shape every connection.
#[derive(Debug, Clone)]
pub struct DbOptions {
    pub busy_timeout: Duration,
    pub pool_size: usize,
}

impl Default for DbOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            pool_size: 8,
        }
    }
}

/// A handle on the database; cheap to clone and share between tasks. Each task takes its
/// own connection, because one libSQL connection must never carry two transactions.
#[derive(Clone)]
pub struct Db {
    inner: Arc<DbInner>,
}

struct DbInner {
    target: DbTarget,
    database: libsql::Database,
    options: DbOptions,
    pool: pool::Pool,
}

impl Db {
    /// Opens (creating if needed) the database. Does not migrate: see [`migrate`].
    pub async fn open(target: &DbTarget, options: DbOptions) -> Result<Self, DbError> {
        let open_err = |reason: String| DbError::Open {
            target: target.to_string(),
            reason,
        };
        let database = match target {
            DbTarget::Local(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        open_err(format!("cannot create folder {}: {e}", parent.display()))
                    })?;
                }
                libsql::Builder::new_local(path)
                    .build()
                    .await
                    .map_err(|e| open_err(e.to_string()))?
            }
        };
        let db = Db {
            inner: Arc::new(DbInner {
                target: target.clone(),
                database,
                pool: pool::Pool::new(options.pool_size),
                options,
            }),
        };
        // WAL lets searches read while a writer commits; it is a property of the file,
        // so it is set once here rather than on every connection.
        let conn = db.conn().await.map_err(|e| open_err(e.to_string()))?;
        if matches!(target, DbTarget::Local(_)) {
            let mut rows = conn.query("PRAGMA journal_mode = WAL", ()).await?;
            while rows.next().await?.is_some() {}
        }
        Ok(db)
    }

    pub fn target(&self) -> &DbTarget {
        &self.inner.target
    }

    /// A connection for this task alone, returned to the pool when dropped.
    pub async fn conn(&self) -> Result<Conn, DbError> {
        if let Some(conn) = self.inner.pool.take() {
            return Ok(Conn::new(conn, self.inner.pool.clone()));
        }
        let conn = self.inner.database.connect()?;
        conn.busy_timeout(self.inner.options.busy_timeout)?;
        // Per-connection settings: foreign keys drive every cascade in the schema.
        let mut rows = conn.query("PRAGMA foreign_keys = ON", ()).await?;
        while rows.next().await?.is_some() {}
        let mut rows = conn.query("PRAGMA synchronous = NORMAL", ()).await?;
        while rows.next().await?.is_some() {}
        Ok(Conn::new(conn, self.inner.pool.clone()))
    }
}

/// A column value [`query_scalar`] can return. (libsql keeps its own conversion trait
/// private.)
pub trait Scalar: Sized {
    fn from_value(value: libsql::Value) -> Option<Self>;
}

impl Scalar for i64 {
    fn from_value(value: libsql::Value) -> Option<Self> {
        match value {
            libsql::Value::Integer(n) => Some(n),
            _ => None,
        }
    }
}

impl Scalar for String {
    fn from_value(value: libsql::Value) -> Option<Self> {
        match value {
            libsql::Value::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// The first column of the first row; `None` when there is no row or the value is NULL.
pub async fn query_scalar<T: Scalar>(
    conn: &libsql::Connection,
    sql: &str,
    params: impl libsql::params::IntoParams,
) -> Result<Option<T>, libsql::Error> {
    let mut rows = conn.query(sql, params).await?;
    match rows.next().await? {
        Some(row) => Ok(T::from_value(row.get_value(0)?)),
        None => Ok(None),
    }
}
