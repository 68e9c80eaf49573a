//! MCP servers as tools: the `[mcp.servers.NAME]` configuration, the state a
//! server is in, and starting every configured server into [`McpTool`]s that
//! join the registry like any built-in.
//!
//! Every MCP tool goes through the registry's single path (validation,
//! approval, envelope, failure classes, suppression); nothing here bypasses
//! it. A server that cannot start, crashes or stops answering becomes an
//! error result and a state report, never a hang: every wait is bounded by
//! the server's `timeout_secs`. Names sent to the model are
//! `SERVER__tool` (OpenAI function names allow only `[A-Za-z0-9_-]`, so
//! `SERVER.tool` would be refused by the API).

pub mod client;
pub mod tool;

use std::sync::Arc;

pub use client::{McpError, McpServer};
pub use tool::McpTool;
pub use vigil_config::mcp::{McpConfig, McpServerConfig};

/// The lazy-visibility domain of a server's tools.
pub fn domain_of(server: &str) -> String {
    format!("mcp:{server}")
}

/// The name the model sees for `tool` of `server`: `server__tool`, with
/// characters OpenAI refuses replaced by `_`, at most 64 characters.
pub fn namespaced(server: &str, tool: &str) -> String {
    let raw = format!("{server}__{tool}");
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

use vigil_protocol::tool::McpState;

/// Receives `(server, state, tool count)` reports.
pub type StateSink = Arc<dyn Fn(&str, McpState, usize) + Send + Sync>;

/// One configured server after start-up: its handle, and its tools or why
/// it has none.
pub struct Started {
    pub server: Arc<McpServer>,
    pub tools: Result<Vec<McpTool>, McpError>,
}

/// Start every configured server concurrently (each bounded by its own
/// timeout) and list its tools.
pub async fn start_all(config: &McpConfig, sink: Option<StateSink>) -> Vec<Started> {
    let starts = config.servers.iter().map(|(name, cfg)| {
        let server = Arc::new(McpServer::new(name, cfg.clone(), sink.clone()));
        async move {
            let tools = server.list_tools().await.map(|listed| {
                listed
                    .into_iter()
                    .map(|t| McpTool::from_listed(server.clone(), &t))
                    .collect()
            });
            Started { server, tools }
        }
    });
    futures::future::join_all(starts).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_for_openai() {
        assert_eq!(namespaced("everything", "get-sum"), "everything__get-sum");
        assert_eq!(namespaced("fs", "read.file/x"), "fs__read_file_x");
        assert_eq!(namespaced("s", &"x".repeat(100)).len(), 64);
    }

    #[test]
    fn config_needs_one_transport_and_a_safe_name() {
        let parse = |t: &str| toml::from_str::<McpConfig>(t).unwrap().validate();
        assert!(parse("[servers.a]\ncommand = \"node\"\n").is_ok());
        assert!(parse("[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\n").is_ok());
        let (key, msg) = parse("[servers.a]\n").unwrap_err();
        assert_eq!(key, "mcp.servers.a");
        assert!(msg.contains("command"), "{msg}");
        assert!(parse("[servers.\"a.b\"]\ncommand = \"x\"\n").is_err());
        assert!(parse("[servers.a]\ncommand = \"x\"\nurl = \"http://x\"\n").is_err());
        let bad = toml::from_str::<McpConfig>("[servers.a]\ncommand = \"x\"\nbogus = 1\n");
        assert!(bad.is_err());
    }
}
