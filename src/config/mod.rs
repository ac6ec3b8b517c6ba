//! Typed configuration. Every key has a default, unknown keys are rejected, and every value
//! is checked so a bad file fails at start with the key's name rather than at 3 a.m.

mod artifacts;
mod delivery;
mod mcp_servers;
mod memory;
mod runs;
mod sources;
mod traces;
mod validate;

pub use crate::schedule::agent_policy::AgentSchedules;
pub use artifacts::ArtifactsConfig;
pub use delivery::{ChannelConfig, ChannelKind, NotifyConfig, UserConfig, WebhookSigning};
pub use mcp_servers::{valid_server_name, McpServerConfig, SecretSource};
pub use memory::{
    EmbeddingBackend, EmbeddingConfig, MemoryConfig, Oversize, RerankMode, SearchConfig,
};
pub use runs::{ConsolidationConfig, RuntimeConfig, RuntimeKind, SchedulerConfig};
pub use sources::{valid_source_name, SourceConfig, SourceVerify};
pub use traces::TracesConfig;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::spec::ScheduleSpec;

/// Where the database lives when neither `--db`, `NIGHTSHIFT_DB` nor `[database] path` say.
pub const DEFAULT_DB_PATH: &str = "data/nightshift.db";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid config value `{key}`: {reason}")]
    Invalid { key: String, reason: String },
}

impl crate::error::Kind for ConfigError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub database: DatabaseConfig,
    pub memory: MemoryConfig,
    pub search: SearchConfig,
    pub embedding: EmbeddingConfig,
    pub scheduler: SchedulerConfig,
    pub runtime: RuntimeConfig,
    /// Schedules declared here are synced into the database at start (source `config`).
    pub schedules: Vec<ScheduleSpec>,
    /// Named lists of dates that schedules skip (`calendars = ["NAME"]`).
    pub calendars: std::collections::BTreeMap<String, crate::schedule::calendar::CalendarConfig>,
    pub notify: NotifyConfig,
    pub consolidation: ConsolidationConfig,
    /// Notification channels by id: a schedule's `channel_id` selects one.
    pub channels: std::collections::BTreeMap<String, ChannelConfig>,
    /// Per-user settings by user id.
    pub users: std::collections::BTreeMap<String, UserConfig>,
    /// The HTTP API (and MCP endpoint) served by `nightshift run`.
    pub server: ServerConfig,
    /// Files agents produced, stored with a session.
    pub artifacts: ArtifactsConfig,
    /// MCP servers whose tools a run's model may call, by name.
    pub mcp_servers: std::collections::BTreeMap<String, McpServerConfig>,
    /// OpenTelemetry spans over OTLP/HTTP; off by default.
    pub traces: TracesConfig,
    /// Senders outside nightshift whose signed deliveries start runs, by name.
    pub sources: std::collections::BTreeMap<String, SourceConfig>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address the API listens on; `""` turns the server off.
    pub listen: String,
    /// Largest request body, in bytes; a larger one is refused (413) before it is read.
    pub max_body_bytes: usize,
    /// How long one request may take before it is answered 503.
    pub request_timeout_secs: u64,
    /// Requests served at once; more are answered 503 at once rather than queued.
    pub max_concurrent_requests: usize,
    /// Requests a second one token may make, and how many it may make at once after a
    /// quiet spell (a token bucket); more are answered 429 with Retry-After.
    pub rate_per_token: f64,
    pub rate_burst: u32,
    /// A client that has not sent its request headers within this many seconds is dropped
    /// (a connection that sends nothing at all as well).
    pub header_read_timeout_secs: u64,
    /// Connections open at once; more are closed as they arrive, so idle clients cannot
    /// take every file descriptor the process has.
    pub max_connections: usize,
    /// PEM files for HTTPS (both, or neither for plain HTTP).
    pub tls_cert_file: Option<String>,
    pub tls_key_file: Option<String>,
    /// The API's address as users reach it (behind a proxy, say): notifications link to a
    /// run there. Unset: no links.
    pub public_url: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:7431".to_string(),
            max_body_bytes: 4 * 1024 * 1024,
            request_timeout_secs: 30,
            max_concurrent_requests: 256,
            rate_per_token: 50.0,
            rate_burst: 100,
            header_read_timeout_secs: 10,
            max_connections: 4096,
            tls_cert_file: None,
            tls_key_file: None,
            public_url: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    /// Path of the embedded database file (its folder is created on first use), the URL
    /// of a libSQL server, or a `postgresql://` URL. `url` is accepted as another name
    /// for it.
    #[serde(alias = "url")]
    pub path: String,
    /// How long a writer waits for another writer's lock before failing.
    pub busy_timeout_ms: u64,
    /// Idle connections kept open for reuse.
    pub pool_size: usize,
    /// A file holding a libSQL server's auth token (relative paths are looked up in
    /// systemd's `$CREDENTIALS_DIRECTORY` when set). `NIGHTSHIFT_DB_AUTH_TOKEN` wins.
    pub auth_token_file: Option<String>,
    /// With a PostgreSQL URL: a file holding the password (relative paths are looked up in
    /// systemd's `$CREDENTIALS_DIRECTORY` when set). Never in the URL.
    pub password_file: Option<String>,
    /// With a PostgreSQL URL: the name of an environment variable holding the password;
    /// it wins over `password_file`.
    pub password_env: Option<String>,
    /// With a server URL: a local file kept as an embedded replica of the server. Reads
    /// (search above all) are served from it; writes go to the server.
    pub replica_path: Option<String>,
    /// How often the replica pulls the server's changes, in seconds. A process always
    /// reads its own writes at once.
    pub sync_interval_secs: u64,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            path: DEFAULT_DB_PATH.to_string(),
            busy_timeout_ms: 5_000,
            pool_size: 8,
            auth_token_file: None,
            password_file: None,
            password_env: None,
            replica_path: None,
            sync_interval_secs: 1,
        }
    }
}

