//! `[mcp]`: the MCP servers to start, as plain data, and the checks on it
//! that need nothing but the data (names, one transport, timeouts).
//! Starting a server is `tools::mcp`'s job; this module never does I/O.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// `[mcp]`: the MCP servers to start.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// `[mcp.servers.NAME]`: one server, started as a child process speaking
/// stdio (`command`) or reached over streamable HTTP (`url`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Program to start (stdio transport).
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables for the child.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory of the child.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Streamable-HTTP endpoint, instead of `command`.
    #[serde(default)]
    pub url: Option<String>,
    /// Run every tool of this server without asking the operator.
    #[serde(default)]
    pub trusted: bool,
    /// Tools (server-side names) that run without asking.
    #[serde(default)]
    pub trusted_tools: Vec<String>,
    /// Longest wait for listing tools or one call, in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Longest wait for the server to start and finish the handshake.
    #[serde(default = "default_timeout")]
    pub startup_timeout_secs: u64,
    /// Keep this server's tools hidden until the model asks for the domain
    /// `mcp:NAME` with `request_tools`.
    #[serde(default)]
    pub hidden: bool,
}

fn default_timeout() -> u64 {
    30
}

impl McpConfig {
    /// Check names and transports; `Err((key, message))`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (name, server) in &self.servers {
            let key = format!("mcp.servers.{name}");
            let name_ok = !name.is_empty()
                && name.len() <= 32
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && !name.contains("__");
            if !name_ok {
                return Err((
                    key,
                    "server names must be 1-32 characters of A-Z, a-z, 0-9, - and _ \
                     (without `__`)"
                        .into(),
                ));
            }
            match (&server.command, &server.url) {
                (Some(c), None) if !c.trim().is_empty() => {}
                (None, Some(u)) if u.starts_with("http://") || u.starts_with("https://") => {}
                (Some(_), Some(_)) => {
                    return Err((key, "set either `command` or `url`, not both".into()));
                }
                _ => {
                    return Err((
                        key,
                        "needs `command` (stdio) or an http(s) `url` (streamable HTTP)".into(),
                    ));
                }
            }
            if server.timeout_secs == 0 || server.startup_timeout_secs == 0 {
                return Err((key, "timeouts must be at least 1 second".into()));
            }
        }
        Ok(())
    }
}
