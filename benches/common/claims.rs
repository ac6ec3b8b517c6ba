//! Claim latency: what one schedule claim transaction costs on an engine.

use std::time::{Duration, Instant};

use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::Cadence;

/// `claims` claim transactions, each timed, for fresh schedules made due with `run_now`;
/// sorted, fastest first.
pub async fn claim_times(app: &App, claims: usize) -> Vec<Duration> {
    let store = app.schedules().clone();
    let mut times = Vec::with_capacity(claims);
    for i in 0..claims {
        let schedule = store
            .create(
                &Actor::Operator,
                &NewSchedule::new(
                    "claimer",
                    format!("claim {i}"),
                    Cadence::Interval {
                        every_secs: 3600,
                        anchor: app.clock().now_ms() + 3_600_000,
                        tz: "UTC".into(),
                    },
                ),
            )
            .await
            .expect("create");
        let due = store
            .run_now(&Actor::Operator, &schedule.schedule_id)
            .await
            .expect("run now");
        let start = Instant::now();
        let claim = store.claim(&due, "bench", 60_000).await.expect("claim");
        times.push(start.elapsed());
        assert!(claim.is_some());
    }
    times.sort();
    times
}
