//! The dashboard's pages as HTML (maud escapes every value it is given, so stored text,
//! a goal or a note with markup in it, is shown as text; stored text goes through
//! `visible` first, so a control character or a bidirectional override in a run's output
//! or a conversation is shown as `\u{…}` instead of vanishing or reordering the line).
//! Forms post; a page that changes on its own, or a running run's, loads one small script
//! of the dashboard's own that brings it up to date in place (see [`Script`]), and works
//! without it.

use axum::response::{IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};

use super::moments::{duration, moment, Now};
use crate::app::overview::Overview;
use crate::app::status::Readiness;
use crate::db::clock::to_rfc3339;
use crate::input::visible;
use crate::memory::SearchResponse;
use crate::notify::outbox::Message;
use crate::schedule::store::overview::RunStats;
use crate::schedule::view::{RunView, ScheduleView};

/// What a page runs: nothing, or one of the dashboard's own scripts (in the binary),
/// allowed by a nonce made for that one answer (see [`Page`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    None,
    /// The page brings its content up to date every [`REFRESH_SECS`] (`refresh.js`).
    Refresh,
    /// A run's page follows the run while it goes (`run-live.js`).
    FollowRun,
}

/// How often a page that changes on its own is brought up to date.
pub const REFRESH_SECS: u32 = 10;

/// A page, and the nonce its script carries: the answer's policy allows that script
/// alone (`page_headers` reads it).
pub struct Page {
    markup: Markup,
    nonce: Option<ScriptNonce>,
}

/// The nonce of the one script a page runs.
#[derive(Debug, Clone)]
pub struct ScriptNonce(pub String);

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let mut response = self.markup.into_response();
        if let Some(nonce) = self.nonce {
            response.extensions_mut().insert(nonce);
        }
        response
    }
}

/// A fresh nonce: 128 random bits. Without randomness the page runs no script (it still
/// works: every page does without).
fn nonce() -> Option<ScriptNonce> {
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).ok()?;
    Some(ScriptNonce(hex::encode(random)))
}

/// The page around every view; `csrf` when logged in (the logout form needs it).
pub fn layout(title: &str, csrf: Option<&str>, script: Script, body: Markup) -> Page {
    let source = match script {
        Script::None => None,
        Script::Refresh => Some("/ui/refresh.js"),
        Script::FollowRun => Some("/ui/run-live.js"),
    };
    let nonce = source.and_then(|_| nonce());
    let refresh = (script == Script::Refresh).then_some(REFRESH_SECS);
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · nightshift" }
                link rel="stylesheet" href="/ui/style.css";
            }
            body {
                header {
                    strong { "nightshift" }
                    @if let Some(csrf) = csrf {
                        nav {
                            a href="/ui" { "Overview" }
                            a href="/ui/runs" { "Runs" }
                            a href="/ui/upcoming" { "Upcoming" }
                            a href="/ui/approvals" { "Approvals" }
                            a href="/ui/outbox" { "Outbox" }
                            a href="/ui/memory" { "Memory" }
                            a href="/ui/search" { "Search" }
                            a href="/ui/settings" { "Settings" }
                            form method="post" action="/ui/logout" class="inline" {
                                input type="hidden" name="csrf" value=(csrf);
                                button type="submit" { "Log out" }
                            }
                        }
                    }
                }
                main data-refresh=[refresh] { h1 { (title) } (body) }
                @if let (Some(source), Some(nonce)) = (source, &nonce) {
                    script src=(source) nonce=(nonce.0) defer {}
                }
            }
        }
    };
    Page { markup, nonce }
}

pub fn login(error: Option<&str>) -> Page {
    layout(
        "Log in",
        None,
        Script::None,
        html! {
            @if let Some(error) = error { p.error role="alert" { (error) } }
            form method="post" action="/ui/login" {
                label for="token" { "Admin token" }
                input #token type="password" name="token" autocomplete="off" required autofocus;
                button type="submit" { "Log in" }
            }
            p.hint { "Create one with " code { "nightshift token create --admin" } "." }
        },
    )
}

