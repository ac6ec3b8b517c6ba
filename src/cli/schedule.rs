//! `nightshift schedule …`

use anyhow::{bail, Result};
use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use nightshift::app::open_memory;
use nightshift::config::{Config, ScheduleConfig};
use nightshift::schedule::store::{ScheduleFilter, ScheduleStore};
use nightshift::schedule::sync::to_new_schedule;
use nightshift::schedule::types::{Run, Schedule};
use nightshift::worker::schedule_store;
use serde_json::{json, Value};

use super::args::{AddArgs, ScheduleCommand};
use super::print;

fn render(ms: i64, tz: Tz) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| {
            t.with_timezone(&tz)
                .to_rfc3339_opts(SecondsFormat::Secs, true)
        })
        .unwrap_or_else(|| ms.to_string())
}

/// A schedule as JSON, its times as RFC 3339 in its own zone, with its next runs.
fn schedule_json(schedule: &Schedule, preview: usize) -> Value {
    let tz = schedule.cadence.zone();
    let mut value = serde_json::to_value(schedule).expect("schedule serialises");
    for key in ["created_at", "updated_at", "next_run_at", "last_run_at"] {
        if let Some(ms) = value[key].as_i64() {
            value[key] = json!(render(ms, tz));
        }
    }
    let mut upcoming = Vec::new();
    let mut t = schedule.next_run_at;
    while let Some(at) = t {
        if upcoming.len() >= preview {
            break;
        }
        upcoming.push(render(at, tz));
        t = schedule.cadence.next_after(at);
    }
    value["next_runs"] = json!(upcoming);
    value["timezone"] = json!(tz.name());
    value
}

fn run_json(run: &Run) -> Value {
    let mut value = serde_json::to_value(run).expect("run serialises");
    for key in ["scheduled_for", "started_at", "finished_at"] {
        if let Some(ms) = value[key].as_i64() {
            value[key] = json!(render(ms, Tz::UTC));
        }
    }
    value
}

fn human(schedule: &Schedule) -> String {
    let tz = schedule.cadence.zone();
    format!(
        "{}  {}  {}  {}  next {}\n    {}",
        schedule.schedule_id,
        schedule.status,
        schedule.user_id,
        schedule
            .cadence_text
            .clone()
            .unwrap_or_else(|| schedule.cadence.describe()),
        schedule
            .next_run_at
            .map_or("-".to_string(), |t| render(t, tz)),
        schedule.goal
    )
}

pub async fn run(config: &Config, command: ScheduleCommand, json: bool) -> Result<()> {
    let memory = open_memory(config).await?;
    let store: ScheduleStore = schedule_store(&memory, config);
    match command {
        ScheduleCommand::Add(args) => {
            let schedule = store.create(&new_schedule(&store, config, *args)?).await?;
            let tz = schedule.cadence.zone();
            let out = json!({
                "schedule_id": schedule.schedule_id,
                "next_run_at": schedule.next_run_at.map(|t| render(t, tz)),
            });
            print(json, &out, || human(&schedule))
        }
        ScheduleCommand::List {
            user,
            status,
            limit,
            offset,
        } => {
            let status = status
                .map(|s| s.parse())
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let filter = ScheduleFilter {
                user_id: user,
                status,
                limit,
                offset,
            };
            let (schedules, total) = store.list(&filter).await?;
            let out: Vec<Value> = schedules.iter().map(|s| schedule_json(s, 1)).collect();
            print(json, &out, || {
                let mut lines: Vec<String> = schedules.iter().map(human).collect();
                lines.push(format!("{} of {total} schedule(s)", schedules.len()));
                lines.join("\n")
            })
        }
        ScheduleCommand::Show { id } => {
            let schedule = store.get(&id).await?;
            print(json, &schedule_json(&schedule, 5), || human(&schedule))
        }
        ScheduleCommand::Pause { id, reason } => {
            let schedule = store.pause(&id, reason.as_deref()).await?;
            print(json, &schedule_json(&schedule, 0), || {
                format!("paused {id}")
            })
        }
        ScheduleCommand::Resume { id } => {
            let schedule = store.resume(&id).await?;
            print(json, &schedule_json(&schedule, 1), || human(&schedule))
        }
        ScheduleCommand::Delete { id } => {
            store.delete(&id).await?;
            print(json, &json!({ "schedule_id": id, "deleted": true }), || {
                format!("deleted {id}")
            })
        }
        ScheduleCommand::Runs { id, limit } => {
            if limit < 1 {
                bail!("--limit must be at least 1");
            }
            let runs = store.runs(&id, limit).await?;
            let out: Vec<Value> = runs.iter().map(run_json).collect();
            print(json, &out, || {
                runs.iter()
                    .map(|r| {
                        format!(
                            "{}  {}  {}  attempt {}  {}",
                            r.run_id,
                            render(r.scheduled_for, Tz::UTC),
                            r.status,
                            r.attempt,
                            r.error
                                .clone()
                                .or_else(|| r.output_summary.clone())
                                .unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        ScheduleCommand::RunNow { id } => {
            let schedule = store.run_now(&id).await?;
            print(json, &schedule_json(&schedule, 1), || {
                format!("{id} is due now")
            })
        }
    }
}

/// The CLI's arguments as a schedule, through the same path as the config file's.
fn new_schedule(
    store: &ScheduleStore,
    config: &Config,
    args: AddArgs,
) -> Result<nightshift::schedule::types::NewSchedule> {
    let entry = ScheduleConfig {
        name: args.name.clone().unwrap_or_default(),
        user: args.user,
        goal: args.goal,
        cron: args.cron,
        tz: args.tz,
        every: args.every,
        at: args.at,
        when: args.when,
        channel: args.channel,
        notify: args.notify,
        overlap: args.overlap,
        catch_up: args.catch_up,
        max_attempts: args.max_attempts,
        timeout_secs: args.timeout_secs,
        max_turns: args.max_turns,
        max_cost: args.max_cost,
    };
    let mut new = to_new_schedule(
        &entry,
        store.clock().now_ms(),
        &config.scheduler.default_timezone,
    )?;
    new.source = nightshift::schedule::types::Source::Tool;
    new.name = args.name;
    Ok(new)
}
