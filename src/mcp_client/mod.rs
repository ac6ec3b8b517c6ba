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

    /// Whether a call of the tool `name` (as the model sees it: `server__tool`, or a
    /// built-in's name) needs a person's approval: the schedule's `approve` patterns
    /// (`schedule_patterns`) choose it, or `name` is `server__tool` of a configured server
    /// whose own `approve` patterns choose `tool`. A schedule's `!` patterns take away
    /// only what its own patterns chose, never what a server's choose.
    pub fn needs_approval(&self, name: &str, schedule_patterns: &[String]) -> bool {
        if ApproveFilter::new(schedule_patterns).needs(name) {
            return true;
        }
        name.split_once(SEPARATOR)
            .and_then(|(server, tool)| Some((self.servers.get(server)?, tool)))
            .is_some_and(|(server, tool)| ApproveFilter::new(&server.config.approve).needs(tool))
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

/// Which tool calls need a person's approval: patterns over tool names with `*` for any
/// run of characters; a call needs approval when a plain pattern matches its name and no
/// pattern starting with `!` does. No plain pattern (none at all): no call needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ApproveFilter<'a> {
    patterns: &'a [String],
}

impl<'a> ApproveFilter<'a> {
    pub fn new(patterns: &'a [String]) -> Self {
        Self { patterns }
    }

    pub fn needs(&self, name: &str) -> bool {
        let matches = |negated: bool| {
            self.patterns.iter().any(|p| match p.strip_prefix('!') {
                Some(body) => negated && glob(body, name),
                None => !negated && glob(p, name),
            })
        };
        matches(false) && !matches(true)
    }
}

/// Most patterns one list may hold (a schedule's `tools` or `approve`, a server's
/// `approve`).
pub const MAX_PATTERNS: usize = 64;

/// Longest pattern, `!` aside, in bytes.
pub const MAX_PATTERN_BYTES: usize = 128;

