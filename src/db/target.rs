//! Where the database is, as `--db`, `NIGHTSHIFT_DB` or `[database] path` say: a file, a
//! libSQL server (or its embedded replica) or PostgreSQL, and a PostgreSQL URL's settings.

use std::path::PathBuf;
use std::time::Duration;

use super::error::DbError;
use super::postgres;

/// Where the database is: a local file, a libSQL server (sqld, Turso) reached over HTTP,
/// or such a server read through a local embedded replica. The same SQL runs on all three.
#[derive(Clone, PartialEq, Eq)]
pub enum DbTarget {
    Local(PathBuf),
    Remote {
        url: String,
        auth_token: String,
    },
    /// Reads from the local file at `path`, kept in step with the server every
    /// `sync_interval` (and after each of this process's writes); writes go to the server.
    Replica {
        url: String,
        auth_token: String,
        path: PathBuf,
        sync_interval: Duration,
    },
    /// A PostgreSQL database, shared by several workers (docs/scaling.md). `url` never
    /// holds the password, which comes from the config's password file or variable.
    Postgres {
        url: String,
        password: Option<String>,
    },
}

impl std::fmt::Debug for DbTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        write!(f, "DbTarget({self})")
    }
}

impl DbTarget {
    /// Reads a `--db` / `NIGHTSHIFT_DB` / `[database] path` value.
    pub fn parse(value: &str) -> Result<Self, DbError> {
        let value = value.trim();
        if value.is_empty() {
            return Err(DbError::BadTarget("the database location is empty".into()));
        }
        if let Some((scheme, _)) = value.split_once("://") {
            return match scheme {
                "http" | "https" | "libsql" => Ok(Self::Remote {
                    url: value.to_string(),
                    auth_token: String::new(),
                }),
                "postgres" | "postgresql" => {
                    let (config, _) = postgres_config(value)?;
                    if config.get_password().is_some() {
                        return Err(DbError::BadTarget(
                            "the PostgreSQL URL holds a password: remove it, and name a file \
                             holding it in [database] password_file, or an environment \
                             variable in [database] password_env (a URL can be seen in the \
                             process list and in logs)"
                                .into(),
                        ));
                    }
                    Ok(Self::Postgres {
                        url: value.to_string(),
                        password: None,
                    })
                }
                other => Err(DbError::BadTarget(format!(
                    "`{other}://` is not a database URL nightshift knows: use a file path, \
                     an http://, https:// or libsql:// URL, or a postgresql:// URL"
                ))),
            };
        }
        Ok(Self::Local(PathBuf::from(value)))
    }

    /// The token for a remote server (never given on the command line).
    pub fn with_auth_token(self, token: Option<String>) -> Self {
        match (self, token) {
            (DbTarget::Remote { url, .. }, Some(auth_token)) => {
                DbTarget::Remote { url, auth_token }
            }
            (
                DbTarget::Replica {
                    url,
                    path,
                    sync_interval,
                    ..
                },
                Some(auth_token),
            ) => DbTarget::Replica {
                url,
                auth_token,
                path,
                sync_interval,
            },
            (other, _) => other,
        }
    }

    /// A PostgreSQL database's password (from the config's file or variable).
    pub fn with_password(self, password: Option<String>) -> Self {
        match (self, password) {
            (DbTarget::Postgres { url, .. }, Some(password)) => DbTarget::Postgres {
                url,
                password: Some(password),
            },
            (other, _) => other,
        }
    }

    /// A PostgreSQL database.
    pub fn is_postgres(&self) -> bool {
        matches!(self, DbTarget::Postgres { .. })
    }

    /// Reads a server through an embedded replica at `replica_path`, when one is set.
    pub fn with_replica(
        self,
        replica_path: Option<&str>,
        sync_interval: Duration,
    ) -> Result<Self, DbError> {
        let Some(replica_path) = replica_path else {
            return Ok(self);
        };
        match self {
            DbTarget::Remote { url, auth_token } => Ok(DbTarget::Replica {
                url,
                auth_token,
                path: PathBuf::from(replica_path),
                sync_interval,
            }),
            DbTarget::Replica { .. } => Ok(self),
            DbTarget::Postgres { .. } => Err(DbError::BadTarget(
                "database.replica_path is set, but the database is PostgreSQL: a replica \
                 is of a libSQL server; PostgreSQL has its own replication"
                    .into(),
            )),
            DbTarget::Local(path) => Err(DbError::BadTarget(format!(
                "database.replica_path is set, but the database is the file {}: a replica \
                 needs a libSQL server URL (http://, https:// or libsql://)",
                path.display()
            ))),
        }
    }

    /// The server's URL, when the database is on a server.
    pub(super) fn server_url(&self) -> Option<String> {
        let url = match self {
            DbTarget::Local(_) | DbTarget::Postgres { .. } => return None,
            DbTarget::Remote { url, .. } | DbTarget::Replica { url, .. } => url,
        };
        // libsql:// is the same protocol over TLS.
        Some(match url.strip_prefix("libsql://") {
            Some(rest) => format!("https://{rest}"),
            None => url.clone(),
        })
    }
}

impl std::fmt::Display for DbTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbTarget::Local(path) => write!(f, "{}", path.display()),
            DbTarget::Remote { url, .. } => write!(f, "{url}"),
            DbTarget::Replica { url, path, .. } => {
                write!(f, "{url} (replica {})", path.display())
            }
            DbTarget::Postgres { url, .. } => write!(f, "{url}"),
        }
    }
}

/// How long PostgreSQL lets a transaction of nightshift's sit idle before it ends it.
pub(super) const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(120);

/// Whether every host of `config` is this machine (a unix socket, or a loopback address),
/// where an unencrypted connection crosses no network.
pub(super) fn only_this_machine(config: &tokio_postgres::Config) -> bool {
    config.get_hosts().iter().all(|host| match host {
        tokio_postgres::config::Host::Unix(_) => true,
        tokio_postgres::config::Host::Tcp(name) => {
            name == "localhost"
                || name
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    })
}

/// The driver's settings and the TLS options of a `postgresql://` URL, or what is wrong
/// with it.
pub(super) fn postgres_config(
    url: &str,
) -> Result<(tokio_postgres::Config, postgres::tls::TlsOptions), DbError> {
    const FORM: &str = "write it as postgresql://USER@HOST:PORT/DATABASE";
    let bad = |what: String| DbError::BadTarget(format!("the PostgreSQL URL {what}: {FORM}"));
    let (url, mut tls) =
        postgres::tls::split_url(url).map_err(|e| bad(format!("is refused ({e})")))?;
    let mut config = url
        .parse::<tokio_postgres::Config>()
        .map_err(|e| bad(format!("cannot be read ({e})")))?;
    if config.get_hosts().is_empty() {
        return Err(bad("names no host".into()));
    }
    if config.get_user().is_none() {
        return Err(bad("names no user".into()));
    }
    // As libpq: no TLS over a unix socket (the kernel carries it; nothing to encrypt).
    if config
        .get_hosts()
        .iter()
        .all(|host| matches!(host, tokio_postgres::config::Host::Unix(_)))
    {
        tls.required = false;
    }
    // TLS is nightshift's to make (see postgres::tls); the driver asks for it only when
    // it is required.
    config.ssl_mode(if tls.required {
        tokio_postgres::config::SslMode::Require
    } else {
        tokio_postgres::config::SslMode::Disable
    });
    Ok((config, tls))
}
