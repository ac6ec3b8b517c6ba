//! The MCP protocol handler: what the server says it can do, tool listing and calls,
//! resources. Protocol errors are kept for what a client got wrong about the protocol (an
//! unknown tool, a bad cursor, an unknown resource); a tool that fails answers with a tool
//! result marked `isError`, so the model reads why.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode,
    Implementation, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use super::resources;
use super::tool_def::{CallError, Effect, ToolDef};
use super::tools;
use crate::app::App;
use crate::error::Error;

/// The user an HTTP request acts for, put in the request's extensions by the API's auth
/// once the request's token has been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionUser(pub String);

/// Tools per `tools/list` page: every tool fits in one, since several clients read only
/// the first page; a cursor is honoured all the same.
pub const TOOLS_PER_PAGE: usize = 32;

/// The handler: the app, the tools, and where the user comes from.
#[derive(Clone)]
pub struct McpServer {
    app: App,
    /// The stdio server's one user; `None` over HTTP, where each request names its own.
    fixed_user: Option<String>,
    tools: Arc<Vec<ToolDef>>,
    /// Calls running at once, over every session: `server.max_concurrent_requests`.
    slots: Arc<tokio::sync::Semaphore>,
}

impl McpServer {
    /// A server acting for `user` in every call (stdio).
    pub fn for_user(app: App, user: &str) -> Result<Self, Error> {
        crate::input::check_user_id(user)?;
        Ok(Self {
            fixed_user: Some(user.to_string()),
            ..Self::per_request(app)
        })
    }

    /// A server acting for each request's [`SessionUser`] (streamable HTTP).
    pub fn per_request(app: App) -> Self {
        let slots = app.config().server.max_concurrent_requests;
        Self {
            app,
            fixed_user: None,
            tools: Arc::new(tools::definitions()),
            slots: Arc::new(tokio::sync::Semaphore::new(slots)),
        }
    }

    fn user(&self, context: &RequestContext<RoleServer>) -> Result<String, McpError> {
        if let Some(user) = &self.fixed_user {
            return Ok(user.clone());
        }
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<SessionUser>())
            .map(|user| user.0.clone())
            // Unreachable behind the API's auth; refused rather than guessed if it ever is.
            .ok_or_else(|| McpError::invalid_request("the request names no user", None))
    }
}

/// The offset a cursor stands for: cursors are the decimal offset of the page's first
/// item. One past the end (the list shrank since) is an empty last page.
fn offset(request: Option<&PaginatedRequestParams>) -> Result<usize, McpError> {
    match request.and_then(|r| r.cursor.as_deref()) {
        None => Ok(0),
        Some(cursor) => cursor.parse::<usize>().map_err(|_| {
            McpError::invalid_params(
                format!("invalid cursor {:?}", crate::input::printable(cursor)),
                None,
            )
        }),
    }
}

