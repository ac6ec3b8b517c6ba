//! What `nightshift config check` checks, and `nightshift run` before it touches anything:
//! everything the configuration names must work. [`structure`] needs the file and the
//! calendar files it names (cron expressions, calendars, every `[[schedules]]` entry
//! resolved as it would be stored, channels and their contexts); [`environment`] also looks at this machine (the model files, the
//! ONNX Runtime library, token and secret files, environment variables). Every problem is
//! a configuration error naming its key.

use serde::Serialize;

use crate::config::{Config, ConfigError, RuntimeKind};
use crate::notify::channels::check_context;
use crate::notify::router::split_channel;
use crate::schedule::cron::CronSpec;
use crate::schedule::sync::{check_entries, Entry};
use crate::schedule::ScheduleError;

/// What a check found that is worth saying but does not stop `run`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CheckReport {
    /// `[[schedules]]` entries that would be synced.
    pub schedules: usize,
    pub channels: usize,
    pub warnings: Vec<String>,
}

fn invalid(key: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        reason: reason.into(),
    }
}

/// A channel reference (`ID` or `ID:CONTEXT`) at `key`: the channel must be configured (or
/// be the built-in `log`), and the context must suit its kind.
fn channel_ref(config: &Config, key: &str, channel: &str) -> Result<(), ConfigError> {
    let (id, context) = split_channel(channel);
    let Some(settings) = config.channels.get(&id) else {
        if id == "log" {
            return Ok(());
        }
        return Err(invalid(
            key,
            format!(
                "no channel `{}` is configured",
                crate::input::printable(&id)
            ),
        ));
    };
    if let Some(context) = context {
        check_context(settings.kind, &context).map_err(|reason| invalid(key, reason))?;
    }
    Ok(())
}

/// Everything that can be checked from the file alone.
pub fn structure(config: &Config) -> Result<CheckReport, ConfigError> {
    let mut report = CheckReport {
        channels: config.channels.len(),
        ..Default::default()
    };
    if let Err(err) = CronSpec::parse(&config.consolidation.cron) {
        return Err(invalid("consolidation.cron", err.to_string()));
    }
    for (user, settings) in &config.users {
        if let Some(channel) = &settings.default_channel {
            channel_ref(
                config,
                &format!("users.{}.default_channel", crate::input::printable(user)),
                channel,
            )?;
        }
    }
    let limits = super::store_limits(config)?;
    let now = chrono::Utc::now().timestamp_millis();
    let entries = check_entries(
        &config.schedules,
        now,
        &config.scheduler.default_timezone,
        &limits,
    )
    .map_err(|err| match err {
        ScheduleError::Config { key, name, reason } => {
            invalid(key, format!("schedule `{name}`: {reason}"))
        }
        other => invalid("schedules", other.to_string()),
    })?;
    for (i, entry) in entries.iter().enumerate() {
        if let Entry::Expired { name, reason } = entry {
            report.warnings.push(format!(
                "schedules[{i}] (`{name}`): {reason}; it will not be created"
            ));
        }
    }
    for (i, spec) in config.schedules.iter().enumerate() {
        if let Some(channel) = &spec.channel {
            channel_ref(config, &format!("schedules[{i}].channel"), channel)?;
        }
    }
    let mut per_user = std::collections::BTreeMap::<&str, i64>::new();
    for spec in &config.schedules {
        *per_user
            .entry(spec.user.as_deref().unwrap_or_default())
            .or_default() += 1;
    }
    if let Some((user, count)) = per_user
        .into_iter()
        .find(|(_, count)| *count > config.scheduler.max_per_user)
    {
        return Err(invalid(
            "schedules",
            format!(
                "user `{}` has {count} config schedules, over scheduler.max_per_user ({})",
                crate::input::printable(user),
                config.scheduler.max_per_user
            ),
        ));
    }
    report.schedules = entries.len();
    Ok(report)
}

/// Checks this machine provides what the configuration names: run where the service runs
/// (its environment, its `$CREDENTIALS_DIRECTORY`).
pub fn environment(config: &Config) -> Result<(), ConfigError> {
    super::db_target(config).map_err(|err| invalid("database", err.to_string()))?;
    crate::embed::from_config(&config.embedding)
        .map_err(|err| invalid("embedding", err.to_string()))?;
    if config.runtime.kind == RuntimeKind::Openai {
        if let Some(var) = &config.runtime.api_key_env {
            if std::env::var_os(var).is_none() {
                return Err(invalid(
                    "runtime.api_key_env",
                    format!("names `{var}`, which is not set in this environment"),
                ));
            }
        }
    }
    if let Some(file) = &config.runtime.auth_header_file {
        let path = crate::config::credential_path(file);
        if let Err(e) = std::fs::read_to_string(&path) {
            return Err(invalid(
                "runtime.auth_header_file",
                format!("cannot read {}: {e}", path.display()),
            ));
        }
    }
    crate::notify::channels::Channels::from_config(
        &config.channels,
        std::time::Duration::from_secs(config.notify.timeout_secs),
    )
    .map_err(|err| invalid("channels", err.to_string()))?;
    for (name, source) in &config.sources {
        crate::sources::verifier(name, source)
            .map_err(|err| invalid(format!("sources.{name}"), err.to_string()))?;
    }
    Ok(())
}

/// Both: what `config check` runs.
pub fn check(config: &Config) -> Result<CheckReport, ConfigError> {
    config.validate()?;
    let report = structure(config)?;
    environment(config)?;
    Ok(report)
}
