//! The configuration checks' tests: every key named, every bound at its edges.
use super::*;
use crate::config::RerankMode;
use proptest::prelude::*;

/// Every numeric key of the file, with the section it is in.
const NUMERIC_KEYS: &[(&str, &str)] = &[
    ("database", "busy_timeout_ms"),
    ("database", "pool_size"),
    ("database", "sync_interval_secs"),
    ("memory", "max_text_bytes"),
    ("memory", "chunk_chars"),
    ("memory", "chunk_overlap_chars"),
    ("memory", "sentence_vectors"),
    ("memory", "recall_limit"),
    ("memory", "max_payload_bytes"),
    ("memory", "max_import_bytes"),
    ("memory", "max_batch_events"),
    ("memory", "max_import_line_bytes"),
    ("memory", "max_notes_per_user"),
    ("memory", "max_state_value_bytes"),
    ("memory", "max_state_keys"),
    ("memory", "deleted_note_retention_days"),
    ("search", "default_top_k"),
    ("search", "max_top_k"),
    ("search", "candidates"),
    ("search", "vector_cache_mib"),
    ("search", "keyword_cache_mib"),
    ("search", "rerank_candidates"),
    ("search", "rerank_cache_mib"),
    ("search", "multi_hop_seeds"),
    ("embedding", "dimensions"),
    ("embedding", "max_length"),
    ("embedding", "batch_size"),
    ("embedding", "threads"),
    ("scheduler", "min_interval_secs"),
    ("scheduler", "max_per_user"),
    ("scheduler", "max_agent_schedules_per_user"),
    ("scheduler", "approval_timeout_secs"),
    ("scheduler", "max_concurrent"),
    ("scheduler", "lease_secs"),
    ("scheduler", "history_keep"),
    ("scheduler", "default_timeout_secs"),
    ("scheduler", "retry_base_secs"),
    ("scheduler", "pause_after_failures"),
    ("scheduler", "shutdown_grace_secs"),
    ("scheduler", "change_check_ms"),
    ("scheduler", "max_output_bytes"),
    ("scheduler", "default_jitter_secs"),
    ("runtime", "timeout_secs"),
    ("runtime", "connect_timeout_secs"),
    ("runtime", "max_retries"),
    ("runtime", "context_budget_tokens"),
    ("runtime", "default_max_turns"),
    ("runtime", "max_response_bytes"),
    ("runtime", "max_tool_calls_per_turn"),
    ("runtime", "max_tool_calls_per_run"),
    ("runtime", "max_tool_arguments_bytes"),
    ("notify", "failure_notice_after"),
    ("notify", "max_attempts"),
    ("notify", "backoff_base_ms"),
    ("notify", "backoff_max_ms"),
    ("notify", "ttl_high_secs"),
    ("notify", "ttl_normal_secs"),
    ("notify", "ttl_low_secs"),
    ("notify", "max_in_flight"),
    ("notify", "timeout_secs"),
    ("notify", "max_message_chars"),
    ("notify", "max_pending_per_channel"),
    ("consolidation", "quiet_minutes"),
    ("consolidation", "summary_budget_tokens"),
    ("consolidation", "summary_min_turns"),
    ("consolidation", "max_summary_chars"),
    ("consolidation", "fact_retention_days"),
    ("consolidation", "conversation_retention_days"),
    ("consolidation", "outbox_retention_days"),
    ("consolidation", "snapshot_keep"),
    ("consolidation", "macros_min_support"),
    ("server", "max_body_bytes"),
    ("server", "request_timeout_secs"),
    ("server", "max_concurrent_requests"),
    ("server", "rate_burst"),
    ("server", "header_read_timeout_secs"),
    ("server", "max_connections"),
    ("artifacts", "inline_max_bytes"),
    ("artifacts", "max_artifact_bytes"),
    ("artifacts", "max_bytes_per_user"),
    ("artifacts", "gc_grace_secs"),
    ("traces", "timeout_secs"),
];