pub fn error(message: &str) -> Page {
    layout(
        "Something went wrong",
        None,
        Script::None,
        html! { p.error role="alert" { (message) } p { a href="/ui" { "Back to the overview" } } },
    )
}

fn when(ms: i64) -> String {
    to_rfc3339(ms)
}

/// A button that posts to `action` with the form token.
pub(super) fn action_button(action: &str, label: &str, csrf: &str) -> Markup {
    action_button_with(action, label, csrf, &[])
}

/// A button that posts to `action` with the form token and `fields`.
pub(super) fn action_button_with(
    action: &str,
    label: &str,
    csrf: &str,
    fields: &[(&str, &str)],
) -> Markup {
    html! {
        form method="post" action=(action) class="inline" {
            input type="hidden" name="csrf" value=(csrf);
            @for (name, value) in fields { input type="hidden" name=(name) value=(value); }
            button type="submit" { (label) }
        }
    }
}

/// A status by its word and its colour (never colour alone): green for what went well,
/// red for what failed, blue for what is going, amber for what stopped or waits on a
/// person.
pub(super) fn badge(status: &str) -> Markup {
    html! { span class={ "badge s-" (status) } { (status) } }
}

/// A schedule's actions as one form (each button posts to its own action): one form token
/// a row, not one a button, keeps a list of them small.
fn schedule_buttons(s: &ScheduleView, csrf: &str) -> Markup {
    let base = format!("/ui/schedules/{}", urlencode(&s.schedule_id));
    let toggle = match s.status.as_str() {
        "active" => Some(("pause", "Pause")),
        "paused" => Some(("resume", "Resume")),
        _ => None,
    };
    html! {
        @if let Some((action, label)) = toggle {
            form method="post" action={ (base) "/" (action) } class="inline" {
                input type="hidden" name="csrf" value=(csrf);
                button type="submit" { (label) }
                " "
                button type="submit" formaction={ (base) "/run-now" } { "Run now" }
            }
        }
    }
}

/// Characters a path segment keeps as they are (RFC 3986's unreserved ones).
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `text` as one path segment.
pub fn urlencode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, SEGMENT).to_string()
}

pub struct SchedulePage<'a> {
    pub schedules: &'a [ScheduleView],
    pub total: i64,
    pub page: i64,
    pub pages: i64,
    /// How each schedule's runs went over the last week.
    pub stats: &'a std::collections::BTreeMap<String, RunStats>,
    /// The time the page's relative times count from.
    pub now: Now,
    /// What the list is filtered by.
    pub filter: &'a ScheduleListFilter,
    /// Schedules agents made that are paused (those made under `confirm` wait for their
    /// users to confirm them).
    pub to_confirm: i64,
}

/// The overview's filters of its schedules.
#[derive(Debug, Clone, Default)]
pub struct ScheduleListFilter {
    pub status: Option<crate::schedule::types::ScheduleStatus>,
    pub user: Option<String>,
    pub made_by_agent: bool,
}

impl ScheduleListFilter {
    /// The overview at `page` with these filters.
    fn at_page(&self, page: i64) -> String {
        let mut pairs = Vec::new();
        if let Some(status) = self.status {
            pairs.push(format!("status={}", status.as_str()));
        }
        if let Some(user) = &self.user {
            pairs.push(format!("user={}", urlencode(user)));
        }
        if self.made_by_agent {
            pairs.push("made_by_agent=on".to_string());
        }
        pairs.push(format!("page={page}"));
        format!("/ui?{}", pairs.join("&"))
    }
}

/// A week's runs of one schedule in words: "5 of 6 ok (83 %)".
fn week(stats: Option<&RunStats>) -> Markup {
    let Some(stats) = stats.filter(|s| s.succeeded + s.failed > 0) else {
        return html! { span.hint { "no runs" } };
    };
    let ended = stats.succeeded + stats.failed;
    let share = stats.succeeded * 100 / ended;
    html! {
        span class=(if stats.failed > 0 { "warn" } else { "ok" }) {
            (stats.succeeded) " of " (ended) " ok (" (share) " %)"
        }
    }
}

