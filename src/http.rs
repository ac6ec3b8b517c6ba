//! HTTP details shared by the runtime clients and the notification channels.

use std::time::Duration;

/// The wait a `Retry-After` header asks for, when it gives seconds.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// What a request's error says with its causes (a timeout, a reset), without the URL: the
/// top error alone says only "error sending request" or "error decoding response body".
pub fn error_text(err: reqwest::Error) -> String {
    crate::error::error_chain(&err.without_url())
}

/// Why a body could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// More than the limit arrived; the rest was not read.
    TooLarge { limit: usize },
    /// The connection failed or timed out mid-body.
    Read(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge { limit } => {
                write!(f, "the answer is larger than the limit of {limit} bytes")
            }
            BodyError::Read(reason) => write!(f, "the answer could not be read: {reason}"),
        }
    }
}

/// Reads a response body chunk by chunk, at most `limit` bytes: a peer that sends more is
/// cut off there, so memory stays bounded whatever it sends.
pub async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, BodyError> {
    if response
        .content_length()
        .is_some_and(|len| len > limit as u64)
    {
        return Err(BodyError::TooLarge { limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| BodyError::Read(error_text(e)))?
    {
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The start of a body, at most `limit` bytes: whatever arrived before the limit, its end,
/// or a failure. For error answers, whose first words say what went wrong even when the
/// rest is too long or never comes.
pub async fn read_prefix(mut response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(limit - body.len());
                body.extend_from_slice(&chunk[..take]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    body
}