proptest! {
    /// Any integer for any numeric key gives a valid configuration or an error naming
    /// that key; what is accepted stays within the bounds the code computes with
    /// (milliseconds of a lease or a timeout never overflow).
    #[test]
    fn any_integer_for_any_key(
        index in 0..NUMERIC_KEYS.len(),
        value in prop_oneof![any::<i64>(), -2i64..100_000, Just(i64::MAX), Just(i64::MIN)],
    ) {
        let (section, key) = NUMERIC_KEYS[index];
        let text = format!("[{section}]\n{key} = {value}\n");
        match Config::from_toml(&text) {
            Ok(config) => {
                let s = &config.scheduler;
                prop_assert!(s.lease_secs.checked_mul(1000).is_some());
                prop_assert!(s.default_timeout_secs.checked_mul(1000).is_some());
                prop_assert!(config.notify.ttl_high_secs.checked_mul(1000).is_some());
                prop_assert!(config.consolidation.fact_retention_days.checked_mul(86_400_000).is_some());
                prop_assert!(config.consolidation.quiet_minutes.checked_mul(60_000).is_some());
            }
            Err(err) => {
                let text = err.to_string();
                prop_assert!(text.contains(key), "{text}");
            }
        }
    }

    /// Any text for `search.rerank` is one of the stages or an error showing the key and
    /// listing the stages; never a panic, never another stage.
    #[test]
    fn any_text_for_the_rerank_stage(value in prop_oneof![
        any::<String>(),
        proptest::sample::select(RerankMode::ALL).prop_map(str::to_string),
        "[a-z-]{0,20}",
    ]) {
        let text = format!("[search]\nrerank = {}\n", toml::Value::String(value.clone()));
        match Config::from_toml(&text) {
            Ok(config) => prop_assert_eq!(config.search.rerank.as_str(), value.as_str()),
            Err(err) => {
                let text = err.to_string();
                prop_assert!(!RerankMode::ALL.contains(&value.as_str()), "{text}");
                // TOML's own error: the line with the key, and the stages allowed.
                prop_assert!(text.contains("rerank ="), "{text}");
                prop_assert!(text.contains("late-interaction"), "{text}");
            }
        }
        prop_assert_eq!(value.parse::<RerankMode>().is_ok(), RerankMode::ALL.contains(&value.as_str()));
    }

    /// Any text for the digest's time and any share for the traces' sampling: accepted
    /// as what it says, or an error naming the key.
    #[test]
    fn any_digest_time_or_sample_ratio(
        time in prop_oneof![any::<String>(), "[0-9]{1,2}:[0-9]{2}", "[0-9: ]{0,6}"],
        ratio in prop_oneof![any::<f64>(), -1.0f64..2.0],
    ) {
        let text = format!("[notify]\ndigest_at = {}\n", toml::Value::String(time.clone()));
        match Config::from_toml(&text) {
            Ok(config) => prop_assert!(crate::time_of_day::TimeOfDay::parse(&config.notify.digest_at).is_ok()),
            Err(err) => prop_assert!(err.to_string().contains("digest_at"), "{err}"),
        }
        let text = format!("[traces]\nsample_ratio = {}\n", toml::Value::Float(ratio));
        match Config::from_toml(&text) {
            Ok(config) => prop_assert!((0.0..=1.0).contains(&config.traces.sample_ratio)),
            Err(err) => prop_assert!(err.to_string().contains("sample_ratio"), "{err}"),
        }
    }

    /// Any text at all is a configuration or an error; never a panic.
    #[test]
    fn any_text_is_a_config_or_an_error(text in any::<String>()) {
        let _ = Config::from_toml(&text);
    }
}

/// The list above names real keys (a typo would make the property test vacuous).
#[test]
fn every_listed_key_exists() {
    for (section, key) in NUMERIC_KEYS {
        let text = format!("[{section}]\n{key} = -1\n");
        let err = Config::from_toml(&text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!err.contains("unknown field"), "[{section}] {key}: {err}");
    }
}

#[test]
fn an_a2a_runtime_needs_a_url_and_takes_an_auth_header_file() {
    let err = Config::from_toml("[runtime]\nkind = \"a2a\"\n").unwrap_err();
    assert!(err.to_string().contains("runtime.url"), "{err}");
    let config = Config::from_toml(
        "[runtime]\nkind = \"a2a\"\nurl = \"https://agent.example/.well-known/agent-card.json\"\n\
         auth_header_file = \"a2a-auth\"\n",
    )
    .unwrap();
    assert_eq!(config.runtime.auth_header_file.as_deref(), Some("a2a-auth"));
    // Only an A2A runtime sends it.
    let err = Config::from_toml(
        "[runtime]\nkind = \"http\"\nurl = \"http://127.0.0.1:1/goal\"\nauth_header_file = \"f\"\n",
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("runtime.auth_header_file"),
        "{err}"
    );
}

#[test]
fn a_traces_endpoint_that_is_not_an_http_url_is_named() {
    for endpoint in ["ftp://collector:4318", "collector:4318", "", "http://"] {
        let text = format!(
            "[traces]\notlp_endpoint = {}\n",
            toml::Value::String(endpoint.into())
        );
        let err = Config::from_toml(&text).unwrap_err().to_string();
        assert!(err.contains("traces.otlp_endpoint"), "{endpoint}: {err}");
    }
    let text = "[traces]\notlp_endpoint = \"https://otel.example:4318\"\n";
    assert!(Config::from_toml(text).is_ok());
}

#[test]
fn the_chat_channels_need_what_their_service_needs() {
    let cases = [
        ("[channels.d]\nkind = \"discord\"\n", "channels.d.url"),
        ("[channels.t]\nkind = \"teams\"\n", "channels.t.url"),
        (
            "[channels.p]\nkind = \"pushover\"\n",
            "channels.p.secret_file",
        ),
        ("[channels.a]\nkind = \"apprise\"\n", "channels.a.url"),
        (
            "[channels.m]\nkind = \"matrix\"\nurl = \"https://m.example.org\"\n",
            "channels.m.url",
        ),
        (
            "[channels.p]\nkind = \"pushover\"\nsecret_env = \"T\"\npriority = 3\n",
            "channels.p.priority",
        ),
        (
            "[channels.h]\nkind = \"webhook\"\nurl = \"https://example.org\"\npriority = 1\n",
            "channels.h.priority",
        ),
    ];
    for (text, key) in cases {
        match Config::from_toml(text) {
            Err(ConfigError::Invalid { key: got, .. }) => assert_eq!(got, key, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    for ok in [
        "[channels.d]\nkind = \"discord\"\nsecret_file = \"discord-webhook\"\n",
        "[channels.t]\nkind = \"teams\"\nurl = \"https://example.org/w\"\n",
        "[channels.p]\nkind = \"pushover\"\nsecret_env = \"T\"\npriority = -2\n",
        "[channels.a]\nkind = \"apprise\"\nurl = \"http://apprise:8000/notify/k\"\n",
        "[channels.m]\nkind = \"matrix\"\nurl = \"https://m.example.org\"\nsecret_env = \"T\"\n",
    ] {
        Config::from_toml(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}
