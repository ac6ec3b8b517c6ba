//! `nightshift schedule …`

use nightshift::app::App;
use nightshift::error::Error;
use nightshift::input::InputError;
use nightshift::schedule::spec::ScheduleSpec;
use nightshift::schedule::store::{ReplayAsk, RerunMemory, RunFilter, ScheduleFilter};
use nightshift::schedule::types::RunOrigin;
use nightshift::schedule::view::{
    RunView, ScheduleDeleted, ScheduleList, SchedulePreview, ScheduleView, LIST_NEXT_RUNS,
    SHOW_NEXT_RUNS,
};
use nightshift::spec::{ClearField, SchedulePatch};

use super::args::{AddArgs, EditArgs, ScheduleCommand};
use super::input::{file_arg, text_arg};
use super::memory::actor;
use super::output::{line, print, stdout_closed};

fn human(view: &ScheduleView) -> String {
    let note = view
        .status_reason
        .as_deref()
        .map(|reason| format!(" ({reason})"))
        .unwrap_or_default();
    // The user, and the agent its runs act as.
    let who = match &view.agent {
        Some(agent) => format!("{} as {agent}", view.user_id),
        None => view.user_id.clone(),
    };
    format!(
        "{}  {}{note}  {who}  {}  next {}\n    {}",
        view.schedule_id,
        view.status,
        view.description,
        view.next_run_at.as_deref().unwrap_or("-"),
        view.goal
    )
}

