//! The contract between a vigil agent and its consoles: every type that
//! crosses the socket, defined here and nowhere else.
//!
//! The agent emits [`AgentEvent`]s and receives [`AgentCommand`]s; a client
//! and the agent's server exchange them inside the [`wire`] messages, one
//! JSON object per line (docs/protocol.md, checked against these types by
//! `tests/agent/protocol_doc.rs`). The layers below (policy, exec, tools) build
//! these types; none of them is re-exported from a layer, so editing a
//! layer cannot change the protocol unseen.
//!
//! [`text`] and [`terminal`] hold the one sanitiser for foreign text on a
//! terminal, shared by the console's panes and the command line's output.
//!
//! Nothing in here renders, executes or decides: data and pure helpers.
//! The client end of the socket is `vigil-client` (`crates/client/`), the
//! server end `vigil_agent::server`.

use serde::{Deserialize, Serialize};

pub mod approval;
pub mod fleet;
pub mod lines;
pub mod pane;
pub mod preview;
pub mod runtime;
pub mod terminal;
pub mod text;
pub mod tool;
pub mod wire;

pub use approval::{
    Answer, ApprovalDecision, ApprovalRequest, CallFacts, FileChange, GateInfo, PrefixChoice,
    PrefixChoices, Risk,
};
pub use pane::{MirrorTarget, PaneKey};
pub use preview::{EffectKind, FileEffect, PreviewReport, RefusedConnection};
pub use tool::{McpState, ModelSaw, OnExit, OutputStream};

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
    /// What the model saw of each `spill` file (same order; missing: not
    /// known, e.g. a session recorded before vigil said).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<ModelSaw>,
    /// Error text when `ok` is false (denied, invalid arguments, failure).
    pub error: Option<String>,
}

impl ToolSummary {
    /// The error text of a call the operator cancelled.
    pub const CANCELLED: &'static str = "cancelled by the operator";

    /// How a cancelled call is recorded (it never finished).
    pub fn cancelled() -> Self {
        ToolSummary {
            ok: false,
            exit_code: None,
            duration_ms: 0,
            truncated: false,
            spill: Vec::new(),
            seen: Vec::new(),
            error: Some(Self::CANCELLED.into()),
        }
    }
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
    /// A piece of a tool call's arguments while the model writes them
    /// (before [`AgentEvent::ToolCallRequested`]; `call_id` is empty until
    /// the server names the call). Nothing runs until the call is complete.
    ToolCallDelta {
        /// The call's place in its round (0-based).
        index: usize,
        call_id: CallId,
        name: String,
        /// The new piece of the arguments.
        arguments: String,
    },
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
    ApprovalResolved {
        id: u64,
        decision: ApprovalDecision,
        /// Who or what decided (absent in logs written before it existed:
        /// read as the operator).
        #[serde(default)]
        decided_by: DecidedBy,
        /// The operator had a preview of the command's effects in front of
        /// them when deciding ([`AgentEvent::PreviewReady`]).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        previewed: bool,
        /// Which attached console answered, and when (None: the only
        /// front end, a rule or the policy). Filled in by the agent
        /// process's socket server, so every console can say who answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answered_by: Option<Answerer>,
    },
    /// The preview the operator (or a `preview = true` rule) asked for a
    /// waiting approval: the effects, or why there is none.
    PreviewReady { id: u64, outcome: PreviewOutcome },
    /// The operator cancelled the turn while this call waited or ran: it
    /// did not finish (its process group was killed) and the model is told
    /// so. Sent once per such call, before `TurnFinished { Cancelled }`.
    ToolCancelled { call_id: CallId, name: String },
    /// The turn ended.
    TurnFinished { outcome: TurnOutcome },
    /// Something the operator should know that is not an error.
    Notice { text: String },
    /// The execution target changed under the agent or works with less
    /// than asked for: an ssh connection re-established, tmux unavailable
    /// so commands run as plain processes. The console shows the latest in
    /// its status bar as well as in the conversation.
    TargetNotice { text: String },
    /// Something went wrong (the agent keeps running).
    Error { message: String },
    /// An MCP server changed state (starting, running, failed, crashed,
    /// timed out); `tools` is how many tools it offers.
    McpServerState {
        name: String,
        state: McpState,
        tools: usize,
    },
    /// Where this session is recorded (sent once, after `SessionStarted`).
    SessionRecording { id: String, dir: std::path::PathBuf },
    /// A resumed session: what it held when it was last written.
    SessionRestored {
        id: String,
        /// The conversation (system prompt left out), oldest first.
        history: Vec<HistoryEntry>,
        /// Every tool call the session made, oldest first.
        tools: Vec<ToolRecord>,
        /// `(tool, action)` pairs the operator approved for the session.
        standing_approvals: Vec<(String, String)>,
        /// `(tool, prefix)` rules the operator approved for the session
        /// (absent in logs written before prefix rules existed).
        #[serde(default)]
        standing_prefixes: Vec<(String, String)>,
        /// Calls that were running (or waiting) when the session stopped.
        interrupted: Vec<ToolRecord>,
    },
    /// A model round failed with a transient error and is tried again.
    RetryScheduled {
        /// The attempt that failed (1-based) and how many are allowed.
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error: String,
    },
    /// The text streamed since the last `AssistantMessage` is void: the stream
    /// broke and the round is asked again (the console should mark it so).
    AssistantDiscarded { chars: usize },
    /// A turn continues without a new user message (retry, resume).
    TurnContinued { reason: String },
    /// Why the turn is about to finish as failed (sent before `TurnFinished`).
    TurnFailed { kind: FailureKind, message: String },
    /// Estimated context use after a round, in tokens.
    ContextUsage { used: u64, limit: u64 },
    /// The operator typed these keys into the managed pane (key passthrough
    /// from the console's mirror), as opposed to the agent's `send_keys` or
    /// `run_shell`. Sent after tmux accepted them.
    OperatorKeys { keys: Vec<PaneKey> },
    /// The session's standing approvals changed (a rule was added or
    /// revoked): every rule in force now, sorted.
    SessionRules {
        /// `(tool, action)` pairs approved exactly.
        exact: Vec<(String, String)>,
        /// `(tool, prefix)` word-prefix rules.
        prefixes: Vec<(String, String)>,
    },
    /// Older context was shrunk to fit the limit.
    ContextCompacted {
        before: u64,
        after: u64,
        /// "projections" (old tool results shortened) or "summary".
        method: String,
    },
}

