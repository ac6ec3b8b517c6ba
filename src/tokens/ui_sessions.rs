//! The dashboard's logins. Logging in with an admin token starts a session of its own: a
//! fresh secret (`nsui_` and 256 random bits, made like a token's) that the browser keeps
//! in its cookie, so the admin token itself never leaves the login form. Only the
//! secret's BLAKE3 hash is stored, with the admin token it came from and when it ends.
//! A session opens the dashboard and nothing else (it is no bearer token), for
//! [`SESSION_SECS`] at most; logging out deletes it, and it ends with its admin token
//! (revoked or expired), checked on every request.

use std::sync::Arc;

use crate::access::Actor;
use crate::db::clock::Clock;
use crate::db::{Db, DbError};
use crate::error::{ErrorKind, Kind};

use super::{has_secret_shape, hash, random_secret, Authenticated, TokenError};

/// What every session secret starts with: told apart from a token's (`nst_`) at a glance,
/// and by a secret scanner.
pub const SESSION_PREFIX: &str = "nsui_";
/// How long a login lasts, from the moment it starts (the cookie's `Max-Age` too).
pub const SESSION_SECS: i64 = 12 * 3600;

#[derive(Debug, thiserror::Error)]
pub enum UiSessionError {
    /// A user's token offered to start a session: the dashboard is the operator's.
    #[error("the dashboard needs an admin token, not a user's")]
    NotAdmin,
    /// Missing, malformed, unknown, expired, logged out, or its admin token revoked or
    /// expired: never said which.
    #[error("the dashboard session is missing, unknown, expired or ended")]
    Ended,
    /// A viewer's time zone that is no IANA name.
    #[error("unknown time zone `{0}` (use an IANA name such as Europe/Lisbon, or UTC)")]
    UnknownZone(String),
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl Kind for UiSessionError {
    fn kind(&self) -> ErrorKind {
        match self {
            UiSessionError::NotAdmin => ErrorKind::Forbidden,
            // The front door answers this itself (back to the login page).
            UiSessionError::Ended => ErrorKind::BadInput,
            UiSessionError::UnknownZone(_) => ErrorKind::BadInput,
            UiSessionError::Token(err) => err.kind(),
            UiSessionError::Db(err) => err.kind(),
        }
    }
}

impl From<libsql::Error> for UiSessionError {
    fn from(err: libsql::Error) -> Self {
        UiSessionError::Db(DbError::Sql(err))
    }
}

/// A session just started: the only time its secret is seen.
#[derive(Debug, Clone)]
pub struct StartedSession {
    /// What the browser's cookie holds.
    pub secret: String,
    /// The admin token it came from.
    pub token_id: String,
    pub created_at: i64,
    pub expires_at: i64,
}

/// A live session, as a request finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiSession {
    /// The admin token it came from (still valid when this was read).
    pub token_id: String,
    pub expires_at: i64,
    /// The zone the viewer reads instants in (unset: UTC).
    pub time_zone: Option<chrono_tz::Tz>,
}

/// A viewer's time zone by its IANA name (surrounding blanks aside); a blank name is
/// none (UTC).
pub fn parse_time_zone(name: &str) -> Result<Option<chrono_tz::Tz>, UiSessionError> {
    let name = name.trim();
    if name.is_empty() {
        return Ok(None);
    }
    name.parse::<chrono_tz::Tz>()
        .map(Some)
        .map_err(|_| UiSessionError::UnknownZone(crate::input::shown_id(name)))
}

/// The dashboard's sessions, over the tokens' database and clock.
#[derive(Clone)]
pub struct UiSessions {
    db: Db,
    clock: Arc<dyn Clock>,
}

impl UiSessions {
    pub fn new(db: Db, clock: Arc<dyn Clock>) -> Self {
        Self { db, clock }
    }

    /// Starts a session for `admin`, a token that has just authenticated; a user's token
    /// is [`UiSessionError::NotAdmin`]. Sessions that have expired meanwhile are deleted
    /// on the way.
    pub async fn start(&self, admin: &Authenticated) -> Result<StartedSession, UiSessionError> {
        if admin.actor != Actor::Operator {
            return Err(UiSessionError::NotAdmin);
        }
        let secret = random_secret(SESSION_PREFIX)?;
        let now = self.clock.now_ms();
        let started = StartedSession {
            secret,
            token_id: admin.token_id.clone(),
            created_at: now,
            expires_at: now + SESSION_SECS * 1000,
        };
        let conn = self.db.conn().await?;
        conn.execute("DELETE FROM ui_sessions WHERE expires_at <= ?1", [now])
            .await?;
        conn.execute(
            "INSERT INTO ui_sessions (secret_hash, token_id, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4)",
            libsql::params![
                hash(&started.secret),
                started.token_id.as_str(),
                started.created_at,
                started.expires_at
            ],
        )
        .await?;
        Ok(started)
    }

