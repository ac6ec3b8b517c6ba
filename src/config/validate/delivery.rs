//! `[notify]`, `[channels.*]`, `[users.*]`: where and when messages go; split off for length.

use super::{http_url, instructions, invalid, not_blank, range, zone, DAY_SECS};
use crate::config::{ChannelKind, Config, ConfigError};
use crate::input::{self, Lines};

pub(super) fn notify(config: &Config) -> Result<(), ConfigError> {
    let n = &config.notify;
    if let Some(channel) = &n.memory_changes_channel {
        let id = channel.split(':').next().unwrap_or_default();
        if !config.channels.contains_key(id) && id != "log" {
            return invalid(
                "notify.memory_changes_channel",
                format!("no channel `{}` is configured", input::printable(id)),
            );
        }
    }
    time_of_day("notify.digest_at", &n.digest_at)?;
    input::check_text("notify.marker", &n.marker, 64, Lines::One)
        .or_else(|e| invalid("notify.marker", e.reason))?;
    range(
        "notify.failure_notice_after",
        n.failure_notice_after,
        1..=1000,
    )?;
    range("notify.max_attempts", n.max_attempts, 1..=1000)?;
    range(
        "notify.backoff_base_ms",
        n.backoff_base_ms,
        1..=DAY_SECS * 1000,
    )?;
    range(
        "notify.backoff_max_ms",
        n.backoff_max_ms,
        n.backoff_base_ms..=30 * DAY_SECS * 1000,
    )?;
    for (key, value) in [
        ("notify.ttl_high_secs", n.ttl_high_secs),
        ("notify.ttl_normal_secs", n.ttl_normal_secs),
        ("notify.ttl_low_secs", n.ttl_low_secs),
    ] {
        range(key, value, 1..=365 * DAY_SECS)?;
    }
    range("notify.max_in_flight", n.max_in_flight, 1..=1024)?;
    range("notify.timeout_secs", n.timeout_secs, 1..=3600)?;
    range(
        "notify.max_message_chars",
        n.max_message_chars,
        100..=100_000,
    )?;
    range(
        "notify.max_pending_per_channel",
        n.max_pending_per_channel,
        1..=1_000_000,
    )?;
    Ok(())
}

/// The rules of the chat and push services' channels (discord, teams, pushover, apprise,
/// matrix).
fn chat_channel(key: &str, channel: &crate::config::ChannelConfig) -> Result<(), ConfigError> {
    let has_secret = channel.secret_env.is_some() || channel.secret_file.is_some();
    match channel.kind {
        ChannelKind::Discord | ChannelKind::Teams if channel.url.is_none() && !has_secret => {
            return invalid(
                format!("{key}.url"),
                "this kind of channel needs its webhook URL: in url, or (it holds a token) \
                 in secret_file or secret_env",
            );
        }
        ChannelKind::Pushover if !has_secret => {
            return invalid(
                format!("{key}.secret_file"),
                "a pushover channel needs the application's API token in secret_file or \
                 secret_env",
            );
        }
        ChannelKind::Matrix if channel.url.is_none() || !has_secret => {
            return invalid(
                format!("{key}.url"),
                "a matrix channel needs the homeserver's url and the bot's access token \
                 (secret_file or secret_env)",
            );
        }
        ChannelKind::Apprise if channel.url.is_none() => {
            return invalid(
                format!("{key}.url"),
                "an apprise channel needs the Apprise API server's notify URL \
                 (http://apprise:8000/notify/KEY)",
            );
        }
        _ => {}
    }
    match (channel.priority, channel.kind) {
        (Some(priority), ChannelKind::Pushover) if !(-2..=2).contains(&priority) => invalid(
            format!("{key}.priority"),
            format!("must be -2..=2, got {priority}"),
        ),
        (Some(_), kind) if kind != ChannelKind::Pushover => invalid(
            format!("{key}.priority"),
            "only a pushover channel has a priority",
        ),
        _ => Ok(()),
    }
}

