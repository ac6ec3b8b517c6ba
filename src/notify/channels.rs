//! Channel adapters, each speaking its service's public API: a signed JSON webhook (its
//! signature nightshift's own or Standard Webhooks', see [`signing`]), a
//! Slack incoming webhook, the Telegram Bot API, ntfy, email over SMTP, Discord's and
//! Teams' webhooks, Pushover, an Apprise API server, Matrix, and the log.

mod apprise;
mod card;
mod context;
mod discord;
mod documents;
mod email;
mod matrix;
mod pushover;
pub mod signing;
mod teams;
mod text;

pub use context::check_context;
pub use text::render_text;
use text::split_text;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::outbox::Message;
use crate::artifact::ArtifactStore;
use crate::config::{ChannelConfig, ChannelKind};
use crate::text::truncate_chars;

/// Bytes of a channel's error answer read (its reason is kept to 200 characters).
const ERROR_BODY_LIMIT: usize = 16 * 1024;

/// Telegram refuses messages over 4,096 characters.
pub(crate) const TELEGRAM_LIMIT: usize = 4096;

/// A secret read from the environment or a file. Its `Debug` never shows it.
#[derive(Clone)]
pub struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChannelError {
    #[error("channel `{channel}`: environment variable `{var}` is not set")]
    MissingEnv { channel: String, var: String },
    #[error("channel `{channel}`: cannot read secret file {path}: {reason}")]
    SecretFile {
        channel: String,
        path: String,
        reason: String,
    },
    #[error("channel `{channel}`: {reason}")]
    BadSecret { channel: String, reason: String },
    #[error("channel `{channel}`: {reason}")]
    Email { channel: String, reason: String },
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

impl crate::error::Kind for ChannelError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            ChannelError::MissingEnv { .. }
            | ChannelError::SecretFile { .. }
            | ChannelError::BadSecret { .. }
            | ChannelError::Email { .. } => crate::error::ErrorKind::Config,
            ChannelError::Client(_) => crate::error::ErrorKind::Internal,
        }
    }
}

/// Why a delivery did not go through.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryError {
    pub reason: String,
    /// The channel asked to wait this long.
    pub retry_after: Option<Duration>,
    /// Retrying cannot help (a 4xx other than 408/429, a missing channel).
    pub permanent: bool,
    /// Parts of a split message accepted so far.
    pub progress: i64,
}

impl DeliveryError {
    fn permanent(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            retry_after: None,
            permanent: true,
            progress: 0,
        }
    }
}

#[derive(Clone)]
struct Channel {
    kind: ChannelKind,
    url: Option<String>,
    secret: Option<Secret>,
    /// A webhook's signer (its key from `secret`).
    signer: signing::Signer,
    /// An email channel's server and sender.
    email: Option<email::EmailChannel>,
    /// A pushover channel's priority for failures.
    priority: i64,
}

// By hand: a Discord or Teams URL holds its webhook's token.
impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Channel {
    /// `reason` with the channel's secret, and a URL that holds a token, shown as
    /// `<secret>`: a server's error body, or a proxy's, may echo what it was sent.
    fn scrub(&self, reason: String) -> String {
        let mut reason = reason;
        if let Some(Secret(secret)) = &self.secret {
            if secret.len() >= 4 {
                reason = reason.replace(secret.as_str(), "<secret>");
            }
        }
        if matches!(self.kind, ChannelKind::Discord | ChannelKind::Teams) {
            if let Some(url) = self
                .url
                .as_deref()
                .and_then(|u| reqwest::Url::parse(u).ok())
            {
                reason = reason.replace(url.as_str(), "<secret>");
                if url.path().len() > 1 {
                    reason = reason.replace(url.path(), "<secret>");
                }
                if let Some(query) = url.query().filter(|q| q.len() >= 4) {
                    reason = reason.replace(query, "<secret>");
                }
            }
        }
        reason
    }
}

/// The configured channels, secrets loaded.
#[derive(Clone)]
pub struct Channels {
    channels: BTreeMap<String, Channel>,
    client: reqwest::Client,
    /// Where Telegram's documents are read from; without it only their links are sent.
    artifacts: Option<ArtifactStore>,
}

fn load_secret(id: &str, config: &ChannelConfig) -> Result<Option<Secret>, ChannelError> {
    if let Some(var) = &config.secret_env {
        let value = std::env::var(var).map_err(|_| ChannelError::MissingEnv {
            channel: id.to_string(),
            var: var.clone(),
        })?;
        return Ok(Some(Secret(value.trim().to_string())));
    }
    if let Some(path) = &config.secret_file {
        let resolved = crate::config::credential_path(path);
        let value = std::fs::read_to_string(&resolved).map_err(|e| ChannelError::SecretFile {
            channel: id.to_string(),
            path: resolved.display().to_string(),
            reason: e.to_string(),
        })?;
        return Ok(Some(Secret(value.trim().to_string())));
    }
    Ok(None)
}