/// The console that answered an approval, and when. `console.peer` is who
/// the agent found at the other end of the socket (`SO_PEERCRED`);
/// `console.name` is only what that client called itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answerer {
    pub console: wire::ConsoleTag,
    /// Unix milliseconds.
    pub at_ms: u64,
}

/// What became of a preview.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PreviewOutcome {
    /// The command ran in the view; these are its effects.
    Report { report: Box<PreviewReport> },
    /// No preview was made (another target, not a command, the view could
    /// not be built): why, in words.
    Unavailable { why: String },
}

/// How a gated call was decided: the record the tools pane and history
/// show next to the call ("session rule `git status`", "edited from `…`").
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum DecidedBy {
    /// The operator answered with a key (approve once, for the session, a
    /// prefix, or deny without a reason): the decision says which.
    #[default]
    Operator,
    /// The operator edited the command before approving; `from` is what
    /// the model asked for.
    OperatorEdited { from: String },
    /// The operator denied with this reason (the model was told it).
    Denied { reason: String },
    /// A rule the operator approved earlier in the session covered it: the
    /// exact action, or a word prefix shown as `prefix …`.
    SessionRule { rule: String },
    /// A configured rule decided it (`[[approval.rules]]`, or any other
    /// named mechanism that approves or denies without asking).
    PolicyRule { rule: String },
    /// The session's approval policy decided it (`auto-approve low`,
    /// `approve all`, `deny all`…).
    Policy { name: String },
    /// A `[[hooks.decide]]` hook decided it (`hook` is its name and
    /// `file:line`, `reason` what it said). A hook that only asked leaves
    /// the operator's answer as the decision (its verdict is in the
    /// request's `facts.hooks`).
    Hook { hook: String, reason: String },
    /// The turn was cancelled while the call waited for the operator.
    Cancelled,
}

impl DecidedBy {
    /// [`DecidedBy::describe`], saying when the operator had a preview.
    pub fn record(&self, decision: &ApprovalDecision, previewed: bool) -> String {
        let mut how = self.describe(decision);
        if previewed {
            how.push_str(" after a preview");
        }
        how
    }

    /// One line for the tools pane and history, e.g. `by session rule `ls …``.
    pub fn describe(&self, decision: &ApprovalDecision) -> String {
        match (self, decision) {
            (DecidedBy::Operator, ApprovalDecision::ApproveOnce) => "approved by operator".into(),
            (DecidedBy::Operator, ApprovalDecision::ApproveSession) => {
                "approved by operator for the session".into()
            }
            (DecidedBy::Operator, ApprovalDecision::ApprovePrefix(p)) => {
                format!("approved by operator · rule `{p} …` added")
            }
            (DecidedBy::Operator, ApprovalDecision::ApproveEdited(_)) => {
                "edited by operator".into()
            }
            (DecidedBy::Operator, ApprovalDecision::DenyWithReason(r))
            | (DecidedBy::Denied { reason: r }, _) => format!("denied: {r}"),
            (DecidedBy::Operator, _) => "denied by operator".into(),
            (DecidedBy::OperatorEdited { from }, _) => format!("edited by operator from `{from}`"),
            (DecidedBy::SessionRule { rule }, _) => format!("by session rule `{rule}`"),
            (DecidedBy::PolicyRule { rule }, d) if d.is_approved() => {
                format!("by policy rule `{rule}`")
            }
            (DecidedBy::PolicyRule { rule }, _) => format!("denied by policy rule `{rule}`"),
            (DecidedBy::Policy { name }, d) if d.is_approved() => format!("by policy: {name}"),
            (DecidedBy::Policy { name }, _) => format!("denied by policy: {name}"),
            (DecidedBy::Hook { hook, reason }, d) => {
                let verb = if d.is_approved() { "allowed" } else { "denied" };
                match reason.is_empty() {
                    true => format!("{verb} by hook {hook}"),
                    false => format!("{verb} by hook {hook}: {reason}"),
                }
            }
            (DecidedBy::Cancelled, _) => "cancelled".into(),
        }
    }
}

