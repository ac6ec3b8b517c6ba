//! The outbox table: messages written with the run that caused them, claimed by one
//! sender at a time with a lease, retried with backoff, expired by priority, and kept as
//! dead letters when they cannot be delivered.

mod history;

pub use history::{HourOfOutbox, OutboxHistory};
use serde::Serialize;

use crate::db::{fetch_optional, json_column, query_scalar, Db, DbError, FromRow};
use crate::ids;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    High,
    Normal,
    Low,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }
}

/// Where and how a schedule's messages go, decided when the run is recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyPlan {
    pub channel_id: String,
    pub channel_context_id: Option<String>,
    pub marker: String,
    pub failure_notice_after: i64,
    /// Characters of a run's output a message carries at most.
    pub max_message_chars: usize,
    /// Where a run can be read over the API (`server.public_url`), for a link.
    pub public_url: Option<String>,
    /// Lifetime of a message by priority (high, normal, low), milliseconds.
    pub ttl_ms: [i64; 3],
    /// Messages that may wait for delivery on one channel
    /// (`notify.max_pending_per_channel`); one more is kept as a dead letter instead.
    pub max_pending_per_channel: i64,
    /// When the recipient's daily digest goes out (`notify = "digest"` schedules).
    pub digest_at: crate::time_of_day::DailyTime,
}

impl NotifyPlan {
    fn ttl(&self, priority: Priority) -> i64 {
        match priority {
            Priority::High => self.ttl_ms[0],
            Priority::Normal => self.ttl_ms[1],
            Priority::Low => self.ttl_ms[2],
        }
    }
}

/// A message to put in the outbox.
pub struct NewMessage<'a> {
    pub kind: &'static str,
    /// The run it is about; none for a memory change.
    pub run_id: Option<&'a str>,
    pub schedule_id: Option<&'a str>,
    pub user_id: &'a str,
    pub priority: Priority,
    pub payload: serde_json::Value,
}

/// Writes a message inside the caller's transaction (the one recording the run). The
/// idempotency key makes a second write of the same message a no-op. A channel that
/// already has `plan.max_pending_per_channel` messages waiting gets this one as a dead
/// letter saying why (kept for `outbox retry`, never dropped silently), in the same single
/// statement: no extra round trip inside the write transaction.
pub async fn enqueue_in(
    conn: &crate::db::WriteTx,
    plan: &NotifyPlan,
    message: NewMessage<'_>,
    now: i64,
) -> Result<(), libsql::Error> {
    let key = format!("{}:{}", message.run_id.unwrap_or_default(), message.kind);
    enqueue_keyed_in(conn, plan, &key, message, now).await
}