pub fn overview(
    o: &Overview,
    ready: &Readiness,
    list: &SchedulePage,
    charts: &super::week_charts::WeekFigures,
    csrf: &str,
) -> Page {
    let count = |k: &str| o.schedules.by_status.get(k).copied().unwrap_or(0);
    let body = html! {
        section.cards {
            div.card {
                h2 { "Health" }
                p.(if ready.ready { "ok" } else { "bad" }) { @if ready.ready { "Ready" } @else { "Not ready" } }
                ul { @for check in &ready.checks { li { (check.name) ": " (check.detail) } } }
                @if let Some(reason) = &ready.degraded_reason { p.warn { "Search by keywords only: " (reason) } }
            }
            div.card {
                h2 { "Workers" }
                p { (o.workers_alive) " alive" }
                ul { @for w in &o.workers {
                    li { (w.worker_id) " on " (w.host) " · " (if w.alive { "alive" } else { "gone" })
                         " · heartbeat " (when(w.heartbeat_at)) " · " (w.running_runs) " run(s)" }
                } }
            }
            div.card {
                h2 { "Runs, last hour" }
                p { (o.runs_last_hour.total) " started" }
                ul { @for (status, n) in &o.runs_last_hour.by_status { li { (n) " " (status) } } }
                @if let Some(p99) = o.runs_last_hour.lateness_p99_ms { p { "Lateness p99: " (p99) " ms" } }
            }
            @if list.to_confirm > 0 {
                div.card {
                    h2 { "Made by agents, paused" }
                    p.warn { a href="/ui?status=paused&made_by_agent=on" { (list.to_confirm) " schedule(s)" } }
                    p.hint { "Under " code { "agent_schedules = \"confirm\"" } " an agent's schedule is made paused and waits for its user to confirm it: resuming confirms it." }
                }
            }
            div.card {
                h2 { "Outbox" }
                p { a href="/ui/outbox?status=pending" { (o.outbox.pending) " pending" } }
                p { a href="/ui/outbox?status=dead" { (o.outbox.dead) " dead" } }
                p { (o.embedding_backlog) " chunk(s) waiting for a vector" }
            }
        }
        (super::charts::runs_per_hour(&charts.runs))
        @if charts.at < list.now.ms {
            p.hint { "The week's figures as of " (moment(&when(charts.at), list.now)) " (worked out at most once a minute)." }
        }
        (super::charts::lateness(&charts.lateness))
        h2 { "Schedules" }
        p { (count("active")) " active · " (count("paused")) " paused · " (count("completed"))
            " completed · " (count("failed")) " failed · " (o.schedules.failing) " failing" }
        form #schedule-filters method="get" action="/ui" {
            label for="status" { "Status" }
            select #status name="status" {
                option value="" selected[list.filter.status.is_none()] { "any" }
                @for status in ["active", "paused", "completed", "failed"] {
                    option value=(status) selected[list.filter.status.map(|s| s.as_str()) == Some(status)] { (status) }
                }
            }
            label for="user" { "User" }
            input #user name="user" value=(list.filter.user.as_deref().unwrap_or(""));
            label for="made_by_agent" {
                input #made_by_agent type="checkbox" name="made_by_agent" checked[list.filter.made_by_agent];
                " made by an agent"
            }
            button type="submit" { "Filter" }
        }
        @if list.schedules.is_empty() { p #no-schedules { "No schedules" @if list.total == 0 && (list.filter.status.is_some() || list.filter.user.is_some() || list.filter.made_by_agent) { " match these filters" } "." } }
        table #schedules {
            thead { tr { th { "Schedule" } th { "User" } th { "Goal" } th { "Cadence" } th { "Status" } th { "Last run" } th { "Last 7 days" } th { "Next run" } th { "Actions" } } }
            tbody {
                @for s in list.schedules {
                    tr data-schedule=(s.schedule_id) {
                        td { a href={ "/ui/schedules/" (urlencode(&s.schedule_id)) } { (visible(s.name.as_deref().unwrap_or(&s.schedule_id))) }
                            @if let Some(run) = &s.made_by_run {
                                br; small { "made by an agent in " a href={ "/ui/runs/" (urlencode(run)) } { "a run" } }
                            }
                        }
                        td { (visible(&s.user_id)) }
                        td.goal { (visible(&s.goal)) }
                        td { (s.description) }
                        td.status { (badge(s.status.as_str()))
                            @if s.consecutive_failures > 0 { " " span.bad { "(" (s.consecutive_failures) " failed)" } } }
                        td.last {
                            @if let (Some(status), Some(at)) = (s.last_run_status, s.last_run_at.as_deref()) {
                                (badge(status.as_str())) " " (moment(at, list.now))
                                @if let Some(took) = list.stats.get(&s.schedule_id).and_then(|t| t.last_duration_ms) {
                                    br; small { "took " (duration(took)) }
                                }
                            } @else { span.hint { "not yet" } }
                        }
                        td { (week(list.stats.get(&s.schedule_id))) }
                        td { @if let Some(next) = s.next_run_at.as_deref() { (moment(next, list.now)) } @else { "—" } }
                        td.actions { (schedule_buttons(s, csrf)) }
                    }
                }
            }
        }
        @if list.pages > 1 {
            p.pager {
                @if list.page > 1 { a href=(list.filter.at_page(list.page - 1)) { "← newer" } " " }
                "page " (list.page) " of " (list.pages) " (" (list.total) " schedules)"
                @if list.page < list.pages { " " a href=(list.filter.at_page(list.page + 1)) { "older →" } }
            }
        }
    };
    layout("Overview", Some(csrf), Script::Refresh, body)
}

