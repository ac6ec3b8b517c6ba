//! `[sources.NAME]`: senders outside nightshift (GitHub, Stripe, Slack, any Standard
//! Webhooks sender, or a script with a shared token) whose signed deliveries to
//! `POST /v1/sources/NAME` start runs of config schedules (see `crate::sources`). Secrets
//! are never written here: only the environment variable or file that holds them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::input;

text_enum!(
    /// How a source's deliveries prove who sent them:
    /// - `github`: `X-Hub-Signature-256: sha256=HEX` of the body; the delivery id is
    ///   `X-GitHub-Delivery`;
    /// - `stripe`: `Stripe-Signature: t=…,v1=…` over `t.body`; the delivery id is the
    ///   event's `id`;
    /// - `slack`: `X-Slack-Signature: v0=…` over `v0:ts:body` with
    ///   `X-Slack-Request-Timestamp`; the delivery id is the event's `event_id` (a slash
    ///   command's `trigger_id`);
    /// - `standard`: the Standard Webhooks scheme (`webhook-id`, `webhook-timestamp`,
    ///   `webhook-signature`) under a `whsec_…` secret;
    /// - `bearer`: `Authorization: Bearer SECRET`; the delivery id is the
    ///   `Idempotency-Key` header when one is sent.
    SourceVerify {
        Github => "github",
        Stripe => "stripe",
        Slack => "slack",
        Standard => "standard",
        Bearer => "bearer",
    }
);

/// A `[sources.NAME]` entry.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    pub verify: SourceVerify,
    /// The signing secret (or the bearer token), from the worker's environment…
    pub secret_env: Option<String>,
    /// …or from a file (relative: in `$CREDENTIALS_DIRECTORY`), read on each delivery so a
    /// rotated secret needs no restart.
    pub secret_file: Option<String>,
    /// The names of the `[[schedules]]` a delivery triggers, one run each.
    pub schedules: Vec<String>,
    /// What becomes the run's input: each name given the value at a JSON pointer into the
    /// body (`message = "/head_commit/message"`), written as one JSON object. Empty: the
    /// whole body. A form-encoded body (Slack's commands) is read as an object of its
    /// fields.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
    /// How old a signed timestamp may be, seconds (stripe, slack, standard), either way.
    #[serde(default = "default_tolerance")]
    pub tolerance_secs: u64,
}

fn default_tolerance() -> u64 {
    300
}

/// Longest source name (it is a path segment of the route).
pub const MAX_SOURCE_NAME: usize = 64;

/// Whether `name` can name a source: 1 to 64 letters, digits, `-` or `_`.
pub fn valid_source_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SOURCE_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether `pointer` is a JSON pointer (RFC 6901): empty, or `/` then segments.
fn valid_pointer(pointer: &str) -> bool {
    pointer.is_empty() || pointer.starts_with('/')
}

pub(super) fn validate(
    sources: &BTreeMap<String, SourceConfig>,
    schedule_names: &[&str],
) -> Result<(), ConfigError> {
    let invalid = |key: String, reason: String| Err(ConfigError::Invalid { key, reason });
    for (name, source) in sources {
        let key = format!("sources.{}", input::printable(name));
        if !valid_source_name(name) {
            return invalid(
                key,
                "a source name has 1 to 64 letters, digits, `-` or `_`".to_string(),
            );
        }
        match (&source.secret_env, &source.secret_file) {
            (Some(_), Some(_)) => {
                return invalid(
                    format!("{key}.secret_env"),
                    "give secret_env or secret_file, not both".to_string(),
                )
            }
            (None, None) => {
                return invalid(
                    format!("{key}.secret_file"),
                    "every source needs its secret (secret_file or secret_env): an \
                     unsigned delivery could start runs for anyone"
                        .to_string(),
                )
            }
            _ => {}
        }
        if source.schedules.is_empty() {
            return invalid(
                format!("{key}.schedules"),
                "name at least one [[schedules]] entry to trigger".to_string(),
            );
        }
        for target in &source.schedules {
            if !schedule_names.contains(&target.as_str()) {
                return invalid(
                    format!("{key}.schedules"),
                    format!(
                        "`{}` is not the name of a [[schedules]] entry",
                        input::printable(target)
                    ),
                );
            }
        }
        for (field, pointer) in &source.fields {
            if let Err(err) = input::check_name("field", field) {
                return invalid(format!("{key}.fields"), err.reason);
            }
            if !valid_pointer(pointer) {
                return invalid(
                    format!("{key}.fields.{field}"),
                    format!(
                        "`{}` is not a JSON pointer: start it with `/` (`/head_commit/message`)",
                        input::printable(pointer)
                    ),
                );
            }
        }
        if !(1..=86_400).contains(&source.tolerance_secs) {
            return invalid(
                format!("{key}.tolerance_secs"),
                format!("must be 1..=86400, got {}", source.tolerance_secs),
            );
        }
    }
    Ok(())
}
