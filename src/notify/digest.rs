//! Daily digests (`notify = "digest"`): each run of such a schedule leaves one line in
//! `digest_items`, written with the run and due at its user's next `digest_at`; when that
//! time comes the sender folds a schedule's due lines into one outbox message, deleting
//! them in the same transaction. Folded once: a crash before the commit leaves the lines to
//! fold again, and two workers folding at once split nothing (each folds the lines its
//! delete removed, under a key named by them). After an outage, every day missed is one
//! message, not one per day.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::outbox::{enqueue_keyed_in, NewMessage, NotifyPlan, OutboxError, Priority};
use super::router::Router;
use crate::db::{Db, WriteTx};
use crate::text::truncate_chars;

/// Characters of a run's line (the first line of its output, or its error).
pub const LINE_CHARS: usize = 200;
/// Schedules folded in one transaction; the rest wait for the next pass, moments later.
const GROUPS_PER_PASS: i64 = 50;
/// Runs a digest's payload lists one by one; its text says how many there were in all.
const RUNS_LISTED: usize = 100;

/// One run's line in a digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DigestItem {
    pub run_id: String,
    pub schedule_name: String,
    pub status: String,
    pub scheduled_for: String,
    pub line: String,
    pub run_url: Option<String>,
}

/// A run's line and whose it is.
pub struct HeldLine<'a> {
    pub schedule_id: &'a str,
    pub user_id: &'a str,
    pub item: &'a DigestItem,
}

/// Keeps a run's line for its schedule's next digest, inside the transaction recording
/// the run; a second write for the same run is a no-op.
pub async fn hold_in(
    tx: &WriteTx,
    plan: &NotifyPlan,
    held: HeldLine<'_>,
    now: i64,
) -> Result<(), libsql::Error> {
    // An instant past any zone's reach cannot happen for a real clock; a day on is a
    // digest all the same.
    let due_at = plan.digest_at.next_after(now).unwrap_or(now + 86_400_000);
    let channel = match &plan.channel_context_id {
        Some(context) => format!("{}:{context}", plan.channel_id),
        None => plan.channel_id.clone(),
    };
    let item = serde_json::to_string(held.item).unwrap_or_default();
    tx.execute(
        "INSERT INTO digest_items (run_id, schedule_id, user_id, channel, due_at, item_json,
         created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (run_id) DO NOTHING",
        libsql::params![
            held.item.run_id.as_str(),
            held.schedule_id,
            held.user_id,
            channel,
            due_at,
            item,
            now
        ],
    )
    .await?;
    Ok(())
}

/// Folds due digest lines into outbox messages.
#[derive(Clone)]
pub struct DigestFolder {
    db: Db,
    router: Arc<Router>,
}

/// The lines of one schedule to one channel, as one message will carry them.
struct Group {
    schedule_id: String,
    user_id: String,
    channel: String,
}

impl DigestFolder {
    pub fn new(db: Db, router: Arc<Router>) -> Self {
        Self { db, router }
    }

    /// Folds every line due at `now` into one message per schedule and channel. Returns
    /// how many messages it wrote.
    pub async fn fold(&self, now: i64) -> Result<usize, OutboxError> {
        let conn = self.db.conn().await?;
        // A read first: the write transaction (the one writer's turn, on either engine) is
        // taken only when a line is due, not on every pass of every worker's sender.
        let due: Option<i64> = crate::db::query_scalar(
            &conn,
            "SELECT 1 FROM digest_items WHERE due_at <= ?1 LIMIT 1",
            [now],
        )
        .await?;
        if due.is_none() {
            return Ok(0);
        }
        let tx = conn.write_tx().await?;
        let mut rows = tx
            .query(
                "SELECT schedule_id, user_id, channel FROM digest_items WHERE due_at <= ?1
                 GROUP BY schedule_id, user_id, channel LIMIT ?2",
                libsql::params![now, GROUPS_PER_PASS],
            )
            .await?;
        let mut groups = Vec::new();
        while let Some(row) = rows.next().await? {
            groups.push(Group {
                schedule_id: row.get(0)?,
                user_id: row.get(1)?,
                channel: row.get(2)?,
            });
        }
        drop(rows);
        if groups.is_empty() {
            tx.rollback().await?;
            return Ok(0);
        }
        let mut written = 0;
        for group in &groups {
            // The lines this delete removes are this message's: a worker folding at the
            // same moment gets none of them (its delete waits for this one, then finds
            // them gone), so its key, named by its own lines, is another.
            let mut rows = tx
                .query(
                    "DELETE FROM digest_items WHERE schedule_id = ?1 AND user_id = ?2
                     AND channel = ?3 AND due_at <= ?4 RETURNING run_id, item_json, created_at",
                    libsql::params![
                        group.schedule_id.as_str(),
                        group.user_id.as_str(),
                        group.channel.as_str(),
                        now
                    ],
                )
                .await?;
            let mut items = Vec::new();
            while let Some(row) = rows.next().await? {
                let run_id: String = row.get(0)?;
                let json: String = row.get(1)?;
                let created_at: i64 = row.get(2)?;
                // A line that cannot be read still counts as a run that happened.
                let item = serde_json::from_str(&json).unwrap_or_else(|_| DigestItem {
                    run_id: run_id.clone(),
                    schedule_name: group.schedule_id.clone(),
                    status: "unknown".into(),
                    scheduled_for: String::new(),
                    line: String::new(),
                    run_url: None,
                });
                items.push((created_at, run_id, item));
            }
            drop(rows);
            if items.is_empty() {
                continue;
            }
            items.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
            let items: Vec<DigestItem> = items.into_iter().map(|(_, _, item)| item).collect();
            // Where the run's own message would go now: its channel, or (one taken out of
            // the configuration since) the user's default, else the log.
            let (channel_id, context) = super::router::split_channel(&group.channel);
            let plan = self.router.plan(&super::router::Recipient {
                user_id: &group.user_id,
                schedule_id: &group.schedule_id,
                channel_id: Some(&channel_id),
                channel_context_id: context.as_deref(),
            });
            let key = format!(
                "digest:{}:{}",
                group.schedule_id,
                items
                    .iter()
                    .map(|i| i.run_id.as_str())
                    .min()
                    .unwrap_or_default()
            );
            let message = NewMessage {
                kind: "digest",
                run_id: None,
                schedule_id: Some(&group.schedule_id),
                user_id: &group.user_id,
                priority: Priority::Normal,
                payload: payload(group, &items, &plan),
            };
            enqueue_keyed_in(&tx, &plan, &key, message, now).await?;
            written += 1;
        }
        tx.commit().await?;
        Ok(written)
    }
}