pub fn schedule(s: &ScheduleView, runs: &[RunView], csrf: &str, now: Now) -> Page {
    let title = visible(s.name.as_deref().unwrap_or(&s.schedule_id)).into_owned();
    let body = html! {
        dl {
            dt { "Id" } dd { code { (s.schedule_id) } }
            dt { "User" } dd { (visible(&s.user_id)) }
            dt { "Goal" } dd.goal { (visible(&s.goal)) }
            dt { "Cadence" } dd { (s.description) " (" (s.timezone) ")" }
            dt { "Status" } dd.status { (badge(s.status.as_str()))
                @if let Some(reason) = &s.status_reason { " — " (visible(reason)) } }
            dt { "Next runs" } dd { @for run in &s.next_runs { (moment(run, now)) " · " (run) br; } }
        }
        p.actions { (schedule_buttons(s, csrf)) }
        h2 { "Runs" }
        @if runs.is_empty() { p #no-runs { "No runs yet." } } @else {
        table #runs {
            thead { tr { th { "Scheduled for" } th { "Status" } th { "Attempt" } th { "Finished" } th { "Output or error" } th { "Actions" } } }
            tbody {
                @for r in runs {
                    tr data-run=(r.run_id) {
                        td {
                            a href=(format!("/ui/runs/{}", urlencode(&r.run_id))) { (r.scheduled_for) }
                            @if let Some(parent) = &r.parent_run_id {
                                br; small { "rerun of " code { (parent) } }
                            }
                        }
                        td.status {
                            (badge(r.status.as_str()))
                            @if let Some(by) = r.cancel_requested_by.as_deref().filter(|_| r.status.as_str() == "running") {
                                " (stopping, asked by " (by) ")"
                            }
                        }
                        td { (r.attempt) }
                        td { @if let Some(finished) = r.finished_at.as_deref() { (moment(finished, now)) } @else { "—" } }
                        td {
                            @if let Some(error) = &r.error { p.error { (visible(error)) } }
                            @if let Some(output) = &r.output {
                                details { summary { (visible(r.output_summary.as_deref().unwrap_or("output"))) } pre { (visible(output)) } }
                            }
                        }
                        td.actions {
                            @if r.status.as_str() == "waiting" || (r.status.as_str() == "running" && r.cancel_requested_by.is_none()) {
                                (action_button(&format!("/ui/runs/{}/cancel", urlencode(&r.run_id)), "Cancel", csrf))
                            }
                            @if !matches!(r.status.as_str(), "running" | "waiting" | "skipped") {
                                (action_button(&format!("/ui/runs/{}/rerun", urlencode(&r.run_id)), "Rerun", csrf))
                            }
                        }
                    }
                }
            }
        }
        }
    };
    layout(&title, Some(csrf), Script::Refresh, body)
}

