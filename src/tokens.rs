//! Tokens for the HTTP API and the MCP server. A secret is `nst_` and 256 random bits,
//! shown once when the token is created; only its BLAKE3 hash is stored, so the database
//! never holds a usable secret. A user token acts as its user only; an admin token acts as
//! the operator. Secrets are never logged and never echoed in an error. The dashboard's
//! logins, started from an admin token, are [`ui_sessions`].

use std::collections::HashMap;

use base64::Engine;
use serde::Serialize;

use crate::access::Actor;
use crate::db::clock::Clock;
use crate::db::{fetch_all, fetch_optional, Db, DbError, FromRow};
use crate::error::{ErrorKind, Kind};
use crate::ids;
use crate::input::{self, InputError};

pub mod ui_sessions;

/// What every secret starts with, so a leaked one is recognisable (secret scanners).
pub const SECRET_PREFIX: &str = "nst_";
/// Longest lifetime a token may be given: ten years.
pub const MAX_LIFETIME_SECS: i64 = input::MAX_DURATION_SECS;
/// How stale `last_used_at` may be before a use records it again (one write a minute at
/// most per token, not one per request).
const LAST_USED_EVERY_MS: i64 = 60_000;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("no token `{0}`")]
    NotFound(String),
    /// Missing, malformed, unknown, revoked or expired: never said which.
    #[error("the token is missing, unknown, revoked or expired")]
    Unauthenticated,
    #[error("cannot make a secret: {0}")]
    Random(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl Kind for TokenError {
    fn kind(&self) -> ErrorKind {
        match self {
            TokenError::Input(_) => ErrorKind::BadInput,
            TokenError::NotFound(_) => ErrorKind::NotFound,
            // A front door answers this one itself (401); as a kind it is the caller's input.
            TokenError::Unauthenticated => ErrorKind::BadInput,
            TokenError::Random(_) => ErrorKind::Internal,
            TokenError::Db(err) => err.kind(),
        }
    }
}

impl From<libsql::Error> for TokenError {
    fn from(err: libsql::Error) -> Self {
        TokenError::Db(DbError::Sql(err))
    }
}

/// What a token may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    User,
    Admin,
}

/// A token as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct TokenInfo {
    pub token_id: String,
    pub name: Option<String>,
    pub scope: Scope,
    /// The user a user token acts as.
    pub user_id: Option<String>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

impl FromRow for TokenInfo {
    const COLUMNS: &'static str =
        "token_id, name, scope, user_id, created_at, last_used_at, expires_at, revoked_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        let scope: String = row.get(2)?;
        Ok(TokenInfo {
            token_id: row.get(0)?,
            name: row.get(1)?,
            scope: if scope == "admin" {
                Scope::Admin
            } else {
                Scope::User
            },
            user_id: row.get(3)?,
            created_at: row.get(4)?,
            last_used_at: row.get(5)?,
            expires_at: row.get(6)?,
            revoked_at: row.get(7)?,
        })
    }
}

/// A token just made: the only time its secret is seen.
#[derive(Debug, Clone, Serialize)]
pub struct CreatedToken {
    #[serde(flatten)]
    pub info: TokenInfo,
    pub secret: String,
}

/// Who a valid token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub token_id: String,
    /// The actor the token acts as: its user, or the operator for an admin token.
    pub actor: Actor,
}

/// What a new token is for.
#[derive(Debug, Clone)]
pub struct NewToken {
    /// `None` for an admin token.
    pub user_id: Option<String>,
    pub name: Option<String>,
    /// Lifetime in seconds; `None`: until revoked.
    pub expires_in_secs: Option<i64>,
}

/// A secret is `nst_` and 43 URL-safe base64 characters; anything else is refused before
/// it is hashed or looked up.
fn looks_like_secret(text: &str) -> bool {
    has_secret_shape(text, SECRET_PREFIX)
}

/// Whether `text` is `prefix` and 43 URL-safe base64 characters (256 bits), as
/// [`random_secret`] makes them.
fn has_secret_shape(text: &str, prefix: &str) -> bool {
    text.len() == prefix.len() + 43
        && text.starts_with(prefix)
        && text[prefix.len()..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `prefix` and 256 random bits from the operating system, URL-safe base64.
fn random_secret(prefix: &str) -> Result<String, TokenError> {
    let mut random = [0u8; 32];
    getrandom::fill(&mut random).map_err(|e| TokenError::Random(e.to_string()))?;
    Ok(format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random)
    ))
}

