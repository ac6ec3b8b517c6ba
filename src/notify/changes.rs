//! Memory change events into the outbox: the changes `memory` recorded (one row per change,
//! written with the change) become outbox messages to the user's change channel, one per
//! change under the idempotency key `memory:CHANGE_ID`, and leave `memory_changes` in the
//! same transaction. At least once, never twice per key: two workers moving the same rows
//! write one message (the key is unique), and a crash before the commit leaves the rows to
//! move again.

use std::collections::HashMap;
use std::sync::Arc;

use super::outbox::{enqueue_keyed_in, NewMessage, OutboxError, Priority};
use super::router::Router;
use crate::config::Config;
use crate::db::Db;
use crate::memory::ChangeEvents;

/// Changes moved at a time.
const BATCH: i64 = 200;

/// Where each user's memory changes go.
#[derive(Clone)]
pub struct ChangeForwarder {
    db: Db,
    router: Arc<Router>,
    global: Option<String>,
    users: HashMap<String, String>,
}

impl ChangeForwarder {
    /// The forwarder the configuration asks for; `None` when no user's changes go anywhere.
    pub fn from_config(db: Db, router: Arc<Router>, config: &Config) -> Option<Self> {
        let users: HashMap<String, String> = config
            .users
            .iter()
            .filter_map(|(user, s)| Some((user.clone(), s.memory_changes_channel.clone()?)))
            .collect();
        let global = config.notify.memory_changes_channel.clone();
        (global.is_some() || !users.is_empty()).then_some(Self {
            db,
            router,
            global,
            users,
        })
    }

    /// Whose changes `memory` records: the users this forwarder has a channel for.
    pub fn events(config: &Config) -> ChangeEvents {
        ChangeEvents::new(
            config.notify.memory_changes_channel.is_some(),
            config
                .users
                .iter()
                .filter(|(_, s)| s.memory_changes_channel.is_some())
                .map(|(user, _)| user.clone()),
        )
    }

    /// Moves the oldest recorded changes into the outbox. Returns how many it moved.
    pub async fn forward(&self, now: i64) -> Result<usize, OutboxError> {
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let mut rows = tx
            .query(
                "SELECT change_id, user_id, payload_json FROM memory_changes
                 ORDER BY change_id LIMIT ?1",
                [BATCH],
            )
            .await?;
        let mut changes = Vec::new();
        while let Some(row) = rows.next().await? {
            changes.push((
                row.get::<i64>(0)?,
                row.get::<String>(1)?,
                row.get::<String>(2)?,
            ));
        }
        drop(rows);
        let Some(last) = changes.last().map(|c| c.0) else {
            tx.rollback().await?;
            return Ok(0);
        };
        for (change_id, user_id, payload) in &changes {
            // A user whose channel was taken away since: the change goes nowhere.
            let Some(channel) = self.users.get(user_id).or(self.global.as_ref()) else {
                continue;
            };
            let payload = serde_json::from_str(payload)
                .unwrap_or_else(|_| serde_json::json!({"event": "memory.changed"}));
            let plan = self.router.plan_to(channel);
            let message = NewMessage {
                kind: "memory",
                run_id: None,
                schedule_id: None,
                user_id,
                priority: Priority::Normal,
                payload,
            };
            enqueue_keyed_in(&tx, &plan, &format!("memory:{change_id}"), message, now).await?;
        }
        tx.execute("DELETE FROM memory_changes WHERE change_id <= ?1", [last])
            .await?;
        tx.commit().await?;
        Ok(changes.len())
    }
}
