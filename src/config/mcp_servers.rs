//! `[mcp_servers.NAME]`: MCP servers whose tools a run's model may call (see
//! `crate::mcp_client`), started as a child process over stdio (`command`, `args`, `env`)
//! or reached over streamable HTTP (`url`, `bearer_token_file`). Secrets are never written
//! here: an `env` value names the environment variable or the file that holds it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::input;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct McpServerConfig {
    /// stdio: the program to start (found on PATH, or a path).
    pub command: Option<String>,
    pub args: Vec<String>,
    /// stdio: the child's environment besides PATH and HOME, each value read from an
    /// environment variable of the worker or a file, never from this file.
    pub env: BTreeMap<String, SecretSource>,
    /// Streamable HTTP: the server's endpoint.
    pub url: Option<String>,
    /// Streamable HTTP: a file holding the bearer token sent to the server.
    pub bearer_token_file: Option<String>,
    /// Longest one tool call may take; past it the model is told the call timed out.
    pub call_timeout_secs: u64,
    /// Longest result the model is shown, in bytes; the rest is cut with a note.
    pub max_result_bytes: usize,
    /// Most of the server's tools offered to the model (in the order it lists them).
    pub max_tools: usize,
    /// Which of its tools' calls need a person's approval, whatever schedule runs them:
    /// patterns over its own tool names (`write_*`, no `NAME__`), `*` for any run of
    /// characters, `!` to take calls away (see `mcp_client::ApproveFilter`). None: only
    /// a schedule's own `approve` patterns choose.
    pub approve: Vec<String>,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            url: None,
            bearer_token_file: None,
            call_timeout_secs: 30,
            max_result_bytes: 64 * 1024,
            max_tools: 128,
            approve: Vec::new(),
        }
    }
}

/// Where a secret value comes from: exactly one of an environment variable or a file.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SecretSource {
    /// An environment variable of the worker.
    pub env: Option<String>,
    /// A file whose content (less one trailing line break) is the value.
    pub file: Option<String>,
}

impl SecretSource {
    /// The value, read now; `Err` names what is missing, never the value.
    pub fn read(&self) -> Result<String, String> {
        match (&self.env, &self.file) {
            (Some(var), None) => {
                std::env::var(var).map_err(|_| format!("environment variable `{var}` is not set"))
            }
            (None, Some(path)) => std::fs::read_to_string(path)
                .map(|text| text.strip_suffix('\n').unwrap_or(&text).to_string())
                .map_err(|e| format!("cannot read `{path}`: {e}")),
            _ => Err("give env or file".to_string()),
        }
    }
}

/// Longest server name: its tools are offered as `NAME__tool`, and a function name may
/// have at most 64 characters.
pub const MAX_SERVER_NAME: usize = 24;

/// Whether `name` can name a server: letters, digits, `-` and single `_`, so that
/// `NAME__tool` splits back at its first `__`.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !name.contains("__")
        && !name.ends_with('_')
}

pub(super) fn validate(
    servers: &BTreeMap<String, McpServerConfig>,
    http_url: impl Fn(&str, &str) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    let invalid = |key: String, reason: &str| {
        Err(ConfigError::Invalid {
            key,
            reason: reason.to_string(),
        })
    };
    for (name, server) in servers {
        let key = format!("mcp_servers.{}", input::printable(name));
        if !valid_server_name(name) {
            return invalid(
                key,
                "a server name has 1 to 24 letters, digits, `-` or `_`, no `__`, and does not end in `_`",
            );
        }
        match (&server.command, &server.url) {
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return invalid(format!("{key}.command"), "must not be empty");
                }
                if server.bearer_token_file.is_some() {
                    return invalid(
                        format!("{key}.bearer_token_file"),
                        "applies to a server reached by url",
                    );
                }
            }
            (None, Some(url)) => {
                http_url(&format!("{key}.url"), url)?;
                if !server.args.is_empty() || !server.env.is_empty() {
                    return invalid(
                        format!("{key}.args"),
                        "args and env apply to a server started with command",
                    );
                }
            }
            _ => {
                return invalid(
                    key,
                    "give command (stdio) or url (streamable HTTP), one of them",
                )
            }
        }
        for (var, source) in &server.env {
            let var_key = format!("{key}.env.{}", input::printable(var));
            if var.is_empty() || var.contains('=') || var.contains('\0') {
                return invalid(var_key, "not a name for an environment variable");
            }
            if source.env.is_some() == source.file.is_some() {
                return invalid(var_key, "give env (a variable's name) or file, one of them");
            }
        }
        if !(1..=3600).contains(&server.call_timeout_secs) {
            return invalid(format!("{key}.call_timeout_secs"), "must be from 1 to 3600");
        }
        if !(256..=16 * 1024 * 1024).contains(&server.max_result_bytes) {
            return invalid(
                format!("{key}.max_result_bytes"),
                "must be from 256 to 16777216",
            );
        }
        if !(1..=1024).contains(&server.max_tools) {
            return invalid(format!("{key}.max_tools"), "must be from 1 to 1024");
        }
        if let Err(reason) = crate::mcp_client::check_patterns(&server.approve) {
            return invalid(format!("{key}.approve"), &reason);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_servers_approve_patterns_are_checked_naming_the_key() {
        let servers = |approve: Vec<String>| {
            BTreeMap::from([(
                "files".to_string(),
                McpServerConfig {
                    command: Some("mcp-files".into()),
                    approve,
                    ..Default::default()
                },
            )])
        };
        let no_urls = |_: &str, _: &str| Ok(());
        let good = servers(vec!["write_*".into(), "!write_draft".into()]);
        assert!(validate(&good, no_urls).is_ok());
        for bad in [
            vec!["files/*".to_string()],
            vec!["!".into()],
            vec!["x".into(); 65],
        ] {
            match validate(&servers(bad.clone()), no_urls) {
                Err(ConfigError::Invalid { key, .. }) => {
                    assert_eq!(key, "mcp_servers.files.approve", "{bad:?}")
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    proptest! {
        /// A valid name never holds `__`, so `NAME__tool` splits back into the name.
        #[test]
        fn a_valid_name_splits_back(name in "[a-zA-Z0-9_-]{0,30}", tool in "[a-z_]{1,10}") {
            if valid_server_name(&name) {
                let offered = format!("{name}__{tool}");
                let (server, rest) = offered.split_once("__").unwrap();
                prop_assert_eq!(server, name.as_str());
                prop_assert_eq!(rest, tool.as_str());
            }
        }
    }
}
