//! Every value of the configuration checked on its own and against the others, each with
//! a documented range, so no value from the file can overflow a computation later (a lease
//! in milliseconds, a backoff, a cache size). A bad value is reported by its key path.

use std::fmt::Display;
use std::ops::RangeInclusive;

use super::{ChannelKind, Config, ConfigError, RuntimeKind};
use crate::input::{self, Lines};

const MIB: usize = 1024 * 1024;
const DAY_SECS: i64 = 86_400;

fn invalid(key: impl Into<String>, reason: impl Into<String>) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid {
        key: key.into(),
        reason: reason.into(),
    })
}

fn range<T: PartialOrd + Display + Copy>(
    key: &str,
    value: T,
    range: RangeInclusive<T>,
) -> Result<(), ConfigError> {
    if range.contains(&value) {
        Ok(())
    } else {
        invalid(
            key,
            format!("must be {}..={}, got {value}", range.start(), range.end()),
        )
    }
}

fn fraction(key: &str, value: f64) -> Result<(), ConfigError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        invalid(key, format!("must be between 0 and 1, got {value}"))
    }
}

fn zone(key: &str, name: &str) -> Result<(), ConfigError> {
    match name.parse::<chrono_tz::Tz>() {
        Ok(_) => Ok(()),
        Err(_) => invalid(
            key,
            format!(
                "unknown time zone `{}` (use an IANA name such as Europe/Lisbon)",
                input::printable(name)
            ),
        ),
    }
}

/// A share: above 0 (or at 0 when `zero` is allowed) and at most 1; NaN is refused.
fn share(key: &str, value: f64, zero: bool) -> Result<(), ConfigError> {
    let low_ok = if zero { value >= 0.0 } else { value > 0.0 };
    if low_ok && value <= 1.0 {
        Ok(())
    } else {
        let low = if zero { "from 0" } else { "above 0" };
        invalid(key, format!("must be {low} to 1, got {value}"))
    }
}

fn not_blank(key: &str, value: &str) -> Result<(), ConfigError> {
    input::check_text(key, value, 4096, Lines::One).or_else(|e| invalid(key, e.reason))
}

/// An `http://` or `https://` URL.
fn http_url(key: &str, value: &str) -> Result<(), ConfigError> {
    not_blank(key, value)?;
    match reqwest::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(()),
        Ok(url) => invalid(
            key,
            format!("`{}` is not an http:// or https:// URL", url.scheme()),
        ),
        Err(err) => invalid(key, format!("not a URL: {err}")),
    }
}

pub(super) fn validate(config: &Config) -> Result<(), ConfigError> {
    database(config)?;
    memory(config)?;
    super::artifacts::validate(&config.artifacts)?;
    search(config)?;
    embedding(config)?;
    scheduler(config)?;
    runtime(config)?;
    notify(config)?;
    channels_and_users(config)?;
    super::mcp_servers::validate(&config.mcp_servers, http_url)?;
    super::traces::validate(&config.traces, http_url)?;
    consolidation(config)?;
    schedules(config)?;
    let schedule_names: Vec<&str> = config
        .schedules
        .iter()
        .filter_map(|entry| entry.name.as_deref())
        .collect();
    super::sources::validate(&config.sources, &schedule_names)?;
    server(config)?;
    Ok(())
}

fn server(config: &Config) -> Result<(), ConfigError> {
    let s = &config.server;
    if !s.listen.is_empty() && s.listen.parse::<std::net::SocketAddr>().is_err() {
        return invalid(
            "server.listen",
            format!(
                "`{}` is not an address and port such as 127.0.0.1:7431 (\"\" turns the server off)",
                input::printable(&s.listen)
            ),
        );
    }
    range("server.max_body_bytes", s.max_body_bytes, 1024..=1024 * MIB)?;
    range(
        "server.request_timeout_secs",
        s.request_timeout_secs,
        1..=3600,
    )?;
    range(
        "server.max_concurrent_requests",
        s.max_concurrent_requests,
        1..=100_000,
    )?;
    if !(s.rate_per_token.is_finite() && (0.1..=100_000.0).contains(&s.rate_per_token)) {
        return invalid(
            "server.rate_per_token",
            format!("must be 0.1..=100000, got {}", s.rate_per_token),
        );
    }
    range("server.rate_burst", s.rate_burst, 1..=1_000_000)?;
    range(
        "server.header_read_timeout_secs",
        s.header_read_timeout_secs,
        1..=3600,
    )?;
    range("server.max_connections", s.max_connections, 1..=1_000_000)?;
    match (&s.tls_cert_file, &s.tls_key_file) {
        (Some(cert), Some(key)) => {
            not_blank("server.tls_cert_file", cert)?;
            not_blank("server.tls_key_file", key)?;
        }
        (None, None) => {}
        _ => {
            return invalid(
                "server.tls_cert_file",
                "give both tls_cert_file and tls_key_file, or neither",
            )
        }
    }
    if let Some(url) = &s.public_url {
        http_url("server.public_url", url)?;
    }
    Ok(())
}

