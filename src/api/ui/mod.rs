//! The web dashboard under `/ui`, served by `nightshift run` on the API's listener: the
//! overview (health, workers, runs, the outbox, every schedule with pause, resume and run
//! now), a schedule's runs with their output and errors, a run's page following its
//! progress live, the outbox with its dead letters
//! to retry, the next seven days as a calendar, each user's memory to browse (notes and their versions, sessions, state,
//! artifacts), and a search box over one user's memory. Server-rendered HTML with its one
//! stylesheet embedded; it works through the same library operations as the CLI and the
//! API, as the operator, in a session started with an admin token (see [`session`]).

mod approvals;
mod charts;
mod extract;
mod memory;
mod memory_views;
mod moments;
mod run_list;
mod runs;
mod scripts;
mod session;
mod settings;
mod trend_charts;
mod upcoming;
mod views;
mod week_charts;

pub use week_charts::WeekCharts;

use self::extract::{UiForm, UiQuery};
use axum::extract::{Path, State};
use axum::http::header::{self, HeaderValue, SET_COOKIE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;

use self::session::{check_csrf, same_origin, secure, session_cookie, Refused, UiSession};
use self::views::SchedulePage;
use super::error::ApiError;
use super::ApiState;
use crate::access::Actor;
use crate::error::Error;
use crate::memory::{SearchRequest, SearchResponse};
use crate::schedule::store::history::HistorySpan;
use crate::schedule::store::ScheduleFilter;
use crate::schedule::view::{RunView, ScheduleView, LIST_NEXT_RUNS, SHOW_NEXT_RUNS};
use crate::tokens::ui_sessions::UiSessionError;
use crate::tokens::TokenError;

/// Runs on a schedule's page.
const PAGE: i64 = 50;
/// Schedules on one overview page (within the page's size beside a week's charts).
const SCHEDULES_PAGE: i64 = 25;
/// Outbox messages on its page (the newest).
const MESSAGES: i64 = 100;

pub fn router() -> Router<ApiState> {
    Router::new()
        .route("/ui", get(overview))
        .route("/ui/", get(|| async { Redirect::to("/ui") }))
        .route("/ui/login", get(login_page).post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/schedules/{schedule_id}", get(schedule))
        .route(
            "/ui/schedules/{schedule_id}/{action}",
            post(schedule_action),
        )
        .route("/ui/runs", get(run_list::list))
        .route("/ui/runs/{run_id}", get(runs::page))
        .route("/ui/runs/{run_id}/events", get(runs::events))
        .route("/ui/runs/{run_id}/{action}", post(runs::action))
        .route("/ui/run-live.js", get(scripts::run_live))
        .route("/ui/refresh.js", get(scripts::refresh))
        .route("/ui/approvals", get(approvals::list))
        .route(
            "/ui/approvals/{approval_id}/{action}",
            post(approvals::answer),
        )
        .route(
            "/approval-link/{token}",
            get(approvals::open_link).post(approvals::follow_link),
        )
        .route("/ui/outbox", get(outbox))
        .route("/ui/outbox/{message_id}/retry", post(retry))
        .route("/ui/upcoming", get(upcoming::page))
        .route("/ui/memory", get(memory::users))
        .route("/ui/memory/{user}", get(memory::user))
        .route("/ui/memory/{user}/notes/{note_id}", get(memory::note))
        .route(
            "/ui/memory/{user}/notes/{note_id}/restore",
            post(memory::restore),
        )
        .route(
            "/ui/memory/{user}/sessions/{session_id}",
            get(memory::session_page),
        )
        .route(
            "/ui/memory/{user}/artifacts/{artifact_id}",
            get(memory::artifact),
        )
        .route("/ui/search", get(search))
        .route("/ui/settings", get(settings::page).post(settings::save))
        .route("/ui/style.css", get(style))
        .layer(axum::middleware::map_response(page_headers))
}

/// What every dashboard answer carries: nothing cached, nothing framed, no script but the
/// one its page names by the nonce made for it (see `views::Page`), no resource from
/// elsewhere, no referrer sent to another site. (Not `no-referrer`: with it a browser
/// sends `Origin: null` on the dashboard's own forms, which look forged then.)
async fn page_headers(mut response: Response) -> Response {
    let scripts = match response.extensions().get::<views::ScriptNonce>() {
        // The script fetches its page again, or follows a run's stream: both this site's.
        Some(nonce) => format!("; script-src 'nonce-{}'; connect-src 'self'", nonce.0),
        None => String::new(),
    };
    // A download (an artifact) is never a page of this site: sandboxed, were a browser
    // to show it anyway.
    let sandbox = if response.headers().contains_key(header::CONTENT_DISPOSITION) {
        "; sandbox"
    } else {
        ""
    };
    let policy = format!(
        "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; \
         base-uri 'none'{scripts}{sandbox}"
    );
    let headers = response.headers_mut();
    // A nonce is hex, so the policy is a valid value; were it not, no script runs.
    let policy = HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static(
        "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; \
         base-uri 'none'",
    ));
    headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// A library error as a page, with the status the API gives its kind.
pub(super) fn failure(err: impl Into<Error>) -> Response {
    let err: Error = err.into();
    let (status, _) = ApiError::status_of(err.kind());
    (
        status,
        views::error(&crate::input::printable(&err.to_string())),
    )
        .into_response()
}

/// `server.public_url`, when set: the address users reach the server by.
pub(super) fn public_url(state: &ApiState) -> Option<&str> {
    state.app.config().server.public_url.as_deref()
}

pub(super) fn see_other(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_string())]).into_response()
}

