//! Conversation sessions and their append-only events.

use super::writer::{append_in_tx, Append, AppendJob, Appended, Statements};
use super::{check_id, Event, Memory, MemoryError, NewEvent, Result, Role, Session, SessionKind};
use crate::access::Actor;
use crate::db::{fetch_all, fetch_optional, finish_rows, json_column, DbError, FromRow, WriteTx};

/// Most events one recall returns.
pub const MAX_RECALL: usize = 10_000;

/// A JSONL import problem, with the 1-based line it was found on.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct JsonlError {
    pub line: usize,
    pub reason: String,
}

impl crate::error::Kind for JsonlError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::BadInput
    }
}

/// Makes sure `session_id` exists and belongs to `user_id`, creating it if needed, inside
/// the caller's transaction. Returns its last sequence.
pub(crate) async fn ensure_session(
    conn: &crate::db::Runner,
    session_id: &str,
    user_id: &str,
    now: i64,
) -> Result<i64> {
    let mut rows = conn
        .query(
            "SELECT user_id, last_sequence FROM sessions WHERE session_id = ?1",
            [session_id],
        )
        .await?;
    if let Some(row) = rows.next().await? {
        let owner: String = row.get(0)?;
        if owner != user_id {
            return Err(MemoryError::SessionOfOtherUser {
                session_id: session_id.to_string(),
            });
        }
        let last_sequence = row.get(1)?;
        finish_rows(rows).await?;
        return Ok(last_sequence);
    }
    drop(rows);
    create_session(conn, session_id, user_id, now).await?;
    Ok(0)
}

/// Creates `session_id` for `user_id` (with no events yet), inside the caller's
/// transaction, which has found that it does not exist.
pub(super) async fn create_session(
    conn: &crate::db::Runner,
    session_id: &str,
    user_id: &str,
    now: i64,
) -> Result<()> {
    conn.execute(
        "INSERT INTO sessions (session_id, user_id, kind, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?4)",
        libsql::params![
            session_id,
            user_id,
            SessionKind::of(session_id).as_str(),
            now
        ],
    )
    .await?;
    conn.execute(
        "INSERT INTO session_state (session_id, updated_at) VALUES (?1, ?2)",
        libsql::params![session_id, now],
    )
    .await?;
    Ok(())
}

impl FromRow for Session {
    const COLUMNS: &'static str =
        "session_id, user_id, title, created_at, updated_at, last_sequence";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        let session_id: String = row.get(0)?;
        Ok(Session {
            kind: SessionKind::of(&session_id),
            session_id,
            user_id: row.get(1)?,
            title: row.get(2)?,
            created_at: row.get(3)?,
            updated_at: row.get(4)?,
            last_sequence: row.get(5)?,
        })
    }
}

impl FromRow for Event {
    const COLUMNS: &'static str =
        "session_id, sequence, role, content, payload_json, importance, created_at, name";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        let role: String = row.get(2)?;
        Ok(Event {
            session_id: row.get(0)?,
            sequence: row.get(1)?,
            role: role.parse::<Role>().map_err(|e| DbError::Corrupt {
                what: "event role".into(),
                reason: e.to_string(),
            })?,
            content: row.get(3)?,
            payload: json_column(row, 4, "event payload")?,
            importance: row.get(5)?,
            created_at: row.get(6)?,
            name: row.get(7)?,
        })
    }
}

impl Memory {
    fn check_event(&self, event: &NewEvent) -> Result<()> {
        self.check_content("event content", &event.content)?;
        if let Some(name) = &event.name {
            crate::input::check_name("event name", name)?;
        }
        if let Some(importance) = event.importance {
            if !(0.0..=1.0).contains(&importance) {
                return Err(MemoryError::invalid(
                    "importance",
                    format!("must be between 0 and 1, got {importance}"),
                ));
            }
        }
        if let Some(at) = event.created_at {
            crate::input::check_instant("created_at", at)?;
        }
        if let Some(payload) = &event.payload {
            let len = serde_json::to_string(payload).map_or(usize::MAX, |p| p.len());
            if len > self.limits.max_payload_bytes {
                return Err(MemoryError::invalid(
                    "payload",
                    format!(
                        "is {len} bytes of JSON, over the limit of {} bytes (memory.max_payload_bytes)",
                        self.limits.max_payload_bytes
                    ),
                ));
            }
        }
        Ok(())
    }

    /// At most `memory.max_batch_events` events in one append, and at least one.
    fn check_batch(&self, count: usize) -> Result<()> {
        if count == 0 {
            return Err(MemoryError::invalid("events", "there are none"));
        }
        if count > self.limits.max_batch_events {
            return Err(MemoryError::invalid(
                "events",
                format!(
                    "{count} in one append, over the limit of {} (memory.max_batch_events)",
                    self.limits.max_batch_events
                ),
            ));
        }
        Ok(())
    }