fn hash(secret: &str) -> String {
    blake3::hash(secret.as_bytes()).to_hex().to_string()
}

#[derive(Clone)]
pub struct TokenStore {
    db: Db,
    clock: std::sync::Arc<dyn Clock>,
    /// Tokens found recently, by secret hash: a busy client's requests do not each read
    /// the database. An entry is used for [`CACHE_FOR`] at most, so a token revoked by
    /// another process is refused within that; revoked here, at once.
    recent: std::sync::Arc<std::sync::Mutex<HashMap<String, Cached>>>,
}

/// How long a checked token is trusted without reading it again.
pub const CACHE_FOR: std::time::Duration = std::time::Duration::from_secs(1);
/// Tokens remembered at most (more are simply read again).
const CACHE_MAX: usize = 10_000;

#[derive(Clone)]
struct Cached {
    found: Authenticated,
    expires_at: Option<i64>,
    at: std::time::Instant,
}

impl TokenStore {
    pub fn new(db: Db, clock: std::sync::Arc<dyn Clock>) -> Self {
        Self {
            db,
            clock,
            recent: Default::default(),
        }
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        self.recent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes a token; its secret is in the answer and nowhere else.
    pub async fn create(&self, new: &NewToken) -> Result<CreatedToken, TokenError> {
        if let Some(user) = &new.user_id {
            input::check_user_id(user)?;
        }
        if let Some(name) = &new.name {
            input::check_name("name", name)?;
        }
        if let Some(secs) = new.expires_in_secs {
            input::check_range("expires", secs, 1..=MAX_LIFETIME_SECS)?;
        }
        let secret = random_secret(SECRET_PREFIX)?;
        let now = self.clock.now_ms();
        let info = TokenInfo {
            token_id: ids::new_id("tok"),
            name: new.name.clone(),
            scope: if new.user_id.is_some() {
                Scope::User
            } else {
                Scope::Admin
            },
            user_id: new.user_id.clone(),
            created_at: now,
            last_used_at: None,
            expires_at: new.expires_in_secs.map(|secs| now + secs * 1000),
            revoked_at: None,
        };
        let conn = self.db.conn().await?;
        conn.execute(
            "INSERT INTO api_tokens (token_id, name, scope, user_id, secret_hash, created_at,
             expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            libsql::params![
                info.token_id.as_str(),
                info.name.as_deref(),
                if new.user_id.is_some() {
                    "user"
                } else {
                    "admin"
                },
                info.user_id.as_deref(),
                hash(&secret),
                now,
                info.expires_at
            ],
        )
        .await?;
        Ok(CreatedToken { info, secret })
    }

    /// Every token, newest first.
    pub async fn list(&self) -> Result<Vec<TokenInfo>, TokenError> {
        let conn = self.db.conn().await?;
        Ok(fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM api_tokens ORDER BY created_at DESC, token_id DESC",
                TokenInfo::COLUMNS
            ),
            (),
        )
        .await?)
    }

    /// Forgets this process's checked tokens of `user_id` (their rows are gone: a purge).
    pub fn forget_user(&self, user_id: &str) {
        self.recent()
            .retain(|_, c| c.found.actor.user_id() != Some(user_id));
    }

    /// The dashboard's logins, each started from an admin token of this store.
    pub fn ui_sessions(&self) -> ui_sessions::UiSessions {
        ui_sessions::UiSessions::new(self.db.clone(), self.clock.clone())
    }

    /// Revokes a token: it is refused from now on, and the dashboard logins it started
    /// are ended.
    pub async fn revoke(&self, token_id: &str) -> Result<TokenInfo, TokenError> {
        input::check_id("token id", token_id)?;
        self.recent().retain(|_, c| c.found.token_id != token_id);
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ?2) WHERE token_id = ?1",
            libsql::params![token_id, self.clock.now_ms()],
        )
        .await?;
        // Each login checks its token anyway; this only leaves no dead sessions behind.
        conn.execute("DELETE FROM ui_sessions WHERE token_id = ?1", [token_id])
            .await?;
        fetch_optional(
            &conn,
            &format!(
                "SELECT {} FROM api_tokens WHERE token_id = ?1",
                TokenInfo::COLUMNS
            ),
            [token_id],
        )
        .await?
        .ok_or_else(|| TokenError::NotFound(token_id.to_string()))
    }

    /// Whether the token `token_id` can still be used: not revoked, not expired, not gone
    /// (an open event stream asks, now and then, so that revoking a token ends it).
    pub async fn is_usable(&self, token_id: &str) -> Result<bool, TokenError> {
        let conn = self.db.conn().await?;
        let found: Option<i64> = crate::db::query_scalar(
            &conn,
            "SELECT 1 FROM api_tokens WHERE token_id = ?1 AND revoked_at IS NULL
             AND (expires_at IS NULL OR expires_at > ?2)",
            libsql::params![token_id, self.clock.now_ms()],
        )
        .await?;
        Ok(found.is_some())
    }

    /// Whether any token that can still be used exists (the server says how to make one
    /// when none does).
    pub async fn any_usable(&self) -> Result<bool, TokenError> {
        let conn = self.db.conn().await?;
        let found: Option<i64> = crate::db::query_scalar(
            &conn,
            "SELECT 1 FROM api_tokens WHERE revoked_at IS NULL
             AND (expires_at IS NULL OR expires_at > ?1) LIMIT 1",
            [self.clock.now_ms()],
        )
        .await?;
        Ok(found.is_some())
    }

    /// Who `secret` is, if it is a valid token's. Anything else is
    /// [`TokenError::Unauthenticated`], whatever the reason.
    pub async fn authenticate(&self, secret: &str) -> Result<Authenticated, TokenError> {
        if !looks_like_secret(secret) {
            return Err(TokenError::Unauthenticated);
        }
        let digest = hash(secret);
        let now = self.clock.now_ms();
        let cached = self.recent().get(&digest).cloned();
        if let Some(cached) = cached.filter(|c| c.at.elapsed() < CACHE_FOR) {
            if cached.expires_at.is_some_and(|at| at <= now) {
                return Err(TokenError::Unauthenticated);
            }
            return Ok(cached.found);
        }
        let conn = self.db.conn().await?;
        let found = crate::db::query_first_row(
            &conn,
            "SELECT token_id, scope, user_id, secret_hash, expires_at, revoked_at, last_used_at
             FROM api_tokens WHERE secret_hash = ?1",
            [digest.as_str()],
            |row| {
                Ok((
                    row.get::<String>(0)?,
                    row.get::<String>(1)?,
                    row.get::<Option<String>>(2)?,
                    row.get::<String>(3)?,
                    row.get::<Option<i64>>(4)?,
                    row.get::<Option<i64>>(5)?,
                    row.get::<Option<i64>>(6)?,
                ))
            },
        )
        .await?;
        let Some((token_id, scope, user_id, stored, expires_at, revoked_at, last_used)) = found
        else {
            return Err(TokenError::Unauthenticated);
        };
        // Compared in constant time (BLAKE3's hash equality is), whatever the lookup did.
        let stored = blake3::Hash::from_hex(&stored).map_err(|_| TokenError::Unauthenticated)?;
        if stored != blake3::hash(secret.as_bytes()) {
            return Err(TokenError::Unauthenticated);
        }
        if revoked_at.is_some() || expires_at.is_some_and(|at| at <= now) {
            return Err(TokenError::Unauthenticated);
        }
        if last_used.is_none_or(|at| now - at >= LAST_USED_EVERY_MS) {
            // Best effort: a token in use is still valid when this write fails.
            if let Err(err) = conn
                .execute(
                    "UPDATE api_tokens SET last_used_at = ?2 WHERE token_id = ?1",
                    libsql::params![token_id.as_str(), now],
                )
                .await
            {
                tracing::debug!(%err, "cannot record a token's last use");
            }
        }
        let actor = match (scope.as_str(), user_id) {
            ("admin", _) => Actor::Operator,
            (_, Some(user)) => Actor::User(user),
            _ => return Err(TokenError::Unauthenticated),
        };
        let found = Authenticated { token_id, actor };
        let mut recent = self.recent();
        if recent.len() >= CACHE_MAX {
            recent.clear();
        }
        recent.insert(
            digest,
            Cached {
                found: found.clone(),
                expires_at,
                at: std::time::Instant::now(),
            },
        );
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any string offered as a secret that is not shaped like one is refused before it
        /// is hashed or looked up; never a panic.
        #[test]
        fn only_secret_shaped_text_is_looked_up(text in any::<String>()) {
            if looks_like_secret(&text) {
                prop_assert!(text.is_ascii() && text.len() == 47);
            }
        }
    }

    #[test]
    fn made_secrets_have_the_shape() {
        let secret = random_secret(SECRET_PREFIX).unwrap();
        assert!(looks_like_secret(&secret), "{secret}");
        assert!(!looks_like_secret("nst_short"));
    }
}
