//! A run's page on the dashboard: the run, and its progress so far; while it goes, a small
//! script of the dashboard's own (`run-live.js`) follows it live (`/ui/runs/{id}/events`,
//! the stream `GET /v1/runs/{id}/events` sends, each event in words). Cancel and Rerun
//! post to `/ui/runs/{id}/{action}`.

use std::sync::Arc;

use super::extract::{UiForm, UiQuery};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use maud::html;
use serde::Deserialize;
use serde_json::json;

use super::moments::{moment, Now};
use super::session::UiSession;
use super::views::{action_button, layout, urlencode, Page, Script};
use super::{checked, failure, see_other, CsrfForm};
use crate::access::Actor;
use crate::api::routes::run_events;
use crate::api::ApiState;
use crate::db::clock::to_rfc3339;
use crate::input::visible;
use crate::schedule::progress::ProgressEvent;
use crate::schedule::store::RerunMemory;
use crate::schedule::types::RunStatus;
use crate::schedule::view::RunView;

/// The most events a run's page shows when it is opened (the newest are followed live).
const SHOWN: usize = 1000;

pub async fn page(
    State(state): State<ApiState>,
    session: UiSession,
    Path(run_id): Path<String>,
) -> Response {
    let store = state.app.schedules();
    let mut read = match store.progress(&Actor::Operator, &run_id, 0).await {
        Ok(read) => read,
        Err(err) => return failure(err),
    };
    let mut events: Vec<ProgressEvent> = std::mem::take(&mut read.events);
    // The rest of a long run's events, a page at a time, up to what a page shows.
    while !events.is_empty()
        && events.len() < SHOWN
        && events.last().map(|e| e.seq) < Some(read.last_seq)
    {
        let after = events.last().map_or(0, |e| e.seq);
        match store.progress(&Actor::Operator, &run_id, after).await {
            Ok(more) if more.events.is_empty() => break,
            Ok(more) => events.extend(more.events),
            Err(err) => return failure(err),
        }
    }
    let run = read.run;
    let hidden = read.last_seq - events.last().map_or(0, |e| e.seq);
    let live = matches!(run.status, RunStatus::Running | RunStatus::Waiting);
    let now = session.now(&state);
    view(
        &RunView::from(&run),
        &events,
        hidden,
        live,
        &session.csrf,
        now,
    )
    .into_response()
}

#[derive(Deserialize)]
pub struct EventsQuery {
    /// The last event the page was rendered with.
    after: Option<String>,
}

pub async fn events(
    State(state): State<ApiState>,
    session: UiSession,
    Path(run_id): Path<String>,
    UiQuery(query): UiQuery<EventsQuery>,
    headers: HeaderMap,
) -> Response {
    let after = match run_events::last_seen(&headers, query.after.as_deref()) {
        Ok(after) => after,
        Err(err) => return failure(err),
    };
    let slot = match run_events::stream_slot(&state, "operator") {
        Ok(slot) => slot,
        Err(err) => return err.into_response(),
    };
    let follow = match state
        .app
        .schedules()
        .follow(&Actor::Operator, &run_id, after)
        .await
    {
        Ok(Some(follow)) => follow,
        Ok(None) => return StatusCode::NO_CONTENT.into_response(),
        Err(err) => return failure(err),
    };
    // Logging out (or the session's token revoked) ends the stream.
    let session = Arc::new(session);
    let allowed: run_events::Allowed = {
        let state = state.clone();
        Arc::new(move || {
            let (state, session) = (state.clone(), session.clone());
            Box::pin(async move { session.still_open(&state).await })
        })
    };
    run_events::stream(follow, slot, state.stop.clone(), allowed, |event| {
        json!({
            "seq": event.seq,
            "kind": event.kind,
            "at": to_rfc3339(event.at),
            "text": visible(&event.describe()),
            "status": event.data["status"],
        })
        .to_string()
    })
    .into_response()
}