/// Where a secret file named in the config is: a relative path is looked up in
/// `$CREDENTIALS_DIRECTORY`, where systemd's `LoadCredential=` puts credentials, when set.
pub fn credential_path(path: &str) -> PathBuf {
    match std::env::var("CREDENTIALS_DIRECTORY") {
        Ok(dir) if Path::new(path).is_relative() => Path::new(&dir).join(path),
        _ => PathBuf::from(path),
    }
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml(&text).map_err(|err| match err {
            ConfigError::Parse { message, .. } => ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            },
            other => other,
        })
    }

    /// Reads the file when one is named, else the defaults.
    pub fn load_or_default(path: Option<&Path>) -> Result<Self, ConfigError> {
        match path {
            Some(path) => Self::load(path),
            None => Ok(Self::default()),
        }
    }

    /// Parses and validates TOML text.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|err| ConfigError::Parse {
            path: PathBuf::from("<text>"),
            message: err.to_string(),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every value on its own and against the others; the checks that need other
    /// modules (cadences, files that must exist, secrets) are `app::check`'s.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate::validate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        assert_eq!(Config::from_toml("").unwrap(), Config::default());
    }

    #[test]
    fn unknown_key_is_rejected_by_name() {
        let err = Config::from_toml("[search]\nvector_weigth = 0.5\n").unwrap_err();
        assert!(err.to_string().contains("vector_weigth"), "{err}");
    }

    #[test]
    fn bad_value_names_the_key() {
        let err = Config::from_toml("[search]\nvector_weight = 1.5\n").unwrap_err();
        assert!(err.to_string().contains("search.vector_weight"), "{err}");
        let err = Config::from_toml("[database]\nsync_interval_secs = 0\n").unwrap_err();
        assert!(
            err.to_string().contains("database.sync_interval_secs"),
            "{err}"
        );
    }

    #[test]
    fn url_is_another_name_for_the_database_path() {
        let config = Config::from_toml("[database]\nurl = \"http://127.0.0.1:8080\"\n").unwrap();
        assert_eq!(config.database.path, "http://127.0.0.1:8080");
    }
}
