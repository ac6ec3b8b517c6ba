//! Every value of the configuration checked on its own and against the others, each with
//! a documented range, so no value from the file can overflow a computation later (a lease
//! in milliseconds, a backoff, a cache size). A bad value is reported by its key path.

mod delivery;
mod memory;
mod runs;

use std::fmt::Display;
use std::ops::RangeInclusive;

use super::{Config, ConfigError};
use crate::input::{self, Lines};
use delivery::{channels_and_users, notify};
use memory::{embedding, memory, search};
use runs::{consolidation, runtime, scheduler, schedules};

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

/// Longest `extraction_instructions`, in bytes.
const MAX_INSTRUCTIONS_BYTES: usize = 4096;

fn instructions(key: &str, text: Option<&str>) -> Result<(), ConfigError> {
    match text {
        Some(text) => input::check_text(key, text, MAX_INSTRUCTIONS_BYTES, input::Lines::Many)
            .or_else(|err| invalid(key, err.reason)),
        None => Ok(()),
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

#[cfg(test)]
mod tests;