fn database(config: &Config) -> Result<(), ConfigError> {
    let db = &config.database;
    not_blank("database.path", &db.path)?;
    range("database.busy_timeout_ms", db.busy_timeout_ms, 0..=600_000)?;
    range("database.pool_size", db.pool_size, 1..=256)?;
    range(
        "database.sync_interval_secs",
        db.sync_interval_secs,
        1..=3600,
    )?;
    if let Some(path) = &db.auth_token_file {
        not_blank("database.auth_token_file", path)?;
    }
    if let Some(path) = &db.replica_path {
        not_blank("database.replica_path", path)?;
    }
    if let Some(path) = &db.password_file {
        not_blank("database.password_file", path)?;
    }
    if let Some(name) = &db.password_env {
        if name.is_empty() || name.contains(['=', '\0']) {
            return invalid(
                "database.password_env",
                format!("must name an environment variable, got {name:?}"),
            );
        }
    }
    Ok(())
}

fn memory(config: &Config) -> Result<(), ConfigError> {
    let mem = &config.memory;
    range("memory.max_text_bytes", mem.max_text_bytes, 1..=16 * MIB)?;
    range("memory.chunk_chars", mem.chunk_chars, 32..=100_000)?;
    if mem.chunk_overlap_chars >= mem.chunk_chars / 2 {
        return invalid(
            "memory.chunk_overlap_chars",
            format!(
                "must be less than half of memory.chunk_chars ({}), got {}",
                mem.chunk_chars, mem.chunk_overlap_chars
            ),
        );
    }
    range("memory.recall_limit", mem.recall_limit, 1..=10_000)?;
    range(
        "memory.max_payload_bytes",
        mem.max_payload_bytes,
        1..=16 * MIB,
    )?;
    range(
        "memory.max_import_bytes",
        mem.max_import_bytes,
        1..=1024 * MIB,
    )?;
    range(
        "memory.max_batch_events",
        mem.max_batch_events,
        1..=1_000_000,
    )?;
    range(
        "memory.max_import_line_bytes",
        mem.max_import_line_bytes,
        1024..=1024 * MIB,
    )?;
    range(
        "memory.max_notes_per_user",
        mem.max_notes_per_user,
        1..=10_000_000,
    )?;
    range(
        "memory.max_state_value_bytes",
        mem.max_state_value_bytes,
        2..=16 * MIB,
    )?;
    range("memory.max_state_keys", mem.max_state_keys, 1..=1_000_000)?;
    range(
        "memory.deleted_note_retention_days",
        mem.deleted_note_retention_days,
        0..=36_500,
    )?;
    Ok(())
}

fn search(config: &Config) -> Result<(), ConfigError> {
    let search = &config.search;
    range("search.max_top_k", search.max_top_k, 1..=1000)?;
    range(
        "search.default_top_k",
        search.default_top_k,
        1..=search.max_top_k,
    )?;
    fraction("search.vector_weight", search.vector_weight)?;
    fraction("search.keyword_weight", search.keyword_weight)?;
    fraction("search.context_weight", search.context_weight)?;
    fraction("search.neighbor_weight", search.neighbor_weight)?;
    range("search.speaker_weight", search.speaker_weight, 0.0..=10.0)?;
    range("search.time_weight", search.time_weight, 0.0..=10.0)?;
    if search.vector_weight + search.keyword_weight <= 0.0 {
        return invalid(
            "search.keyword_weight",
            "search.vector_weight and search.keyword_weight must not both be 0",
        );
    }
    // Its lower bound is another key's: say which, so raising `max_top_k` alone tells
    // what to raise with it.
    if search.candidates < search.max_top_k {
        return invalid(
            "search.candidates",
            format!(
                "must be at least search.max_top_k ({}), got {}",
                search.max_top_k, search.candidates
            ),
        );
    }
    range("search.candidates", search.candidates, 1..=100_000)?;
    range(
        "search.vector_cache_mib",
        search.vector_cache_mib,
        0..=1_048_576,
    )?;
    range(
        "search.keyword_cache_mib",
        search.keyword_cache_mib,
        0..=1_048_576,
    )?;
    // The second stage reads each candidate with a model: a few hundred is already
    // seconds a search.
    range(
        "search.rerank_candidates",
        search.rerank_candidates,
        1..=500,
    )?;
    fraction("search.rerank_weight", search.rerank_weight)?;
    range(
        "search.rerank_cache_mib",
        search.rerank_cache_mib,
        0..=65_536,
    )?;
    // Each seed is one more search.
    range("search.multi_hop_seeds", search.multi_hop_seeds, 0..=5)?;
    fraction("search.multi_hop_weight", search.multi_hop_weight)?;
    Ok(())
}