/// The message for a schedule's lines, oldest first: a summary counting them, one line
/// per run within the channel's message size, and the runs themselves (the first
/// [`RUNS_LISTED`]) for a receiver that reads JSON.
fn payload(group: &Group, items: &[DigestItem], plan: &NotifyPlan) -> serde_json::Value {
    let name = items
        .last()
        .map(|i| i.schedule_name.as_str())
        .unwrap_or(&group.schedule_id);
    let failed = items.iter().filter(|i| i.status != "succeeded").count();
    let runs = if items.len() == 1 { "run" } else { "runs" };
    let summary = match failed {
        0 => format!("{name}: {} {runs}", items.len()),
        _ => format!("{name}: {} {runs}, {failed} not succeeded", items.len()),
    };
    let mut output = String::new();
    let mut cut = false;
    for (shown, item) in items.iter().enumerate() {
        let line = format!("{} {}: {}\n", item.scheduled_for, item.status, item.line);
        let rest = items.len() - shown;
        let more = format!("[… and {rest} more]");
        if output.chars().count() + line.chars().count() + more.len() > plan.max_message_chars {
            output.push_str(&more);
            cut = true;
            break;
        }
        output.push_str(&line);
    }
    let output = truncate_chars(output.trim_end(), plan.max_message_chars).to_string();
    serde_json::json!({
        "event": "schedule.digest",
        "schedule_id": group.schedule_id,
        "schedule_name": name,
        "user_id": group.user_id,
        "summary": summary,
        "output": output,
        "output_truncated": cut,
        "runs_total": items.len(),
        "runs": items.iter().take(RUNS_LISTED).collect::<Vec<_>>(),
        "first_scheduled_for": items.first().map(|i| i.scheduled_for.as_str()),
        "last_scheduled_for": items.last().map(|i| i.scheduled_for.as_str()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_of_day::DailyTime;

    fn plan(max_message_chars: usize) -> NotifyPlan {
        NotifyPlan {
            channel_id: "hook".into(),
            channel_context_id: None,
            marker: "[NOTIFY]".into(),
            failure_notice_after: 3,
            max_message_chars,
            public_url: None,
            ttl_ms: [1; 3],
            max_pending_per_channel: 1,
            digest_at: DailyTime::MORNING_UTC,
        }
    }

    fn group() -> Group {
        Group {
            schedule_id: "sch".into(),
            user_id: "alice".into(),
            channel: "hook".into(),
        }
    }

    fn item(n: usize, status: &str) -> DigestItem {
        DigestItem {
            run_id: format!("run-{n:03}"),
            schedule_name: "weather".into(),
            status: status.into(),
            scheduled_for: format!("2027-01-15T{:02}:00:00Z", n % 24),
            line: format!("line {n}"),
            run_url: None,
        }
    }

    #[test]
    fn a_digest_counts_its_runs_and_says_how_many_did_not_succeed() {
        let items = [
            item(1, "succeeded"),
            item(2, "failed"),
            item(3, "succeeded"),
        ];
        let body = payload(&group(), &items, &plan(3500));
        assert_eq!(body["summary"], "weather: 3 runs, 1 not succeeded");
        assert_eq!(
            body["output"],
            "2027-01-15T01:00:00Z succeeded: line 1\n\
             2027-01-15T02:00:00Z failed: line 2\n\
             2027-01-15T03:00:00Z succeeded: line 3"
        );
        assert_eq!(body["runs_total"], 3);
        assert_eq!(
            payload(&group(), &items[..1], &plan(3500))["summary"],
            "weather: 1 run"
        );
    }

    #[test]
    fn a_long_digest_fits_the_channel_and_says_what_it_left_out() {
        let items: Vec<_> = (0..500).map(|n| item(n, "succeeded")).collect();
        for max in [40, 200, 3500] {
            let body = payload(&group(), &items, &plan(max));
            let output = body["output"].as_str().unwrap();
            assert!(output.chars().count() <= max, "{max}: {}", output.len());
            assert!(output.ends_with("more]"), "{output}");
            assert_eq!(body["output_truncated"], true);
            assert_eq!(body["runs"].as_array().unwrap().len(), RUNS_LISTED);
            assert_eq!(body["runs_total"], 500);
        }
    }
}