pub(super) fn channels_and_users(config: &Config) -> Result<(), ConfigError> {
    for (id, channel) in &config.channels {
        let key = format!("channels.{}", input::printable(id));
        if id.is_empty() || id.contains(':') || input::check_id("channel id", id).is_err() {
            return invalid(
                &key,
                "a channel id must be non-empty, one line, and without `:`",
            );
        }
        if let Some(url) = &channel.url {
            if channel.kind == ChannelKind::Email {
                not_blank(&format!("{key}.url"), url)?;
                match crate::smtp_url::parse(url) {
                    Err(reason) => {
                        return invalid(format!("{key}.url"), input::printable(&reason));
                    }
                    Ok(server)
                        if server.user.is_some()
                            && channel.secret_env.is_none()
                            && channel.secret_file.is_none() =>
                    {
                        return invalid(
                            format!("{key}.secret_file"),
                            "the URL names a user: give its password in secret_file or \
                             secret_env",
                        );
                    }
                    Ok(_) => {}
                }
            } else {
                http_url(&format!("{key}.url"), url)?;
            }
        }
        match (&channel.from, channel.kind) {
            (None, ChannelKind::Email) => {
                return invalid(
                    format!("{key}.from"),
                    "an email channel needs from, the sender's address",
                )
            }
            (Some(from), ChannelKind::Email) => {
                if from.parse::<lettre::message::Mailbox>().is_err() {
                    return invalid(
                        format!("{key}.from"),
                        format!(
                            "`{}` is not an address, such as Nightshift <nightshift@example.org>",
                            input::printable(from)
                        ),
                    );
                }
            }
            (Some(_), _) => {
                return invalid(format!("{key}.from"), "only an email channel has a sender")
            }
            (None, _) => {}
        }
        let needs_url = matches!(
            channel.kind,
            ChannelKind::Webhook | ChannelKind::Slack | ChannelKind::Email
        );
        if needs_url && channel.url.is_none() {
            return invalid(format!("{key}.url"), "this kind of channel needs a url");
        }
        chat_channel(&key, channel)?;
        if channel.kind == ChannelKind::Telegram
            && channel.secret_env.is_none()
            && channel.secret_file.is_none()
        {
            return invalid(
                format!("{key}.secret_env"),
                "a telegram channel needs secret_env or secret_file (the bot token)",
            );
        }
        quiet_hours(
            &key,
            channel.quiet_hours.as_deref(),
            channel.timezone.as_deref(),
        )?;
        if let Some(signing) = channel.signing {
            if channel.kind != ChannelKind::Webhook {
                return invalid(
                    format!("{key}.signing"),
                    "only a webhook channel signs its deliveries",
                );
            }
            if signing == crate::config::WebhookSigning::Standard
                && channel.secret_env.is_none()
                && channel.secret_file.is_none()
            {
                return invalid(
                    format!("{key}.signing"),
                    "signing = \"standard\" needs the channel's secret (secret_env or \
                     secret_file, a whsec_… secret)",
                );
            }
        }
        if channel.secret_env.is_some() && channel.secret_file.is_some() {
            return invalid(
                format!("{key}.secret_env"),
                "give secret_env or secret_file, not both",
            );
        }
    }
    for (user, settings) in &config.users {
        let key = format!("users.{}", input::printable(user));
        if let Err(err) = input::check_user_id(user) {
            return invalid(&key, err.reason);
        }
        instructions(
            &format!("{key}.extraction_instructions"),
            settings.extraction_instructions.as_deref(),
        )?;
        for name in &settings.mcp_servers {
            if name != "*" && !config.mcp_servers.contains_key(name) {
                return invalid(
                    format!("{key}.mcp_servers"),
                    format!("no MCP server `{}` is configured", input::printable(name)),
                );
            }
        }
        for id in &settings.channels {
            if !config.channels.contains_key(id) && id != "log" {
                return invalid(
                    format!("{key}.channels"),
                    format!("no channel `{}` is configured", input::printable(id)),
                );
            }
        }
        if let Some(channel) = &settings.memory_changes_channel {
            let id = channel.split(':').next().unwrap_or_default();
            if !config.channels.contains_key(id) && id != "log" {
                return invalid(
                    format!("{key}.memory_changes_channel"),
                    format!("no channel `{}` is configured", input::printable(id)),
                );
            }
        }
        if let Some(channel) = &settings.default_channel {
            let id = channel.split(':').next().unwrap_or_default();
            if !config.channels.contains_key(id) {
                return invalid(
                    format!("{key}.default_channel"),
                    format!("no channel `{}` is configured", input::printable(id)),
                );
            }
        }
        quiet_hours(
            &key,
            settings.quiet_hours.as_deref(),
            settings.timezone.as_deref(),
        )?;
        if let Some(at) = &settings.digest_at {
            time_of_day(&format!("{key}.digest_at"), at)?;
        }
    }
    Ok(())
}

/// `{key}.quiet_hours` and `{key}.timezone` (of a user or a channel), each named when
/// wrong; a zone alone is checked too.
fn quiet_hours(
    key: &str,
    window: Option<&str>,
    zone_name: Option<&str>,
) -> Result<(), ConfigError> {
    if let Some(name) = zone_name {
        zone(&format!("{key}.timezone"), name)?;
    }
    match window.map(|window| crate::quiet_hours::QuietHours::from_settings(window, zone_name)) {
        Some(Err((suffix, reason))) => {
            invalid(format!("{key}.{suffix}"), input::printable(&reason))
        }
        _ => Ok(()),
    }
}

/// `HH:MM`, named by `key` when it is not one.
fn time_of_day(key: &str, text: &str) -> Result<(), ConfigError> {
    match crate::time_of_day::TimeOfDay::parse(text) {
        Ok(_) => Ok(()),
        Err(reason) => invalid(key, input::printable(&reason)),
    }
}