/// Checks a list of tool patterns (`tools`, `approve`): at most [`MAX_PATTERNS`], each
/// letters, digits, `_`, `-` and `*` (up to [`MAX_PATTERN_BYTES`]) after an optional `!`.
/// `Err` says what is wrong, for an error naming the field.
pub fn check_patterns(patterns: &[String]) -> Result<(), String> {
    if patterns.len() > MAX_PATTERNS {
        return Err(format!("at most {MAX_PATTERNS} patterns"));
    }
    for pattern in patterns {
        let body = pattern.strip_prefix('!').unwrap_or(pattern);
        let fits = !body.is_empty()
            && body.len() <= MAX_PATTERN_BYTES
            && body
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*'));
        if !fits {
            return Err(format!(
                "`{}` is not a tool pattern: letters, digits, `_`, `-` and `*` (up to \
                 {MAX_PATTERN_BYTES}), after an optional `!`",
                crate::input::printable(pattern)
            ));
        }
    }
    Ok(())
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

    fn strings(patterns: &[&str]) -> Vec<String> {
        patterns.iter().map(|p| p.to_string()).collect()
    }

    /// Servers `a` and `b`; `a` asks approval for `a_patterns`, `b` for nothing.
    fn two_servers(a_patterns: Vec<String>) -> McpTools {
        let mut config = Config::default();
        for (name, approve) in [("a", a_patterns), ("b", Vec::new())] {
            config.mcp_servers.insert(
                name.into(),
                crate::config::McpServerConfig {
                    command: Some("true".into()),
                    approve,
                    ..Default::default()
                },
            );
        }
        McpTools::from_config(&config)
    }

    /// A pattern as the checks accept it: `*`s among a few letters, maybe after `!`.
    fn pattern() -> impl Strategy<Value = String> {
        ("!?", "[ab*_]{1,6}").prop_map(|(not, body)| format!("{not}{body}"))
    }

    proptest! {
        /// A call a matching `!` pattern takes away never needs approval, whatever else
        /// the patterns say.
        #[test]
        fn a_negated_pattern_always_wins(
            patterns in prop::collection::vec(pattern(), 0..6),
            name in "[ab_]{0,8}",
        ) {
            let negated = patterns
                .iter()
                .any(|p| p.strip_prefix('!').is_some_and(|body| glob(body, &name)));
            if negated {
                prop_assert!(!ApproveFilter::new(&patterns).needs(&name));
            }
            let plain = patterns.iter().any(|p| !p.starts_with('!') && glob(p, &name));
            prop_assert_eq!(ApproveFilter::new(&patterns).needs(&name), plain && !negated);
        }

        /// No patterns, or `!` ones alone, choose no call.
        #[test]
        fn no_plain_pattern_approves_nothing(
            bodies in prop::collection::vec("[ab*_]{1,6}", 0..6),
            name in "[ab_]{0,8}",
        ) {
            prop_assert!(!ApproveFilter::new(&[]).needs(&name));
            let negated: Vec<String> = bodies.iter().map(|b| format!("!{b}")).collect();
            prop_assert!(!ApproveFilter::new(&negated).needs(&name));
        }

        /// A server's patterns choose among its own tools only: never another server's
        /// tool, nor a built-in's, and its `NAME__` is not part of what they match.
        #[test]
        fn a_servers_patterns_choose_only_its_own_tools(
            patterns in prop::collection::vec(pattern(), 0..6),
            tool in "[ab_]{1,8}",
        ) {
            let tools = two_servers(patterns.clone());
            let [own, other, unknown] = ["a", "b", "c"].map(|s| format!("{s}{SEPARATOR}{tool}"));
            prop_assert!(!tools.needs_approval(&other, &[]));
            prop_assert!(!tools.needs_approval(&unknown, &[]));
            if !tool.contains(SEPARATOR) {
                prop_assert!(!tools.needs_approval(&tool, &[]));
            }
            prop_assert_eq!(
                tools.needs_approval(&own, &[]),
                ApproveFilter::new(&patterns).needs(&tool)
            );
        }
    }

    #[test]
    fn approval_is_chosen_by_plain_patterns_less_negated_ones() {
        let patterns = strings(&["files__write_*", "memory_delete", "!files__write_draft"]);
        let filter = ApproveFilter::new(&patterns);
        assert!(filter.needs("files__write_file"));
        assert!(filter.needs("memory_delete"));
        assert!(!filter.needs("files__write_draft"));
        assert!(!filter.needs("files__read_file"));
        assert!(!filter.needs("schedule_follow_up"));
        assert!(!ApproveFilter::default().needs("anything"));
        assert!(!ApproveFilter::new(&strings(&["!files__*"])).needs("web__fetch"));
    }

    #[test]
    fn a_call_needs_approval_when_the_schedule_or_its_server_says_so() {
        let tools = two_servers(strings(&["write_*", "delete_*", "!delete_draft"]));
        // The server's patterns, over its own tool names.
        assert!(tools.needs_approval("a__write_file", &[]));
        assert!(tools.needs_approval("a__delete_all", &[]));
        assert!(!tools.needs_approval("a__delete_draft", &[]));
        assert!(!tools.needs_approval("a__read_file", &[]));
        assert!(!tools.needs_approval("b__write_file", &[]));
        assert!(!tools.needs_approval("write_file", &[]));
        // The schedule's, over the names the model sees, built-ins included.
        let schedule = strings(&["b__*", "memory_delete", "!b__read_*"]);
        assert!(tools.needs_approval("b__write_file", &schedule));
        assert!(!tools.needs_approval("b__read_file", &schedule));
        assert!(tools.needs_approval("memory_delete", &schedule));
        assert!(!tools.needs_approval("schedule_follow_up", &schedule));
        // A schedule's `!` does not take away what the server chose.
        assert!(tools.needs_approval("a__write_file", &strings(&["!a__*"])));
        assert!(tools.needs_approval("a__write_file", &strings(&["*", "!a__write_file"])));
    }

    #[test]
    fn patterns_are_checked() {
        assert!(check_patterns(&strings(&["files__*", "!write-*", "memory_delete"])).is_ok());
        for bad in [&["files/*"][..], &["!"], &[""], &["a b"], &["!!a"]] {
            let reason = check_patterns(&strings(bad)).unwrap_err();
            assert!(reason.contains("not a tool pattern"), "{bad:?}: {reason}");
        }
        assert!(check_patterns(&["x".repeat(MAX_PATTERN_BYTES)]).is_ok());
        assert!(check_patterns(&["x".repeat(MAX_PATTERN_BYTES + 1)]).is_err());
        assert!(check_patterns(&vec!["x".to_string(); MAX_PATTERNS]).is_ok());
        let many = check_patterns(&vec!["x".to_string(); MAX_PATTERNS + 1]).unwrap_err();
        assert!(many.contains("at most 64"), "{many}");
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
