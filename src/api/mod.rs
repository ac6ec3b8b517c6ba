//! The HTTP API served by `nightshift run`: REST under `/v1` for agents and operators,
//! its OpenAPI document generated from the handlers, `/healthz`, `/readyz` and `/metrics`.
//! A front door like the CLI: it authenticates, parses and answers; every operation,
//! with its validation and ownership checks, is the library's.

pub mod auth;
pub mod error;
mod extract;
mod input_rules;
mod middleware;
mod routes;
pub mod server;
mod stream_slots;
pub mod types;
mod ui;

use std::sync::Arc;
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use tokio_util::sync::CancellationToken;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::ServiceBuilder;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::app::App;
pub use server::{Listening, ServerError};

/// What every handler reads.
#[derive(Clone)]
pub struct ApiState {
    pub app: App,
    pub rate: Arc<auth::RateLimiter>,
    /// A worker runs in this process: readiness checks its scheduler loop.
    pub worker_expected: bool,
    /// The OpenAPI document, as served.
    pub openapi: Arc<String>,
    /// Cancelled when the server shuts down: open event streams end.
    pub stop: CancellationToken,
    /// Places for open event streams (a run followed live; see `stream_slots`).
    pub streams: Arc<stream_slots::StreamSlots>,
    /// The dashboard overview's week of charts, worked out at most once a minute.
    pub week_charts: Arc<ui::WeekCharts>,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "nightshift",
        description = "Durable memory and a sense of time for AI agents: notes, conversations and \
                       hybrid search; schedules whose goals run through an agent runtime.",
    ),
    modifiers(&BearerAuth),
    components(schemas(error::ErrorBody)),
    tags(
        (name = "notes", description = "A user's notes"),
        (name = "memory", description = "Search"),
        (name = "sessions", description = "Conversations"),
        (name = "state", description = "Scoped key-value state"),
        (name = "artifacts", description = "Files agents produced, stored with a session"),
        (name = "schedules", description = "Schedules and their runs"),
        (name = "sources", description = "Deliveries from senders outside nightshift, proven by their signature"),
        (name = "approvals", description = "Tool calls that wait for the user's approval"),
        (name = "macros", description = "Tool chains learned from a user's scheduled runs"),
        (name = "admin", description = "The operator's routes (an admin token)"),
        (name = "system", description = "Health, readiness, metrics, this document")
    )
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// Every route with its documentation, before the state is attached.
fn documented_routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(routes::notes::router())
        .merge(routes::versions::router())
        .merge(routes::portable::router())
        .merge(routes::artifacts::router())
        .merge(routes::search::router())
        .merge(routes::sessions::router())
        .merge(routes::state::router())
        .merge(routes::schedules::router())
        .merge(routes::sources::router())
        .merge(routes::run_events::router())
        .merge(routes::approvals::router())
        .merge(routes::macros::router())
        .merge(routes::admin::router())
        .merge(routes::system::router())
}

/// The OpenAPI document of every route, as JSON (what `/v1/openapi.json` serves): the
/// routes' own declarations with the input rules written in ([`input_rules`]).
/// The limits that depend on the configuration are the defaults'; the server serves its
/// own.
pub fn openapi() -> serde_json::Value {
    document(
        documented_routes().into_openapi(),
        &crate::config::Config::default(),
    )
}

fn document(doc: utoipa::openapi::OpenApi, config: &crate::config::Config) -> serde_json::Value {
    let mut doc = serde_json::to_value(doc).unwrap_or_default();
    input_rules::apply(&mut doc, config);
    doc
}

/// The API's router on `app`, with its limits: a body over `server.max_body_bytes`
/// refused before it is read whole, a request over its time answered 503, requests past
/// `server.max_concurrent_requests` (over every route together) turned away at once. The
/// MCP server is at `/mcp`, under the same limits; its open event streams end when `stop`
/// is cancelled.
pub fn router(app: &App, worker_expected: bool, stop: &CancellationToken) -> axum::Router {
    let config = app.config().server.clone();
    let (routes, doc) = documented_routes().split_for_parts();
    let openapi = document(doc, app.config()).to_string();
    let state = ApiState {
        app: app.clone(),
        rate: Arc::new(auth::RateLimiter::new(
            config.rate_per_token,
            config.rate_burst,
        )),
        worker_expected,
        openapi: Arc::new(openapi),
        stop: stop.child_token(),
        streams: stream_slots::StreamSlots::new(server::served_connections(config.max_connections)),
        week_charts: Arc::default(),
    };
    let mcp = routes::mcp::router(&state, stop.child_token());
    // `Router::layer` wraps every route (and the fallback) by itself: a plain concurrency
    // limit would be one per route, so the bound would grow with the routes. One semaphore,
    // shared by every route's copy of the layer, makes it the server's.
    let in_flight = GlobalConcurrencyLimitLayer::new(config.max_concurrent_requests);
    routes
        .merge(mcp)
        .merge(ui::router())
        .fallback(middleware::no_route)
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(middleware::overloaded))
                .load_shed()
                .layer(in_flight)
                .timeout(Duration::from_secs(config.request_timeout_secs)),
        )
        .layer(axum::middleware::from_fn_with_state(
            config.max_body_bytes,
            middleware::refuse_large_bodies,
        ))
        .layer(axum::middleware::from_fn(middleware::observe))
        .layer(middleware::request_ids())
        .with_state(state)
}

/// Binds the configured address for `app`'s API; `None` when `server.listen` is empty.
pub async fn bind(
    app: &App,
    worker_expected: bool,
    stop: &CancellationToken,
) -> Result<Option<Listening>, ServerError> {
    let config = &app.config().server;
    if config.listen.is_empty() {
        return Ok(None);
    }
    let listening = Listening::bind(config, router(app, worker_expected, stop)).await?;
    if !app.tokens().any_usable().await.unwrap_or(true) {
        tracing::warn!(
            "no API token exists, so every /v1 call is refused: create one with \
             `nightshift token create --user USER` (or `--admin`)"
        );
    }
    Ok(Some(listening))
}
