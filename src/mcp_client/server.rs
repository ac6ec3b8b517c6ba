//! One configured MCP server as a worker keeps it: started (or connected) on first use,
//! its tool list read once per connection, and after a failure left alone for a backoff
//! that doubles up to a minute, so a server that is down costs a run one clear tool error,
//! not a restart storm.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::config::McpServerConfig;

type Client = RunningService<RoleClient, ()>;

/// Longest wait before a failed server is tried again.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

pub(super) struct Server {
    pub name: String,
    pub config: McpServerConfig,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    client: Option<Arc<Client>>,
    tools: Arc<Vec<Tool>>,
    failures: u32,
    retry_at: Option<Instant>,
    last_error: String,
}

impl Server {
    pub fn new(name: String, config: McpServerConfig) -> Self {
        Self {
            name,
            config,
            state: Mutex::default(),
        }
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.config.call_timeout_secs)
    }

    /// The live connection and its tools, starting the server when there is none (unless
    /// it failed and its backoff has not run out). `Err` says why, naming the server.
    pub async fn connected(&self) -> Result<(Arc<Client>, Arc<Vec<Tool>>), String> {
        let mut state = self.state.lock().await;
        if let Some(client) = state.client.as_ref().filter(|c| !c.is_closed()) {
            return Ok((client.clone(), state.tools.clone()));
        }
        if let Some(at) = state.retry_at.filter(|at| Instant::now() < *at) {
            return Err(format!(
                "MCP server `{}` is down ({}); it is tried again in {}s",
                self.name,
                state.last_error,
                at.saturating_duration_since(Instant::now())
                    .as_secs()
                    .max(1)
            ));
        }
        let started = tokio::time::timeout(self.timeout(), self.start()).await;
        let outcome = match started {
            Ok(Ok((client, tools))) => Ok((Arc::new(client), Arc::new(tools))),
            Ok(Err(reason)) => Err(reason),
            Err(_) => Err(format!(
                "did not finish starting within {}s (call_timeout_secs)",
                self.config.call_timeout_secs
            )),
        };
        match outcome {
            Ok((client, tools)) => {
                tracing::info!(server = %self.name, tools = tools.len(), "MCP server connected");
                *state = State {
                    client: Some(client.clone()),
                    tools: tools.clone(),
                    ..State::default()
                };
                Ok((client, tools))
            }
            Err(reason) => {
                Self::failed(&mut state, &reason);
                tracing::warn!(server = %self.name, %reason, "MCP server cannot be used");
                Err(format!(
                    "MCP server `{}` cannot be used: {reason}",
                    self.name
                ))
            }
        }
    }

    fn failed(state: &mut State, reason: &str) {
        state.client = None;
        state.failures = state.failures.saturating_add(1);
        let backoff = Duration::from_secs(1u64 << state.failures.min(6)).min(MAX_BACKOFF);
        state.retry_at = Some(Instant::now() + backoff);
        state.last_error = reason.to_string();
    }

    /// Drops `client` after a transport failure (the next use starts the server again,
    /// after the backoff).
    async fn broken(&self, client: &Arc<Client>, reason: &str) {
        let mut state = self.state.lock().await;
        if state
            .client
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, client))
        {
            Self::failed(&mut state, reason);
        }
    }

    /// Starts the process, or connects, and reads the tool list (at most `max_tools`).
    async fn start(&self) -> Result<(Client, Vec<Tool>), String> {
        let client = match (&self.config.command, &self.config.url) {
            (Some(command), _) => {
                let mut child = tokio::process::Command::new(command);
                child.args(&self.config.args);
                // The worker's own secrets stay with it: the server gets a plain
                // environment and the values its configuration names.
                child.env_clear();
                for var in ["PATH", "HOME", "LANG", "TMPDIR"] {
                    if let Some(value) = std::env::var_os(var) {
                        child.env(var, value);
                    }
                }
                for (var, source) in &self.config.env {
                    let value = source.read().map_err(|e| format!("env `{var}`: {e}"))?;
                    child.env(var, value);
                }
                let (transport, _) = TokioChildProcess::builder(child)
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                ().serve(transport)
                    .await
                    .map_err(|e| format!("did not initialize: {e}"))?
            }
            (None, Some(url)) => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(file) = &self.config.bearer_token_file {
                    let token = crate::config::SecretSource {
                        env: None,
                        file: Some(file.clone()),
                    }
                    .read()
                    .map_err(|e| format!("bearer_token_file: {e}"))?;
                    config = config.auth_header(token);
                }
                ().serve(StreamableHttpClientTransport::from_config(config))
                    .await
                    .map_err(|e| format!("did not initialize at {url}: {e}"))?
            }
            (None, None) => return Err("neither command nor url is configured".to_string()),
        };
        let mut tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("cannot list its tools: {e}"))?;
        if tools.len() > self.config.max_tools {
            tracing::warn!(server = %self.name, listed = tools.len(), kept = self.config.max_tools,
                "MCP server lists more tools than max_tools; the rest are not offered");
            tools.truncate(self.config.max_tools);
        }
        Ok((client, tools))
    }

    /// Calls `tool` with `arguments` within the call timeout. `Err` is the reason the
    /// model is told.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, String> {
        let (client, _) = self.connected().await?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        match tokio::time::timeout(self.timeout(), client.call_tool(params)).await {
            Err(_) => Err(format!(
                "`{}__{tool}` gave no answer within {}s (call_timeout_secs)",
                self.name, self.config.call_timeout_secs
            )),
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ServiceError::McpError(error))) => Err(format!(
                "MCP server `{}` refused the call: {}",
                self.name, error.message
            )),
            Ok(Err(error)) => {
                let reason = error.to_string();
                self.broken(&client, &reason).await;
                Err(format!("MCP server `{}` failed: {reason}", self.name))
            }
        }
    }
}
