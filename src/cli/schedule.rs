//! `nightshift schedule …`

use nightshift::app::App;
use nightshift::error::Error;
use nightshift::input::InputError;
use nightshift::schedule::spec::ScheduleSpec;
use nightshift::schedule::store::ScheduleFilter;
use nightshift::schedule::view::{
    RunView, ScheduleDeleted, ScheduleList, ScheduleView, LIST_NEXT_RUNS, SHOW_NEXT_RUNS,
};

use super::args::{AddArgs, ScheduleCommand};
use super::memory::actor;
use super::output::print;

fn human(view: &ScheduleView) -> String {
    let note = view
        .status_reason
        .as_deref()
        .map(|reason| format!(" ({reason})"))
        .unwrap_or_default();
    format!(
        "{}  {}{note}  {}  {}  next {}\n    {}",
        view.schedule_id,
        view.status,
        view.user_id,
        view.description,
        view.next_run_at.as_deref().unwrap_or("-"),
        view.goal
    )
}

/// A policy flag read as its enum, or bad input naming the flag.
fn policy<T: std::str::FromStr<Err = String>>(
    flag: &str,
    value: Option<String>,
) -> Result<Option<T>, Error> {
    value
        .map(|v| v.parse().map_err(|reason| InputError::new(flag, reason)))
        .transpose()
        .map_err(Error::from)
}

pub async fn run(app: &App, command: ScheduleCommand, json: bool) -> Result<(), Error> {
    let store = app.schedules();
    match command {
        ScheduleCommand::Add(args) => {
            let args = *args;
            let user = args.user.clone();
            let spec = spec(args)?;
            // The operator adds it (any configured channel), for the user named.
            let schedule = app
                .add_schedule(&nightshift::access::Actor::Operator, &user, &spec)
                .await?;
            let view = ScheduleView::new(&schedule, SHOW_NEXT_RUNS);
            print(json, &view, || {
                format!(
                    "{}\n    understood: {}; next runs {}",
                    human(&view),
                    view.description,
                    view.next_runs.join(", ")
                )
            })
        }
        ScheduleCommand::List {
            user,
            status,
            limit,
            offset,
        } => {
            let filter = ScheduleFilter {
                user_id: user,
                status: policy("--status", status)?,
                limit,
                offset,
            };
            let actor = nightshift::access::Actor::Operator;
            let (schedules, total) = store.list(&actor, &filter).await?;
            let out = ScheduleList {
                schedules: schedules
                    .iter()
                    .map(|s| ScheduleView::new(s, LIST_NEXT_RUNS))
                    .collect(),
                total,
            };
            print(json, &out, || {
                let mut lines: Vec<String> = out.schedules.iter().map(human).collect();
                lines.push(format!("{} of {total} schedule(s)", out.schedules.len()));
                lines.join("\n")
            })
        }
        ScheduleCommand::Show { id, user } => {
            let schedule = store.get(&actor(user)?, &id).await?;
            let view = ScheduleView::new(&schedule, SHOW_NEXT_RUNS);
            print(json, &view, || {
                format!(
                    "{}\n    next runs {}",
                    human(&view),
                    view.next_runs.join(", ")
                )
            })
        }
        ScheduleCommand::Pause { id, note, user } => {
            let schedule = store.pause(&actor(user)?, &id, note.as_deref()).await?;
            let view = ScheduleView::new(&schedule, 0);
            print(json, &view, || format!("paused {id}"))
        }
        ScheduleCommand::Resume { id, user } => {
            let schedule = store.resume(&actor(user)?, &id).await?;
            let view = ScheduleView::new(&schedule, LIST_NEXT_RUNS);
            print(json, &view, || human(&view))
        }
        ScheduleCommand::Delete { id, user } => {
            store.delete(&actor(user)?, &id).await?;
            let out = ScheduleDeleted {
                schedule_id: id,
                deleted: true,
            };
            print(json, &out, || format!("deleted {}", out.schedule_id))
        }
        ScheduleCommand::Runs { id, limit, user } => {
            let runs = store.runs(&actor(user)?, &id, limit).await?;
            let out: Vec<RunView> = runs.iter().map(RunView::from).collect();
            print(json, &out, || {
                out.iter()
                    .map(|r| {
                        format!(
                            "{}  {}  {}  attempt {}  {}",
                            r.run_id,
                            r.scheduled_for,
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
        ScheduleCommand::RunNow { id, user } => {
            let schedule = store.run_now(&actor(user)?, &id).await?;
            let view = ScheduleView::new(&schedule, LIST_NEXT_RUNS);
            print(json, &view, || format!("{id} is due now"))
        }
    }
}

/// The CLI's flags as the spec every door builds a schedule from.
fn spec(args: AddArgs) -> Result<ScheduleSpec, Error> {
    Ok(ScheduleSpec {
        user: Some(args.user),
        name: args.name,
        goal: args.goal,
        cron: args.cron,
        tz: args.tz,
        every: args.every,
        at: args.at,
        when: args.when,
        channel: args.channel,
        notify: policy("--notify", args.notify)?,
        overlap: policy("--overlap", args.overlap)?,
        catch_up: policy("--catch-up", args.catch_up)?,
        max_attempts: args.max_attempts,
        timeout_secs: args.timeout_secs,
        max_turns: args.max_turns,
        max_cost: args.max_cost,
    })
}
