//! Reading and writing state. Every statement filters on the scope, its owner and the user,
//! so another user's key, session or run behaves exactly like one that does not exist.

use serde_json::Value;

use super::{Scope, StateAccess, StateDeleted, StateEntry, StateError, StateKey, StateList};
use crate::db::{fetch_all, fetch_optional, json_column, query_scalar, DbError, FromRow, WriteTx};
use crate::input::{self, InputError, Lines};
use crate::memory::{Memory, MemoryError, SessionKey, SessionKind};

type Result<T, E = StateError> = std::result::Result<T, E>;

/// Where one key lives: the row's owner columns.
#[derive(Debug)]
struct Location {
    scope: Scope,
    scope_id: String,
    user_id: Option<String>,
    /// The user's session, for session state.
    session: Option<SessionKey>,
    run_id: Option<String>,
}

impl FromRow for StateEntry {
    const COLUMNS: &'static str = "key, scope, value_json, version, created_at, updated_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(StateEntry {
            key: row.get(0)?,
            scope: crate::db::text_column(row, 1, "state scope")?,
            value: json_column(row, 2, "state value")?,
            version: row.get(3)?,
            created_at: row.get(4)?,
            updated_at: row.get(5)?,
        })
    }
}

/// The state store. Cheap to clone; it works on the memory store's database and clock.
#[derive(Clone)]
pub struct StateStore {
    memory: Memory,
}

impl StateStore {
    pub fn new(memory: Memory) -> Self {
        Self { memory }
    }

    /// One key's value; not found when it does not exist or is not the caller's to see.
    pub async fn get(&self, access: &StateAccess, key: &str) -> Result<StateEntry> {
        let key = StateKey::parse(key)?;
        let at = self.locate(access, &key)?;
        let conn = self.memory.db().conn().await?;
        fetch_optional(
            &conn,
            &format!(
                "SELECT {} FROM state_entries
                 WHERE scope = ?1 AND scope_id = ?2 AND key = ?3 AND user_id IS NOT DISTINCT FROM ?4",
                StateEntry::COLUMNS
            ),
            libsql::params![
                at.scope.as_str(),
                at.scope_id.as_str(),
                key.as_str(),
                at.user_id.as_deref()
            ],
        )
        .await?
        .ok_or_else(|| StateError::NotFound(key.as_str().to_string()))
    }

    /// Sets a key to `value`; with `expected_version`, only if the key is at that version
    /// now (0: only if it does not exist), so of two runs racing one wins and the other is
    /// told to read again.
    pub async fn set(
        &self,
        access: &StateAccess,
        key: &str,
        value: &Value,
        expected_version: Option<i64>,
    ) -> Result<StateEntry> {
        let key = StateKey::parse(key)?;
        let at = self.locate(access, &key)?;
        if key.scope() == Scope::App && !access.admin {
            return Err(StateError::AdminOnly(format!(
                "`{}` is app state, which only the operator (an admin) writes",
                key.as_str()
            )));
        }
        check_expected(expected_version)?;
        let value_json = self.check_value(value)?;
        let now = self.memory.clock().now_ms();

        let conn = self.memory.db().conn().await?;
        let tx = conn.write_tx().await?;
        let result = async {
            if let Some(key) = &at.session {
                crate::memory::ensure_session(&tx.runner(), key, now).await?;
            }
            let current = current_version(&tx, &at, &key).await?;
            check_version(&key, expected_version, current)?;
            if current.is_none() {
                self.check_room(&tx, &at).await?;
            }
            let version = next_version(&tx, &at.scope, &at.scope_id).await?;
            tx.execute(
                "INSERT INTO state_entries (scope, scope_id, key, user_id, session_id, run_id,
                 value_json, version, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
                 ON CONFLICT (scope, scope_id, key) DO UPDATE SET
                 value_json = excluded.value_json, version = excluded.version,
                 updated_at = excluded.updated_at",
                libsql::params![
                    at.scope.as_str(),
                    at.scope_id.as_str(),
                    key.as_str(),
                    at.user_id.as_deref(),
                    at.session.as_ref().map(SessionKey::as_str),
                    at.run_id.as_deref(),
                    value_json.as_str(),
                    version,
                    now
                ],
            )
            .await?;
            fetch_optional::<StateEntry>(
                &tx,
                &format!(
                    "SELECT {} FROM state_entries WHERE scope = ?1 AND scope_id = ?2 AND key = ?3",
                    StateEntry::COLUMNS
                ),
                libsql::params![at.scope.as_str(), at.scope_id.as_str(), key.as_str()],
            )
            .await?
            .ok_or_else(|| StateError::NotFound(key.as_str().to_string()))
        }
        .await;
        match result {
            Ok(entry) => {
                tx.commit().await?;
                Ok(entry)
            }
            Err(err) => {
                tx.rollback().await?;
                Err(err)
            }
        }
    }