/// Cancel or rerun a run; back to its schedule's page.
pub async fn action(
    State(state): State<ApiState>,
    session: UiSession,
    headers: HeaderMap,
    Path((run_id, action)): Path<(String, String)>,
    UiForm(form): UiForm<CsrfForm>,
) -> Response {
    if let Err(refused) = checked(&state, &session, &headers, &form.csrf) {
        return refused.into_response();
    }
    let store = state.app.schedules();
    let schedule_id = match action.as_str() {
        "cancel" => store
            .cancel_run(&Actor::Operator, &run_id, "dashboard")
            .await
            .map(|run| run.schedule_id),
        "rerun" | "rerun-as-of" => {
            let memory = RerunMemory::as_of_original(action == "rerun-as-of");
            store
                .rerun(&Actor::Operator, &run_id, memory)
                .await
                .map(|rerun| rerun.schedule_id)
        }
        _ => {
            return (
                StatusCode::NOT_FOUND,
                super::views::error("No such action."),
            )
                .into_response()
        }
    };
    match schedule_id {
        Ok(schedule_id) => see_other(&format!("/ui/schedules/{}", urlencode(&schedule_id))),
        Err(err) => failure(err),
    }
}

/// `hidden`: the run's events after those shown (a page shows [`SHOWN`] at most).
fn view(
    run: &RunView,
    events: &[ProgressEvent],
    hidden: i64,
    live: bool,
    csrf: &str,
    now: Now,
) -> Page {
    let last = events.last().map_or(0, |e| e.seq);
    let follow = live.then(|| format!("/ui/runs/{}/events?after={last}", urlencode(&run.run_id)));
    let body = html! {
        dl {
            dt { "Id" } dd { code { (run.run_id) } }
            dt { "Schedule" } dd { a href=(format!("/ui/schedules/{}", urlencode(&run.schedule_id))) { code { (run.schedule_id) } } }
            dt { "Scheduled for" } dd { (run.scheduled_for) }
            @if let Some(parent) = &run.parent_run_id {
                dt { "Rerun of" } dd { a href=(format!("/ui/runs/{}", urlencode(parent))) { code { (parent) } } }
            }
            @if let Some(at) = &run.memory_as_of {
                dt { "Memory as of" } dd { (moment(at, now)) " (as the run it repeats saw it)" }
            }
            dt { "Status" } dd.status { span #run-status class={ "badge s-" (run.status.as_str()) } { (run.status.as_str()) } }
            dt { "Attempt" } dd { (run.attempt) }
            dt { "Turns" } dd { (run.turn_count) }
            dt { "Tokens" } dd { (run.prompt_tokens) " in, " (run.completion_tokens) " out" }
            dt { "Cost" } dd { (format!("{:.6}", run.cost)) }
            @if let Some(started) = &run.started_at { dt { "Started" } dd { (moment(started, now)) } }
            @if let Some(finished) = &run.finished_at { dt { "Finished" } dd { (moment(finished, now)) } }
            @if let Some(error) = &run.error { dt { "Error" } dd.error { (visible(error)) } }
            @if let Some(output) = &run.output { dt { "Output" } dd { pre { (visible(output)) } } }
        }
        p.actions {
            @if run.status.as_str() == "waiting" || (run.status.as_str() == "running" && run.cancel_requested_by.is_none()) {
                (action_button(&format!("/ui/runs/{}/cancel", urlencode(&run.run_id)), "Cancel", csrf))
            }
            @if !matches!(run.status.as_str(), "running" | "waiting" | "skipped") {
                (action_button(&format!("/ui/runs/{}/rerun", urlencode(&run.run_id)), "Rerun", csrf))
                (action_button(&format!("/ui/runs/{}/rerun-as-of", urlencode(&run.run_id)), "Rerun with memory as it was", csrf))
            }
        }
        h2 { "Progress" }
        p #live role="status" {
            @if live { "Following the run as it goes." } @else if events.is_empty() { "No progress was recorded." } @else { "The run ended." }
        }
        @if hidden > 0 && !live {
            p.hint { "The first " (events.len()) " events; " (hidden) " more are in the run's transcript and at "
                code { "GET /v1/runs/" (run.run_id) "/events" } "." }
        }
        table #progress data-follow=[follow] {
            thead { tr { th { "#" } th { "Kind" } th { "At" } th { "What happened" } } }
            tbody {
                @for e in events {
                    tr data-seq=(e.seq) {
                        td { (e.seq) }
                        td { (e.kind.as_str()) }
                        td { (to_rfc3339(e.at)) }
                        td { (visible(&e.describe())) }
                    }
                }
            }
        }
    };
    let script = if live {
        Script::FollowRun
    } else {
        Script::None
    };
    layout(&format!("Run {}", run.run_id), Some(csrf), script, body)
}
