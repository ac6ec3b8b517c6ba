//! `/ui/runs`: every schedule's runs in one list, filtered by status, user, schedule and
//! time, a page at a time, newest first; each run links to its page. The filters are a
//! plain form (GET), so a filtered list is a link to share.

use super::extract::UiQuery;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;

use super::moments::{moment, Now};
use super::session::UiSession;
use super::views::{badge, layout, urlencode, Page, Script};
use super::{failure, given};
use crate::access::Actor;
use crate::api::ApiState;
use crate::error::{ErrorKind, Kind};
use crate::input::visible;
use crate::schedule::store::RunFilter;
use crate::schedule::types::RunStatus;
use crate::schedule::view::RunView;

/// Runs on one page.
const PAGE: i64 = 50;

#[derive(Debug, Default, Deserialize)]
pub struct RunListQuery {
    status: Option<String>,
    user: Option<String>,
    schedule: Option<String>,
    since: Option<String>,
    until: Option<String>,
    page: Option<i64>,
}

impl RunListQuery {
    /// The query string of this list at `page`.
    fn at_page(&self, page: i64) -> String {
        let mut pairs = Vec::new();
        for (key, value) in [
            ("status", &self.status),
            ("user", &self.user),
            ("schedule", &self.schedule),
            ("since", &self.since),
            ("until", &self.until),
        ] {
            if let Some(value) = value.as_deref().filter(|v| !v.trim().is_empty()) {
                pairs.push(format!("{key}={}", urlencode(value)));
            }
        }
        pairs.push(format!("page={page}"));
        format!("/ui/runs?{}", pairs.join("&"))
    }
}

pub async fn list(
    State(state): State<ApiState>,
    session: UiSession,
    UiQuery(query): UiQuery<RunListQuery>,
) -> Response {
    let filter = RunFilter::parse(
        given(&query.status),
        given(&query.user),
        given(&query.schedule),
        given(&query.since),
        given(&query.until),
    );
    let page = query.page.unwrap_or(1).clamp(1, i64::MAX / PAGE);
    let found = match filter {
        Ok(mut filter) => {
            filter.limit = PAGE;
            filter.offset = (page - 1) * PAGE;
            state
                .app
                .schedules()
                .list_runs(&Actor::Operator, &filter)
                .await
        }
        Err(err) => Err(err),
    };
    match found {
        Ok(found) => {
            let now = session.now(&state);
            view(&query, page, Ok(found), &session.csrf, now).into_response()
        }
        // A bad filter is shown on the page, with the form to mend it.
        Err(err) if err.kind() == ErrorKind::BadInput => {
            let message = crate::input::printable(&err.to_string()).into_owned();
            let mut response = view(
                &query,
                page,
                Err(message),
                &session.csrf,
                session.now(&state),
            )
            .into_response();
            *response.status_mut() = StatusCode::BAD_REQUEST;
            response
        }
        Err(err) => failure(err),
    }
}

fn view(
    query: &RunListQuery,
    page: i64,
    found: Result<(Vec<crate::schedule::types::Run>, i64), String>,
    csrf: &str,
    now: Now,
) -> Page {
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    let status = value(&query.status);
    let body = html! {
        form #run-filters method="get" action="/ui/runs" {
            label for="status" { "Status" }
            select #status name="status" {
                option value="" selected[status.is_empty()] { "any" }
                @for s in RunStatus::ALL { option value=(s) selected[status == *s] { (s) } }
            }
            label for="user" { "User" }
            input #user name="user" value=(value(&query.user));
            label for="schedule" { "Schedule id" }
            input #schedule name="schedule" value=(value(&query.schedule));
            label for="since" { "From (UTC date, RFC 3339 or ms)" }
            input #since name="since" value=(value(&query.since)) placeholder="2026-11-26";
            label for="until" { "Until" }
            input #until name="until" value=(value(&query.until)) placeholder="2026-11-27";
            p { button type="submit" { "Show runs" } " " a href="/ui/runs" { "Clear" } }
        }
        @match found {
            Err(message) => { p.error role="alert" { (message) } }
            Ok((runs, total)) => {
                p #run-count { (total) " run(s)" @if total > PAGE { ", page " (page) " of " ((total + PAGE - 1) / PAGE) } "." }
                @if !runs.is_empty() {
                    table #runs {
                        thead { tr { th { "Scheduled for" } th { "Schedule" } th { "Status" } th { "Attempt" } th { "Finished" } th { "Output or error" } } }
                        tbody {
                            @for run in &runs {
                                @let r = RunView::from(run);
                                tr data-run=(r.run_id) {
                                    td { a href={ "/ui/runs/" (urlencode(&r.run_id)) } { (r.scheduled_for) } }
                                    td { a href={ "/ui/schedules/" (urlencode(&r.schedule_id)) } { code { (r.schedule_id) } } }
                                    td.status { (badge(r.status.as_str())) }
                                    td { (r.attempt) }
                                    td { @if let Some(finished) = r.finished_at.as_deref() { (moment(finished, now)) } @else { "—" } }
                                    td {
                                        @if let Some(error) = &r.error { span.error { (visible(crate::text::truncate_chars(error, 200))) } }
                                        @else if let Some(summary) = &r.output_summary { (visible(summary)) }
                                    }
                                }
                            }
                        }
                    }
                }
                nav.pager aria-label="Pages" {
                    @if page > 1 { a rel="prev" href=(query.at_page(page - 1)) { "Newer" } " " }
                    @if page * PAGE < total { a rel="next" href=(query.at_page(page + 1)) { "Older" } }
                }
            }
        }
    };
    layout("Runs", Some(csrf), Script::None, body)
}
