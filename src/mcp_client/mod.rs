//! Tools from MCP servers for the built-in tool loop: each `[mcp_servers.NAME]` a user is
//! granted (`[users.X] mcp_servers`) offers its tools to the model as `NAME__tool`, with
//! their input schemas. Servers start on first use and are kept by the worker
//! ([`server`]); a call runs within the server's timeout and its result is cut to the
//! server's `max_result_bytes` ([`result`]). A server that is down fails the call with a
//! reason the model reads, never the run or the worker.

mod result;
mod server;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::config::Config;
use server::Server;

/// The separator between a server's name and its tool's in the name the model sees.
pub const SEPARATOR: &str = "__";

/// Every configured MCP server and who may use which.
#[derive(Clone, Default)]
pub struct McpTools {
    servers: Arc<BTreeMap<String, Arc<Server>>>,
    /// Server names by user; `*` grants every server.
    grants: Arc<BTreeMap<String, Vec<String>>>,
}

/// The tools one run is offered: the model's function definitions, and why a granted
/// server offers none (it could not be started).
#[derive(Debug, Default)]
pub struct Offered {
    pub definitions: Vec<Value>,
    pub names: Vec<String>,
    pub unavailable: Vec<String>,
}

impl McpTools {
    pub fn from_config(config: &Config) -> Self {
        let servers = config
            .mcp_servers
            .iter()
            .map(|(name, server)| {
                (
                    name.clone(),
                    Arc::new(Server::new(name.clone(), server.clone())),
                )
            })
            .collect();
        let grants = config
            .users
            .iter()
            .filter(|(_, user)| !user.mcp_servers.is_empty())
            .map(|(id, user)| (id.clone(), user.mcp_servers.clone()))
            .collect();
        Self {
            servers: Arc::new(servers),
            grants: Arc::new(grants),
        }
    }

    /// The servers `user` may use, by name.
    fn granted(&self, user: &str) -> Vec<&Arc<Server>> {
        let Some(names) = self.grants.get(user) else {
            return Vec::new();
        };
        if names.iter().any(|n| n == "*") {
            return self.servers.values().collect();
        }
        names.iter().filter_map(|n| self.servers.get(n)).collect()
    }

    /// The tools of every server `user` may use that `allowed` lets through, as the
    /// model's function definitions. Servers are started here if need be.
    pub async fn offered(&self, user: &str, allowed: &ToolFilter) -> Offered {
        let mut offered = Offered::default();
        for server in self.granted(user) {
            let tools = match server.connected().await {
                Ok((_, tools)) => tools,
                Err(reason) => {
                    offered.unavailable.push(reason);
                    continue;
                }
            };
            for tool in tools.iter() {
                let name = format!("{}{SEPARATOR}{}", server.name, tool.name);
                if !function_name(&name) || !allowed.allows(&name) {
                    continue;
                }
                offered
                    .definitions
                    .push(json!({"type": "function", "function": {
                        "name": name,
                        "description": tool.description.as_deref().unwrap_or_default(),
                        "parameters": Value::Object((*tool.input_schema).clone()),
                    }}));
                offered.names.push(name);
            }
        }
        offered
    }

    /// TEMPORARY until the approve-patterns branch lands: the schedule's patterns only.
    pub fn needs_approval(&self, name: &str, schedule_patterns: &[String]) -> bool {
        let (deny, allow): (Vec<&String>, Vec<&String>) =
            schedule_patterns.iter().partition(|p| p.starts_with('!'));
        allow.iter().any(|p| glob(p, name)) && !deny.iter().any(|p| glob(&p[1..], name))
    }

    /// Whether `name` is an MCP tool's (`server__tool` of a configured server).
    pub fn owns(&self, name: &str) -> bool {
        name.split_once(SEPARATOR)
            .is_some_and(|(server, _)| self.servers.contains_key(server))
    }

    /// Calls the offered tool `name` for `user` with `arguments` (JSON text); the
    /// result, or the error, as JSON for the model.
    pub async fn call(&self, user: &str, offered: &Offered, name: &str, arguments: &str) -> String {
        let outcome = async {
            if !offered.names.iter().any(|n| n == name) {
                return Err(format!("unknown tool `{name}`"));
            }
            let (server_name, tool) = name
                .split_once(SEPARATOR)
                .ok_or_else(|| format!("unknown tool `{name}`"))?;
            let server = self
                .granted(user)
                .into_iter()
                .find(|s| s.name == server_name)
                .ok_or_else(|| format!("unknown tool `{name}`"))?;
            let arguments = match serde_json::from_str::<Value>(arguments) {
                Ok(Value::Object(map)) => map,
                Ok(_) => return Err("arguments must be a JSON object".to_string()),
                Err(e) => return Err(format!("arguments are not JSON: {e}")),
            };
            let result = server.call(tool, arguments).await?;
            Ok(result::for_model(&result, server.config.max_result_bytes))
        }
        .await;
        match outcome {
            Ok(value) => value.to_string(),
            Err(error) => json!({ "error": error }).to_string(),
        }
    }
}

/// A function name the OpenAI API accepts: 1 to 64 of letters, digits, `_` and `-`.
fn function_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Which tools a schedule lets its runs use: patterns over `server__tool` names with `*`
/// for any run of characters (`files__*`); a pattern starting with `!` takes tools away.
/// No patterns: every granted tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolFilter {
    patterns: Vec<String>,
}

impl ToolFilter {
    pub fn new(patterns: Vec<String>) -> Self {
        Self { patterns }
    }

    pub fn allows(&self, name: &str) -> bool {
        let (deny, allow): (Vec<&String>, Vec<&String>) =
            self.patterns.iter().partition(|p| p.starts_with('!'));
        let allowed = allow.is_empty() || allow.iter().any(|p| glob(p, name));
        allowed && !deny.iter().any(|p| glob(&p[1..], name))
    }
}

/// Whether `pattern` (`*` for any run of characters, everything else literal) matches
/// all of `text`.
pub fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain definition of a glob match: `*` matches any run of characters.
    fn reference(pattern: &[char], text: &[char]) -> bool {
        match pattern.split_first() {
            None => text.is_empty(),
            Some(('*', rest)) => (0..=text.len()).any(|i| reference(rest, &text[i..])),
            Some((c, rest)) => text.first() == Some(c) && reference(rest, &text[1..]),
        }
    }

    proptest! {
        #[test]
        fn glob_matches_as_its_definition(pattern in "[ab*_]{0,8}", text in "[ab_]{0,10}") {
            let p: Vec<char> = pattern.chars().collect();
            let t: Vec<char> = text.chars().collect();
            prop_assert_eq!(glob(&pattern, &text), reference(&p, &t));
        }
    }

    #[test]
    fn a_filter_allows_then_denies() {
        let filter = ToolFilter::new(vec!["files__*".into(), "!files__write_*".into()]);
        assert!(filter.allows("files__read_file"));
        assert!(!filter.allows("files__write_file"));
        assert!(!filter.allows("web__fetch"));
        let deny_only = ToolFilter::new(vec!["!web__*".into()]);
        assert!(deny_only.allows("files__read_file"));
        assert!(!deny_only.allows("web__fetch"));
        assert!(ToolFilter::default().allows("anything"));
    }
}
