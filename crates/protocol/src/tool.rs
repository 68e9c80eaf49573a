//! Small data of the contract that lower layers produce: which stream output
//! came from, what the model saw of a cut text, an MCP server's state, and
//! what happens to managed sessions when vigil leaves.

use serde::{Deserialize, Serialize};

/// Which stream a chunk of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// Which part of a cut text the model saw: what the console's full-output
/// viewer marks as seen. It travels with the call's summary, so it is right
/// whatever limits the operator configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelSaw {
    /// The first this many chars.
    Head { chars: usize },
    /// The first `head` and the last `tail` chars.
    HeadTail { head: usize, tail: usize },
}

/// What state a server is in, as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum McpState {
    Starting,
    Running,
    /// It could not be started (the reason).
    Failed(String),
    /// It exited or closed the connection; restarted on the next call.
    Crashed(String),
    /// A start or call took longer than `timeout_secs`; it was stopped and
    /// is restarted on the next call.
    TimedOut(String),
}

impl std::fmt::Display for McpState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpState::Starting => f.write_str("starting"),
            McpState::Running => f.write_str("running"),
            McpState::Failed(why) => write!(f, "failed: {why}"),
            McpState::Crashed(why) => write!(f, "crashed: {why}"),
            McpState::TimedOut(why) => write!(f, "timed out: {why}"),
        }
    }
}

/// What to do with the remote managed sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExit {
    /// The operator said nothing: local sessions this agent created are
    /// removed, remote ones are kept (nothing there is lost).
    #[default]
    Unsaid,
    /// Leave them running.
    Keep,
    /// Kill every session this agent owns there.
    Remove,
}