/// One message of a restored conversation, as the console shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// "user", "assistant" or "tool".
    pub role: String,
    pub text: String,
    /// For tool results: the call answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// One tool call of a session's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRecord {
    pub call_id: CallId,
    pub name: String,
    pub arguments: String,
    /// True when the tool had started executing.
    pub started: bool,
    /// How it ended (None: it never ended).
    pub summary: Option<ToolSummary>,
    /// How a gated call was decided, as the tools pane says it ("approved
    /// by operator", "by session rule `ls …`"); None: not gated, or a log
    /// written before vigil kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided: Option<String>,
}

/// Why a turn failed; `vigil exec` maps each kind to an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The model server could not be reached or kept failing (after retries).
    ModelUnreachable,
    /// The model server refused the request or answered nonsense.
    ModelError,
    /// The turn used all of its model rounds (`agent.max_rounds`).
    BudgetExhausted,
    /// The model's answer was cut off at its token limit (`finish_reason:
    /// "length"`: `[model] max_tokens` or the server's context): what it
    /// said so far is kept, but it did not finish.
    AnswerCut,
}

impl AgentEvent {
    /// A one-line description of the newer events, for front ends that do
    /// not render them specially (None: nothing worth a line).
    pub fn notice_text(&self) -> Option<String> {
        match self {
            AgentEvent::SessionRestored {
                id, history, tools, ..
            } => Some(format!(
                "resumed session {id}: {} messages, {} tool calls",
                history.len(),
                tools.len()
            )),
            AgentEvent::RetryScheduled {
                attempt,
                max_attempts,
                delay_ms,
                error,
            } => Some(format!(
                "model request failed (attempt {attempt}/{max_attempts}): {error}; retrying in {:.1} s",
                *delay_ms as f64 / 1000.0
            )),
            AgentEvent::AssistantDiscarded { chars } => Some(format!(
                "the stream broke: the {chars} characters above are discarded and the answer is asked again"
            )),
            AgentEvent::TurnContinued { reason } => Some(reason.clone()),
            AgentEvent::ContextCompacted {
                before,
                after,
                method,
            } => Some(format!(
                "context compacted ({method}): ~{before} → ~{after} tokens; the full record stays in the session file"
            )),
            _ => None,
        }
    }
}

/// Everything the outside world can ask of the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentCommand {
    /// A message from the operator; queued if a turn is running.
    UserMessage { text: String },
    /// The operator's answer to an approval request. `token` is the
    /// request's own ([`ApprovalRequest::token`]): an answer without it, or
    /// with another, is refused and the call keeps waiting.
    Approval {
        id: u64,
        decision: Answer,
        #[serde(default)]
        token: String,
    },
    /// Preview what a waiting command would do, in a throwaway view;
    /// answered by [`AgentEvent::PreviewReady`].
    Preview { id: u64 },
    /// Cancel the running turn (stop the stream, kill the running command).
    Cancel,
    /// Run the last failed model round again.
    Retry,
    /// Compact the conversation now (summarise older turns).
    Compact,
    /// Withdraw a rule the operator approved for the session (an exact
    /// action when `prefix` is false, a word prefix when true). Answered by
    /// [`AgentEvent::SessionRules`].
    RevokeRule {
        tool: String,
        rule: String,
        prefix: bool,
    },
    /// Change how gated tool calls are decided from now on.
    SetPolicy { policy: ApprovalPolicy },
    /// The operator's word on the session rules a resume read from the log
    /// (shown in [`AgentEvent::SessionRestored`]): `keep` makes them
    /// approve from now on, otherwise they are dropped. Until then they
    /// approve nothing.
    RestoredRules { keep: bool },
    /// The operator types into the managed pane (key passthrough). Never
    /// gated: the operator is the one typing. Answered by
    /// [`AgentEvent::OperatorKeys`] once tmux took the keys.
    PaneKeys { keys: Vec<PaneKey> },
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
    /// Try shell commands in the throwaway view; ask only when something
    /// would change.
    ByEffect,
    /// Approve every gated call.
    ApproveAll,
    /// Deny every gated call (the model is told the operator's policy).
    DenyAll,
    /// Approve every gated call for this many minutes, then ask again.
    ApproveAllFor { minutes: u32 },
}
