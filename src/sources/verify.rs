//! Whether a delivery comes from the source's sender, by the source's scheme, and what
//! signed part of it names the delivery (so a redelivery is one event). Every comparison
//! of a signature is constant-time; every timestamp is held to the source's tolerance both
//! ways, so a captured delivery cannot be replayed later, nor one signed for the future
//! kept. GitHub signs neither a time nor its delivery header: its deliveries are known by
//! their body's hash, so a captured one replayed under a new `X-GitHub-Delivery` starts
//! nothing new.

use axum::http::HeaderMap;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::SourceError;
use crate::config::SourceVerify;

/// What a verified delivery is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// What names this delivery, from its headers, when its scheme has it there (Stripe's
    /// and Slack's are in the body: see `payload`).
    pub delivery_id: Option<String>,
}

/// A source's key, ready to check deliveries.
pub struct Verifier {
    scheme: SourceVerify,
    key: Vec<u8>,
    tolerance_secs: i64,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Verifier({}, …)", self.scheme.as_str())
    }
}

fn refused(reason: impl Into<String>) -> SourceError {
    SourceError::Refused(reason.into())
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Result<&'h str, SourceError> {
    headers
        .get(name)
        .ok_or_else(|| refused(format!("the delivery has no `{name}` header")))?
        .to_str()
        .map_err(|_| refused(format!("the `{name}` header is not text")))
}

fn mac(key: &[u8]) -> Hmac<Sha256> {
    Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length")
}

/// Whether `signature` is the HMAC-SHA256 of `parts` under `key`, in constant time.
fn signs(key: &[u8], parts: &[&[u8]], signature: &[u8]) -> bool {
    let mut mac = mac(key);
    for part in parts {
        mac.update(part);
    }
    mac.verify_slice(signature).is_ok()
}

impl Verifier {
    /// The verifier for `scheme` with the source's `secret` (a `whsec_…` one for
    /// `standard`); the reason never shows the secret.
    pub fn new(scheme: SourceVerify, secret: &str, tolerance_secs: u64) -> Result<Self, String> {
        if secret.is_empty() {
            return Err("the secret is empty".to_string());
        }
        let key = match scheme {
            SourceVerify::Standard => crate::notify::channels::signing::standard_key(secret)?,
            _ => secret.as_bytes().to_vec(),
        };
        Ok(Self {
            scheme,
            key,
            tolerance_secs: tolerance_secs.min(i64::MAX as u64) as i64,
        })
    }