    fn check_appendable(&self, user_id: &str, session_id: &str) -> Result<()> {
        check_id("user id", user_id)?;
        check_id("session id", session_id)?;
        if SessionKind::of(session_id) == SessionKind::Memory {
            return Err(MemoryError::ReservedSession(session_id.to_string()));
        }
        Ok(())
    }

    /// Appends events to a session (created on first use, owned by `user_id`) in one
    /// transaction: all are stored, with consecutive sequences, or none. Returns the
    /// sequences given to them.
    pub async fn append(
        &self,
        user_id: &str,
        session_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<i64>> {
        self.check_appendable(user_id, session_id)?;
        self.check_batch(events.len())?;
        for event in events {
            self.check_event(event)?;
        }
        self.append_checked(user_id, session_id, events).await
    }

    /// Appends the events of a JSONL text (one `{"role": …, "content": …}` per line; blank
    /// lines skipped), at most `memory.max_import_bytes` of it with no line over
    /// `memory.max_import_line_bytes`. A bad line is reported with its number and nothing
    /// is stored.
    pub async fn append_jsonl(
        &self,
        user_id: &str,
        session_id: &str,
        jsonl: &[u8],
    ) -> Result<Vec<i64>> {
        self.check_appendable(user_id, session_id)?;
        if jsonl.len() > self.limits.max_import_bytes {
            return Err(MemoryError::invalid(
                "JSONL input",
                format!(
                    "is {} bytes, over the limit of {} bytes (memory.max_import_bytes)",
                    jsonl.len(),
                    self.limits.max_import_bytes
                ),
            ));
        }
        let mut events = Vec::new();
        for (index, line) in jsonl.split(|b| *b == b'\n').enumerate() {
            let at = |reason: String| JsonlError {
                line: index + 1,
                reason,
            };
            if line.len() > self.limits.max_import_line_bytes {
                return Err(at(format!(
                    "is {} bytes, over the limit of {} bytes (memory.max_import_line_bytes)",
                    line.len(),
                    self.limits.max_import_line_bytes
                ))
                .into());
            }
            let line = std::str::from_utf8(line).map_err(|e| at(format!("invalid UTF-8 ({e})")))?;
            if line.trim().is_empty() {
                continue;
            }
            let event: NewEvent =
                serde_json::from_str(line).map_err(|e| at(format!("invalid event: {e}")))?;
            self.check_event(&event).map_err(|e| at(e.to_string()))?;
            events.push(event);
            if events.len() > self.limits.max_batch_events {
                return Err(at(format!(
                    "more than {} events in one append (memory.max_batch_events)",
                    self.limits.max_batch_events
                ))
                .into());
            }
        }
        if events.is_empty() {
            return Err(MemoryError::invalid("JSONL input", "holds no events"));
        }
        self.append_checked(user_id, session_id, &events).await
    }

    async fn append_checked(
        &self,
        user_id: &str,
        session_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<i64>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = AppendJob {
            append: self.prepare_append(user_id, session_id, events),
            reply,
        };
        let closed = || MemoryError::WriteFailed("the append writer has stopped".into());
        self.appends.send(job).await.map_err(|_| closed())?;
        let appended = answer.await.map_err(|_| closed())??;
        self.appended(&appended);
        Ok(appended.sequences)
    }

    fn prepare_append(&self, user_id: &str, session_id: &str, events: &[NewEvent]) -> Append {
        let texts: Vec<&str> = events.iter().map(|e| e.content.as_str()).collect();
        Append {
            user_id: user_id.to_string(),
            session_id: session_id.to_string(),
            events: events.to_vec(),
            prepared: self.prepare_chunks(&texts),
            now: self.clock.now_ms(),
        }
    }

    /// As [`Memory::append`], inside the caller's write transaction: the events are
    /// stored if and when it commits. Call [`Memory::appended`] after the commit.
    pub async fn append_in(
        &self,
        tx: &WriteTx,
        user_id: &str,
        session_id: &str,
        events: &[NewEvent],
    ) -> Result<Appended> {
        self.check_appendable(user_id, session_id)?;
        for event in events {
            self.check_event(event)?;
        }
        let append = self.prepare_append(user_id, session_id, events);
        // Run as text, not prepared, on a file too: each statement runs once here, and
        // preparing the ones this append does not need (a new session's, the vectors')
        // would cost as much as running them, in every recorded run.
        let statements = Statements::on(&tx.runner(), self.embedder.model_id(), false).await?;
        append_in_tx(&statements, &append).await
    }

    /// After the commit of a transaction [`Memory::append_in`] wrote in: wakes the
    /// embedder if the append queued chunks for it.
    pub fn appended(&self, appended: &Appended) {
        if appended.queued > 0 {
            self.wake_embedder();
        }
    }

    /// A session, if it exists and (when `owner` is given) belongs to that user. Another
    /// user's session is reported exactly like a missing one.
    pub async fn session(&self, session_id: &str, owner: Option<&str>) -> Result<Session> {
        // The notes' pseudo-sessions are read through the notes, never as sessions:
        // answered the same whether one exists or not, so none tells an agent exists.
        if SessionKind::of(session_id) == SessionKind::Memory {
            return Err(MemoryError::ReservedSession(session_id.to_string()));
        }
        let conn = self.db.conn().await?;
        let session: Session = fetch_optional(
            &conn,
            &format!(
                "SELECT {} FROM sessions WHERE session_id = ?1",
                Session::COLUMNS
            ),
            [session_id],
        )
        .await?
        .ok_or_else(|| MemoryError::SessionNotFound(session_id.to_string()))?;
        if owner.is_some_and(|owner| owner != session.user_id) {
            return Err(MemoryError::SessionNotFound(session_id.to_string()));
        }
        Ok(session)
    }

    /// The last `limit` (1..=10000) events of a session the actor may see, oldest first.
    pub async fn recall(
        &self,
        actor: &Actor,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<Event>> {
        check_id("session id", session_id)?;
        crate::input::check_range("limit", limit, 1..=MAX_RECALL)?;
        self.session(session_id, actor.user_id()).await?;
        self.last_events(session_id, limit).await
    }

    /// As [`Memory::recall`], keeping only the events that happened in `window`: the last
    /// `limit` of those, oldest first.
    pub async fn recall_in(
        &self,
        actor: &Actor,
        session_id: &str,
        limit: usize,
        window: &super::EventWindow,
    ) -> Result<Vec<Event>> {
        if window.is_empty() {
            return self.recall(actor, session_id, limit).await;
        }
        check_id("session id", session_id)?;
        crate::input::check_range("limit", limit, 1..=MAX_RECALL)?;
        window.check()?;
        self.session(session_id, actor.user_id()).await?;
        let (conditions, values) = window.sql("created_at", 3);
        let mut params: Vec<libsql::Value> = vec![session_id.into(), (limit as i64).into()];
        params.extend(values);
        let conn = self.db.conn().await?;
        let mut events: Vec<Event> = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM events WHERE session_id = ?1{conditions}
                 ORDER BY sequence DESC LIMIT ?2",
                Event::COLUMNS
            ),
            params,
        )
        .await?;
        events.reverse();
        Ok(events)
    }

