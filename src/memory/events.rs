//! Conversation sessions and their append-only events.

use super::writer::{append_in_tx, Append, AppendJob, Appended, Statements};
use super::{
    check_id, Event, Memory, MemoryError, NewEvent, Result, Role, Session, SessionKey, SessionKind,
};
use crate::access::Actor;
use crate::config::Oversize;
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

/// Makes sure the session stored under `key` exists (its user's), creating it if
/// needed, inside the caller's transaction. Returns its last sequence.
pub(crate) async fn ensure_session(
    conn: &crate::db::Runner,
    key: &SessionKey,
    now: i64,
) -> Result<i64, DbError> {
    let mut rows = conn
        .query(
            "SELECT last_sequence FROM sessions WHERE session_id = ?1 AND user_id = ?2",
            [key.as_str(), key.user_id()],
        )
        .await?;
    if let Some(row) = rows.next().await? {
        let last_sequence = row.get(0)?;
        finish_rows(rows).await?;
        return Ok(last_sequence);
    }
    drop(rows);
    create_session(conn, key, now).await?;
    Ok(0)
}

/// Creates the session stored under `key` (with no events yet), inside the caller's
/// transaction, which has found that it does not exist.
pub(super) async fn create_session(
    conn: &crate::db::Runner,
    key: &SessionKey,
    now: i64,
) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO sessions (session_id, user_id, kind, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?4)",
        libsql::params![
            key.as_str(),
            key.user_id(),
            SessionKind::of(key.session_id()).as_str(),
            now
        ],
    )
    .await?;
    conn.execute(
        "INSERT INTO session_state (session_id, updated_at) VALUES (?1, ?2)",
        libsql::params![key.as_str(), now],
    )
    .await?;
    Ok(())
}

impl FromRow for Session {
    const COLUMNS: &'static str =
        "session_id, user_id, title, created_at, updated_at, last_sequence";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        let key: String = row.get(0)?;
        let session_id = SessionKey::id_of(&key).to_string();
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
        let key: String = row.get(0)?;
        Ok(Event {
            session_id: SessionKey::id_of(&key).to_string(),
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

    /// `events`, each over `memory.max_text_bytes` cut to fit unless `memory.oversize`
    /// is `refuse`, no whole text kept (see [`super::oversize::fit`]).
    fn fit_oversize<'a>(&self, events: &'a [NewEvent]) -> std::borrow::Cow<'a, [NewEvent]> {
        super::oversize::fit(events, self.limits.max_text_bytes, self.limits.oversize)
    }

    /// Whether an over-long event's whole text is kept as an artifact.
    fn keeps_whole_texts(&self) -> Option<&dyn super::oversize::WholeTextKeeper> {
        match self.limits.oversize {
            Oversize::Artifact => self.whole_texts.as_deref(),
            Oversize::Refuse | Oversize::Truncate => None,
        }
    }

    /// Whether `event` is stored cut: over `memory.max_text_bytes` under a policy that
    /// cuts (one too long even to cut was refused by [`Memory::check_fitted`]). Asked
    /// without building the cut.
    fn over_long(&self, event: &NewEvent) -> bool {
        event.content.len() > self.limits.max_text_bytes && self.limits.oversize != Oversize::Refuse
    }

    /// `event` cut to fit, the marker naming `whole`; `None` when it fits, the policy is
    /// to refuse, or it is too long even to cut (the content check then names it).
    fn cut(&self, event: &NewEvent, whole: Option<&str>) -> Option<NewEvent> {
        let max = self.limits.max_text_bytes;
        if event.content.len() <= max || self.limits.oversize == Oversize::Refuse {
            return None;
        }
        let content = super::oversize::cut_middle(&event.content, max, whole)?.into_owned();
        Some(NewEvent {
            content,
            ..event.clone()
        })
    }

