//! `[traces]`: OpenTelemetry spans exported over OTLP/HTTP, off unless an endpoint is set.

use serde::{Deserialize, Serialize};

use super::ConfigError;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TracesConfig {
    /// Where spans go, OTLP over HTTP with protobuf bodies (`http://collector:4318`; a URL
    /// with no path gets `/v1/traces`). Unset: no spans are kept or sent.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of every span.
    pub service_name: String,
    /// Share of traces kept, 0 to 1: a run's spans are all kept or all dropped.
    pub sample_ratio: f64,
    /// How long one export may take, seconds.
    pub timeout_secs: u64,
}

impl Default for TracesConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            service_name: "nightshift".to_string(),
            sample_ratio: 1.0,
            timeout_secs: 10,
        }
    }
}

impl TracesConfig {
    /// The endpoint spans are POSTed to: the configured one, `/v1/traces` added to a URL
    /// with no path.
    pub fn endpoint(&self) -> Option<String> {
        let endpoint = self.otlp_endpoint.as_deref()?;
        match reqwest::Url::parse(endpoint) {
            Ok(mut url) if url.path() == "/" || url.path().is_empty() => {
                url.set_path("/v1/traces");
                Some(url.to_string())
            }
            _ => Some(endpoint.to_string()),
        }
    }
}

pub(super) fn validate(
    config: &TracesConfig,
    http_url: impl Fn(&str, &str) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    let invalid = |key: &str, reason: String| {
        Err(ConfigError::Invalid {
            key: key.to_string(),
            reason,
        })
    };
    if let Some(endpoint) = &config.otlp_endpoint {
        http_url("traces.otlp_endpoint", endpoint)?;
    }
    let name = &config.service_name;
    if name.trim().is_empty() || name.len() > 128 || name.chars().any(char::is_control) {
        return invalid(
            "traces.service_name",
            "must be 1 to 128 bytes on one line".to_string(),
        );
    }
    if !(0.0..=1.0).contains(&config.sample_ratio) {
        return invalid(
            "traces.sample_ratio",
            format!("must be from 0 to 1, got {}", config.sample_ratio),
        );
    }
    if !(1..=300).contains(&config.timeout_secs) {
        return invalid(
            "traces.timeout_secs",
            format!("must be 1..=300, got {}", config.timeout_secs),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_with_no_path_gets_the_traces_path() {
        let with = |endpoint: &str| TracesConfig {
            otlp_endpoint: Some(endpoint.into()),
            ..Default::default()
        };
        assert_eq!(
            with("http://127.0.0.1:4318").endpoint().unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            with("https://otel.example/ingest/traces")
                .endpoint()
                .unwrap(),
            "https://otel.example/ingest/traces"
        );
        assert_eq!(TracesConfig::default().endpoint(), None);
    }
}
