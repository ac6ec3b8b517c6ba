//! Typed configuration. Every key has a default, unknown keys are rejected, and every value
//! is checked so a bad file fails at start with the key's name rather than at 3 a.m.

mod artifacts;
mod mcp_servers;
mod sources;
mod traces;
mod validate;

pub use crate::schedule::agent_policy::AgentSchedules;
pub use artifacts::ArtifactsConfig;
pub use mcp_servers::{valid_server_name, McpServerConfig, SecretSource};
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
pub struct NotifyConfig {
    /// With `notify = "conditional"`, a run notifies only when its output starts with this
    /// marker, which is stripped before sending.
    pub marker: String,
    /// A notice is sent when a schedule has failed this many times in a row.
    pub failure_notice_after: i64,
    /// Delivery attempts before a message becomes a dead letter.
    pub max_attempts: i64,
    /// First retry delay, doubled per attempt (with jitter) up to `backoff_max_ms`.
    pub backoff_base_ms: i64,
    pub backoff_max_ms: i64,
    /// How long an undelivered message stays worth sending, by priority.
    pub ttl_high_secs: i64,
    pub ttl_normal_secs: i64,
    pub ttl_low_secs: i64,
    /// Messages sent at once by one worker.
    pub max_in_flight: usize,
    /// How long one delivery may take, seconds.
    pub timeout_secs: u64,
    /// Characters of a run's output one message carries at most (the run keeps more).
    pub max_message_chars: usize,
    /// Messages waiting to be delivered on one channel; a message beyond them is kept as
    /// a dead letter saying so instead of joining the queue.
    pub max_pending_per_channel: i64,
    /// Where every user's memory changes go as events (`ID` or `ID:CONTEXT`); off when
    /// unset. A user's own `memory_changes_channel` takes precedence.
    pub memory_changes_channel: Option<String>,
    /// `HH:MM`: when the day's digest of `notify = "digest"` schedules goes out, on each
    /// user's own clock (their `timezone`); a user's own `digest_at` takes precedence.
    pub digest_at: String,
}

impl NotifyConfig {
    /// How long a message of `priority` (`high`, `normal`, `low`) is tried before it is
    /// given up on, in milliseconds.
    pub fn ttl_ms(&self, priority: &str) -> i64 {
        let secs = match priority {
            "high" => self.ttl_high_secs,
            "low" => self.ttl_low_secs,
            _ => self.ttl_normal_secs,
        };
        secs.saturating_mul(1000)
    }
}