fn embedding(config: &Config) -> Result<(), ConfigError> {
    let emb = &config.embedding;
    range("embedding.dimensions", emb.dimensions, 16..=4096)?;
    range("embedding.max_length", emb.max_length, 8..=512)?;
    range("embedding.batch_size", emb.batch_size, 1..=1024)?;
    range("embedding.threads", emb.threads, 0..=256)?;
    Ok(())
}

fn scheduler(config: &Config) -> Result<(), ConfigError> {
    let s = &config.scheduler;
    range(
        "scheduler.min_interval_secs",
        s.min_interval_secs,
        1..=DAY_SECS,
    )?;
    range("scheduler.max_per_user", s.max_per_user, 1..=100_000)?;
    range(
        "scheduler.max_agent_schedules_per_user",
        s.max_agent_schedules_per_user,
        1..=100_000,
    )?;
    range(
        "scheduler.approval_timeout_secs",
        s.approval_timeout_secs,
        60..=30 * DAY_SECS,
    )?;
    range("scheduler.max_concurrent", s.max_concurrent, 1..=1024)?;
    range("scheduler.lease_secs", s.lease_secs, 2..=DAY_SECS)?;
    range("scheduler.history_keep", s.history_keep, 1..=100_000)?;
    range(
        "scheduler.default_timeout_secs",
        s.default_timeout_secs,
        1..=DAY_SECS,
    )?;
    range("scheduler.retry_base_secs", s.retry_base_secs, 1..=DAY_SECS)?;
    range(
        "scheduler.pause_after_failures",
        s.pause_after_failures,
        1..=1000,
    )?;
    range(
        "scheduler.shutdown_grace_secs",
        s.shutdown_grace_secs,
        0..=3600,
    )?;
    range("scheduler.change_check_ms", s.change_check_ms, 10..=60_000)?;
    zone("scheduler.default_timezone", &s.default_timezone)?;
    range(
        "scheduler.max_output_bytes",
        s.max_output_bytes,
        1024..=16 * MIB,
    )?;
    range(
        "scheduler.default_jitter_secs",
        s.default_jitter_secs,
        0..=crate::schedule::jitter::MAX_JITTER_SECS,
    )?;
    Ok(())
}

fn runtime(config: &Config) -> Result<(), ConfigError> {
    let rt = &config.runtime;
    match rt.kind {
        RuntimeKind::Openai => {
            http_url("runtime.base_url", &rt.base_url)?;
            not_blank("runtime.model", &rt.model)?;
        }
        RuntimeKind::Http | RuntimeKind::A2a => http_url("runtime.url", &rt.url)?,
        RuntimeKind::None => {}
    }
    if let Some(path) = &rt.auth_header_file {
        not_blank("runtime.auth_header_file", path)?;
        if rt.kind != RuntimeKind::A2a {
            return invalid(
                "runtime.auth_header_file",
                "is for kind = \"a2a\" (openai: api_key_env)",
            );
        }
    }
    if let Some(var) = &rt.api_key_env {
        not_blank("runtime.api_key_env", var)?;
    }
    range("runtime.timeout_secs", rt.timeout_secs, 1..=86_400)?;
    range(
        "runtime.connect_timeout_secs",
        rt.connect_timeout_secs,
        1..=3600,
    )?;
    range("runtime.max_retries", rt.max_retries, 0..=20)?;
    for (key, price) in [
        ("runtime.prompt_price_per_mtok", rt.prompt_price_per_mtok),
        (
            "runtime.completion_price_per_mtok",
            rt.completion_price_per_mtok,
        ),
    ] {
        if input::check_amount(key, price, 1_000_000.0).is_err() {
            return invalid(
                key,
                format!("must be a price from 0 to 1000000, got {price}"),
            );
        }
    }
    range(
        "runtime.context_budget_tokens",
        rt.context_budget_tokens,
        1..=input::MAX_CONTEXT_BUDGET,
    )?;
    range("runtime.default_max_turns", rt.default_max_turns, 1..=1000)?;
    range(
        "runtime.max_response_bytes",
        rt.max_response_bytes,
        1024..=1024 * MIB,
    )?;
    range(
        "runtime.max_tool_calls_per_turn",
        rt.max_tool_calls_per_turn,
        1..=1000,
    )?;
    range(
        "runtime.max_tool_calls_per_run",
        rt.max_tool_calls_per_run,
        1..=100_000,
    )?;
    range(
        "runtime.max_tool_arguments_bytes",
        rt.max_tool_arguments_bytes,
        1024..=16 * MIB,
    )?;
    share(
        "runtime.macro_hint_min_confidence",
        rt.macro_hint_min_confidence,
        true,
    )?;
    Ok(())
}

