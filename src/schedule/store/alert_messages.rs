//! The messages alerts write into the outbox: one incident's, or several of one person's
//! and channel's in one message (after an outage, one for everything it held up rather
//! than one per schedule). An alert is urgent (quiet hours do not hold it); its end is not.

use crate::db::{clock::to_rfc3339, WriteTx};
use crate::notify::outbox::{enqueue_keyed_in, NewMessage, NotifyPlan, Priority};
use crate::schedule::types::Schedule;
use crate::schedule::Result;

/// One incident to tell: its schedule, its kind (`late`, `failures`, `silent`), since
/// when, and what to say of it.
pub(super) type Told<'a> = (&'a Schedule, &'static str, i64, String);

/// Writes the message telling `items` (all of one person and channel, as `plan` sends
/// them) opened, or `ended`: the incident's own message for one, one listing them all
/// for several. Nothing for none.
pub(super) async fn tell_all(
    tx: &WriteTx,
    plan: &NotifyPlan,
    items: Vec<Told<'_>>,
    ended: bool,
    now: i64,
) -> Result<()> {
    let Some(&(first, ..)) = items.first() else {
        return Ok(());
    };
    let priority = if ended {
        Priority::Normal
    } else {
        Priority::High
    };
    let payload = match items.as_slice() {
        [(schedule, kind, since, text)] => serde_json::json!({
            "event": event(kind, ended),
            "alert": kind,
            "schedule_id": schedule.schedule_id,
            "schedule_name": schedule.name,
            "user_id": schedule.user_id,
            "since": to_rfc3339(*since),
            "summary": format!("{}: {}", name(schedule), what(kind, ended)),
            "output": text,
        }),
        several => {
            let lines: Vec<String> = several
                .iter()
                .map(|(schedule, kind, _, text)| {
                    format!("- {}: {}: {text}", name(schedule), what(kind, ended))
                })
                .collect();
            let alerts: Vec<serde_json::Value> = several
                .iter()
                .map(|(schedule, kind, since, _)| {
                    serde_json::json!({
                        "schedule_id": schedule.schedule_id,
                        "schedule_name": schedule.name,
                        "alert": kind,
                        "since": to_rfc3339(*since),
                    })
                })
                .collect();
            let summary = if ended {
                format!("{} schedules are back to normal", several.len())
            } else {
                format!("{} schedules need you", several.len())
            };
            serde_json::json!({
                "event": if ended { "schedules.recovered" } else { "schedules.alerts" },
                "user_id": first.user_id,
                "summary": summary,
                "output": lines.join("\n"),
                "alerts": alerts,
            })
        }
    };
    // Told once by the incidents' rows, written in the same transaction: the key need
    // only be new (an incident may open again at the same instant on a clock held still).
    let key = format!(
        "alert:{}:{}",
        first.user_id,
        crate::ids::new_id(if ended { "ended" } else { "opened" })
    );
    let message = NewMessage {
        kind: "alert",
        run_id: None,
        schedule_id: (items.len() == 1).then_some(first.schedule_id.as_str()),
        user_id: &first.user_id,
        priority,
        payload,
    };
    enqueue_keyed_in(tx, plan, &key, message, now).await?;
    Ok(())
}

fn name(schedule: &Schedule) -> &str {
    schedule.name.as_deref().unwrap_or(&schedule.schedule_id)
}

/// The message's `event` for one incident.
fn event(kind: &str, ended: bool) -> &'static str {
    match (kind, ended) {
        (_, true) => "schedule.recovered",
        ("late", false) => "schedule.late",
        ("failures", false) => "schedule.failures",
        _ => "schedule.silent",
    }
}

/// What the incident is, in a few words.
fn what(kind: &str, ended: bool) -> &'static str {
    match (kind, ended) {
        ("late", false) => "a run is late",
        ("failures", false) => "runs keep failing",
        (_, false) => "no run has succeeded for too long",
        ("late", true) => "no longer late",
        ("failures", true) => "no longer failing",
        (_, true) => "no longer silent",
    }
}
