//! The fleet feed's data: what a console is told about the other agents
//! running beside its own (for the agents overlay and the cross-agent
//! approval queue) and how it answers another agent's call.
//!
//! Plain data only: the client side (`cli::fleet`) fills a [`FleetView`]
//! from the agents' sockets and carries [`FleetAnswer`]s back; nothing here
//! opens a socket, renders or decides.

use super::wire::AgentInfo;
use super::{Answer, ApprovalRequest};

/// Every live agent and every call another agent waits on, as of now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetView {
    /// The live agents, oldest first (this console's agent included).
    pub agents: Vec<FleetAgent>,
    /// Calls the *other* agents wait on, oldest first.
    pub pending: Vec<FleetPending>,
}

/// One live agent.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetAgent {
    pub info: AgentInfo,
    /// The agent this console is attached to.
    pub this: bool,
}

/// A call another agent waits on.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetPending {
    /// The agent's session id.
    pub agent: String,
    /// How the queue names the agent: short id and model.
    pub label: String,
    /// When the fleet client first saw the request (Unix milliseconds).
    pub asked_ms: u64,
    pub request: ApprovalRequest,
}

/// The operator's answer to another agent's call.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetAnswer {
    pub agent: String,
    pub id: u64,
    pub decision: Answer,
}

/// How the queue labels an agent: the id's last 6 characters (session
/// ids share their date prefix) and the model.
pub fn label(info: &AgentInfo) -> String {
    format!("{} {}", short_id(&info.id), info.model)
}

/// The distinguishing end of a session id.
pub fn short_id(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    chars[chars.len().saturating_sub(6)..].iter().collect()
}
