//! POSTing (or GETting) JSON with timeouts and retries: connection failures, 429 and 5xx
//! are retried with exponential backoff, honouring Retry-After; other answers are final.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::RuntimeError;
use crate::config::RuntimeConfig;

/// Longest Retry-After honoured; a server asking for more gets this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
const BASE_BACKOFF: Duration = Duration::from_millis(500);
/// Bytes of an error answer read (300 characters of it are kept).
const ERROR_BODY_LIMIT: usize = 16 * 1024;

#[derive(Clone)]
pub(super) struct JsonClient {
    client: reqwest::Client,
    max_retries: u32,
    bearer: Option<String>,
    /// Largest answer read; a larger one fails the request without being read whole.
    max_response_bytes: usize,
}

impl JsonClient {
    pub(super) fn new(
        config: &RuntimeConfig,
        bearer: Option<String>,
    ) -> Result<Self, RuntimeError> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.timeout_secs))
            .connect_timeout(Duration::from_secs(config.connect_timeout_secs))
            .build()
            .map_err(|e| RuntimeError::Config(e.to_string()))?;
        Ok(Self {
            client,
            max_retries: config.max_retries,
            bearer,
            max_response_bytes: config.max_response_bytes,
        })
    }

    pub(super) async fn post(&self, url: &str, body: &Value) -> Result<Value, RuntimeError> {
        self.send(url, Some(body), &HeaderMap::new()).await
    }

    /// POSTs `body` (GETs when it is `None`) with `headers` besides the client's own, and
    /// reads a JSON answer.
    pub(super) async fn send(
        &self,
        url: &str,
        body: Option<&Value>,
        headers: &HeaderMap,
    ) -> Result<Value, RuntimeError> {
        // The span this request is made under (the model call's), for the runtime's own
        // spans to join the run's trace.
        let trace = crate::traces::trace_headers();
        let mut attempt = 0;
        loop {
            let mut request = match body {
                Some(body) => self.client.post(url).json(body),
                None => self.client.get(url),
            };
            request = request.headers(headers.clone());
            for (name, value) in &trace {
                request = request.header(*name, value);
            }
            if let Some(token) = &self.bearer {
                request = request.bearer_auth(token);
            }
            let wait = match request.send().await {
                Err(err) => {
                    let failure = RuntimeError::Unreachable {
                        url: url.to_string(),
                        // Without the URL reqwest repeats; the cause chain says what failed.
                        reason: crate::error::error_chain(&err),
                    };
                    if attempt >= self.max_retries {
                        return Err(failure);
                    }
                    tracing::warn!(%url, error = %failure, "runtime request failed; retrying");
                    None
                }
                Ok(response) => {
                    let status = response.status();
                    if status.is_success() {
                        let body = crate::http::read_body(response, self.max_response_bytes)
                            .await
                            .map_err(|e| RuntimeError::BadAnswer {
                                url: url.to_string(),
                                reason: match e {
                                    crate::http::BodyError::TooLarge { .. } => {
                                        format!("{e} (runtime.max_response_bytes)")
                                    }
                                    other => other.to_string(),
                                },
                            })?;
                        return serde_json::from_slice(&body).map_err(|e| {
                            RuntimeError::BadAnswer {
                                url: url.to_string(),
                                reason: format!("not JSON ({e})"),
                            }
                        });
                    }
                    let retry_after = crate::http::retry_after(response.headers())
                        .map(|d| d.min(MAX_RETRY_AFTER));
                    // Only the start of an error answer is kept.
                    let body = String::from_utf8_lossy(
                        &crate::http::read_prefix(response, ERROR_BODY_LIMIT).await,
                    )
                    .into_owned();
                    let failure = RuntimeError::Status {
                        url: url.to_string(),
                        status: status.as_u16(),
                        body: crate::text::truncate_chars(body.trim(), 300).to_string(),
                    };
                    let retryable = status.as_u16() == 429 || status.is_server_error();
                    if !retryable || attempt >= self.max_retries {
                        return Err(failure);
                    }
                    tracing::warn!(%url, status = status.as_u16(), "runtime busy or failing; retrying");
                    retry_after
                }
            };
            let backoff = wait.unwrap_or(BASE_BACKOFF * 2u32.saturating_pow(attempt));
            tokio::time::sleep(backoff).await;
            attempt += 1;
        }
    }
}