    /// Deletes a key; with `expected_version`, only if it is at that version now.
    pub async fn delete(
        &self,
        access: &StateAccess,
        key: &str,
        expected_version: Option<i64>,
    ) -> Result<StateDeleted> {
        let key = StateKey::parse(key)?;
        let at = self.locate(access, &key)?;
        if key.scope() == Scope::App && !access.admin {
            return Err(StateError::AdminOnly(format!(
                "`{}` is app state, which only the operator (an admin) changes",
                key.as_str()
            )));
        }
        check_expected(expected_version)?;
        let conn = self.memory.db().conn().await?;
        let tx = conn.write_tx().await?;
        let result = async {
            let current = current_version(&tx, &at, &key).await?;
            if current.is_none() {
                return Err(StateError::NotFound(key.as_str().to_string()));
            }
            check_version(&key, expected_version, current)?;
            tx.execute(
                "DELETE FROM state_entries WHERE scope = ?1 AND scope_id = ?2 AND key = ?3",
                libsql::params![at.scope.as_str(), at.scope_id.as_str(), key.as_str()],
            )
            .await?;
            Ok(())
        }
        .await;
        match result {
            Ok(()) => tx.commit().await?,
            Err(err) => {
                tx.rollback().await?;
                return Err(err);
            }
        }
        Ok(StateDeleted {
            key: key.as_str().to_string(),
            deleted: true,
        })
    }