    /// The live session whose secret is `secret`. Anything else is
    /// [`UiSessionError::Ended`], whatever the reason; a session found expired, or whose
    /// admin token is revoked or expired, is deleted as it is refused.
    pub async fn open(&self, secret: &str) -> Result<UiSession, UiSessionError> {
        if !has_secret_shape(secret, SESSION_PREFIX) {
            return Err(UiSessionError::Ended);
        }
        let digest = hash(secret);
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let found = crate::db::query_first_row(
            &conn,
            "SELECT s.secret_hash, s.token_id, s.expires_at, t.scope, t.expires_at,
                    t.revoked_at, t.last_used_at, s.time_zone
             FROM ui_sessions s LEFT JOIN api_tokens t ON t.token_id = s.token_id
             WHERE s.secret_hash = ?1",
            [digest.as_str()],
            |row| {
                Ok((
                    row.get::<String>(0)?,
                    row.get::<String>(1)?,
                    row.get::<i64>(2)?,
                    row.get::<Option<String>>(3)?,
                    row.get::<Option<i64>>(4)?,
                    row.get::<Option<i64>>(5)?,
                    row.get::<Option<i64>>(6)?,
                    row.get::<Option<String>>(7)?,
                ))
            },
        )
        .await?;
        let Some((stored, token_id, expires_at, scope, token_expires, revoked, last_used, zone)) =
            found
        else {
            return Err(UiSessionError::Ended);
        };
        // Compared in constant time (BLAKE3's hash equality is), whatever the lookup did.
        let stored = blake3::Hash::from_hex(&stored).map_err(|_| UiSessionError::Ended)?;
        if stored != blake3::hash(secret.as_bytes()) {
            return Err(UiSessionError::Ended);
        }
        let token_valid = scope.as_deref() == Some("admin")
            && revoked.is_none()
            && token_expires.is_none_or(|at| at > now);
        if expires_at <= now || !token_valid {
            // Best effort: the session is refused whether or not its row goes now.
            if let Err(err) = conn
                .execute(
                    "DELETE FROM ui_sessions WHERE secret_hash = ?1",
                    [digest.as_str()],
                )
                .await
            {
                tracing::debug!(%err, "cannot delete an ended dashboard session");
            }
            return Err(UiSessionError::Ended);
        }
        if last_used.is_none_or(|at| now - at >= super::LAST_USED_EVERY_MS) {
            // Best effort, as a bearer token's use is recorded.
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
        Ok(UiSession {
            token_id,
            expires_at,
            // Only a known name is ever stored; one this build does not know reads as UTC.
            time_zone: zone.and_then(|name| parse_time_zone(&name).ok().flatten()),
        })
    }

    /// Keeps `zone` (an IANA name; blank for UTC) as the time zone of the session whose
    /// secret is `secret`. An unknown name is refused and changes nothing; so is an ended
    /// session.
    pub async fn set_time_zone(&self, secret: &str, zone: &str) -> Result<(), UiSessionError> {
        let zone = parse_time_zone(zone)?;
        self.open(secret).await?;
        let conn = self.db.conn().await?;
        let changed = conn
            .execute(
                "UPDATE ui_sessions SET time_zone = ?2 WHERE secret_hash = ?1",
                libsql::params![hash(secret).as_str(), zone.map(|z| z.name().to_string())],
            )
            .await?;
        if changed == 0 {
            return Err(UiSessionError::Ended);
        }
        Ok(())
    }

    /// Ends the session whose secret is `secret` (logging out): it is refused from now
    /// on. Ending one that is unknown or already ended does nothing.
    pub async fn end(&self, secret: &str) -> Result<(), UiSessionError> {
        if !has_secret_shape(secret, SESSION_PREFIX) {
            return Ok(());
        }
        let conn = self.db.conn().await?;
        conn.execute(
            "DELETE FROM ui_sessions WHERE secret_hash = ?1",
            [hash(secret).as_str()],
        )
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_zone_is_kept_only_by_a_name_it_reads_back_as(name in ".{0,40}") {
            match parse_time_zone(&name) {
                Ok(None) => prop_assert!(name.trim().is_empty()),
                Ok(Some(zone)) => prop_assert_eq!(zone.name().parse::<chrono_tz::Tz>().ok(), Some(zone)),
                Err(UiSessionError::UnknownZone(shown)) => {
                    prop_assert!(name.trim().parse::<chrono_tz::Tz>().is_err());
                    prop_assert!(!shown.chars().any(char::is_control), "{}", shown);
                }
                Err(other) => prop_assert!(false, "{other}"),
            }
        }
    }

    proptest! {
        #[test]
        fn every_known_zone_is_kept_by_its_name(zone in prop::sample::select(chrono_tz::TZ_VARIANTS.to_vec())) {
            prop_assert_eq!(parse_time_zone(&format!(" {} ", zone.name())).ok(), Some(Some(zone)));
        }
    }

    #[test]
    fn zones_are_read_by_their_iana_names() {
        assert_eq!(
            parse_time_zone(" Europe/Lisbon ").unwrap(),
            Some(chrono_tz::Tz::Europe__Lisbon)
        );
        assert_eq!(parse_time_zone("").unwrap(), None);
        assert!(parse_time_zone("Mars/Olympus").is_err());
    }

    #[test]
    fn a_session_secret_is_never_shaped_like_a_token() {
        let secret = random_secret(SESSION_PREFIX).unwrap();
        assert!(has_secret_shape(&secret, SESSION_PREFIX), "{secret}");
        assert!(!super::super::looks_like_secret(&secret), "{secret}");
        let token = random_secret(super::super::SECRET_PREFIX).unwrap();
        assert!(!has_secret_shape(&token, SESSION_PREFIX), "{token}");
    }
}
