//! The typed contract between the agent task and the console.
//!
//! The agent emits [`AgentEvent`]s and receives [`AgentCommand`]s; both travel over
//! tokio channels. Nothing in here renders or executes: it is data only.

use serde::{Deserialize, Serialize};

pub use crate::exec::{MirrorTarget, OutputStream};

pub use crate::tools::gate::{ApprovalDecision, ApprovalRequest, Risk};

/// Identifies one tool call within a session (the model's call id).
pub type CallId = String;

/// How a tool call ended, as the console shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSummary {
    /// True when the tool produced a result (even a non-zero exit code).
    pub ok: bool,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// True when the model saw a truncated view of the output.
    pub truncated: bool,
    /// Where the full output was kept, if it was cut for the model.
    pub spill: Vec<std::path::PathBuf>,
    /// Error text when `ok` is false (denied, invalid arguments, failure).
    pub error: Option<String>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum TurnOutcome {
    Completed,
    Cancelled,
    Failed(String),
}

/// Everything the agent tells the outside world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// Sent once when the agent task starts.
    SessionStarted {
        model: String,
        target: String,
        /// True when the model is the built-in scripted demo model.
        demo: bool,
        /// The managed tmux pane the console may mirror (None: no managed pane).
        mirror: Option<MirrorTarget>,
        tools: Vec<String>,
    },
    /// A user message was accepted and a turn began.
    TurnStarted { user: String },
    /// A piece of streamed assistant text.
    AssistantDelta { text: String },
    /// The assistant's complete text for one model round (may be empty).
    AssistantMessage { text: String },
    /// The model asked for a tool call.
    ToolCallRequested {
        call_id: CallId,
        name: String,
        arguments: String,
    },
    /// The tool began executing (after any approval).
    ToolStarted {
        call_id: CallId,
        name: String,
        summary: String,
    },
    /// Live output of a running tool.
    ToolOutput {
        call_id: CallId,
        stream: OutputStream,
        text: String,
    },
    /// An informational line from a running tool.
    ToolInfo { call_id: CallId, text: String },
    /// The tool call ended.
    ToolCompleted {
        call_id: CallId,
        name: String,
        summary: ToolSummary,
    },
    /// A gated call waits for the operator.
    ApprovalRequested { request: ApprovalRequest },
    /// The operator (or policy) decided.
    ApprovalResolved { id: u64, decision: ApprovalDecision },
    /// The turn ended.
    TurnFinished { outcome: TurnOutcome },
    /// Something the operator should know that is not an error.
    Notice { text: String },
    /// Something went wrong (the agent keeps running).
    Error { message: String },
}

/// Everything the outside world can ask of the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentCommand {
    /// A message from the operator; queued if a turn is running.
    UserMessage { text: String },
    /// The operator's answer to an approval request.
    Approval { id: u64, decision: ApprovalDecision },
    /// Cancel the running turn (stop the stream, kill the running command).
    Cancel,
    /// Change how gated tool calls are decided from now on.
    SetPolicy { policy: ApprovalPolicy },
    /// Shut the agent down.
    Quit,
}

/// How gated tool calls are decided, as the operator picks it in the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ApprovalPolicy {
    /// Ask the operator for every gated call.
    Ask,
    /// Approve what vigil itself rates low risk; ask for the rest.
    AutoApproveLow,
    /// Approve every gated call.
    ApproveAll,
    /// Deny every gated call (the model is told the operator's policy).
    DenyAll,
    /// Approve every gated call for this many minutes, then ask again.
    ApproveAllFor { minutes: u32 },
}