pub fn outbox(
    messages: &[Message],
    history: &crate::notify::outbox::OutboxHistory,
    status: Option<&str>,
    csrf: &str,
    now: Now,
) -> Page {
    let body = html! {
        (super::trend_charts::outbox(history, status))
        h2 { "Messages" }
        p.filters {
            a href="/ui/outbox" { "all" } " · "
            a href="/ui/outbox?status=pending" { "pending" } " · "
            a href="/ui/outbox?status=dead" { "dead" } " · "
            a href="/ui/outbox?status=delivered" { "delivered" }
        }
        @if messages.is_empty() { p #no-messages { "No messages" @if let Some(s) = status { " " (s) } "." } }
        table #messages {
            thead { tr { th { "Message" } th { "User" } th { "Channel" } th { "Status" } th { "Attempts" } th { "Last error" } th { "Created" } th { "" } } }
            tbody {
                @for m in messages {
                    tr data-message=(m.message_id) {
                        td { code { (m.message_id) } br; (m.kind) }
                        td { (visible(&m.user_id)) }
                        td { (m.channel_id) }
                        td.status { (badge(&m.status)) }
                        td { (m.attempts) }
                        td { (visible(m.last_error.as_deref().unwrap_or(""))) }
                        td { (moment(&when(m.created_at), now)) }
                        td { @if m.status == "dead" {
                            (action_button(&format!("/ui/outbox/{}/retry", urlencode(&m.message_id)), "Retry", csrf))
                        } }
                    }
                }
            }
        }
    };
    layout("Outbox", Some(csrf), Script::None, body)
}

pub fn search(
    (user, agent, session): (&str, &str, &str),
    query: &str,
    result: Option<Result<SearchResponse, String>>,
    csrf: &str,
) -> Page {
    let body = html! {
        form #search method="get" action="/ui/search" {
            label for="user" { "User" }
            input #user name="user" value=(user) required;
            label for="agent" { "Agent (blank: shared notes only)" }
            input #agent name="agent" value=(agent);
            label for="session" { "Conversation (blank: notes only)" }
            input #session name="session" value=(session);
            label for="q" { "Query" }
            input #q type="search" name="q" value=(query) required;
            button type="submit" { "Search" }
        }
        @match result {
            None => {}
            Some(Err(message)) => { p.error role="alert" { (message) } }
            Some(Ok(found)) => {
                @if found.degraded { p.warn { "Keywords only: " (found.degraded_reason.as_deref().unwrap_or("")) } }
                @if found.hits.is_empty() { p #no-hits { "Nothing found." } }
                ol #hits {
                    @for hit in &found.hits {
                        li {
                            p { (visible(&hit.text)) }
                            p.hint { "score " (format!("{:.3}", hit.score)) " (keywords " (leg(hit.keyword_score)) ", vectors " (leg(hit.vector_score)) ") · "
                                @if let Some(note) = &hit.note_id {
                                    a href={ "/ui/memory/" (urlencode(user)) "/notes/" (urlencode(note)) @if !agent.is_empty() { "?agent=" (urlencode(agent)) } } { "note " code { (visible(note)) } }
                                }
                                @if let Some(session) = &hit.session_id {
                                    a href={ "/ui/memory/" (urlencode(user)) "/sessions/" (urlencode(session)) } { "session " code { (visible(session)) } }
                                    " #" (hit.sequence.unwrap_or_default())
                                }
                                " · " (when(hit.at)) }
                        }
                    }
                }
            }
        }
    };
    layout("Search a user's memory", Some(csrf), Script::None, body)
}

/// One leg's score of a hit, or a dash when that leg did not find it.
fn leg(score: Option<f64>) -> String {
    score.map_or_else(|| "—".to_string(), |s| format!("{s:.2}"))
}

/// The stylesheet, embedded in the binary.
pub const STYLE: &str = include_str!("style.css");
