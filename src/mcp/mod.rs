//! The MCP server: nightshift's memory and schedule operations as Model Context Protocol
//! tools and resources, for any MCP-speaking agent. One handler serves both transports:
//! stdio (`nightshift mcp --user U`, one user for the process) and streamable HTTP at
//! `/mcp` on the API's server (each request acts for the user its token names; the API's
//! auth puts a [`SessionUser`] on the request). Like the CLI and the REST routes, a thin
//! door: the operations, their validation and ownership checks are the library's.

mod approval_tools;
mod handler;
mod resources;
mod run_tools;
mod schema;
mod search_in;
mod start_tools;
mod state_tools;
pub mod stdio;
pub mod tool_def;
pub mod tools;
mod version_tools;

pub use handler::{McpServer, SessionUser, TOOLS_PER_PAGE};

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::app::App;

/// The streamable HTTP transport on `app`: sessions kept in this process, ended by
/// `DELETE` or by `stop` (the server's shutdown, which also closes open event streams).
/// Requests must carry a [`SessionUser`] in their extensions (the API's auth adds it).
pub fn http_service(
    app: &App,
    stop: CancellationToken,
) -> StreamableHttpService<McpServer, LocalSessionManager> {
    let server = McpServer::per_request(app.clone());
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop)
        .with_max_request_body_bytes(app.config().server.max_body_bytes)
        // Host validation guards unauthenticated local servers against DNS rebinding;
        // here every request carries a bearer token a rebinding page cannot have, and
        // the server may be reached by any name the operator gives it.
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