    /// Checks `event` as it will be stored: cut to fit when it is over-long and may be
    /// (with a stand-in for the artifact id its marker will name).
    fn check_fitted(&self, event: &NewEvent) -> Result<()> {
        let whole = self
            .keeps_whole_texts()
            .map(|_| super::oversize::PLACEHOLDER_ID);
        match self.cut(event, whole) {
            Some(cut) => self.check_event(&cut),
            None => self.check_event(event),
        }
    }

    /// Whether an append of `event` would be refused for what it is: too long to cut
    /// (or too long, under `oversize = "refuse"`), or invalid.
    pub fn would_refuse(&self, event: &NewEvent) -> bool {
        self.check_fitted(event).is_err()
    }

    /// Appends `events`, each already checked by [`Memory::check_fitted`], an over-long
    /// one cut to fit. Under `oversize = "artifact"` its whole text is kept too, in the
    /// same transaction. A failure about one event is told through `about` (its index).
    async fn append_fitted(
        &self,
        user_id: &str,
        session_id: &str,
        events: &[NewEvent],
        about: impl Fn(usize, MemoryError) -> MemoryError,
    ) -> Result<Vec<i64>> {
        match self.keeps_whole_texts() {
            Some(keeper) if events.iter().any(|e| self.over_long(e)) => {
                self.append_keeping(keeper, user_id, session_id, events, about)
                    .await
            }
            _ => {
                let events = self.fit_oversize(events);
                self.append_checked(user_id, session_id, &events).await
            }
        }
    }

    /// An append with turns to keep whole: outside the group writer, in a transaction of
    /// its own that holds the artifacts' rows and the events together (rare, and large).
    async fn append_keeping(
        &self,
        keeper: &dyn super::oversize::WholeTextKeeper,
        user_id: &str,
        session_id: &str,
        events: &[NewEvent],
        about: impl Fn(usize, MemoryError) -> MemoryError,
    ) -> Result<Vec<i64>> {
        let mut placed = Vec::new();
        let mut pending = 0u64;
        for (index, event) in events.iter().enumerate() {
            if !self.over_long(event) {
                continue;
            }
            match keeper.place(user_id, &event.content, pending).await {
                Ok(at) => {
                    pending = pending.saturating_add(event.content.len() as u64);
                    placed.push((index, at));
                }
                Err(err) => {
                    keeper
                        .release(&placed.iter().map(|(_, at)| at).collect::<Vec<_>>())
                        .await;
                    return Err(about(index, err));
                }
            }
        }
        let stored = self
            .store_keeping(keeper, (user_id, session_id), events, &placed, &about)
            .await;
        match stored {
            Ok(appended) => {
                for (index, at) in &placed {
                    keeper.settle(&events[*index].content, at).await;
                }
                self.appended(&appended);
                Ok(appended.sequences)
            }
            Err(err) => {
                // Nothing of the append was stored: the files placed for it go at once.
                keeper
                    .release(&placed.iter().map(|(_, at)| at).collect::<Vec<_>>())
                    .await;
                Err(err)
            }
        }
    }

