//! Channel adapters, each speaking its service's public API: a signed JSON webhook (its
//! signature nightshift's own or Standard Webhooks', see [`signing`]), a
//! Slack incoming webhook, the Telegram Bot API, ntfy, email over SMTP, and the log.

mod documents;
mod email;
pub mod signing;

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
const TELEGRAM_LIMIT: usize = 4096;

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

#[derive(Debug, Clone)]
struct Channel {
    kind: ChannelKind,
    url: Option<String>,
    secret: Option<Secret>,
    /// A webhook's signer (its key from `secret`).
    signer: signing::Signer,
    /// An email channel's server and sender.
    email: Option<email::EmailChannel>,
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

/// Checks a channel context for its kind: a Telegram chat id (`-100123`, `@name`, with
/// `:THREAD` digits), an ntfy topic (letters, digits, `-` and `_`, at most 64). The context
/// ends up in a URL or a request, so nothing else gets through.
pub fn check_context(kind: ChannelKind, context: &str) -> Result<(), String> {
    let digits = |s: &str, max: usize| {
        !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit())
    };
    match kind {
        ChannelKind::Telegram => {
            let (chat, thread) = match context.split_once(':') {
                Some((chat, thread)) => (chat, Some(thread)),
                None => (context, None),
            };
            let chat_ok = match chat.strip_prefix('@') {
                Some(name) => {
                    (5..=32).contains(&name.len())
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                }
                None => digits(chat.strip_prefix('-').unwrap_or(chat), 20),
            };
            if !chat_ok || thread.is_some_and(|t| !digits(t, 20)) {
                return Err(format!(
                    "`{}` is not a Telegram chat: use a chat id (-100123) or @channelname, \
                     optionally :THREAD",
                    crate::input::printable(context)
                ));
            }
        }
        ChannelKind::Ntfy => {
            let ok = (1..=64).contains(&context.len())
                && context
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !ok {
                return Err(format!(
                    "`{}` is not an ntfy topic: use 1 to 64 letters, digits, - or _",
                    crate::input::printable(context)
                ));
            }
        }
        ChannelKind::Email => {
            if context.parse::<lettre::message::Mailbox>().is_err()
                || context.contains(['<', '>', ','])
            {
                return Err(format!(
                    "`{}` is not an email address: use one address, such as alice@example.org",
                    crate::input::printable(context)
                ));
            }
        }
        ChannelKind::Webhook | ChannelKind::Slack | ChannelKind::Log => {
            crate::input::check_id("channel context", context).map_err(|e| e.reason)?;
        }
    }
    Ok(())
}

/// The text a person reads: the summary line, then the output, then a link to the run
/// when the API's public address is configured.
pub fn render_text(payload: &Value) -> String {
    let summary = payload["summary"].as_str().unwrap_or_default();
    let output = payload["output"].as_str().unwrap_or_default().trim();
    let mut text = if output.is_empty() || output == summary {
        summary.to_string()
    } else {
        format!("{summary}\n\n{output}")
    };
    if let Some(url) = payload["run_url"].as_str() {
        text.push_str(&format!("\n\n{url}"));
    }
    if let Some(files) = payload["artifacts"].as_array().filter(|f| !f.is_empty()) {
        text.push_str("\n\nFiles:");
        for file in files {
            text.push_str(&format!(
                "\n- {} ({}, {} bytes)",
                file["name"].as_str().unwrap_or_default(),
                file["type"].as_str().unwrap_or_default(),
                file["size"].as_i64().unwrap_or_default()
            ));
            if let Some(url) = file["url"].as_str() {
                text.push_str(&format!(" {url}"));
            }
        }
    }
    text
}