/// A page of `items` from `at`, and the cursor of the next page, if any.
pub(super) fn page<T: Clone>(items: &[T], at: usize, per_page: usize) -> (Vec<T>, Option<String>) {
    let end = at.saturating_add(per_page).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    (items[at.min(end)..end].to_vec(), next)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new("nightshift", env!("CARGO_PKG_VERSION")).with_title("nightshift"),
        )
        .with_instructions(
            "nightshift is this user's long-term memory and scheduler. Search memory before \
             answering from assumptions (memory_search); save durable facts, preferences and \
             decisions (memory_save); schedule goals that should run later or repeatedly \
             (schedule_add).",
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let at = offset(request.as_ref())?;
        let all: Vec<Tool> = self.tools.iter().map(ToolDef::tool).collect();
        let (tools, next_cursor) = page(&all, at, TOOLS_PER_PAGE);
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next_cursor;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools
            .iter()
            .find(|t| t.name == name)
            .map(ToolDef::tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let user = self.user(&context)?;
        let name = request.name.to_string();
        let Some(tool) = self.tools.iter().find(|t| t.name == name) else {
            return Err(McpError::invalid_params(
                format!("unknown tool {name:?}; tools/list names the tools"),
                None,
            ));
        };
        let started = Instant::now();
        // The HTTP limits end when a streamed answer starts, before the tool runs: the
        // calls themselves are bounded here, in number and in time, as requests are.
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            crate::telemetry::mcp_tool_call(&name, "shed", started.elapsed());
            return Ok(refused(
                "the server is at capacity (server.max_concurrent_requests); try again",
            )
            .into());
        };
        // A write runs as background work: once started it finishes whole even if the
        // client cancels or the call runs out of time, and the process waits for it on its
        // way out. A read is dropped when nobody waits for it any more.
        let writes = tool.effect != Effect::Reads;
        let app = self.app.clone();
        let limit = Duration::from_secs(self.app.config().server.request_timeout_secs);
        // A call that waits (a trigger's run) stops a second before its answer would be
        // given up on, so its answer is the run, not a time-out.
        let answer_by = tokio::time::Instant::now() + limit.saturating_sub(Duration::from_secs(1));
        let call = super::start_tools::CallContext::of(&context, answer_by);
        let op = {
            let name = name.clone();
            async move {
                let result = tools::call(&app, &user, &name, request.arguments, &call).await;
                drop(slot);
                result
            }
        };
        let mut task = if writes {
            self.app.background().spawn(op)
        } else {
            tokio::spawn(op)
        };
        let outcome = tokio::select! {
            joined = &mut task => joined,
            _ = context.ct.cancelled() => {
                // rmcp drops whatever answer a cancelled request would get.
                if !writes {
                    task.abort();
                }
                crate::telemetry::mcp_tool_call(&name, "cancelled", started.elapsed());
                return Err(McpError::new(ErrorCode::INTERNAL_ERROR, "the call was cancelled", None));
            }
            _ = tokio::time::sleep(limit) => {
                if !writes {
                    task.abort();
                }
                crate::telemetry::mcp_tool_call(&name, "timeout", started.elapsed());
                let what = if writes {
                    "; the change it started will still be made whole or not at all"
                } else {
                    ""
                };
                return Ok(refused(&format!(
                    "the call took longer than server.request_timeout_secs ({}s){what}",
                    limit.as_secs()
                ))
                .into());
            }
        };
        let result = match outcome {
            Ok(Ok(result)) => result,
            Ok(Err(CallError::Failed(err))) => refused(&crate::input::printable(&err.to_string())),
            Ok(Err(CallError::UnknownTool(tool))) => {
                return Err(McpError::invalid_params(
                    format!("unknown tool {tool:?}"),
                    None,
                ));
            }
            Err(fault) => {
                tracing::error!(tool = %name, error = %fault, "an MCP tool call failed");
                refused("internal error: the call failed; the server's log has the cause")
            }
        };
        let outcome = if result.is_error == Some(true) {
            "error"
        } else {
            "ok"
        };
        crate::telemetry::mcp_tool_call(&name, outcome, started.elapsed());
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let user = self.user(&context)?;
        let all = resources::list(&self.app, &user).await.map_err(internal)?;
        let at = offset(request.as_ref())?;
        let (items, next_cursor) = page(&all, at, resources::PER_PAGE);
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next_cursor;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let user = self.user(&context)?;
        Ok(resources::read(&self.app, &user, &request.uri)
            .await?
            .into())
    }
}

/// A tool result the model reads as a failure.
fn refused(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A failure the client did not cause (the database away): a protocol error, since a
/// listing has no `isError` result to carry it.
fn internal(err: Error) -> McpError {
    McpError::internal_error(crate::input::printable(&err.to_string()).into_owned(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_every_item_once_whatever_the_cursor() {
        let items: Vec<u32> = (0..15).collect();
        for per_page in 1..=20 {
            let (mut seen, mut at) = (Vec::new(), 0);
            loop {
                let (chunk, next) = page(&items, at, per_page);
                seen.extend(chunk);
                match next {
                    Some(cursor) => at = cursor.parse().unwrap(),
                    None => break,
                }
            }
            assert_eq!(seen, items, "{per_page} a page");
        }
        assert_eq!(page(&items, usize::MAX, 8), (vec![], None));
        assert_eq!(page(&items, 15, 8), (vec![], None));
    }

    #[test]
    fn cursors_are_offsets_and_nothing_else() {
        let with = |c: &str| Some(PaginatedRequestParams::default().with_cursor(Some(c.into())));
        assert_eq!(offset(None).unwrap(), 0);
        assert_eq!(offset(with("8").as_ref()).unwrap(), 8);
        for bad in ["", "-1", "x", "8 ", "99999999999999999999999", "\u{0}"] {
            assert!(offset(with(bad).as_ref()).is_err(), "{bad:?}");
        }
    }
}