async fn style() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        views::STYLE,
    )
        .into_response()
}

async fn login_page() -> views::Page {
    views::login(None)
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

async fn login(
    State(state): State<ApiState>,
    headers: HeaderMap,
    UiForm(form): UiForm<LoginForm>,
) -> Response {
    if let Err(refused) = same_origin(&headers, public_url(&state)) {
        return refused.into_response();
    }
    let secret = form.token;
    let secret = secret.trim();
    let refused = |status: StatusCode, why: &str| (status, views::login(Some(why))).into_response();
    let admin = match state.app.tokens().authenticate(secret).await {
        Ok(admin) => admin,
        Err(TokenError::Unauthenticated) => {
            return refused(
                StatusCode::UNAUTHORIZED,
                "Unknown, revoked or expired token.",
            )
        }
        Err(err) => return failure(err),
    };
    if let Err(err) = state.rate.check(&admin.token_id) {
        return err.into_response();
    }
    match state.app.tokens().ui_sessions().start(&admin).await {
        Ok(started) => {
            let mut response = see_other("/ui");
            response.headers_mut().insert(
                SET_COOKIE,
                session_cookie(Some(&started.secret), secure(&state)),
            );
            response
        }
        Err(UiSessionError::NotAdmin) => refused(
            StatusCode::FORBIDDEN,
            "That is a user's token: the dashboard needs an admin token.",
        ),
        Err(err) => failure(err),
    }
}

#[derive(Deserialize)]
pub(super) struct CsrfForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    note: Option<String>,
}

async fn logout(
    State(state): State<ApiState>,
    session: UiSession,
    headers: HeaderMap,
    UiForm(form): UiForm<CsrfForm>,
) -> Response {
    if let Err(refused) = checked(&state, &session, &headers, &form.csrf) {
        return refused.into_response();
    }
    if let Err(err) = session.end(&state).await {
        return failure(err);
    }
    let mut response = see_other("/ui/login");
    response
        .headers_mut()
        .insert(SET_COOKIE, session_cookie(None, secure(&state)));
    response
}

/// A form's or query's field as given: a form sends every field, and a blank one is
/// not a value.
pub(super) fn given(text: &Option<String>) -> Option<&str> {
    text.as_deref().map(str::trim).filter(|t| !t.is_empty())
}

/// A change's checks: from this site, with this session's form token.
pub(super) fn checked(
    state: &ApiState,
    session: &UiSession,
    headers: &HeaderMap,
    csrf: &str,
) -> Result<(), Refused> {
    same_origin(headers, public_url(state))?;
    check_csrf(session, csrf)
}

#[derive(Deserialize)]
struct PageQuery {
    page: Option<i64>,
    /// The runs chart's span: `24h` (the default) or `7d`.
    range: Option<crate::schedule::store::history::HistorySpan>,
    /// The schedules list's filters (a form sends each, blank when unset).
    status: Option<String>,
    user: Option<String>,
    /// A checkbox: `on` (or `true`, `1`) lists only the schedules agents made.
    made_by_agent: Option<String>,
}