/// As [`enqueue_in`], under the idempotency key `key`.
pub async fn enqueue_keyed_in(
    conn: &crate::db::WriteTx,
    plan: &NotifyPlan,
    key: &str,
    message: NewMessage<'_>,
    now: i64,
) -> Result<(), libsql::Error> {
    let full = format!(
        "the outbox of channel `{}` is full: {} messages already wait for delivery \
         (notify.max_pending_per_channel)",
        plan.channel_id, plan.max_pending_per_channel
    );
    // The count stops at the limit: a full outbox costs no more to check than a nearly
    // full one. `WHERE true` keeps SQLite from reading ON CONFLICT as a join's.
    let status: Option<String> = crate::db::query_scalar(
        conn,
        "INSERT INTO outbox (message_id, idempotency_key, kind, run_id, schedule_id, user_id,
         channel_id, channel_context_id, priority, payload_json, next_attempt_at, expires_at,
         created_at, status, last_error, dead_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?11,
                CASE WHEN is_full THEN 'dead' ELSE 'pending' END,
                CASE WHEN is_full THEN ?14 END,
                CASE WHEN is_full THEN CAST(?11 AS BIGINT) END
         FROM (SELECT count(*) >= ?13 AS is_full FROM
               (SELECT 1 FROM outbox WHERE status = 'pending' AND channel_id = ?7 LIMIT ?13)
               AS waiting) AS channel
         WHERE true
         ON CONFLICT (idempotency_key) DO NOTHING
         RETURNING status",
        libsql::params![
            ids::new_id("msg"),
            key,
            message.kind,
            message.run_id,
            message.schedule_id,
            message.user_id,
            plan.channel_id.as_str(),
            plan.channel_context_id.as_deref(),
            message.priority.as_str(),
            message.payload.to_string(),
            now,
            now + plan.ttl(message.priority),
            plan.max_pending_per_channel,
            full.as_str()
        ],
    )
    .await?;
    if status.as_deref() == Some("dead") {
        tracing::warn!(
            channel = %plan.channel_id,
            run_id = message.run_id.unwrap_or_default(),
            key,
            limit = plan.max_pending_per_channel,
            "outbox full: the message is kept as a dead letter instead of waiting to be sent"
        );
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Message {
    pub message_id: String,
    pub idempotency_key: String,
    pub kind: String,
    pub run_id: Option<String>,
    pub schedule_id: Option<String>,
    pub user_id: String,
    pub channel_id: String,
    pub channel_context_id: Option<String>,
    pub priority: String,
    pub payload: serde_json::Value,
    pub status: String,
    pub attempts: i64,
    pub progress: i64,
    pub next_attempt_at: i64,
    pub expires_at: i64,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
}

impl FromRow for Message {
    const COLUMNS: &'static str = "message_id, idempotency_key, kind, run_id, schedule_id,
        user_id, channel_id, channel_context_id, priority, payload_json, status, attempts,
        progress, next_attempt_at, expires_at, last_error, created_at, delivered_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(Message {
            message_id: row.get(0)?,
            idempotency_key: row.get(1)?,
            kind: row.get(2)?,
            run_id: row.get(3)?,
            schedule_id: row.get(4)?,
            user_id: row.get(5)?,
            channel_id: row.get(6)?,
            channel_context_id: row.get(7)?,
            priority: row.get(8)?,
            payload: json_column(row, 9, "message payload")?,
            status: row.get(10)?,
            attempts: row.get(11)?,
            progress: row.get(12)?,
            next_attempt_at: row.get(13)?,
            expires_at: row.get(14)?,
            last_error: row.get(15)?,
            created_at: row.get(16)?,
            delivered_at: row.get(17)?,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("no outbox message `{0}`")]
    NotFound(String),
    #[error("message `{0}` is {1}; only dead messages can be retried")]
    NotDead(String, String),
    #[error("invalid outbox status `{0}`: use pending, delivered or dead")]
    BadStatus(String),
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl crate::error::Kind for OutboxError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            OutboxError::NotFound(_) => ErrorKind::NotFound,
            OutboxError::NotDead(..) => ErrorKind::Conflict,
            OutboxError::BadStatus(_) | OutboxError::Input(_) => ErrorKind::BadInput,
            OutboxError::Db(err) => err.kind(),
        }
    }
}

impl From<libsql::Error> for OutboxError {
    fn from(err: libsql::Error) -> Self {
        OutboxError::Db(DbError::Sql(err))
    }
}

#[derive(Clone)]
pub struct Outbox {
    db: Db,
}

impl Outbox {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Claims up to `limit` messages due at `now` for `owner`, most urgent first. Expired
    /// ones are turned into dead letters on the way.
    pub async fn claim_due(
        &self,
        owner: &str,
        now: i64,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Vec<Message>, OutboxError> {
        let conn = self.db.conn().await?;
        // On PostgreSQL each worker's claim locks the messages it takes and passes over
        // those another's claim holds: workers draining the outbox side by side take
        // disjoint messages and never wait for each other (nor for the write lock).
        // SQLite's one writer at a time makes the same claim safe as it is.
        let skip_locked = if conn.is_postgres() {
            "FOR UPDATE SKIP LOCKED"
        } else {
            ""
        };
        conn.execute(
            &format!(
                "UPDATE outbox SET status = 'dead', dead_at = expires_at,
                     last_error = coalesce(last_error || '; ', '') || 'expired undelivered'
                 WHERE message_id IN (
                     SELECT message_id FROM outbox WHERE status = 'pending' AND expires_at <= ?1
                     {skip_locked})"
            ),
            [now],
        )
        .await?;
        let mut rows = conn
            .query(
                &format!(
                    "UPDATE outbox SET lease_owner = ?1, lease_expires_at = ?2
                     WHERE message_id IN (
                         SELECT message_id FROM outbox
                         WHERE status = 'pending' AND next_attempt_at <= ?3
                           AND (lease_expires_at IS NULL OR lease_expires_at <= ?3)
                         ORDER BY CASE priority WHEN 'high' THEN 0 WHEN 'normal' THEN 1 ELSE 2 END,
                                  next_attempt_at
                         LIMIT ?4 {skip_locked})
                     RETURNING {}",
                    Message::COLUMNS
                ),
                libsql::params![owner, now + lease_ms, now, limit],
            )
            .await?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().await? {
            out.push(Message::from_row(&row)?);
        }
        Ok(out)
    }

    /// Records a delivery; the run's `notified` turns true with it. Only the lease holder
    /// may record it.
    pub async fn delivered(
        &self,
        message: &Message,
        owner: &str,
        now: i64,
    ) -> Result<bool, OutboxError> {
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let changed = tx
            .execute(
                "UPDATE outbox SET status = 'delivered', delivered_at = ?3, attempts = attempts + 1,
                 lease_owner = NULL, lease_expires_at = NULL
                 WHERE message_id = ?1 AND lease_owner = ?2 AND status = 'pending'",
                libsql::params![message.message_id.as_str(), owner, now],
            )
            .await?;
        if changed == 1 && message.kind == "run" {
            if let Some(run_id) = &message.run_id {
                tx.execute(
                    "UPDATE schedule_runs SET notified = 1 WHERE run_id = ?1",
                    [run_id.as_str()],
                )
                .await?;
            }
        }
        tx.commit().await?;
        Ok(changed == 1)
    }

    /// Records a failed attempt: tried again at `retry_at`, or a dead letter from
    /// `dead_at` when that is set (out of attempts, expired, or a permanent refusal).
    pub async fn failed(
        &self,
        message: &Message,
        owner: &str,
        error: &str,
        progress: i64,
        retry_at: i64,
        dead_at: Option<i64>,
    ) -> Result<(), OutboxError> {
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?3, progress = ?4,
             next_attempt_at = ?5, status = CASE WHEN CAST(?6 AS BIGINT) IS NULL THEN 'pending' ELSE 'dead' END,
             dead_at = ?6, lease_owner = NULL, lease_expires_at = NULL
             WHERE message_id = ?1 AND lease_owner = ?2 AND status = 'pending'",
            libsql::params![
                message.message_id.as_str(),
                owner,
                error,
                progress,
                retry_at,
                dead_at
            ],
        )
        .await?;
        Ok(())
    }

    /// Holds a claimed message until `until` (the end of its user's quiet hours): not an
    /// attempt, and its time to live moves on by the wait, so a night's wait does not
    /// turn it into a dead letter. Only the lease holder may.
    pub async fn hold(
        &self,
        message: &Message,
        owner: &str,
        until: i64,
        now: i64,
    ) -> Result<bool, OutboxError> {
        let conn = self.db.conn().await?;
        let held = conn
            .execute(
                "UPDATE outbox SET next_attempt_at = ?3, expires_at = expires_at + ?4,
                 lease_owner = NULL, lease_expires_at = NULL
                 WHERE message_id = ?1 AND lease_owner = ?2 AND status = 'pending'",
                libsql::params![
                    message.message_id.as_str(),
                    owner,
                    until,
                    until.saturating_sub(now).max(0)
                ],
            )
            .await?;
        Ok(held == 1)
    }

    /// The earliest time a pending message may be tried.
    pub async fn next_due_at(&self) -> Result<Option<i64>, OutboxError> {
        let conn = self.db.conn().await?;
        Ok(query_scalar(
            &conn,
            "SELECT min(max(next_attempt_at, coalesce(lease_expires_at, 0))) FROM outbox WHERE status = 'pending'",
            (),
        )
        .await?)
    }

    pub async fn list(
        &self,
        status: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Message>, OutboxError> {
        if let Some(status) = status {
            if !matches!(status, "pending" | "delivered" | "dead") {
                return Err(OutboxError::BadStatus(
                    crate::input::printable(status).into_owned(),
                ));
            }
        }
        crate::input::check_range("limit", limit, 1..=1000)?;
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                &format!(
                    "SELECT {} FROM outbox WHERE (?1 IS NULL OR status = ?1)
                     ORDER BY created_at DESC, message_id DESC LIMIT ?2",
                    Message::COLUMNS
                ),
                libsql::params![status, limit],
            )
            .await?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().await? {
            out.push(Message::from_row(&row)?);
        }
        Ok(out)
    }

    pub async fn get(&self, message_id: &str) -> Result<Message, OutboxError> {
        let conn = self.db.conn().await?;
        fetch_optional(
            &conn,
            &format!(
                "SELECT {} FROM outbox WHERE message_id = ?1",
                Message::COLUMNS
            ),
            [message_id],
        )
        .await?
        .ok_or_else(|| OutboxError::NotFound(message_id.to_string()))
    }

    /// Gives a dead letter a fresh start: pending now, attempts reset, a new lifetime as
    /// long as its priority's.
    pub async fn retry(
        &self,
        message_id: &str,
        now: i64,
        notify: &crate::config::NotifyConfig,
    ) -> Result<Message, OutboxError> {
        let message = self.get(message_id).await?;
        let ttl_ms = notify.ttl_ms(&message.priority);
        if message.status != "dead" {
            return Err(OutboxError::NotDead(message_id.to_string(), message.status));
        }
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = ?2,
             expires_at = ?3, dead_at = NULL, lease_owner = NULL, lease_expires_at = NULL
             WHERE message_id = ?1 AND status = 'dead'",
            libsql::params![message_id, now, now + ttl_ms],
        )
        .await?;
        self.get(message_id).await
    }

    /// Deletes delivered messages older than `before` (maintenance).
    pub async fn prune_delivered(&self, before: i64) -> Result<u64, OutboxError> {
        let conn = self.db.conn().await?;
        Ok(conn
            .execute(
                "DELETE FROM outbox WHERE status = 'delivered' AND delivered_at < ?1",
                [before],
            )
            .await?)
    }
}
