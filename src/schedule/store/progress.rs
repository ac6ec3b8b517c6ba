//! A run's progress in the database (see [`crate::schedule::progress`]): appended by the
//! worker running it, read after a client's last event by its live view. Whoever finishes
//! a run or records an event in this process moves [`ScheduleStore::progress_changes`],
//! so a view here follows at once; a view in another process reads again at its own pace.

use std::sync::Arc;

use serde_json::Value;

use super::ScheduleStore;
use crate::access::Actor;
use crate::db::{fetch_all, query_scalar, text_column, DbError, FromRow};
use crate::schedule::progress::{ProgressEvent, ProgressKind, ProgressSink};
use crate::schedule::types::{Run, RunStatus};
use crate::schedule::Result;

/// The most events one read returns: a view reads again for the rest.
pub const PROGRESS_PAGE: i64 = 200;

/// A run as its live view reads it: the run (read first), the events after the last the
/// view sent, and the highest `seq` the run has.
#[derive(Debug, Clone)]
pub struct RunProgress {
    pub run: Run,
    pub events: Vec<ProgressEvent>,
    pub last_seq: i64,
}

impl FromRow for ProgressEvent {
    const COLUMNS: &'static str = "seq, kind, at, body";

    fn from_row(row: &libsql::Row) -> std::result::Result<Self, DbError> {
        let body: String = row.get(3)?;
        Ok(ProgressEvent {
            seq: row.get(0)?,
            kind: text_column(row, 1, "progress kind")?,
            at: row.get(2)?,
            // Written by this worker as JSON; should one not parse, its text is still shown.
            data: serde_json::from_str(&body).unwrap_or(Value::String(body)),
        })
    }
}

impl ScheduleStore {
    /// Appends one event to run `run_id`'s progress, numbered after its last, while the
    /// run is running or waiting: an event that comes after its end (from an attempt cut
    /// short, still writing) is dropped, so a run's events all precede its end.
    pub async fn record_progress(
        &self,
        run_id: &str,
        kind: ProgressKind,
        data: &Value,
    ) -> Result<()> {
        let conn = self.db.conn().await?;
        let body = data.to_string();
        // Numbered in the insert itself. Two inserts of one run may race (an attempt cut
        // short still writing as the next begins); the loser collides on the key and is
        // numbered again.
        let mut tries = 0;
        loop {
            let inserted = conn
                .execute(
                    "INSERT INTO run_progress (run_id, seq, kind, body, at)
                     SELECT CAST(?1 AS TEXT), n.seq, CAST(?2 AS TEXT), CAST(?3 AS TEXT),
                            CAST(?4 AS BIGINT)
                     FROM (SELECT coalesce(max(seq), 0) + 1 AS seq FROM run_progress
                           WHERE run_id = ?1) n
                     WHERE EXISTS (SELECT 1 FROM schedule_runs WHERE run_id = ?1
                                   AND status IN ('running', 'waiting'))",
                    libsql::params![run_id, kind.as_str(), body.as_str(), self.clock.now_ms()],
                )
                .await;
            match inserted {
                Ok(_) => break,
                Err(_) if tries < RECORD_TRIES => tries += 1,
                Err(err) => return Err(err.into()),
            }
        }
        self.progress_moved(Some(run_id));
        Ok(())
    }

    /// The actor's run `run_id` and its progress after event `after`. Another user's run
    /// is a missing one. The run is read before its events: a run that had ended when
    /// read has every event it will have among them, so its view can end after them.
    pub async fn progress(&self, actor: &Actor, run_id: &str, after: i64) -> Result<RunProgress> {
        let run = self.run(actor, run_id).await?;
        let conn = self.db.conn().await?;
        let events = events_after(&conn, run_id, after).await?;
        let last_seq = last_seq(&conn, run_id).await?;
        Ok(RunProgress {
            run,
            events,
            last_seq,
        })
    }

    /// Moves whenever this process records a run's progress or finishes a run, naming the
    /// run: a live view waits on it before reading again.
    pub fn progress_changes(&self) -> tokio::sync::watch::Receiver<Moved> {
        self.progress.subscribe()
    }

    pub(super) fn progress_moved(&self, run_id: Option<&str>) {
        self.progress.send_modify(|moved| {
            moved.count = moved.count.wrapping_add(1);
            moved.run_id = run_id.map(Arc::from);
        });
    }
}

/// The last change [`ScheduleStore::progress_changes`] tells of: its run (`None`: any).
/// Changes that come together are told as the last of them: a view that missed its own
/// run's reads again at its next look (see [`FOLLOW_POLL`]).
#[derive(Debug, Clone, Default)]
pub struct Moved {
    count: u64,
    run_id: Option<Arc<str>>,
}

impl Moved {
    fn concerns(&self, run_id: &str) -> bool {
        self.run_id.as_deref().is_none_or(|moved| moved == run_id)
    }
}