impl Default for NotifyConfig {
    fn default() -> Self {
        Self {
            marker: "[NOTIFY]".to_string(),
            failure_notice_after: 3,
            max_attempts: 12,
            backoff_base_ms: 2_000,
            backoff_max_ms: 3_600_000,
            ttl_high_secs: 7 * 86_400,
            ttl_normal_secs: 86_400,
            ttl_low_secs: 6 * 3600,
            max_in_flight: 8,
            timeout_secs: 15,
            max_message_chars: 3500,
            max_pending_per_channel: 10_000,
            memory_changes_channel: None,
            digest_at: "08:00".to_string(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsolidationConfig {
    /// Run the overnight passes from the worker.
    pub enabled: bool,
    /// When, as a 5-field cron expression in `timezone`.
    pub cron: String,
    pub timezone: String,
    /// A session quiet this long gets its rolling summary brought up to date.
    pub quiet_minutes: i64,
    /// Rolling summaries: the token budget of a session's history, the turns and share
    /// of it that trigger a summary, the share left after, and the longest summary.
    pub summary_budget_tokens: usize,
    pub summary_min_turns: usize,
    pub summary_trigger_ratio: f64,
    pub summary_target_ratio: f64,
    pub max_summary_chars: usize,
    /// Extracted facts expire after this many days (0: never).
    pub fact_retention_days: i64,
    /// Sessions idle this many days are deleted (0: conversations are kept).
    pub conversation_retention_days: i64,
    /// Delivered notifications are kept this many days.
    pub outbox_retention_days: i64,
    /// Where `VACUUM INTO` snapshots go (none when unset), and how many are kept.
    pub snapshot_dir: Option<String>,
    pub snapshot_keep: usize,
    /// Macros (tool chains learned from scheduled runs): the weighted runs a chain needs
    /// and the share of its trigger's runs it must follow to be promoted.
    pub macros_min_support: u32,
    pub macros_min_confidence: f64,
    /// Each run of a user in which a trigger occurs multiplies its counts (and its
    /// chains') by this first: 1 never forgets.
    pub macros_decay: f64,
    /// A chain whose weighted support falls below this is forgotten.
    pub macros_floor: f64,
    /// Told to the model that extracts facts (what to look for, what to leave out).
    pub extraction_instructions: Option<String>,
    /// The categories of facts the facts pass stores; others are left out and counted.
    pub fact_categories: Vec<String>,
}

impl Default for ConsolidationConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            cron: "0 3 * * *".to_string(),
            timezone: "UTC".to_string(),
            quiet_minutes: 30,
            summary_budget_tokens: 2000,
            summary_min_turns: 4,
            summary_trigger_ratio: 0.8,
            summary_target_ratio: 0.5,
            max_summary_chars: 4000,
            fact_retention_days: 0,
            conversation_retention_days: 0,
            outbox_retention_days: 7,
            snapshot_dir: None,
            snapshot_keep: 7,
            macros_min_support: 3,
            macros_min_confidence: 0.6,
            macros_decay: 0.95,
            macros_floor: 0.5,
            extraction_instructions: None,
            fact_categories: crate::fact_category::CATEGORIES.map(String::from).to_vec(),
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    Webhook,
    Slack,
    Telegram,
    Ntfy,
    Email,
    Discord,
    Teams,
    Pushover,
    Apprise,
    Matrix,
    Log,
}

/// How a webhook channel signs its deliveries (see `notify::channels::signing`).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WebhookSigning {
    /// `X-Nightshift-Signature: sha256=HEX` of the body.
    #[default]
    Nightshift,
    /// The Standard Webhooks scheme: `webhook-id`, `webhook-timestamp`,
    /// `webhook-signature`, under a `whsec_…` secret.
    Standard,
}

/// A `[channels.<id>]` entry. Secrets are never written here: only the names of the
/// environment variables or files that hold them.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    pub kind: ChannelKind,
    /// webhook: the endpoint; slack: the incoming-webhook URL; ntfy: the server
    /// (default https://ntfy.sh); telegram: the Bot API base (default https://api.telegram.org);
    /// email: the SMTP server (`smtp://USER@HOST` with STARTTLS, `smtps://USER@HOST` with
    /// TLS, `smtp://HOST:25?tls=none` for a local relay); discord, teams: the webhook URL
    /// (or leave it out and keep the URL, which holds a token, as the secret); pushover:
    /// the API (default https://api.pushover.net/1/messages.json); apprise: an Apprise API
    /// server's notify URL (`http://apprise:8000/notify/KEY`); matrix: the homeserver
    /// (`https://matrix.example.org`).
    pub url: Option<String>,
    /// webhook: HMAC-SHA256 signing secret; telegram: bot token; ntfy: access token;
    /// email: the SMTP password; discord, teams: the webhook URL when `url` is unset;
    /// pushover: the application's API token; apprise: a bearer token for the server;
    /// matrix: the bot's access token.
    pub secret_env: Option<String>,
    pub secret_file: Option<String>,
    /// `HH:MM-HH:MM` in `timezone`: what this channel carries that can wait is held until
    /// it ends (a shared room nobody reads at night), as a user's quiet hours are.
    pub quiet_hours: Option<String>,
    /// The IANA time zone of `quiet_hours` (UTC when unset).
    pub timezone: Option<String>,
    /// webhook: how deliveries are signed with the secret (`nightshift`, the default, or
    /// `standard`: Standard Webhooks, the secret a `whsec_…` one).
    pub signing: Option<WebhookSigning>,
    /// email: the sender, `Nightshift <nightshift@example.org>`; each recipient is a
    /// schedule's channel context (`mail:alice@example.org`).
    pub from: Option<String>,
    /// pushover: the priority a failure is sent at, -2..=2 (default 1; 2 is an emergency,
    /// repeated every minute for an hour until the user acknowledges it). Other results
    /// go at 0.
    pub priority: Option<i64>,
}

impl ChannelConfig {
    /// A channel of `kind` with nothing else set (every kind's defaults).
    pub fn new(kind: ChannelKind) -> Self {
        Self {
            kind,
            url: None,
            secret_env: None,
            secret_file: None,
            quiet_hours: None,
            timezone: None,
            signing: None,
            from: None,
            priority: None,
        }
    }