fn notify(config: &Config) -> Result<(), ConfigError> {
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

fn channels_and_users(config: &Config) -> Result<(), ConfigError> {
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

/// Longest `extraction_instructions`, in bytes.
const MAX_INSTRUCTIONS_BYTES: usize = 4096;

fn instructions(key: &str, text: Option<&str>) -> Result<(), ConfigError> {
    match text {
        Some(text) => input::check_text(key, text, MAX_INSTRUCTIONS_BYTES, input::Lines::Many)
            .or_else(|err| invalid(key, err.reason)),
        None => Ok(()),
    }
}

fn consolidation(config: &Config) -> Result<(), ConfigError> {
    let c = &config.consolidation;
    instructions(
        "consolidation.extraction_instructions",
        c.extraction_instructions.as_deref(),
    )?;
    if c.fact_categories.is_empty() {
        return invalid(
            "consolidation.fact_categories",
            "is empty: name at least one category (an empty list would store no fact)",
        );
    }
    for category in &c.fact_categories {
        if !crate::fact_category::CATEGORIES.contains(&category.as_str()) {
            return invalid(
                "consolidation.fact_categories",
                format!(
                    "`{}` is not one of {}",
                    input::printable(category),
                    crate::fact_category::CATEGORIES.join(", ")
                ),
            );
        }
    }
    not_blank("consolidation.cron", &c.cron)?;
    zone("consolidation.timezone", &c.timezone)?;
    range("consolidation.quiet_minutes", c.quiet_minutes, 0..=525_600)?;
    range(
        "consolidation.summary_budget_tokens",
        c.summary_budget_tokens,
        1..=1_000_000,
    )?;
    range(
        "consolidation.summary_min_turns",
        c.summary_min_turns,
        1..=10_000,
    )?;
    range(
        "consolidation.max_summary_chars",
        c.max_summary_chars,
        100..=1_000_000,
    )?;
    if !(0.0 < c.summary_target_ratio
        && c.summary_target_ratio < c.summary_trigger_ratio
        && c.summary_trigger_ratio <= 1.0)
    {
        return invalid(
            "consolidation.summary_trigger_ratio",
            "need 0 < summary_target_ratio < summary_trigger_ratio <= 1",
        );
    }
    for (key, value) in [
        ("consolidation.fact_retention_days", c.fact_retention_days),
        (
            "consolidation.conversation_retention_days",
            c.conversation_retention_days,
        ),
        (
            "consolidation.outbox_retention_days",
            c.outbox_retention_days,
        ),
    ] {
        range(key, value, 0..=36_500)?;
    }
    if let Some(dir) = &c.snapshot_dir {
        not_blank("consolidation.snapshot_dir", dir)?;
    }
    range("consolidation.snapshot_keep", c.snapshot_keep, 1..=10_000)?;
    range(
        "consolidation.macros_min_support",
        c.macros_min_support,
        1..=1_000_000,
    )?;
    share(
        "consolidation.macros_min_confidence",
        c.macros_min_confidence,
        false,
    )?;
    share("consolidation.macros_decay", c.macros_decay, false)?;
    share("consolidation.macros_floor", c.macros_floor, false)?;
    Ok(())
}

/// The shape of each `[[schedules]]` entry; what it resolves to is `app::check`'s.
fn schedules(config: &Config) -> Result<(), ConfigError> {
    let mut names = std::collections::HashSet::new();
    for (i, entry) in config.schedules.iter().enumerate() {
        let key = |field: &str| format!("schedules[{i}].{field}");
        let Some(name) = &entry.name else {
            return invalid(key("name"), "every config schedule needs a name");
        };
        input::check_name("name", name).or_else(|e| invalid(key("name"), e.reason))?;
        if !names.insert(name.as_str()) {
            return invalid(
                key("name"),
                format!("`{}` is declared twice", input::printable(name)),
            );
        }
        let Some(user) = &entry.user else {
            return invalid(key("user"), "every config schedule needs a user");
        };
        input::check_user_id(user).or_else(|e| invalid(key("user"), e.reason))?;
        if entry.cadences_given() != 1 {
            return invalid(key("cron"), "give exactly one of cron, every, at, when");
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