impl PageQuery {
    /// The list's filter, from the form's fields; a bad status or user id is refused.
    fn filter(&self) -> Result<views::ScheduleListFilter, Error> {
        let status = given(&self.status)
            .map(|s| {
                s.parse()
                    .map_err(|reason| crate::input::InputError::new("status", reason))
            })
            .transpose()?;
        let user = given(&self.user).map(str::to_string);
        if let Some(user) = &user {
            crate::input::check_user_id(user)?;
        }
        let made_by_agent = match given(&self.made_by_agent) {
            None | Some("off" | "false" | "0") => false,
            Some("on" | "true" | "1") => true,
            Some(_) => {
                return Err(crate::input::InputError::new(
                    "made_by_agent",
                    "use on or off (true or false)",
                )
                .into())
            }
        };
        Ok(views::ScheduleListFilter {
            status,
            user,
            made_by_agent,
        })
    }
}

async fn overview(
    State(state): State<ApiState>,
    session: UiSession,
    UiQuery(query): UiQuery<PageQuery>,
) -> Response {
    let page = query.page.unwrap_or(1).clamp(1, i64::MAX / SCHEDULES_PAGE);
    let wanted = match query.filter() {
        Ok(wanted) => wanted,
        Err(err) => return failure(err),
    };
    let overview = match state.app.overview().await {
        Ok(o) => o,
        Err(err) => return failure(err),
    };
    let ready = state.app.readiness(state.worker_expected).await;
    let filter = ScheduleFilter {
        user_id: wanted.user.clone(),
        status: wanted.status,
        made_by_agent: wanted.made_by_agent,
        limit: Some(SCHEDULES_PAGE),
        offset: (page - 1) * SCHEDULES_PAGE,
    };
    let (schedules, total) = match state.app.schedules().list(&Actor::Operator, &filter).await {
        Ok(found) => found,
        Err(err) => return failure(err),
    };
    // Schedules agents made that are paused: under `agent_schedules = "confirm"` they
    // are made so, and wait for their user to confirm them (resume).
    let waiting = ScheduleFilter {
        status: Some(crate::schedule::types::ScheduleStatus::Paused),
        made_by_agent: true,
        limit: Some(1),
        ..Default::default()
    };
    let to_confirm = match state.app.schedules().list(&Actor::Operator, &waiting).await {
        Ok((_, total)) => total,
        Err(err) => return failure(err),
    };
    let views: Vec<ScheduleView> = schedules
        .iter()
        .map(|s| ScheduleView::new(s, LIST_NEXT_RUNS))
        .collect();
    let now = state.app.clock().now_ms();
    let ids: Vec<String> = schedules.iter().map(|s| s.schedule_id.clone()).collect();
    let since = now.saturating_sub(crate::schedule::store::overview::STATS_WINDOW_MS);
    let stats = match state.app.schedules().run_stats(&ids, since).await {
        Ok(stats) => stats,
        Err(err) => return failure(err),
    };
    let span = query.range.unwrap_or(HistorySpan::Day);
    let charts = match span {
        HistorySpan::Day => {
            let store = state.app.schedules();
            match (
                store.run_history(now, span).await,
                store.lateness_history(now, span).await,
            ) {
                (Ok(runs), Ok(lateness)) => week_charts::WeekFigures {
                    runs,
                    lateness,
                    at: now,
                },
                (Err(err), _) | (_, Err(err)) => return failure(err),
            }
        }
        HistorySpan::Week => match state.week_charts.get(&state.app, now).await {
            Ok(figures) => figures,
            Err(err) => return failure(err),
        },
    };
    let list = SchedulePage {
        schedules: &views,
        total,
        page,
        pages: (total + SCHEDULES_PAGE - 1) / SCHEDULES_PAGE,
        stats: &stats,
        now: session.now_at(now),
        filter: &wanted,
        to_confirm,
    };
    views::overview(&overview, &ready, &list, &charts, &session.csrf).into_response()
}

async fn schedule(
    State(state): State<ApiState>,
    session: UiSession,
    Path(schedule_id): Path<String>,
) -> Response {
    let store = state.app.schedules();
    let found = match store.get(&Actor::Operator, &schedule_id).await {
        Ok(s) => s,
        Err(err) => return failure(err),
    };
    let runs = match store.runs(&Actor::Operator, &schedule_id, PAGE).await {
        Ok(runs) => runs,
        Err(err) => return failure(err),
    };
    let runs: Vec<RunView> = runs.iter().map(RunView::from).collect();
    views::schedule(
        &ScheduleView::new(&found, SHOW_NEXT_RUNS),
        &runs,
        &session.csrf,
        session.now(&state),
    )
    .into_response()
}

