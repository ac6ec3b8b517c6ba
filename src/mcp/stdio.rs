//! `nightshift mcp --user U`: the MCP server on stdin and stdout, for an agent that spawns
//! it as a child process. Stdout carries protocol messages only: logs go to stderr, and a
//! failure is a tool result or a protocol error, never text on stdout.

use std::future::Future;

use rmcp::ServiceExt;

use super::handler::McpServer;
use crate::app::App;
use crate::error::{Error, ErrorKind};

/// Serves `user` on stdio until the client closes stdin or `shutdown` completes.
pub async fn serve(app: &App, user: &str, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
    let server = McpServer::for_user(app.clone(), user)?;
    let running = server
        .serve(rmcp::transport::io::stdio_pipes())
        .await
        .map_err(|e| {
            Error::new(
                ErrorKind::Unavailable,
                format!("MCP initialization failed: {e}"),
            )
        })?;
    let stop = running.cancellation_token();
    let quit = tokio::select! {
        quit = running.waiting() => Some(quit),
        () = shutdown => {
            stop.cancel();
            None
        }
    };
    // Writes whose calls were cancelled finish before the process goes.
    let grace = std::time::Duration::from_secs(app.config().scheduler.shutdown_grace_secs as u64);
    app.finish_background(grace).await;
    let Some(quit) = quit else {
        return Ok(());
    };
    match quit {
        Ok(reason) => {
            tracing::debug!(?reason, "the MCP client went away");
            Ok(())
        }
        Err(fault) => Err(Error::new(
            ErrorKind::Internal,
            format!("the MCP session failed: {fault}"),
        )),
    }
}
