//! Driving runs that start from events without a worker: claim what is waiting, record
//! how it ended.

use nightshift::app::App;
use nightshift::schedule::types::{Claim, RunOutcome, RunStatus};

/// Claims every waiting event a worker can take now.
pub async fn claim_events(app: &App, worker: &str) -> Vec<Claim> {
    let mut claims = Vec::new();
    for event in app.schedules().due_events(100).await.unwrap() {
        if let Some(claim) = app
            .schedules()
            .claim_event(&event, worker, 60_000)
            .await
            .unwrap()
        {
            claims.push(claim);
        }
    }
    claims
}

/// Claims the due occurrence of the schedule `id` for the worker `w`; panics when none
/// is due.
pub async fn claim_due(app: &App, id: &str) -> Claim {
    let schedule = app
        .schedules()
        .get(&nightshift::access::Actor::Operator, id)
        .await
        .unwrap();
    app.schedules()
        .claim(&schedule, "w", 60_000)
        .await
        .unwrap()
        .expect("an occurrence is due")
}

/// Records the claimed run as ended with `status` and `output` (and an error, unless it
/// succeeded), by the worker `w`.
pub async fn finish(app: &App, claim: &Claim, status: RunStatus, output: &str) {
    let outcome = RunOutcome {
        status: Some(status),
        output: Some(output.into()),
        error: (!status.is_success()).then(|| "it broke".to_string()),
        ..Default::default()
    };
    assert!(app
        .schedules()
        .finish(claim, Some("w"), &outcome, 3)
        .await
        .unwrap());
}