    /// The keys the caller can see that start with `prefix` (all of them for an empty
    /// one), by key: the session's (when a session is given), the user's, the app's, and
    /// inside a run its `temp:` keys.
    pub async fn list(&self, access: &StateAccess, prefix: &str) -> Result<StateList> {
        if !prefix.is_empty() {
            input::check_text("state key prefix", prefix, super::MAX_KEY_BYTES, Lines::One)?;
        }
        let user_id = self.checked_user(access)?;
        // The user's session of that id (its key): only a user has sessions.
        let session_id = match (&access.session_id, user_id) {
            (Some(session_id), Some(user_id)) => {
                input::check_id("session id", session_id)?;
                Some(SessionKey::new(user_id, session_id).as_str().to_string())
            }
            (Some(session_id), None) => {
                input::check_id("session id", session_id)?;
                None
            }
            (None, _) => None,
        };
        let run_id = self.checked_run(access)?;
        let limit = self.memory.limits().max_state_keys.saturating_mul(4) as i64;
        let conn = self.memory.db().conn().await?;
        let entries = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM state_entries
                 WHERE substr(key, 1, length(?1)) = ?1 AND (
                    (scope = 'session' AND scope_id = ?2 AND user_id = ?3)
                    OR (scope = 'user' AND scope_id = ?3 AND user_id = ?3)
                    OR (scope = 'app' AND scope_id = '')
                    OR (scope = 'temp' AND scope_id = ?4 AND user_id = ?3))
                 ORDER BY key LIMIT ?5",
                StateEntry::COLUMNS
            ),
            libsql::params![prefix, session_id, user_id, run_id, limit],
        )
        .await?;
        Ok(StateList { entries })
    }

    /// Clears `temp:` keys of runs no longer running (a run that crashed before its end
    /// was recorded); a run waiting for an approval keeps its own. Returns how many keys
    /// went.
    pub async fn sweep_temp(&self) -> Result<u64> {
        let conn = self.memory.db().conn().await?;
        Ok(conn
            .execute(
                "DELETE FROM state_entries WHERE scope = 'temp' AND run_id NOT IN
                 (SELECT run_id FROM schedule_runs WHERE status IN ('running', 'waiting'))",
                (),
            )
            .await?)
    }

    /// Where `key` lives for this caller, or why the caller cannot reach it.
    fn locate(&self, access: &StateAccess, key: &StateKey) -> Result<Location> {
        let user_id = self.checked_user(access)?.map(str::to_string);
        // A session given is checked whatever the key's scope: bad input is an error even
        // where it would not be used.
        if let Some(session_id) = &access.session_id {
            input::check_id("session id", session_id)?;
        }
        let need_user = |what: &str| {
            user_id.clone().ok_or_else(|| {
                StateError::Scope(format!(
                    "`{}` is {what} state: name the user it belongs to (--user on the command \
                     line, ?user= with an admin token)",
                    key.as_str()
                ))
            })
        };
        Ok(match key.scope() {
            Scope::App => Location {
                scope: Scope::App,
                scope_id: String::new(),
                user_id: None,
                session: None,
                run_id: None,
            },
            Scope::User => {
                let user = need_user("user")?;
                Location {
                    scope: Scope::User,
                    scope_id: user.clone(),
                    user_id: Some(user),
                    session: None,
                    run_id: None,
                }
            }
            Scope::Session => {
                let user = need_user("session")?;
                let Some(session_id) = &access.session_id else {
                    return Err(StateError::Scope(format!(
                        "`{}` has no scope prefix, so it is session state: name the session \
                         (--session), or use a `user:` or `app:` key",
                        key.as_str()
                    )));
                };
                input::check_id("session id", session_id)?;
                if SessionKind::of(session_id) == SessionKind::Memory {
                    return Err(MemoryError::ReservedSession(session_id.clone()).into());
                }
                // The user's session of that id: its key is the scope.
                let key = SessionKey::new(&user, session_id);
                Location {
                    scope: Scope::Session,
                    scope_id: key.as_str().to_string(),
                    user_id: Some(user),
                    session: Some(key),
                    run_id: None,
                }
            }
            Scope::Temp => {
                let user = need_user("temp")?;
                let Some(run_id) = self.checked_run(access)? else {
                    return Err(StateError::Scope(format!(
                        "`{}` is temp state, which lives inside one run only (the runtime's \
                         state tools)",
                        key.as_str()
                    )));
                };
                Location {
                    scope: Scope::Temp,
                    scope_id: run_id.to_string(),
                    user_id: Some(user),
                    session: None,
                    run_id: Some(run_id.to_string()),
                }
            }
        })
    }

    fn checked_user<'a>(&self, access: &'a StateAccess) -> Result<Option<&'a str>> {
        match &access.user_id {
            Some(user_id) => {
                input::check_user_id(user_id)?;
                Ok(Some(user_id))
            }
            None => Ok(None),
        }
    }

    fn checked_run<'a>(&self, access: &'a StateAccess) -> Result<Option<&'a str>> {
        match &access.run_id {
            Some(run_id) => {
                input::check_id("run id", run_id)?;
                Ok(Some(run_id))
            }
            None => Ok(None),
        }
    }

    /// The value as stored (compact JSON), within `memory.max_state_value_bytes`.
    fn check_value(&self, value: &Value) -> Result<String> {
        let text = serde_json::to_string(value).map_err(|e| {
            StateError::Input(InputError::new(
                "state value",
                format!("cannot be stored: {e}"),
            ))
        })?;
        let max = self.memory.limits().max_state_value_bytes;
        if text.len() > max {
            return Err(StateError::Input(InputError::new(
                "state value",
                format!(
                    "is {} bytes of JSON, over the limit of {max} bytes \
                     (memory.max_state_value_bytes)",
                    text.len()
                ),
            )));
        }
        Ok(text)
    }

    /// Refuses a new key where its scope already holds `memory.max_state_keys`.
    async fn check_room(&self, tx: &WriteTx, at: &Location) -> Result<()> {
        let limit = self.memory.limits().max_state_keys;
        let count: i64 = query_scalar(
            tx,
            "SELECT count(*) FROM (SELECT 1 FROM state_entries
             WHERE scope = ?1 AND scope_id = ?2 LIMIT ?3) AS held",
            libsql::params![at.scope.as_str(), at.scope_id.as_str(), limit as i64],
        )
        .await?
        .unwrap_or(0);
        if count >= limit as i64 {
            return Err(StateError::TooManyKeys {
                scope: at.scope,
                limit,
            });
        }
        Ok(())
    }
}