impl Channels {
    pub fn from_config(
        channels: &BTreeMap<String, ChannelConfig>,
        timeout: Duration,
    ) -> Result<Self, ChannelError> {
        let mut loaded = BTreeMap::new();
        for (id, config) in channels {
            let secret = load_secret(id, config)?;
            let signer = match config.kind {
                ChannelKind::Webhook => signing::Signer::new(
                    config.signing.unwrap_or_default(),
                    secret.as_ref().map(|Secret(s)| s.as_str()),
                )
                .map_err(|reason| ChannelError::BadSecret {
                    channel: id.clone(),
                    reason,
                })?,
                _ => signing::Signer::None,
            };
            let email = match config.kind {
                ChannelKind::Email => Some(
                    email::EmailChannel::new(
                        config.url.as_deref().unwrap_or_default(),
                        config.from.as_deref().unwrap_or_default(),
                        secret.as_ref(),
                        timeout,
                    )
                    .map_err(|reason| ChannelError::Email {
                        channel: id.clone(),
                        reason,
                    })?,
                ),
                _ => None,
            };
            let url = match (config.kind, &config.url, &secret) {
                // A webhook URL holds its token: it may be kept as the secret.
                (ChannelKind::Discord | ChannelKind::Teams, None, Some(Secret(url))) => {
                    if !matches!(reqwest::Url::parse(url), Ok(u) if u.scheme() == "https" || u.scheme() == "http")
                    {
                        return Err(ChannelError::BadSecret {
                            channel: id.clone(),
                            reason: "the secret is not the webhook's http(s) URL".to_string(),
                        });
                    }
                    Some(url.clone())
                }
                _ => config.url.clone(),
            };
            loaded.insert(
                id.clone(),
                Channel {
                    kind: config.kind,
                    url,
                    secret,
                    signer,
                    email,
                    priority: config
                        .priority
                        .unwrap_or(pushover::DEFAULT_FAILURE_PRIORITY),
                },
            );
        }
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| ChannelError::Client(e.to_string()))?;
        Ok(Self {
            channels: loaded,
            client,
            artifacts: None,
        })
    }

    /// The same channels, sending a run's artifacts as files where the channel can
    /// (Telegram's `sendDocument`).
    pub fn with_artifacts(mut self, artifacts: ArtifactStore) -> Self {
        self.artifacts = Some(artifacts);
        self
    }

    pub fn contains(&self, id: &str) -> bool {
        self.channels.contains_key(id)
    }

    /// Delivers one message. `Ok` means the channel accepted it.
    pub async fn deliver(&self, message: &Message) -> Result<(), DeliveryError> {
        if message.channel_id == "log" && !self.channels.contains_key("log") {
            tracing::info!(target: "nightshift::notify", user_id = %message.user_id, text = %render_text(&message.payload), "notification");
            return Ok(());
        }
        let Some(channel) = self.channels.get(&message.channel_id) else {
            return Err(DeliveryError::permanent(format!(
                "no channel `{}` is configured",
                message.channel_id
            )));
        };
        self.deliver_to(channel, message).await.map_err(|mut err| {
            err.reason = channel.scrub(err.reason);
            err
        })
    }

    async fn deliver_to(&self, channel: &Channel, message: &Message) -> Result<(), DeliveryError> {
        let context = message.channel_context_id.as_deref();
        match channel.kind {
            ChannelKind::Log => {
                // Model-written text may hold terminal escapes: the log shows them escaped.
                let text = render_text(&message.payload);
                tracing::info!(target: "nightshift::notify", channel = %message.channel_id, text = %crate::input::printable(&text), "notification");
                Ok(())
            }
            ChannelKind::Webhook => self.webhook(channel, message).await,
            ChannelKind::Slack => {
                // Slack's control sequences (`<!channel>`, `<@U123>`, `<url|text>`) are
                // escaped: a model's output pings nobody and links nowhere in disguise.
                let text = render_text(&message.payload)
                    .replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;");
                let body = json!({"text": text});
                self.post(channel.url.as_deref().unwrap_or_default(), &body, &[])
                    .await
            }
            ChannelKind::Telegram => self.telegram(channel, message, context).await,
            ChannelKind::Ntfy => self.ntfy(channel, message, context).await,
            ChannelKind::Discord => {
                if let Some(thread) = context {
                    check_context(ChannelKind::Discord, thread)
                        .map_err(DeliveryError::permanent)?;
                }
                let url = discord::url(channel.url.as_deref().unwrap_or_default(), context);
                self.post(&url, &discord::body(&card::Card::of(message)), &[])
                    .await
            }
            ChannelKind::Teams => {
                let body = teams::body(&card::Card::of(message));
                self.post(channel.url.as_deref().unwrap_or_default(), &body, &[])
                    .await
            }
            ChannelKind::Pushover => self.pushover(channel, message, context).await,
            ChannelKind::Matrix => {
                let Some(room) = context else {
                    return Err(DeliveryError::permanent(
                        "matrix needs the room id as the channel context (matrix:!ID:SERVER)",
                    ));
                };
                check_context(ChannelKind::Matrix, room).map_err(DeliveryError::permanent)?;
                let token = channel
                    .secret
                    .as_ref()
                    .map(|s| s.0.as_str())
                    .unwrap_or_default();
                let url = matrix::send_url(
                    channel.url.as_deref().unwrap_or_default(),
                    room,
                    &message.message_id,
                );
                let request = self
                    .client
                    .put(url)
                    .bearer_auth(token)
                    .json(&matrix::content(&card::Card::of(message)));
                self.send(request, &[]).await
            }
            ChannelKind::Apprise => {
                if let Some(tag) = context {
                    check_context(ChannelKind::Apprise, tag).map_err(DeliveryError::permanent)?;
                }
                let body = apprise::body(&card::Card::of(message), context);
                let mut request = self
                    .client
                    .post(channel.url.as_deref().unwrap_or_default())
                    .json(&body);
                if let Some(Secret(token)) = &channel.secret {
                    request = request.bearer_auth(token);
                }
                self.exchange(request, &[], &[apprise::PARTLY_FAILED], false)
                    .await
                    .map(drop)
            }
            ChannelKind::Email => {
                let (Some(email), Some(to)) = (&channel.email, context) else {
                    return Err(DeliveryError::permanent(
                        "email needs the recipient's address as the channel context \
                         (mail:alice@example.org)",
                    ));
                };
                email
                    .send(to, &message.idempotency_key, &message.payload)
                    .await
            }
        }
    }

    async fn webhook(&self, channel: &Channel, message: &Message) -> Result<(), DeliveryError> {
        let mut payload = message.payload.clone();
        payload["context"] = json!(message.channel_context_id);
        let body = payload.to_string();
        let mut headers = vec![("Idempotency-Key", message.idempotency_key.clone())];
        // Signed at this attempt: a retry carries a fresh timestamp, the same id.
        let now_secs = crate::db::clock::now_ms() / 1000;
        headers.extend(channel.signer.headers(&message.message_id, &body, now_secs));
        // The delivery's span, for a receiver that traces what it does with the message.
        headers.extend(crate::traces::trace_headers());
        self.send(
            self.client
                .post(channel.url.as_deref().unwrap_or_default())
                .header("content-type", "application/json")
                .body(body),
            &headers,
        )
        .await
    }

    async fn telegram(
        &self,
        channel: &Channel,
        message: &Message,
        context: Option<&str>,
    ) -> Result<(), DeliveryError> {
        let Some(context) = context else {
            return Err(DeliveryError::permanent(
                "telegram needs a chat id as the channel context (chat or chat:thread)",
            ));
        };
        check_context(ChannelKind::Telegram, context).map_err(DeliveryError::permanent)?;
        let (chat, thread) = match context.split_once(':') {
            Some((chat, thread)) => (chat, thread.parse::<i64>().ok()),
            None => (context, None),
        };
        let base = channel
            .url
            .as_deref()
            .unwrap_or("https://api.telegram.org")
            .trim_end_matches('/');
        let token = channel
            .secret
            .as_ref()
            .map(|s| s.0.as_str())
            .unwrap_or_default();
        let url = format!("{base}/bot{token}/sendMessage");
        let parts = split_text(&render_text(&message.payload), TELEGRAM_LIMIT);
        for (i, part) in parts
            .iter()
            .enumerate()
            .skip(message.progress.max(0) as usize)
        {
            let mut body = json!({"chat_id": chat, "text": part});
            if let Some(thread) = thread {
                body["message_thread_id"] = json!(thread);
            }
            let result = self
                .send(self.client.post(&url).json(&body), &[])
                .await
                // The token is part of the URL: `scrub` keeps it out of the reason kept.
                .map_err(|mut e| {
                    e.progress = i as i64;
                    e
                });
            result?;
        }
        self.telegram_documents(
            &format!("{base}/bot{token}/sendDocument"),
            message,
            chat,
            thread,
            parts.len(),
        )
        .await
    }

    async fn ntfy(
        &self,
        channel: &Channel,
        message: &Message,
        context: Option<&str>,
    ) -> Result<(), DeliveryError> {
        let Some(topic) = context.filter(|t| !t.is_empty()) else {
            return Err(DeliveryError::permanent(
                "ntfy needs a topic as the channel context",
            ));
        };
        check_context(ChannelKind::Ntfy, topic).map_err(DeliveryError::permanent)?;
        let server = channel
            .url
            .as_deref()
            .unwrap_or("https://ntfy.sh")
            .trim_end_matches('/');
        let failed = message.priority == "high";
        let title = message.payload["summary"]
            .as_str()
            .unwrap_or("nightshift")
            .to_string();
        let mut request = self
            .client
            .post(format!("{server}/{topic}"))
            .header(
                "Title",
                truncate_chars(&title, 200).replace(['\r', '\n'], " "),
            )
            .header("Priority", if failed { "5" } else { "3" })
            .header(
                "Tags",
                if failed {
                    "warning"
                } else {
                    "white_check_mark"
                },
            )
            .body(render_text(&message.payload));
        if let Some(Secret(token)) = &channel.secret {
            request = request.bearer_auth(token);
        }
        self.send(request, &[]).await
    }

    async fn pushover(
        &self,
        channel: &Channel,
        message: &Message,
        context: Option<&str>,
    ) -> Result<(), DeliveryError> {
        let Some(user) = context else {
            return Err(DeliveryError::permanent(
                "pushover needs the user's or group's key as the channel context",
            ));
        };
        check_context(ChannelKind::Pushover, user).map_err(DeliveryError::permanent)?;
        let token = channel
            .secret
            .as_ref()
            .map(|s| s.0.as_str())
            .unwrap_or_default();
        let form = pushover::form(&card::Card::of(message), token, user, channel.priority);
        let request = self
            .client
            .post(channel.url.as_deref().unwrap_or(pushover::DEFAULT_URL))
            .form(&form);
        let answer = self.exchange(request, &[], &[], true).await?;
        // An emergency's receipt: what the operator asks Pushover about its acknowledgement.
        if let Some(receipt) = serde_json::from_slice::<Value>(&answer)
            .ok()
            .and_then(|v| v["receipt"].as_str().map(str::to_string))
        {
            tracing::info!(target: "nightshift::notify", channel = %message.channel_id, message_id = %message.message_id, %receipt, "pushover emergency sent");
        }
        Ok(())
    }

    async fn post(
        &self,
        url: &str,
        body: &Value,
        headers: &[(&str, String)],
    ) -> Result<(), DeliveryError> {
        self.send(self.client.post(url).json(body), headers).await
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        headers: &[(&str, String)],
    ) -> Result<(), DeliveryError> {
        self.exchange(request, headers, &[], false).await.map(drop)
    }

    /// Sends `request`; a 4xx is permanent but for 408, 429 and the channel's `transient`
    /// statuses. With `read_success`, the start of a success's body is returned (up to the
    /// error body's limit); otherwise a success is taken at its status line.
    async fn exchange(
        &self,
        mut request: reqwest::RequestBuilder,
        headers: &[(&str, String)],
        transient: &[u16],
        read_success: bool,
    ) -> Result<Vec<u8>, DeliveryError> {
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.map_err(|e| DeliveryError {
            // Without the URL: it may carry a token (Telegram).
            reason: format!("cannot reach the channel: {}", crate::http::error_text(e)),
            retry_after: None,
            permanent: false,
            progress: 0,
        })?;
        let status = response.status();
        if status.is_success() {
            if read_success {
                return Ok(crate::http::read_prefix(response, ERROR_BODY_LIMIT).await);
            }
            return Ok(Vec::new());
        }
        let retry_after = crate::http::retry_after(response.headers());
        // Only the start of an error body is kept: a channel cannot make this read grow.
        let body =
            String::from_utf8_lossy(&crate::http::read_prefix(response, ERROR_BODY_LIMIT).await)
                .into_owned();
        // Telegram and Matrix say how long to wait in their JSON bodies.
        let retry_after = retry_after.or_else(|| {
            let answer = serde_json::from_str::<Value>(&body).ok()?;
            answer["parameters"]["retry_after"]
                .as_u64()
                .map(Duration::from_secs)
                .or_else(|| answer["retry_after_ms"].as_u64().map(Duration::from_millis))
        });
        let code = status.as_u16();
        Err(DeliveryError {
            reason: format!("HTTP {code}: {}", truncate_chars(body.trim(), 200)),
            retry_after,
            permanent: status.is_client_error()
                && code != 408
                && code != 429
                && !transient.contains(&code),
            progress: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_do_not_print() {
        assert_eq!(format!("{:?}", Secret("hunter2".into())), "Secret(…)");
    }
}
