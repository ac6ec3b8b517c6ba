//! A state key: its scope from its prefix, checked by the common identifier rule.

use super::Scope;
use crate::input::{self, InputError};

/// Longest key, prefix included, in bytes.
pub const MAX_KEY_BYTES: usize = input::MAX_ID_BYTES;

/// A checked key and the scope its prefix gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateKey {
    key: String,
    scope: Scope,
}

impl StateKey {
    const PREFIXES: [(&'static str, Scope); 3] = [
        ("user:", Scope::User),
        ("app:", Scope::App),
        ("temp:", Scope::Temp),
    ];

    /// The key as given: one line, at most [`MAX_KEY_BYTES`], no control characters, no
    /// surrounding whitespace, and something after its prefix.
    pub fn parse(key: &str) -> Result<Self, InputError> {
        input::check_id("state key", key)?;
        let scope = Self::scope_of(key);
        let prefix_len = Self::prefix_len(scope);
        let name = &key[prefix_len..];
        if name.trim().is_empty() {
            return Err(InputError::new(
                "state key",
                format!("`{key}` has no name after its prefix"),
            ));
        }
        if name.trim_start() != name {
            return Err(InputError::new(
                "state key",
                format!("`{key}` has whitespace after its prefix"),
            ));
        }
        Ok(Self {
            key: key.to_string(),
            scope,
        })
    }

    /// The scope a key (or a prefix of keys) belongs to.
    pub fn scope_of(key: &str) -> Scope {
        Self::PREFIXES
            .iter()
            .find(|(prefix, _)| key.starts_with(prefix))
            .map_or(Scope::Session, |(_, scope)| *scope)
    }

    fn prefix_len(scope: Scope) -> usize {
        Self::PREFIXES
            .iter()
            .find(|(_, s)| *s == scope)
            .map_or(0, |(prefix, _)| prefix.len())
    }

    pub fn as_str(&self) -> &str {
        &self.key
    }

    pub fn scope(&self) -> Scope {
        self.scope
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn prefixes_decide_the_scope() {
        let scope = |k: &str| StateKey::parse(k).map(|k| k.scope());
        assert_eq!(scope("draft").unwrap(), Scope::Session);
        assert_eq!(scope("user:theme").unwrap(), Scope::User);
        assert_eq!(scope("app:motd").unwrap(), Scope::App);
        assert_eq!(scope("temp:step").unwrap(), Scope::Temp);
        // Only the exact prefixes count.
        assert_eq!(scope("User:theme").unwrap(), Scope::Session);
        assert_eq!(scope("users:x").unwrap(), Scope::Session);
        for bad in [
            "",
            " x",
            "x ",
            "user:",
            "temp: ",
            "user: x",
            "a\0b",
            "a\nb",
            "\u{1b}[0m",
        ] {
            assert!(StateKey::parse(bad).is_err(), "{bad:?}");
        }
        assert!(StateKey::parse(&"k".repeat(MAX_KEY_BYTES)).is_ok());
        assert!(StateKey::parse(&"k".repeat(MAX_KEY_BYTES + 1)).is_err());
    }

    proptest! {
        /// Any string is a key kept byte for byte, or refused naming the key; never a panic.
        #[test]
        fn any_string_is_a_key_or_refused(key in any::<String>()) {
            match StateKey::parse(&key) {
                Ok(parsed) => {
                    prop_assert_eq!(parsed.as_str(), key.as_str());
                    prop_assert!(!key.chars().any(char::is_control));
                    prop_assert!(key.len() <= MAX_KEY_BYTES);
                }
                Err(err) => prop_assert_eq!(err.field, "state key"),
            }
        }
    }
}