    /// The transaction of [`Memory::append_keeping`]: the artifacts' rows of the `placed`
    /// whole texts, then the events, cut to fit, their markers naming the artifacts.
    async fn store_keeping(
        &self,
        keeper: &dyn super::oversize::WholeTextKeeper,
        (user_id, session_id): (&str, &str),
        events: &[NewEvent],
        placed: &[(usize, super::oversize::PlacedText)],
        about: &impl Fn(usize, MemoryError) -> MemoryError,
    ) -> Result<Appended> {
        let key = SessionKey::new(user_id, session_id);
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let mut fitted = events.to_vec();
        for (index, at) in placed {
            let event = &events[*index];
            let artifact_id = keeper
                .record_in(&tx, &key, &event.content, at)
                .await
                .map_err(|e| about(*index, e))?;
            fitted[*index] = self.cut(event, Some(&artifact_id)).ok_or_else(|| {
                about(
                    *index,
                    MemoryError::invalid("event content", "is too long to cut to fit"),
                )
            })?;
            self.check_event(&fitted[*index])
                .map_err(|e| about(*index, e))?;
        }
        let append = self.prepare_append(user_id, session_id, &fitted);
        let statements = Statements::on(&tx.runner(), self.embedder.model_id(), false).await?;
        let appended = append_in_tx(&statements, &append).await?;
        drop(statements);
        tx.commit().await?;
        Ok(appended)
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

    /// A session a user's door may append to: a conversation. The notes' pseudo-sessions
    /// (`memory:…`, `memory@…`) are written through the notes, and a schedule's
    /// transcripts (`scheduled:…`) by its runs only: neither is anyone's to append to.
    fn check_appendable(&self, user_id: &str, session_id: &str) -> Result<()> {
        check_id("user id", user_id)?;
        check_id("session id", session_id)?;
        if SessionKind::of(session_id) != SessionKind::Conversation {
            return Err(MemoryError::ReservedSession(session_id.to_string()));
        }
        Ok(())
    }

    /// A schedule's transcript session (`scheduled:…`), which only its runs append to.
    fn check_transcript(&self, user_id: &str, session_id: &str) -> Result<()> {
        check_id("user id", user_id)?;
        check_id("session id", session_id)?;
        if SessionKind::of(session_id) != SessionKind::Scheduled {
            return Err(MemoryError::invalid(
                "session id",
                format!("`{session_id}` is not a schedule's transcript session (scheduled:…)"),
            ));
        }
        Ok(())
    }

    /// Appends events to one of the user's conversation sessions (created on first use)
    /// in one transaction: all are stored, with consecutive sequences, or none. Returns
    /// the sequences given to them. Another user's session of the same id is another
    /// session, untouched; the reserved ids (`memory:…`, `memory@…`, `scheduled:…`) are
    /// refused.
    pub async fn append(
        &self,
        user_id: &str,
        session_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<i64>> {
        self.check_appendable(user_id, session_id)?;
        self.check_batch(events.len())?;
        for event in events {
            self.check_fitted(event)?;
        }
        self.append_fitted(user_id, session_id, events, |_, err| err)
            .await
    }

    /// Appends a run's transcript to its schedule's session (`scheduled:…`) of the
    /// schedule's user: for the scheduler, which alone writes there.
    pub async fn append_transcript(
        &self,
        user_id: &str,
        session_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<i64>> {
        self.check_transcript(user_id, session_id)?;
        self.check_batch(events.len())?;
        // Only cut, never kept whole: a run's transcript is not the user's to keep as
        // artifacts, and must not be lost to their artifact limits.
        let events = self.fit_oversize(events);
        for event in events.iter() {
            self.check_event(event)?;
        }
        self.append_checked(user_id, session_id, &events).await
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
        // Each event's line number, to name it in an error found after reading.
        let mut lines = Vec::new();
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
            self.check_fitted(&event).map_err(|e| at(e.to_string()))?;
            events.push(event);
            lines.push(index + 1);
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
        self.append_fitted(user_id, session_id, &events, |index, err| match err {
            // A database failure is no fault of the line's.
            MemoryError::Db(_) => err,
            err => MemoryError::OnLine {
                line: lines[index],
                source: Box::new(err),
            },
        })
        .await
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
            key: SessionKey::new(user_id, session_id),
            events: events.to_vec(),
            prepared: self.prepare_chunks(&texts),
            now: self.clock.now_ms(),
        }
    }

    /// As [`Memory::append_transcript`], inside the caller's write transaction: the
    /// events are stored if and when it commits. Call [`Memory::appended`] after the
    /// commit. An over-long event is only cut, under `oversize = "artifact"` too (see
    /// [`Memory::append_transcript`]).
    pub async fn append_in(
        &self,
        tx: &WriteTx,
        user_id: &str,
        session_id: &str,
        events: &[NewEvent],
    ) -> Result<Appended> {
        self.check_transcript(user_id, session_id)?;
        let events = self.fit_oversize(events);
        for event in events.iter() {
            self.check_event(event)?;
        }
        let append = self.prepare_append(user_id, session_id, &events);
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

    /// A session, if it exists: `owner`'s session of that id, or (for the operator, with
    /// no owner) the one session of that id whichever its user, refused as ambiguous when
    /// several users have one. Another user's session is reported exactly like a missing
    /// one: to a user, only their own sessions exist.
    pub async fn session(&self, session_id: &str, owner: Option<&str>) -> Result<Session> {
        // The notes' pseudo-sessions are read through the notes, never as sessions:
        // answered the same whether one exists or not, so none tells an agent exists.
        if SessionKind::of(session_id) == SessionKind::Memory {
            return Err(MemoryError::ReservedSession(session_id.to_string()));
        }
        let conn = self.db.conn().await?;
        let not_found = || MemoryError::SessionNotFound(session_id.to_string());
        if let Some(owner) = owner {
            let key = SessionKey::new(owner, session_id);
            return fetch_optional(
                &conn,
                &format!(
                    "SELECT {} FROM sessions WHERE session_id = ?1",
                    Session::COLUMNS
                ),
                [key.as_str()],
            )
            .await?
            .ok_or_else(not_found);
        }
        // By the id within the key (indexed: `sessions_by_id`), checked whole.
        let mut found: Vec<Session> = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM sessions
                 WHERE substr(session_id, length(user_id) + 2) = ?1
                   AND session_id = user_id || ?2
                 ORDER BY user_id LIMIT 2",
                Session::COLUMNS
            ),
            [session_id.to_string(), format!("\u{1f}{session_id}")],
        )
        .await?;
        match found.len() {
            0 => Err(not_found()),
            1 => Ok(found.remove(0)),
            _ => {
                let users: Option<i64> = crate::db::query_scalar(
                    &conn,
                    "SELECT count(*) FROM sessions
                     WHERE substr(session_id, length(user_id) + 2) = ?1
                       AND session_id = user_id || ?2",
                    [session_id.to_string(), format!("\u{1f}{session_id}")],
                )
                .await?;
                Err(MemoryError::SessionAmbiguous {
                    session_id: session_id.to_string(),
                    users: users.unwrap_or(2) as usize,
                })
            }
        }
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
        let session = self.session(session_id, actor.user_id()).await?;
        self.last_events(&session.key(), limit).await
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
        let key = self.session(session_id, actor.user_id()).await?.key();
        let (conditions, values) = window.sql("created_at", 3);
        let mut params: Vec<libsql::Value> = vec![key.as_str().into(), (limit as i64).into()];
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
    pub(super) async fn last_events(&self, key: &SessionKey, limit: usize) -> Result<Vec<Event>> {
        self.last_events_until(key, limit, i64::MAX).await
    }

    /// The session's last `limit` events recorded at or before `until` (Unix ms), oldest
    /// first: its recent turns as they stood then.
    pub(super) async fn last_events_until(
        &self,
        key: &SessionKey,
        limit: usize,
        until: i64,
    ) -> Result<Vec<Event>> {
        let conn = self.db.conn().await?;
        let mut events: Vec<Event> = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM events WHERE session_id = ?1 AND created_at <= ?3
                 ORDER BY sequence DESC LIMIT ?2",
                Event::COLUMNS
            ),
            libsql::params![key.as_str(), limit as i64, until],
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
        check_id("session id", session_id)?;
        if SessionKind::of(session_id) == SessionKind::Memory {
            return Err(MemoryError::ReservedSession(session_id.to_string()));
        }
        let key = self.session(session_id, actor.user_id()).await?.key();
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let deleted = tx
            .execute("DELETE FROM sessions WHERE session_id = ?1", [key.as_str()])
            .await?;
        if deleted == 0 {
            // Forgotten by someone else meanwhile.
            tx.rollback().await?;
            return Err(MemoryError::SessionNotFound(session_id.to_string()));
        }
        self.session_forgotten(&tx, key.user_id(), session_id, now)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}