/// Splits on character boundaries, preferring line breaks, into parts of at most `limit`.
fn split_text(text: &str, limit: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.chars().count() > limit {
        let head = truncate_chars(rest, limit);
        let cut = head
            .rfind('\n')
            .filter(|i| *i > head.len() / 2)
            .map_or(head.len(), |i| i + 1);
        parts.push(rest[..cut].to_string());
        rest = &rest[cut..];
    }
    if !rest.is_empty() || parts.is_empty() {
        parts.push(rest.to_string());
    }
    parts
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
            loaded.insert(
                id.clone(),
                Channel {
                    kind: config.kind,
                    url: config.url.clone(),
                    secret,
                    signer,
                    email,
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
                let body = json!({"text": render_text(&message.payload)});
                self.post(channel.url.as_deref().unwrap_or_default(), &body, &[])
                    .await
            }
            ChannelKind::Telegram => self.telegram(channel, message, context).await,
            ChannelKind::Ntfy => self.ntfy(channel, message, context).await,
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
                // The token is part of the URL: never let it into an error message.
                .map_err(|mut e| {
                    e.reason = e.reason.replace(token, "<token>");
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
        .map_err(|mut e| {
            e.reason = e.reason.replace(token, "<token>");
            e
        })
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
        mut request: reqwest::RequestBuilder,
        headers: &[(&str, String)],
    ) -> Result<(), DeliveryError> {
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
            return Ok(());
        }
        let retry_after = crate::http::retry_after(response.headers());
        // Only the start of an error body is kept: a channel cannot make this read grow.
        let body =
            String::from_utf8_lossy(&crate::http::read_prefix(response, ERROR_BODY_LIMIT).await)
                .into_owned();
        // Telegram says how long to wait in its JSON body.
        let retry_after = retry_after.or_else(|| {
            serde_json::from_str::<Value>(&body).ok()?["parameters"]["retry_after"]
                .as_u64()
                .map(Duration::from_secs)
        });
        let code = status.as_u16();
        Err(DeliveryError {
            reason: format!("HTTP {code}: {}", truncate_chars(body.trim(), 200)),
            retry_after,
            permanent: status.is_client_error() && code != 408 && code != 429,
            progress: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_splits_on_characters_within_the_limit() {
        let text = "é".repeat(9000);
        let parts = split_text(&text, TELEGRAM_LIMIT);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.chars().count() <= TELEGRAM_LIMIT));
        assert_eq!(parts.concat(), text);
        let lines = "line\n".repeat(2000);
        let parts = split_text(&lines, TELEGRAM_LIMIT);
        assert!(parts[0].ends_with('\n'));
        assert_eq!(parts.concat(), lines);
    }

    #[test]
    fn contexts_are_checked_for_their_channel() {
        for ok in ["-1001234567", "12345", "@my_channel", "-100123:42"] {
            assert!(check_context(ChannelKind::Telegram, ok).is_ok(), "{ok}");
        }
        for bad in ["", "abc", "-100:x", "@ab", "123/../x", "1 2"] {
            assert!(check_context(ChannelKind::Telegram, bad).is_err(), "{bad}");
        }
        assert!(check_context(ChannelKind::Ntfy, "alerts_1-a").is_ok());
        for bad in ["", "a/b", "../admin", "a?x=1", &"x".repeat(65)] {
            assert!(check_context(ChannelKind::Ntfy, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_text_lists_a_runs_files_with_their_links() {
        let payload = json!({
            "summary": "report: done",
            "output": "done",
            "artifacts": [
                {"id": "art-1", "name": "a.csv", "type": "text/csv", "size": 3,
                 "url": "https://ns.example/v1/artifacts/art-1/content"},
                {"id": "art-2", "name": "b.png", "type": "image/png", "size": 9},
            ]
        });
        assert_eq!(
            render_text(&payload),
            "report: done\n\ndone\n\nFiles:\n\
             - a.csv (text/csv, 3 bytes) https://ns.example/v1/artifacts/art-1/content\n\
             - b.png (image/png, 9 bytes)"
        );
    }

    #[test]
    fn secrets_do_not_print() {
        assert_eq!(format!("{:?}", Secret("hunter2".into())), "Secret(…)");
    }
}