    /// The last `limit` events of a session the caller has already checked, oldest first.
    pub(super) async fn last_events(&self, session_id: &str, limit: usize) -> Result<Vec<Event>> {
        let conn = self.db.conn().await?;
        let mut events: Vec<Event> = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM events WHERE session_id = ?1 ORDER BY sequence DESC LIMIT ?2",
                Event::COLUMNS
            ),
            libsql::params![session_id, limit as i64],
        )
        .await?;
        events.reverse();
        Ok(events)
    }

    /// A user's conversation and scheduled-run sessions, most recently active first.
    pub async fn sessions(&self, user_id: &str) -> Result<Vec<Session>> {
        check_id("user id", user_id)?;
        let conn = self.db.conn().await?;
        Ok(fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM sessions WHERE user_id = ?1 AND kind != 'memory'
                 ORDER BY updated_at DESC, session_id",
                Session::COLUMNS
            ),
            [user_id],
        )
        .await?)
    }

    /// Deletes a session the actor may see and everything derived from it: events, state,
    /// summary, chunks, their vectors and stored index blocks.
    pub async fn forget(&self, actor: &Actor, session_id: &str) -> Result<()> {
        let owner = actor.user_id();
        check_id("session id", session_id)?;
        if SessionKind::of(session_id) == SessionKind::Memory {
            return Err(MemoryError::ReservedSession(session_id.to_string()));
        }
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let user_id: Option<String> = crate::db::query_scalar(
            &tx,
            "SELECT user_id FROM sessions WHERE session_id = ?1 AND (?2 IS NULL OR user_id = ?2)",
            libsql::params![session_id, owner],
        )
        .await?;
        let Some(user_id) = user_id else {
            tx.rollback().await?;
            return Err(MemoryError::SessionNotFound(session_id.to_string()));
        };
        tx.execute("DELETE FROM sessions WHERE session_id = ?1", [session_id])
            .await?;
        self.session_forgotten(&tx, &user_id, session_id, now)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}