/// Tries of an event's insert that collided with another of the same run's.
const RECORD_TRIES: u32 = 3;

async fn events_after(
    conn: &crate::db::Conn,
    run_id: &str,
    after: i64,
) -> Result<Vec<ProgressEvent>> {
    Ok(fetch_all(
        conn,
        &format!(
            "SELECT {} FROM run_progress WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            ProgressEvent::COLUMNS
        ),
        libsql::params![run_id, after, PROGRESS_PAGE],
    )
    .await?)
}

async fn last_seq(conn: &crate::db::Conn, run_id: &str) -> Result<i64> {
    Ok(query_scalar(
        conn,
        "SELECT coalesce(max(seq), 0) FROM run_progress WHERE run_id = ?1",
        [run_id],
    )
    .await?
    .unwrap_or(0))
}

#[async_trait::async_trait]
impl ProgressSink for ScheduleStore {
    async fn record(&self, run_id: &str, kind: ProgressKind, data: Value) {
        let store = self.clone();
        let run_id = run_id.to_string();
        // Runs to its end even when the run is stopped meanwhile (see `run_to_completion`).
        let recorded = crate::db::run_to_completion(async move {
            store.record_progress(&run_id, kind, &data).await
        })
        .await;
        if let Err(err) = recorded {
            tracing::warn!(%err, kind = kind.as_str(), "a run's progress event was not recorded; the run goes on");
        }
    }
}

/// How often a live view reads again when nothing in this process told it to: for a run
/// held by another worker, or a process that only serves the API.
pub const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(500);
/// The same, for a run waiting for a person's approval (it may wait for days).
pub const FOLLOW_POLL_WAITING: std::time::Duration = std::time::Duration::from_secs(5);

/// A live view of one run: its progress after the client's last event, then each event as
/// it is recorded, then the run's end (kind `end`, numbered after its last event).
pub struct Follow {
    store: ScheduleStore,
    actor: Actor,
    run_id: String,
    after: i64,
    pending: std::collections::VecDeque<ProgressEvent>,
    changes: tokio::sync::watch::Receiver<Moved>,
    ended: bool,
}

impl ScheduleStore {
    /// Follows the actor's run `run_id` from after event `after` (0: from its start; an
    /// id past a going run's last event counts as its last). Another user's run is a
    /// missing one. `None` when the client already saw the run's end: there is nothing
    /// more to send.
    pub async fn follow(&self, actor: &Actor, run_id: &str, after: i64) -> Result<Option<Follow>> {
        let mut changes = self.progress_changes();
        changes.borrow_and_update();
        let first = self.progress(actor, run_id, after).await?;
        let live = is_live(&first.run);
        if !live && first.events.is_empty() && after > first.last_seq {
            return Ok(None);
        }
        Ok(Some(Follow {
            store: self.clone(),
            actor: actor.clone(),
            run_id: run_id.to_string(),
            after: if live {
                after.min(first.last_seq)
            } else {
                after
            },
            pending: std::collections::VecDeque::new(),
            changes,
            ended: false,
        }))
    }
}

/// Whether a run may still record progress: it is running or waiting for an approval.
fn is_live(run: &Run) -> bool {
    matches!(run.status, RunStatus::Running | RunStatus::Waiting)
}

impl Follow {
    /// The next event, waiting for it; `None` after the run's end. An error (the run
    /// deleted meanwhile, the database out of reach) ends the view.
    pub async fn next(&mut self) -> Result<Option<ProgressEvent>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.after = event.seq;
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            // Marked seen before reading: a change during the read wakes the next wait.
            self.changes.borrow_and_update();
            let run = self.store.run(&self.actor, &self.run_id).await?;
            let conn = self.store.db.conn().await?;
            let events = events_after(&conn, &self.run_id, self.after).await?;
            if !events.is_empty() {
                self.pending.extend(events);
                continue;
            }
            if !is_live(&run) {
                self.ended = true;
                let last = last_seq(&conn, &self.run_id).await?;
                return Ok(Some(ProgressEvent {
                    seq: last.max(self.after) + 1,
                    kind: ProgressKind::End,
                    at: run.finished_at.unwrap_or_else(|| self.store.clock.now_ms()),
                    data: serde_json::json!({
                        "status": run.status,
                        "error": run.error,
                        "output_summary": run.output_summary,
                    }),
                }));
            }
            drop(conn);
            let poll = if run.status == RunStatus::Waiting {
                FOLLOW_POLL_WAITING
            } else {
                FOLLOW_POLL
            };
            let deadline = tokio::time::Instant::now() + poll;
            // Changes to other runs are passed over without a read.
            loop {
                tokio::select! {
                    changed = self.changes.changed() => {
                        if changed.is_err() || self.changes.borrow().concerns(&self.run_id) {
                            break;
                        }
                    }
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
        }
    }
}
