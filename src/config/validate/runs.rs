//! `[scheduler]`, `[runtime]`, `[consolidation]`, `[[schedules]]`: the runs; split off for length.

use super::{http_url, instructions, invalid, not_blank, range, share, zone, DAY_SECS, MIB};
use crate::config::{Config, ConfigError, RuntimeKind};
use crate::input;

pub(super) fn scheduler(config: &Config) -> Result<(), ConfigError> {
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

pub(super) fn runtime(config: &Config) -> Result<(), ConfigError> {
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

pub(super) fn consolidation(config: &Config) -> Result<(), ConfigError> {
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
pub(super) fn schedules(config: &Config) -> Result<(), ConfigError> {
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
