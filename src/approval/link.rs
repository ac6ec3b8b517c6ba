//! Approve and deny links: they work without logging in, so each carries its own proof.
//! A link is `APPROVAL_ID.ACTION.EXPIRES.SIGNATURE`, the signature an HMAC-SHA256 of the
//! rest under a key made by the migration that created approvals (kept in the database,
//! shared by every worker, never shown). A link is single-use because an approval is
//! answered once; it expires with its approval; a changed character fails it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// What a link does when it is followed and confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkAction {
    Approve,
    Deny,
}

impl LinkAction {
    fn code(self) -> &'static str {
        match self {
            LinkAction::Approve => "approve",
            LinkAction::Deny => "deny",
        }
    }

    pub fn decision(self) -> super::Decision {
        match self {
            LinkAction::Approve => super::Decision::Approve,
            LinkAction::Deny => super::Decision::Deny,
        }
    }
}

/// Why a link was refused. Every door shows the same words for each: a link's holder
/// learns nothing about approvals it was not made for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("this approval link is not valid (mistyped or cut short?)")]
    Invalid,
    #[error("this approval link has expired")]
    Expired,
}

/// A verified link's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkClaims {
    pub approval_id: String,
    pub action: LinkAction,
    pub expires_at: i64,
}

/// Longest link token read; anything longer is not one of ours.
const MAX_TOKEN_BYTES: usize = 256;
/// Domain separation: the key signs approval links and nothing else.
const CONTEXT: &[u8] = b"nightshift approval link v1";

/// The key links are signed with.
#[derive(Clone)]
pub struct LinkKey(Vec<u8>);

impl std::fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkKey(..)")
    }
}

impl LinkKey {
    /// The key from its stored hex form; `None` when it is not 32 or more bytes of hex.
    pub fn from_hex(hex: &str) -> Option<Self> {
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        (bytes.len() >= 32).then_some(Self(bytes))
    }

    fn mac(&self, approval_id: &str, action: LinkAction, expires_at: i64) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(CONTEXT);
        for part in [approval_id, action.code(), &expires_at.to_string()] {
            mac.update(&[0]);
            mac.update(part.as_bytes());
        }
        mac
    }

    /// The link token for answering `approval_id` with `action`, good until `expires_at`.
    pub fn sign(&self, approval_id: &str, action: LinkAction, expires_at: i64) -> String {
        let signature = self
            .mac(approval_id, action, expires_at)
            .finalize()
            .into_bytes();
        format!(
            "{approval_id}.{}.{expires_at}.{}",
            action.code(),
            URL_SAFE_NO_PAD.encode(signature)
        )
    }

    /// What `token` says, if this key signed it and it has not expired at `now`.
    pub fn verify(&self, token: &str, now: i64) -> Result<LinkClaims, LinkError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(LinkError::Invalid);
        }
        let mut parts = token.split('.');
        let (Some(id), Some(action), Some(expires), Some(signature), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(LinkError::Invalid);
        };
        let action = match action {
            "approve" => LinkAction::Approve,
            "deny" => LinkAction::Deny,
            _ => return Err(LinkError::Invalid),
        };
        // The canonical form only: `+5` or `05` would sign differently anyway, but are
        // refused before the signature is looked at.
        let expires_at: i64 = expires
            .parse()
            .ok()
            .filter(|n: &i64| n.to_string() == expires)
            .ok_or(LinkError::Invalid)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| LinkError::Invalid)?;
        // Constant-time comparison.
        self.mac(id, action, expires_at)
            .verify_slice(&signature)
            .map_err(|_| LinkError::Invalid)?;
        if now >= expires_at {
            return Err(LinkError::Expired);
        }
        Ok(LinkClaims {
            approval_id: id.to_string(),
            action,
            expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> LinkKey {
        LinkKey::from_hex(&"ab".repeat(32)).unwrap()
    }

    #[test]
    fn a_signed_link_verifies_until_it_expires() {
        let token = key().sign("apr-1", LinkAction::Approve, 1_000);
        let claims = key().verify(&token, 999).unwrap();
        assert_eq!(claims.approval_id, "apr-1");
        assert_eq!(claims.action, LinkAction::Approve);
        assert_eq!(key().verify(&token, 1_000), Err(LinkError::Expired));
    }

    #[test]
    fn another_key_or_action_does_not_verify() {
        let token = key().sign("apr-1", LinkAction::Deny, 1_000);
        let other = LinkKey::from_hex(&"cd".repeat(32)).unwrap();
        assert_eq!(other.verify(&token, 0), Err(LinkError::Invalid));
        let flipped = token.replacen(".deny.", ".approve.", 1);
        assert_eq!(key().verify(&flipped, 0), Err(LinkError::Invalid));
        let later = token.replacen(".1000.", ".2000.", 1);
        assert_eq!(key().verify(&later, 0), Err(LinkError::Invalid));
    }

    #[test]
    fn short_or_odd_keys_are_refused() {
        assert!(LinkKey::from_hex("abcd").is_none());
        assert!(LinkKey::from_hex(&"zz".repeat(32)).is_none());
        assert!(LinkKey::from_hex(&"a".repeat(63)).is_none());
    }

    proptest! {
        /// Any text at all is either refused or is exactly a link this key signed.
        #[test]
        fn arbitrary_text_is_refused(token in "\\PC{0,300}", now in any::<i64>()) {
            prop_assert!(key().verify(&token, now).is_err());
        }

        /// Changing any one character of a signed link makes it fail.
        #[test]
        fn every_changed_character_is_refused(
            at in 0usize..200,
            with in proptest::char::range('!', '~'),
        ) {
            let token = key().sign("apr-0193a", LinkAction::Approve, i64::MAX);
            let at = at % token.len();
            let mut changed: Vec<char> = token.chars().collect();
            prop_assume!(changed[at] != with);
            changed[at] = with;
            let changed: String = changed.into_iter().collect();
            prop_assert!(key().verify(&changed, 0).is_err());
        }
    }
}
