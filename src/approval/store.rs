//! Reading approvals and answering them. An answer is one conditional write (`state =
//! 'pending'`): of two answers at once, from any doors or processes, one decides and the
//! other is told what was decided. A decision moves the schedules' change counter, so a
//! worker in another process resumes the run at its next look; one in this process is
//! woken at once.

use std::sync::Arc;

use tokio::sync::{Notify, OnceCell};

use super::link::{LinkClaims, LinkKey};
use super::{Approval, ApprovalError, ApprovalState, Decision, Door, MAX_REASON_BYTES};
use crate::access::Actor;
use crate::db::clock::Clock;
use crate::db::{fetch_all, fetch_optional, query_scalar, Db, DbError};
use crate::input::{self, Lines};

type Result<T, E = ApprovalError> = std::result::Result<T, E>;

/// Most approvals one list returns.
pub const MAX_LIST: i64 = 1000;

#[derive(Clone)]
pub struct ApprovalStore {
    db: Db,
    clock: Arc<dyn Clock>,
    /// The scheduler loop of this process, woken when an answer lets a run go on.
    wake: Arc<Notify>,
    key: Arc<OnceCell<LinkKey>>,
}

impl ApprovalStore {
    pub fn new(db: Db, clock: Arc<dyn Clock>, wake: Arc<Notify>) -> Self {
        Self {
            db,
            clock,
            wake,
            key: Arc::new(OnceCell::new()),
        }
    }

    /// The key links are signed with (read once).
    pub async fn link_key(&self) -> Result<LinkKey> {
        let key = self
            .key
            .get_or_try_init(|| async {
                let conn = self.db.conn().await?;
                link_key_in(&conn).await.map_err(ApprovalError::Db)
            })
            .await?;
        Ok(key.clone())
    }

    /// The actor's approvals, newest first; only those in `state` when given.
    pub async fn list(
        &self,
        actor: &Actor,
        state: Option<ApprovalState>,
        limit: i64,
    ) -> Result<Vec<Approval>> {
        input::check_range("limit", limit, 1..=MAX_LIST)?;
        let conn = self.db.conn().await?;
        Ok(fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM approvals WHERE (?1 IS NULL OR user_id = ?1)
                 AND (?2 IS NULL OR state = ?2) ORDER BY created_at DESC, approval_id DESC
                 LIMIT ?3",
                super::COLUMNS
            ),
            libsql::params![actor.user_id(), state.map(|s| s.as_str()), limit],
        )
        .await?)
    }

    /// The actor's answered approvals, the most recently answered first.
    pub async fn answered(&self, actor: &Actor, limit: i64) -> Result<Vec<Approval>> {
        input::check_range("limit", limit, 1..=MAX_LIST)?;
        let conn = self.db.conn().await?;
        Ok(fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM approvals WHERE (?1 IS NULL OR user_id = ?1)
                 AND state != 'pending' ORDER BY decided_at DESC, approval_id DESC LIMIT ?2",
                super::COLUMNS
            ),
            libsql::params![actor.user_id(), limit],
        )
        .await?)
    }

    /// One approval, if it is the actor's.
    pub async fn get(&self, actor: &Actor, approval_id: &str) -> Result<Approval> {
        input::check_id("approval_id", approval_id)?;
        let conn = self.db.conn().await?;
        fetch_optional(
            &conn,
            &format!(
                "SELECT {} FROM approvals WHERE approval_id = ?1
                 AND (?2 IS NULL OR user_id = ?2)",
                super::COLUMNS
            ),
            libsql::params![approval_id, actor.user_id()],
        )
        .await?
        .ok_or_else(|| ApprovalError::NotFound(approval_id.to_string()))
    }

    /// Answers a pending approval of the actor's, once. Answered already (by anyone, or
    /// by nobody in time): [`ApprovalError::Decided`], nothing changed.
    pub async fn decide(
        &self,
        actor: &Actor,
        approval_id: &str,
        decision: Decision,
        door: Door,
        reason: Option<&str>,
    ) -> Result<Approval> {
        input::check_id("approval_id", approval_id)?;
        if let Some(reason) = reason {
            input::check_text("reason", reason, MAX_REASON_BYTES, Lines::Many)?;
        }
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let decided: Option<Approval> = fetch_optional(
            &tx,
            &format!(
                "UPDATE approvals SET state = ?3, decided_by = ?4, reason = ?5, decided_at = ?6
                 WHERE approval_id = ?1 AND (?2 IS NULL OR user_id = ?2)
                 AND state = 'pending' AND expires_at > ?6
                 RETURNING {}",
                super::COLUMNS
            ),
            libsql::params![
                approval_id,
                actor.user_id(),
                decision.state().as_str(),
                door.as_str(),
                reason,
                now
            ],
        )
        .await?;
        let Some(decided) = decided else {
            // Not answered now: missing, not the actor's, answered, or out of time (then
            // answered as the timeout would, so every door tells the same from now on).
            tx.execute(
                "UPDATE approvals SET state = 'expired', decided_by = 'timeout', decided_at = ?3
                 WHERE approval_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR user_id = ?2)
                 AND state = 'pending' AND expires_at <= ?3",
                libsql::params![approval_id, actor.user_id(), now],
            )
            .await?;
            tx.commit().await?;
            let current = self.get(actor, approval_id).await?;
            return Err(ApprovalError::Decided {
                id: current.approval_id,
                state: current.state,
                by: current.decided_by.unwrap_or_default(),
            });
        };
        // Tells workers in other processes that a run may go on.
        crate::db::tell_workers_to_look(&tx).await?;
        tx.commit().await?;
        self.wake.notify_one();
        tracing::info!(approval_id, state = %decided.state, door = door.as_str(), "approval answered");
        Ok(decided)
    }

    /// The approval a link is for and what it would do, without doing it (a link opened
    /// by a chat app's preview must not answer). A link for an answered approval is good
    /// for reading what was decided.
    pub async fn open_link(&self, token: &str) -> Result<(Approval, LinkClaims)> {
        let claims = self.link_key().await?.verify(token, self.clock.now_ms())?;
        let approval = self.get(&Actor::Operator, &claims.approval_id).await?;
        Ok((approval, claims))
    }

    /// Answers the approval a link is for, as the link says, once.
    pub async fn follow_link(&self, token: &str) -> Result<Approval> {
        let (approval, claims) = self.open_link(token).await?;
        self.decide(
            &Actor::User(approval.user_id),
            &claims.approval_id,
            claims.action.decision(),
            Door::Link,
            None,
        )
        .await
    }
}

/// The link key, read inside the caller's connection or transaction.
pub async fn link_key_in(conn: &(impl crate::db::Queryable + ?Sized)) -> Result<LinkKey, DbError> {
    let hex: Option<String> = query_scalar(
        conn,
        "SELECT value FROM meta WHERE key = 'approval_link_key'",
        (),
    )
    .await?;
    hex.as_deref()
        .and_then(LinkKey::from_hex)
        .ok_or_else(|| DbError::Corrupt {
            what: "approval link key".into(),
            reason: "meta.approval_link_key is missing or not 32 bytes of hex".into(),
        })
}