/// Clears a run's `temp:` keys, inside the transaction that records its end.
pub async fn clear_run(tx: &WriteTx, run_id: &str) -> Result<u64, libsql::Error> {
    tx.execute(
        "DELETE FROM state_entries WHERE run_id = ?1 AND scope = 'temp'",
        [run_id],
    )
    .await
}

fn check_expected(expected: Option<i64>) -> Result<()> {
    if let Some(version) = expected {
        input::check_range("expected version", version, 0..=i64::MAX)?;
    }
    Ok(())
}

/// The version a key is at now, for this caller; `None` when it does not exist.
async fn current_version(tx: &WriteTx, at: &Location, key: &StateKey) -> Result<Option<i64>> {
    Ok(query_scalar(
        tx,
        "SELECT version FROM state_entries
         WHERE scope = ?1 AND scope_id = ?2 AND key = ?3 AND user_id IS NOT DISTINCT FROM ?4",
        libsql::params![
            at.scope.as_str(),
            at.scope_id.as_str(),
            key.as_str(),
            at.user_id.as_deref()
        ],
    )
    .await?)
}

fn check_version(key: &StateKey, expected: Option<i64>, current: Option<i64>) -> Result<()> {
    match (expected, current) {
        (None, _) | (Some(0), None) => Ok(()),
        (Some(expected), Some(found)) if expected == found => Ok(()),
        (Some(expected), found) => Err(StateError::VersionMismatch {
            key: key.as_str().to_string(),
            expected,
            found: match found {
                Some(version) => format!("at version {version}"),
                None => "not set".to_string(),
            },
        }),
    }
}

/// The next version of the scope instance `scope`/`scope_id`: its own counter, so a
/// version says nothing of what other users (or other scopes) wrote. A new counter starts
/// past the floor the shared counter left (migration 30), so no version handed out
/// before is handed out again.
async fn next_version(tx: &WriteTx, scope: &Scope, scope_id: &str) -> Result<i64> {
    let version: Option<i64> = query_scalar(
        tx,
        "INSERT INTO state_versions (scope, scope_id, version)
         VALUES (?1, ?2, coalesce((SELECT CAST(value AS BIGINT) FROM meta
                                   WHERE key = 'state_version_floor'), 0) + 1)
         ON CONFLICT (scope, scope_id) DO UPDATE SET version = state_versions.version + 1
         RETURNING version",
        libsql::params![scope.as_str(), scope_id],
    )
    .await?;
    version.ok_or_else(|| {
        StateError::Db(DbError::Corrupt {
            what: "state_versions".to_string(),
            reason: "the counter returned nothing".to_string(),
        })
    })
}
