//! An MCP client (rmcp's own) of the real API router's streamable HTTP transport.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use super::api::TestApi;

pub type Client = RunningService<RoleClient, ()>;

/// A session of `token`'s at the API's `/mcp`.
pub async fn connect(api: &TestApi, token: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", api.base))
        .auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("initialize over streamable HTTP")
}

/// Calls `tool` with `arguments` (an object); a protocol error fails the test.
pub async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// The text a result gives a model.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
