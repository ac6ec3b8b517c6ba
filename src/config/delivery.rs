//! `[notify]`, `[channels.<id>]` and `[users.<id>]`: where messages go, and when.

use serde::{Deserialize, Serialize};

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
