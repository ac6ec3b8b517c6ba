//! Finding a run a caller just started (`schedule_trigger` or `schedule_run_now` with a
//! wait, over MCP) once a worker takes it, to follow it from there.

use tokio::time::Instant;

use super::ScheduleStore;
use crate::access::Actor;
use crate::db::query_scalar;
use crate::schedule::Result;

/// How often to look for the run while no worker has taken it yet.
const FIND_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Which run: the one a trigger's event started, or the first of the schedule's own
/// occurrences started since an instant (a run now).
#[derive(Debug, Clone, Copy)]
pub enum Started<'a> {
    ByEvent(&'a str),
    Since(i64),
}

impl ScheduleStore {
    /// The run `started` names of the actor's schedule `schedule_id`, once a worker has
    /// taken it; `None` until then.
    pub async fn started_run(
        &self,
        actor: &Actor,
        schedule_id: &str,
        started: Started<'_>,
    ) -> Result<Option<String>> {
        self.get(actor, schedule_id).await?;
        let conn = self.db.conn().await?;
        let run_id =
            match started {
                Started::ByEvent(event_id) => {
                    query_scalar(
                        &conn,
                        "SELECT run_id FROM schedule_runs WHERE schedule_id = ?1 AND event_id = ?2
                     LIMIT 1",
                        libsql::params![schedule_id, event_id],
                    )
                    .await?
                }
                Started::Since(since) => query_scalar(
                    &conn,
                    "SELECT run_id FROM schedule_runs WHERE schedule_id = ?1 AND origin = 'cadence'
                     AND started_at >= ?2
                     ORDER BY started_at, run_id LIMIT 1",
                    libsql::params![schedule_id, since],
                )
                .await?,
            };
        Ok(run_id)
    }

    /// Waits until `deadline` for a worker to take the run `started` names; its id, or
    /// `None` when none took it in time. Follow it with [`ScheduleStore::follow`].
    pub async fn await_started(
        &self,
        actor: &Actor,
        schedule_id: &str,
        started: Started<'_>,
        deadline: Instant,
    ) -> Result<Option<String>> {
        loop {
            if let Some(run_id) = self.started_run(actor, schedule_id, started).await? {
                return Ok(Some(run_id));
            }
            if Instant::now() + FIND_POLL > deadline {
                return Ok(None);
            }
            tokio::time::sleep(FIND_POLL).await;
        }
    }
}
