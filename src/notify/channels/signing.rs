//! How a webhook delivery is signed, by the channel's `signing`:
//!
//! - `nightshift` (the default): `X-Nightshift-Signature: sha256=HEX`, HMAC-SHA256 of the
//!   body under the secret's text;
//! - `standard`: the Standard Webhooks scheme (standardwebhooks.com): `webhook-id` (the
//!   message's id, the same on every retry, so a receiver drops a redelivery),
//!   `webhook-timestamp` (Unix seconds at this attempt, so a receiver refuses a stale
//!   one) and `webhook-signature: v1,BASE64`, HMAC-SHA256 of `{id}.{timestamp}.{body}`
//!   under the bytes of the `whsec_…` secret (base64 after its prefix), as the scheme's
//!   libraries verify it.
//!
//! Without a secret nothing is signed.

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::config::WebhookSigning;

/// The prefix of a Standard Webhooks secret.
pub const STANDARD_PREFIX: &str = "whsec_";
/// The key lengths the scheme allows (24 to 64 bytes).
const STANDARD_KEY_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

/// A webhook channel's signer, its key loaded.
#[derive(Clone)]
pub enum Signer {
    None,
    Nightshift(Vec<u8>),
    Standard(Vec<u8>),
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Signer::None => "Signer::None",
            Signer::Nightshift(_) => "Signer::Nightshift(…)",
            Signer::Standard(_) => "Signer::Standard(…)",
        })
    }
}

impl Signer {
    /// The signer `signing` asks for with `secret`: a Standard Webhooks secret must be
    /// `whsec_` and the base64 of 24 to 64 bytes (the reason says what is wrong, never the
    /// secret).
    pub fn new(signing: WebhookSigning, secret: Option<&str>) -> Result<Self, String> {
        Ok(match (signing, secret) {
            (_, None) => Signer::None,
            (WebhookSigning::Nightshift, Some(secret)) => {
                Signer::Nightshift(secret.as_bytes().to_vec())
            }
            (WebhookSigning::Standard, Some(secret)) => Signer::Standard(standard_key(secret)?),
        })
    }

    /// The headers that sign `body` as message `message_id`, sent at `now_secs`.
    pub fn headers(
        &self,
        message_id: &str,
        body: &str,
        now_secs: i64,
    ) -> Vec<(&'static str, String)> {
        match self {
            Signer::None => Vec::new(),
            Signer::Nightshift(key) => vec![(
                "X-Nightshift-Signature",
                format!("sha256={}", hex::encode(hmac(key, body.as_bytes()))),
            )],
            Signer::Standard(key) => {
                let signed = format!("{message_id}.{now_secs}.{body}");
                let signature =
                    base64::engine::general_purpose::STANDARD.encode(hmac(key, signed.as_bytes()));
                vec![
                    ("webhook-id", message_id.to_string()),
                    ("webhook-timestamp", now_secs.to_string()),
                    ("webhook-signature", format!("v1,{signature}")),
                ]
            }
        }
    }
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// The key bytes of a Standard Webhooks secret (`whsec_` then base64, padded or not).
pub fn standard_key(secret: &str) -> Result<Vec<u8>, String> {
    let Some(encoded) = secret.strip_prefix(STANDARD_PREFIX) else {
        return Err(format!(
            "a Standard Webhooks secret starts with `{STANDARD_PREFIX}` (signing = \"standard\")"
        ));
    };
    let key = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim_end_matches('='))
        .or_else(|_| {
            base64::engine::general_purpose::STANDARD_NO_PAD.decode(encoded.trim_end_matches('='))
        })
        .map_err(|_| format!("the secret after `{STANDARD_PREFIX}` is not base64"))?;
    if !STANDARD_KEY_BYTES.contains(&key.len()) {
        return Err(format!(
            "the secret is {} bytes; the scheme takes {} to {}",
            key.len(),
            STANDARD_KEY_BYTES.start(),
            STANDARD_KEY_BYTES.end()
        ));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_key_the_scheme_allows_reads_back_padded_or_not(key in proptest::collection::vec(any::<u8>(), 24..=64)) {
            let padded = base64::engine::general_purpose::STANDARD.encode(&key);
            prop_assert_eq!(standard_key(&format!("whsec_{padded}")).unwrap(), key.clone());
            let bare = padded.trim_end_matches('=');
            prop_assert_eq!(standard_key(&format!("whsec_{bare}")).unwrap(), key);
        }

        #[test]
        fn any_other_secret_is_refused_without_showing_it(secret in "\\PC{0,120}") {
            match standard_key(&secret) {
                Ok(key) => {
                    prop_assert!(secret.starts_with(STANDARD_PREFIX));
                    prop_assert!(STANDARD_KEY_BYTES.contains(&key.len()));
                }
                Err(reason) => {
                    let shown = secret.strip_prefix(STANDARD_PREFIX).unwrap_or(&secret);
                    prop_assert!(shown.len() < 4 || !reason.contains(shown), "{reason}");
                }
            }
        }
    }

    #[test]
    fn short_and_long_keys_and_other_prefixes_are_refused() {
        let b64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(vec![7u8; n]);
        assert!(standard_key(&format!("whsec_{}", b64(23))).is_err());
        assert!(standard_key(&format!("whsec_{}", b64(65))).is_err());
        assert!(standard_key(&b64(32)).is_err());
        assert!(standard_key("whsec_not base64!").is_err());
    }

    /// The scheme's own example (standard-webhooks' spec and its libraries' tests).
    #[test]
    fn the_schemes_published_example_signs_the_same() {
        let signer = Signer::new(
            WebhookSigning::Standard,
            Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        )
        .unwrap();
        let headers = signer.headers(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            r#"{"test": 2432232314}"#,
            1614265330,
        );
        assert_eq!(
            headers[2],
            (
                "webhook-signature",
                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".to_string()
            )
        );
    }
}