async fn schedule_action(
    State(state): State<ApiState>,
    session: UiSession,
    headers: HeaderMap,
    Path((schedule_id, action)): Path<(String, String)>,
    UiForm(form): UiForm<CsrfForm>,
) -> Response {
    if let Err(refused) = checked(&state, &session, &headers, &form.csrf) {
        return refused.into_response();
    }
    let store = state.app.schedules();
    let actor = Actor::Operator;
    let done = match action.as_str() {
        "pause" => {
            let note = form.note.as_deref().filter(|n| !n.is_empty());
            store.pause(&actor, &schedule_id, note).await
        }
        "resume" => store.resume(&actor, &schedule_id).await,
        "run-now" => store.run_now(&actor, &schedule_id).await,
        _ => return (StatusCode::NOT_FOUND, views::error("No such action.")).into_response(),
    };
    match done {
        Ok(_) => see_other(&format!("/ui/schedules/{}", views::urlencode(&schedule_id))),
        Err(err) => failure(err),
    }
}

#[derive(Deserialize)]
struct OutboxQuery {
    status: Option<String>,
    /// The chart's span: `24h` (the default) or `7d`.
    range: Option<crate::schedule::store::history::HistorySpan>,
}

async fn outbox(
    State(state): State<ApiState>,
    session: UiSession,
    UiQuery(query): UiQuery<OutboxQuery>,
) -> Response {
    let status = query.status.filter(|s| !s.is_empty());
    let span = query
        .range
        .unwrap_or(crate::schedule::store::history::HistorySpan::Day);
    let outbox = state.app.outbox();
    let messages = match outbox.list(status.as_deref(), MESSAGES).await {
        Ok(messages) => messages,
        Err(err) => return failure(err),
    };
    match outbox.history(state.app.clock().now_ms(), span).await {
        Ok(history) => views::outbox(
            &messages,
            &history,
            status.as_deref(),
            &session.csrf,
            session.now(&state),
        )
        .into_response(),
        Err(err) => failure(err),
    }
}

async fn retry(
    State(state): State<ApiState>,
    session: UiSession,
    headers: HeaderMap,
    Path(message_id): Path<String>,
    UiForm(form): UiForm<CsrfForm>,
) -> Response {
    if let Err(refused) = checked(&state, &session, &headers, &form.csrf) {
        return refused.into_response();
    }
    if let Err(err) = crate::input::check_id("message id", &message_id) {
        return failure(err);
    }
    let now = state.app.clock().now_ms();
    match state
        .app
        .outbox()
        .retry(&message_id, now, &state.app.config().notify)
        .await
    {
        Ok(_) => {
            state.app.outbox_wake().notify_one();
            see_other("/ui/outbox")
        }
        Err(err) => failure(err),
    }
}

#[derive(Deserialize)]
struct SearchQuery {
    user: Option<String>,
    /// Search as this agent of the user (blank: the shared notes only).
    agent: Option<String>,
    /// Search this conversation of the user's too (blank: the notes only).
    session: Option<String>,
    q: Option<String>,
}

async fn search(
    State(state): State<ApiState>,
    session: UiSession,
    UiQuery(query): UiQuery<SearchQuery>,
) -> Response {
    let (user, q) = (query.user.unwrap_or_default(), query.q.unwrap_or_default());
    let agent = query.agent.unwrap_or_default();
    let session_id = query.session.unwrap_or_default();
    let result = if user.is_empty() || q.is_empty() {
        None
    } else {
        let request = SearchRequest {
            user_id: user.clone(),
            query: q.clone(),
            top_k: Some(10),
            session_id: (!session_id.is_empty()).then(|| session_id.clone()),
            tags: Vec::new(),
            ..Default::default()
        };
        let memory = state
            .app
            .memory()
            .as_agent((!agent.is_empty()).then_some(agent.as_str()));
        let found = match memory {
            Ok(memory) => memory.search_detailed(&request).await,
            Err(err) => Err(err),
        };
        Some(
            found
                .map(SearchResponse::from)
                .map_err(|e| crate::input::printable(&e.to_string()).into_owned()),
        )
    };
    views::search((&user, &agent, &session_id), &q, result, &session.csrf).into_response()
}