/// The next runs, or why there are none to show.
fn next_runs(runs: &[String]) -> String {
    if runs.is_empty() {
        "none of its own".to_string()
    } else {
        runs.join(", ")
    }
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
            let (user, dry_run) = (args.user.clone(), args.dry_run);
            let spec = spec(args)?;
            if dry_run {
                let new = app
                    .resolve_schedule(&nightshift::access::Actor::Operator, &user, &spec)
                    .await?;
                let preview = SchedulePreview::new(&new, app.clock().now_ms(), SHOW_NEXT_RUNS);
                return print(json, &preview, || {
                    format!(
                        "would add, for {}: {}\n    understood: {}; next runs {}\n    (nothing was created: --dry-run)",
                        preview.user_id,
                        preview.goal,
                        preview.description,
                        next_runs(&preview.next_runs)
                    )
                });
            }
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
                    next_runs(&view.next_runs)
                )
            })
        }
        ScheduleCommand::Edit(args) => {
            let args = *args;
            let (id, acting) = (args.id.clone(), actor(args.user.clone())?);
            let patch = patch(args)?;
            let schedule = app.edit_schedule(&acting, &id, &patch).await?;
            let view = ScheduleView::new(&schedule, SHOW_NEXT_RUNS);
            print(json, &view, || {
                format!(
                    "{}\n    understood: {}; next runs {}",
                    human(&view),
                    view.description,
                    next_runs(&view.next_runs)
                )
            })
        }
        ScheduleCommand::List {
            user,
            status,
            made_by_agent,
            limit,
            offset,
        } => {
            let filter = ScheduleFilter {
                user_id: user,
                status: policy("--status", status)?,
                made_by_agent,
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
                    next_runs(&view.next_runs)
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
        ScheduleCommand::Cancel { run_id, user } => {
            let run = store.cancel_run(&actor(user)?, &run_id, "cli").await?;
            let view = RunView::from(&run);
            print(json, &view, || match view.status {
                nightshift::schedule::types::RunStatus::Running => {
                    format!(
                        "{} is marked to stop: the worker holding it stops it (or, if that \
                         worker is gone, the one that takes over its lease)",
                        view.run_id
                    )
                }
                status => format!("{} {status}", view.run_id),
            })
        }
        ScheduleCommand::Follow {
            run_id,
            after,
            user,
        } => {
            let after = nightshift::schedule::progress::parse_last_event_id(&after)
                .map_err(|e| InputError::new("--after", e.reason))?;
            let Some(mut follow) = store.follow(&actor(user)?, &run_id, after).await? else {
                // Past the run's end: nothing more to tell.
                return Ok(());
            };
            // A closed stdout (`| head`) ends the view: nobody reads what follows.
            while !stdout_closed() {
                let Some(event) = follow.next().await? else {
                    break;
                };
                if json {
                    let text = serde_json::to_string(&event).map_err(|e| {
                        Error::new(
                            nightshift::error::ErrorKind::Internal,
                            format!("cannot write JSON: {e}"),
                        )
                    })?;
                    line(&text)?;
                } else {
                    let at = nightshift::db::clock::to_rfc3339(event.at);
                    let text = nightshift::input::printable(&event.describe()).into_owned();
                    line(&format!(
                        "{:>4}  {at}  {:<11}  {text}",
                        event.seq, event.kind
                    ))?;
                }
            }
            Ok(())
        }
        ScheduleCommand::Runs {
            id,
            limit,
            status,
            since,
            until,
            user,
        } => {
            let actor = actor(user.clone())?;
            let filtered = status.is_some() || since.is_some() || until.is_some();
            let runs = match id {
                Some(id) if !filtered => store.runs(&actor, &id, limit).await?,
                id => {
                    if let Some(id) = &id {
                        // A missing schedule (or another user's) is said so, not listed empty.
                        store.get(&actor, id).await?;
                    }
                    let mut filter = RunFilter::parse(
                        status.as_deref(),
                        user.as_deref(),
                        id.as_deref(),
                        since.as_deref(),
                        until.as_deref(),
                    )?;
                    filter.limit = limit;
                    store.list_runs(&actor, &filter).await?.0
                }
            };
            let out: Vec<RunView> = runs.iter().map(RunView::from).collect();
            print(json, &out, || {
                out.iter()
                    .map(|r| {
                        format!(
                            "{}  {}  {}{}  attempt {}  {}",
                            r.run_id,
                            r.scheduled_for,
                            r.status,
                            match (&r.parent_run_id, r.origin) {
                                (Some(parent), _) => format!(" (rerun of {parent})"),
                                (None, RunOrigin::Cadence) => String::new(),
                                (None, origin) => format!(" ({origin})"),
                            },
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
        ScheduleCommand::Rerun {
            run_id,
            memory_as_of_original,
            user,
        } => {
            let memory = RerunMemory::as_of_original(memory_as_of_original);
            let rerun = store.rerun(&actor(user)?, &run_id, memory).await?;
            print(json, &rerun, || {
                let seeing = match &rerun.memory_as_of {
                    Some(at) => format!(", seeing memory as of {at}"),
                    None => String::new(),
                };
                format!(
                    "{}: rerun of {} ({}) queued as {}{seeing}; `schedule runs {}` shows it \
                     once it starts",
                    rerun.schedule_id,
                    rerun.parent_run_id,
                    rerun.scheduled_for,
                    rerun.event_id,
                    rerun.schedule_id
                )
            })
        }
        ScheduleCommand::Replay {
            id,
            from,
            to,
            status,
            dry_run,
            memory_as_of_original,
            user,
        } => {
            let ask = ReplayAsk {
                from: &from,
                to: &to,
                status: status.as_deref(),
                dry_run,
                memory: RerunMemory::as_of_original(memory_as_of_original),
            };
            let replay = store.replay(&actor(user)?, &id, &ask).await?;
            print(json, &replay, || {
                let verb = if replay.dry_run {
                    "would run again"
                } else {
                    "queued to run again"
                };
                let mut lines = vec![format!(
                    "{id}: {verb} {} run(s); {} already rerun",
                    replay.queued.len(),
                    replay.already_rerun.len()
                )];
                lines.extend(
                    replay
                        .queued
                        .iter()
                        .map(|r| format!("  {}  {}  {}", r.run_id, r.scheduled_for, r.status)),
                );
                lines.join("\n")
            })
        }
        ScheduleCommand::Backfill {
            id,
            from,
            to,
            dry_run,
            user,
        } => {
            let backfill = store
                .backfill(&actor(user)?, &id, &from, &to, dry_run)
                .await?;
            print(json, &backfill, || {
                let verb = if backfill.dry_run {
                    "would run"
                } else {
                    "queued"
                };
                let mut lines = vec![format!(
                    "{id}: {verb} {} occurrence(s); {} already ran",
                    backfill.queued.len(),
                    backfill.already_run.len()
                )];
                lines.extend(backfill.queued.iter().map(|t| format!("  {t}")));
                lines.join("\n")
            })
        }
        ScheduleCommand::Trigger {
            id,
            input,
            idempotency_key,
            user,
        } => {
            let input = input.map(trigger_input).transpose()?;
            let triggered = store
                .trigger(
                    &actor(user)?,
                    &id,
                    input.as_deref(),
                    idempotency_key.as_deref(),
                )
                .await?;
            print(json, &triggered, || {
                if triggered.deduplicated {
                    format!(
                        "{id}: this idempotency key was used before ({}); no new run",
                        triggered.run_id.as_deref().unwrap_or(&triggered.event_id)
                    )
                } else {
                    format!(
                        "{id} triggered ({}); a running worker starts it",
                        triggered.event_id
                    )
                }
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
    let f = args.fields;
    Ok(ScheduleSpec {
        user: Some(args.user),
        name: f.name,
        goal: args.goal,
        cron: f.cron,
        tz: f.tz,
        every: f.every,
        at: f.at,
        when: f.when,
        channel: f.channel,
        notify: policy("--notify", f.notify)?,
        overlap: policy("--overlap", f.overlap)?,
        catch_up: policy("--catch-up", f.catch_up)?,
        max_attempts: f.max_attempts,
        timeout_secs: f.timeout_secs,
        max_turns: f.max_turns,
        max_cost: f.max_cost,
        starts_at: f.starts_at,
        ends_at: f.ends_at,
        max_runs: f.max_runs,
        skip: f.skip,
        jitter: f.jitter,
        catch_up_window: f.catch_up_window,
        triggered: f.triggered,
        calendars: f.calendars,
        after: f.after,
        on: policy("--on", f.on)?,
        agent: f.agent,
        tools: f.tools,
        approve: f.approve,
        alert_late: f.alert_late,
        alert_failures: f.alert_failures,
        alert_silent: f.alert_silent,
    })
}

/// The CLI's flags as a change to a schedule.
fn patch(args: EditArgs) -> Result<SchedulePatch, Error> {
    let f = args.fields;
    let clear = args
        .clear
        .iter()
        .map(|c| {
            c.parse()
                .map_err(|reason| InputError::new("--clear", reason))
        })
        .collect::<Result<Vec<ClearField>, InputError>>()?;
    Ok(SchedulePatch {
        name: f.name,
        goal: args.goal,
        cron: f.cron,
        tz: f.tz,
        every: f.every,
        at: f.at,
        when: f.when,
        channel: f.channel,
        notify: policy("--notify", f.notify)?,
        overlap: policy("--overlap", f.overlap)?,
        catch_up: policy("--catch-up", f.catch_up)?,
        max_attempts: f.max_attempts,
        timeout_secs: f.timeout_secs,
        max_turns: f.max_turns,
        max_cost: f.max_cost,
        starts_at: f.starts_at,
        ends_at: f.ends_at,
        max_runs: f.max_runs,
        skip: (!f.skip.is_empty()).then_some(f.skip),
        jitter: f.jitter,
        catch_up_window: f.catch_up_window,
        triggered: f.triggered.then_some(true),
        calendars: (!f.calendars.is_empty()).then_some(f.calendars),
        after: f.after,
        on: policy("--on", f.on)?,
        agent: f.agent,
        tools: (!f.tools.is_empty()).then_some(f.tools),
        approve: (!f.approve.is_empty()).then_some(f.approve),
        alert_late: f.alert_late,
        alert_failures: f.alert_failures,
        alert_silent: f.alert_silent,
        clear,
    })
}

/// A trigger's input: the text itself, `@FILE` for a file's contents, `-` for standard
/// input, never more than the limit.
fn trigger_input(input: String) -> Result<String, Error> {
    let max = nightshift::schedule::store::MAX_TRIGGER_INPUT_BYTES;
    match input.strip_prefix('@') {
        Some(path) => {
            let bytes = file_arg(std::path::Path::new(path), max)?;
            Ok(nightshift::input::utf8(path, bytes)?)
        }
        None => text_arg("input", input, max),
    }
}