    /// The channel's quiet hours, when set and well formed (the config check refuses the
    /// others, naming them).
    pub fn quiet_hours(&self) -> Option<crate::quiet_hours::QuietHours> {
        crate::quiet_hours::QuietHours::from_settings(
            self.quiet_hours.as_deref()?,
            self.timezone.as_deref(),
        )
        .ok()
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct UserConfig {
    /// Where this user's notifications go when a schedule names no channel:
    /// `ID` or `ID:CONTEXT`.
    pub default_channel: Option<String>,
    /// Channel ids this user's own schedules (added with their token) may notify through,
    /// besides the default channel's and the log.
    pub channels: Vec<String>,
    /// The `[mcp_servers]` this user's runs may use the tools of (`*`: all of them).
    pub mcp_servers: Vec<String>,
    /// Told to the model that extracts this user's facts, after the global instructions.
    pub extraction_instructions: Option<String>,
    /// Where this user's memory changes go as events (`ID` or `ID:CONTEXT`), instead of
    /// `[notify] memory_changes_channel`.
    pub memory_changes_channel: Option<String>,
    /// This user's IANA time zone, for `quiet_hours`, `digest_at` and the days their
    /// search queries name (UTC when unset).
    pub timezone: Option<String>,
    /// `HH:MM-HH:MM` in `timezone`: notifications that can wait are held until it ends;
    /// urgent ones (failures, approvals) go at once.
    pub quiet_hours: Option<String>,
    /// `HH:MM` in `timezone`: when this user's daily digest goes out, instead of
    /// `[notify] digest_at`.
    pub digest_at: Option<String>,
}

impl UserConfig {
    /// When this user's digest goes out: their `digest_at`, else `default` (the
    /// `[notify]` one), on their clock. Ill-formed settings read as 08:00 UTC (the config
    /// check refuses them, naming them).
    pub fn digest_time(&self, default: &str) -> crate::time_of_day::DailyTime {
        use crate::time_of_day::{DailyTime, TimeOfDay};
        let zone = match self.timezone.as_deref().map(str::parse) {
            Some(Ok(zone)) => zone,
            Some(Err(_)) => return DailyTime::MORNING_UTC,
            None => chrono_tz::Tz::UTC,
        };
        match TimeOfDay::parse(self.digest_at.as_deref().unwrap_or(default)) {
            Ok(at) => DailyTime { at, zone },
            Err(_) => DailyTime::MORNING_UTC,
        }
    }

    /// The user's quiet hours, when set and well formed (the config check refuses the
    /// others, naming them).
    pub fn quiet_hours(&self) -> Option<crate::quiet_hours::QuietHours> {
        crate::quiet_hours::QuietHours::from_settings(
            self.quiet_hours.as_deref()?,
            self.timezone.as_deref(),
        )
        .ok()
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

text_enum!(
    /// What happens to a conversation event over `memory.max_text_bytes`: `refuse` it
    /// (the append fails, naming it), `truncate` it to its head and tail around a marker
    /// saying how much was cut, or do that and keep the whole text as an `artifact` of
    /// the user's in the event's session, named in the marker (see `memory::oversize`).
    Oversize { Refuse => "refuse", Truncate => "truncate", Artifact => "artifact" }
);

// Written out: `text_enum!` makes the enum and takes no further derive.
#[allow(clippy::derivable_impls)]
impl Default for Oversize {
    fn default() -> Self {
        Oversize::Refuse
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Largest event or note accepted, in bytes of UTF-8.
    pub max_text_bytes: usize,
    /// An event over `max_text_bytes`: refused, kept as its head and tail, or that and
    /// its whole text as an artifact.
    pub oversize: Oversize,
    /// Largest chunk of the search index, in characters.
    pub chunk_chars: usize,
    /// Characters shared by consecutive chunks of one text.
    pub chunk_overlap_chars: usize,
    /// Events returned by `memory recall` when no `--limit` is given.
    pub recall_limit: usize,
    /// Largest `payload` an event may carry, in bytes of its JSON.
    pub max_payload_bytes: usize,
    /// Largest JSONL input one append reads, in bytes.
    pub max_import_bytes: usize,
    /// Most events one append may carry.
    pub max_batch_events: usize,
    /// Longest line of a JSONL input, in bytes.
    pub max_import_line_bytes: usize,
    /// Notes one user may have (superseded versions of a fact not counted).
    pub max_notes_per_user: i64,
    /// Largest state value, in bytes of its JSON.
    pub max_state_value_bytes: usize,
    /// Most keys one scope (a session, a user, the app, a run) may hold.
    pub max_state_keys: usize,
    /// Days a deleted note's versions are kept (restorable) before the expiry pass purges
    /// them; 0 keeps them until the user is purged.
    pub deleted_note_retention_days: i64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            max_text_bytes: 65_536,
            oversize: Oversize::Refuse,
            chunk_chars: 640,
            chunk_overlap_chars: 96,
            recall_limit: 50,
            max_payload_bytes: 65_536,
            max_import_bytes: 16 * 1024 * 1024,
            max_batch_events: 10_000,
            max_import_line_bytes: 1024 * 1024,
            max_notes_per_user: 10_000,
            max_state_value_bytes: 65_536,
            max_state_keys: 1_000,
            deleted_note_retention_days: 30,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    pub default_top_k: usize,
    pub max_top_k: usize,
    /// Weight of the min-max normalised vector leg in the fused score.
    pub vector_weight: f64,
    /// Weight of the min-max normalised keyword (bm25) leg in the fused score.
    pub keyword_weight: f64,
    /// Weight of a chunk's context (the end of the event before it) against its own text
    /// in the keyword leg's bm25.
    pub context_weight: f64,
    /// Share of an event's fused score lent to the events next to it in its session
    /// (half that two steps away); 0 turns it off.
    pub neighbor_weight: f64,
    /// A hit said by a speaker its query names (an event's `name`) scores `1 +
    /// speaker_weight` times its fused score, and an assistant's turn `1 / (1 +
    /// speaker_weight)` times when the query is in the first person; 0 turns both off.
    pub speaker_weight: f64,
    /// A conversation hit said inside the time its query names ("last week", "in March",
    /// read in the user's zone) scores `1 + time_weight` times its fused score, and the
    /// turns said then are also searched on their own (`memory::window_read`); 0 turns
    /// both off.
    pub time_weight: f64,
    /// Candidates each leg contributes before fusion.
    pub candidates: usize,
    /// Memory for the per-session vector matrices kept between searches.
    pub vector_cache_mib: usize,
    /// Memory for the per-session keyword indexes kept between searches; as much again
    /// bounds the indexes of stop words (sessions searched by stop words alone).
    pub keyword_cache_mib: usize,
    /// The second stage that reorders the fused candidates by reading the query and each
    /// candidate together; `none` answers from the fusion.
    pub rerank: RerankMode,
    /// Fused candidates the second stage reads (the hits asked for, if more).
    pub rerank_candidates: usize,
    /// Weight of the second stage's min-max normalised score against the fused one's.
    pub rerank_weight: f64,
    /// Memory for the candidates' token embeddings the second stage keeps, in MiB.
    pub rerank_cache_mib: usize,
    /// Multi-hop: the first round's best hits that each seed a second round (0 = none).
    pub multi_hop_seeds: usize,
    /// Weight of the later rounds' mean normalised score added to the first round's.
    pub multi_hop_weight: f64,
}

text_enum!(
    /// The second stage of search.
    RerankMode {
        None => "none",
        LateInteraction => "late-interaction",
    }
);

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            default_top_k: 5,
            max_top_k: 20,
            vector_weight: 0.4,
            keyword_weight: 0.6,
            context_weight: 0.3,
            neighbor_weight: 0.2,
            speaker_weight: 2.0,
            time_weight: 1.0,
            candidates: 50,
            vector_cache_mib: 256,
            keyword_cache_mib: 256,
            rerank: RerankMode::None,
            rerank_candidates: 20,
            rerank_weight: 0.5,
            rerank_cache_mib: 64,
            multi_hop_seeds: 0,
            multi_hop_weight: 0.5,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddingConfig {
    /// `hash`: blake3 feature hashing of words and character trigrams, no model needed.
    /// `fastembed`: a local ONNX sentence-embedding model (see `scripts/fetch-model.sh`).
    pub backend: EmbeddingBackend,
    /// Dimensions of the `hash` backend's vectors.
    pub dimensions: usize,
    /// `fastembed`: folder holding model.onnx, tokenizer.json, config.json,
    /// special_tokens_map.json and tokenizer_config.json.
    pub model_dir: PathBuf,
    /// `fastembed`: path of the ONNX Runtime shared library (1.31), loaded at start.
    pub onnxruntime: PathBuf,
    /// `fastembed`: word pieces per text; longer texts are truncated, not rejected.
    pub max_length: usize,
    /// Texts embedded together by the background queue (and per model call).
    pub batch_size: usize,
    /// `fastembed`: threads ONNX Runtime may use; 0 means one per core.
    pub threads: usize,
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        Self {
            backend: EmbeddingBackend::Hash,
            dimensions: 256,
            model_dir: PathBuf::from("models/all-MiniLM-L6-v2-int8"),
            onnxruntime: PathBuf::from("models/onnxruntime/libonnxruntime.so.1.31.1"),
            max_length: 256,
            batch_size: 32,
            threads: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingBackend {
    Hash,
    Fastembed,
}

impl EmbeddingBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            EmbeddingBackend::Hash => "hash",
            EmbeddingBackend::Fastembed => "fastembed",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// No cadence may run more often than this.
    pub min_interval_secs: i64,
    /// Schedules one user may have.
    pub max_per_user: i64,
    /// Runs at once in this worker.
    pub max_concurrent: usize,
    /// How long a claimed run stays this worker's without a heartbeat.
    pub lease_secs: i64,
    /// Runs kept per schedule; older ones are pruned.
    pub history_keep: i64,
    /// Deadline of one attempt when a schedule sets none.
    pub default_timeout_secs: i64,
    /// First retry delay; doubled for each further attempt.
    pub retry_base_secs: i64,
    /// Consecutive failed occurrences after which a schedule is paused.
    pub pause_after_failures: i64,
    /// On SIGTERM, how long running work may take to finish before it is interrupted.
    pub shutdown_grace_secs: i64,
    /// How often the worker checks the database for changes made by other processes.
    pub change_check_ms: u64,
    /// Zone for schedules created without `--tz` (an IANA name).
    pub default_timezone: String,
    /// Largest runtime answer kept with a run, in bytes; the rest is cut with a note.
    pub max_output_bytes: usize,
    /// Jitter of schedules that set none, when it is shorter than their gap (0: none).
    pub default_jitter_secs: i64,
    /// What a run's agent may do with `schedule_follow_up`: make active schedules, make
    /// them paused until the user confirms (resumes) them, or nothing.
    pub agent_schedules: AgentSchedules,
    /// Live schedules agents may have made for one user (besides `max_per_user`).
    pub max_agent_schedules_per_user: i64,
    /// How long a tool call waits for a person's approval before it counts as denied.
    pub approval_timeout_secs: i64,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            min_interval_secs: 60,
            max_per_user: 50,
            max_concurrent: 4,
            lease_secs: 60,
            history_keep: 50,
            default_timeout_secs: 600,
            retry_base_secs: 30,
            pause_after_failures: 5,
            shutdown_grace_secs: 30,
            change_check_ms: 500,
            default_timezone: "UTC".to_string(),
            max_output_bytes: 65_536,
            default_jitter_secs: 0,
            agent_schedules: AgentSchedules::Active,
            max_agent_schedules_per_user: 10,
            approval_timeout_secs: 86_400,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    /// No runtime: due runs fail with a clear error.
    None,
    /// Any OpenAI-compatible `/chat/completions` endpoint; nightshift runs the tool loop.
    Openai,
    /// An agent runtime's own goal endpoint: POST a JSON goal, read a JSON answer.
    Http,
    /// An A2A agent (JSON-RPC): the goal is sent as a message, its task followed to the end.
    A2a,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    pub kind: RuntimeKind,
    /// `openai`: the API base, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// `openai`: the model name sent with each request.
    pub model: String,
    /// `openai`: the environment variable holding the API key (none sent when unset).
    pub api_key_env: Option<String>,
    /// `http`: the goal endpoint. `a2a`: the agent's JSON-RPC endpoint, or its agent card
    /// (a URL whose path ends in `.json`, such as `…/.well-known/agent-card.json`).
    pub url: String,
    /// `a2a`: a file holding the value of the Authorization header sent to the agent
    /// (e.g. `Bearer …`); relative paths are looked up in `$CREDENTIALS_DIRECTORY` when
    /// set. Read at each run; never logged.
    pub auth_header_file: Option<String>,
    /// Whole-request timeout, seconds.
    pub timeout_secs: u64,
    pub connect_timeout_secs: u64,
    /// Retries of one request on connection errors, 429 and 5xx (Retry-After honoured).
    pub max_retries: u32,
    /// Prices per million tokens, for the recorded cost.
    pub prompt_price_per_mtok: f64,
    pub completion_price_per_mtok: f64,
    /// Tokens of notes and summary put in the prompt.
    pub context_budget_tokens: usize,
    /// Tool-loop turns when a schedule sets no `max_turns`.
    pub default_max_turns: i64,
    /// Largest answer read from the runtime, in bytes; a larger one fails the attempt.
    pub max_response_bytes: usize,
    /// Tool calls the model may ask for in one turn, and in one run.
    pub max_tool_calls_per_turn: usize,
    pub max_tool_calls_per_run: usize,
    /// Largest arguments of one tool call, in bytes of JSON; larger ones are answered
    /// with a tool error instead of running.
    pub max_tool_arguments_bytes: usize,
    /// `openai`: after a turn's calls, the next request carries a hint naming the call
    /// the user's runs usually make next, from a macro at least this confident (0: no
    /// hints).
    pub macro_hint_min_confidence: f64,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            kind: RuntimeKind::None,
            base_url: String::new(),
            model: String::new(),
            api_key_env: None,
            url: String::new(),
            auth_header_file: None,
            timeout_secs: 120,
            connect_timeout_secs: 10,
            max_retries: 3,
            prompt_price_per_mtok: 0.0,
            completion_price_per_mtok: 0.0,
            context_budget_tokens: 2000,
            default_max_turns: 8,
            max_response_bytes: 8 * 1024 * 1024,
            max_tool_calls_per_turn: 16,
            max_tool_calls_per_run: 64,
            max_tool_arguments_bytes: 65_536,
            macro_hint_min_confidence: 0.8,
        }
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