    /// Checks a delivery of `body` with `headers`, received at `now_secs`.
    pub fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now_secs: i64,
    ) -> Result<Verified, SourceError> {
        match self.scheme {
            SourceVerify::Github => self.github(headers, body),
            SourceVerify::Stripe => self.stripe(headers, body, now_secs),
            SourceVerify::Slack => self.slack(headers, body, now_secs),
            SourceVerify::Standard => self.standard(headers, body, now_secs),
            SourceVerify::Bearer => self.bearer(headers),
        }
    }

    fn fresh(&self, timestamp: &str, now_secs: i64) -> Result<i64, SourceError> {
        let at: i64 = timestamp
            .trim()
            .parse()
            .map_err(|_| refused("the signed timestamp is not a number of seconds"))?;
        let skew = now_secs.saturating_sub(at);
        if skew.unsigned_abs() > self.tolerance_secs as u64 {
            return Err(refused(if skew > 0 {
                format!(
                    "the delivery was signed {skew} s ago, over tolerance_secs ({})",
                    self.tolerance_secs
                )
            } else {
                format!(
                    "the delivery is signed {} s in the future, over tolerance_secs ({})",
                    skew.unsigned_abs(),
                    self.tolerance_secs
                )
            }));
        }
        Ok(at)
    }

    fn github(&self, headers: &HeaderMap, body: &[u8]) -> Result<Verified, SourceError> {
        let given = header(headers, "x-hub-signature-256")?;
        let signature = given
            .strip_prefix("sha256=")
            .and_then(|hex_text| hex::decode(hex_text).ok())
            .ok_or_else(|| refused("X-Hub-Signature-256 is not `sha256=HEX`"))?;
        if !signs(&self.key, &[body], &signature) {
            return Err(refused("the signature does not match the body"));
        }
        Ok(Verified {
            delivery_id: Some(format!("sha256:{}", hex::encode(Sha256::digest(body)))),
        })
    }

    fn stripe(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now_secs: i64,
    ) -> Result<Verified, SourceError> {
        let given = header(headers, "stripe-signature")?;
        let mut timestamp = None;
        let mut signatures = Vec::new();
        for item in given.split(',') {
            match item.trim().split_once('=') {
                Some(("t", t)) => timestamp = Some(t),
                Some(("v1", v1)) => signatures.extend(hex::decode(v1).ok()),
                _ => {}
            }
        }
        let timestamp =
            timestamp.ok_or_else(|| refused("Stripe-Signature has no timestamp (t=)"))?;
        if signatures.is_empty() {
            return Err(refused("Stripe-Signature has no v1 signature"));
        }
        // Stripe lists one signature per secret while one is being rolled: any will do.
        let signed = signatures
            .iter()
            .any(|s| signs(&self.key, &[timestamp.as_bytes(), b".", body], s));
        if !signed {
            return Err(refused("no v1 signature matches the body"));
        }
        self.fresh(timestamp, now_secs)?;
        Ok(Verified { delivery_id: None })
    }

    fn slack(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now_secs: i64,
    ) -> Result<Verified, SourceError> {
        let timestamp = header(headers, "x-slack-request-timestamp")?;
        let signature = header(headers, "x-slack-signature")?
            .strip_prefix("v0=")
            .and_then(|hex_text| hex::decode(hex_text).ok())
            .ok_or_else(|| refused("X-Slack-Signature is not `v0=HEX`"))?;
        if !signs(
            &self.key,
            &[b"v0:", timestamp.as_bytes(), b":", body],
            &signature,
        ) {
            return Err(refused("the signature does not match the body"));
        }
        self.fresh(timestamp, now_secs)?;
        Ok(Verified { delivery_id: None })
    }

    fn standard(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now_secs: i64,
    ) -> Result<Verified, SourceError> {
        let id = header(headers, "webhook-id")?;
        let timestamp = header(headers, "webhook-timestamp")?;
        let given = header(headers, "webhook-signature")?;
        // Space-separated `v1,BASE64` entries, one per secret while one is being rolled.
        let signed = given.split(' ').any(|entry| {
            entry
                .strip_prefix("v1,")
                .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
                .is_some_and(|signature| {
                    signs(
                        &self.key,
                        &[id.as_bytes(), b".", timestamp.as_bytes(), b".", body],
                        &signature,
                    )
                })
        });
        if !signed {
            return Err(refused("no v1 signature matches the body"));
        }
        self.fresh(timestamp, now_secs)?;
        Ok(Verified {
            delivery_id: Some(id.to_string()),
        })
    }

    fn bearer(&self, headers: &HeaderMap) -> Result<Verified, SourceError> {
        let given = header(headers, "authorization")?;
        // The scheme's name is case-insensitive (RFC 9110).
        let token = given
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token)
            .ok_or_else(|| refused("Authorization is not `Bearer TOKEN`"))?;
        // Digests compared whole: the time taken says nothing about the token.
        let same = Sha256::digest(token.trim().as_bytes())
            .iter()
            .zip(Sha256::digest(&self.key).iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
        if !same {
            return Err(refused("the bearer token is not this source's"));
        }
        let delivery_id = match headers.get("idempotency-key") {
            Some(value) => Some(
                value
                    .to_str()
                    .map_err(|_| SourceError::bad_input("the Idempotency-Key header is not text"))?
                    .to_string(),
            ),
            None => None,
        };
        Ok(Verified { delivery_id })
    }
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
