//! The tool contract: the [`Tool`] trait, its context, output and errors.
//!
//! A tool turns the model's JSON arguments into an action on the execution
//! backend and a JSON result. Tools never talk to the console and never ask the
//! operator themselves: they describe gated calls through [`Tool::gate`] and the
//! [`ToolRegistry`] asks the approver before executing. One file per built-in.

mod build_command;
mod build_outputs;
pub mod edit;
pub mod envelope;
pub mod failure;
pub mod fetch;
pub mod file_target;
pub mod files;
pub mod http;
pub mod live;
pub mod mcp;
pub mod output_view;
pub mod own_addrs;
pub mod paths;
pub mod registry;
mod registry_trial;
pub use shell_trial::by_effect_verdict;
pub use trial_approver::{TrialApprover, TrialVerdict};
pub mod request_tools;
pub mod search;
pub mod shell;
mod shell_args;
mod shell_trial;
pub mod shorten;
pub mod ssrf;
pub mod time;
pub mod tmux_capture;
pub mod tmux_keys;
pub mod tmux_manage;
mod trial_approver;
pub mod truncate;
pub mod validate;
pub mod visibility;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use vigil_policy::call::ToolCall;
use vigil_protocol::approval::GateInfo;
use vigil_protocol::tool::ModelSaw;

pub use failure::FailureClass;
pub use registry::{ToolRegistry, ToolRun};
pub use vigil_policy::gate::Approver;

/// OpenAI-compatible function definition sent with every request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    #[serde(rename = "type")]
    pub tool_type: String,
    pub function: FunctionDefinition,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl ToolDefinition {
    pub fn function(name: &str, description: &str, parameters: Value) -> Self {
        ToolDefinition {
            tool_type: "function".into(),
            function: FunctionDefinition {
                name: name.into(),
                description: description.into(),
                parameters,
            },
        }
    }
}

/// Incremental events a running tool reports (consumed by the console).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolStream {
    Started {
        summary: String,
    },
    Stdout(String),
    Stderr(String),
    Info(String),
    /// A notice from the execution target (see
    /// [`vigil_protocol::AgentEvent::TargetNotice`]).
    TargetNotice(String),
    Completed,
}

/// A callback receiving [`ToolStream`] events.
pub type StreamSink = Arc<dyn Fn(ToolStream) + Send + Sync>;

/// Per-call context handed to [`Tool::execute`].
#[derive(Clone, Default)]
pub struct ToolContext {
    /// The model's id for this call (empty outside the agent loop).
    pub call_id: String,
    sink: Option<StreamSink>,
    /// Directory where full outputs are kept when the model sees a cut view.
    pub spill_dir: Option<PathBuf>,
    /// The turn's visible tool domains (`None`: everything, e.g. the CLI).
    visibility: Option<visibility::Visibility>,
    /// The call was approved without a fresh operator decision (the policy,
    /// a session or policy rule): it must run in the kernel sandbox. The
    /// registry sets it from [`ApprovalDecision::ApproveUnasked`](vigil_protocol::ApprovalDecision::ApproveUnasked).
    pub sandboxed: bool,
    /// For a gated call: the canonical paths the approval named (its
    /// [`CallFacts::paths`](vigil_protocol::approval::CallFacts::paths)). A file
    /// tool writes only there: a path that resolves elsewhere by the time
    /// it runs is refused.
    pub approved_paths: Option<Vec<String>>,
    /// For a gated command: the directory its approval said it would run
    /// in (the card's `in:` line). A command whose pane has moved since is
    /// refused rather than run elsewhere.
    pub approved_cwd: Option<String>,
    /// The operator (or the operator's blanket policy) approved this very
    /// call: what only a fresh decision may do (reading a secret place)
    /// is allowed. The registry sets it; it is never set for an unasked
    /// approval or an ungated call.
    pub asked: bool,
    /// The registry found no gate for this call (nobody decided it): a read
    /// whose path has since come to lie outside the readable places is
    /// refused rather than run. Set only by the registry.
    pub ungated: bool,
    /// With `sandboxed`: what the sandboxed run may write beyond nothing
    /// (a build's git-ignored outputs, after its trial) and which shell
    /// reads it.
    pub grants: vigil_exec::sandbox::Grants,
}

/// A build or test to run for real after its trial, confined to the
/// outputs the trial wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputsRun {
    /// Folders to write beneath, shell, and the text that shell reads (the
    /// trial's own: the pane's replayed state and the command).
    pub grants: vigil_exec::sandbox::Grants,
    /// Output folders the real tree lacks, made just before the run.
    pub missing: Vec<std::path::PathBuf>,
    /// The folders as the operator reads them (`target/`).
    pub names: String,
}

impl ToolContext {
    pub fn new(call_id: impl Into<String>) -> Self {
        ToolContext {
            call_id: call_id.into(),
            ..Default::default()
        }
    }

    pub fn with_sink(mut self, sink: StreamSink) -> Self {
        self.sink = Some(sink);
        self
    }

    pub fn with_spill_dir(mut self, dir: PathBuf) -> Self {
        self.spill_dir = Some(dir);
        self
    }

    pub fn with_visibility(mut self, visibility: visibility::Visibility) -> Self {
        self.visibility = Some(visibility);
        self
    }

    pub fn visibility(&self) -> Option<&visibility::Visibility> {
        self.visibility.as_ref()
    }

    /// Refuse a call that would run something on the target outside the
    /// kernel sandbox while [`ToolContext::sandboxed`] is set (typing
    /// into a shell, starting a pane): such a call needs the operator.
    pub fn refuse_unsandboxable(&self, tool: &str) -> Result<(), ToolError> {
        if !self.sandboxed {
            return Ok(());
        }
        Err(ToolError::failed(
            FailureClass::PermissionDenied,
            format!(
                "refused: `{tool}` cannot run under the kernel sandbox, and this call was not \
                 approved by the operator; it needs an operator's approval"
            ),
        ))
    }

    /// Report an event to the sink, if any.
    pub fn emit(&self, event: ToolStream) {
        if let Some(sink) = &self.sink {
            sink(event);
        }
    }

    pub fn sink(&self) -> Option<&StreamSink> {
        self.sink.as_ref()
    }

    /// Take the target's notices since the last call (a re-established ssh
    /// connection…), tell the operator each one as a
    /// [`ToolStream::TargetNotice`], and return them for the tool's result.
    /// The one path every tool that touches the target forwards them by.
    pub fn forward_target_notices(&self, from: &dyn NoticeSource) -> Vec<String> {
        let notices = from.take_target_notices();
        for n in &notices {
            self.emit(ToolStream::TargetNotice(n.clone()));
        }
        notices
    }

    /// Run a tool's `work` on the target, then forward the target's notices
    /// ([`ToolContext::forward_target_notices`]) whether it succeeded or not,
    /// so they arrive with this call rather than with a later one.
    pub async fn with_target_notices<T>(
        &self,
        from: &dyn NoticeSource,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        let out = work.await;
        self.forward_target_notices(from);
        out
    }
}

/// Where a tool's target keeps its notices for the operator (the execution
/// context for commands and files, the tmux manager for the tmux tools).
pub trait NoticeSource: Send + Sync {
    /// The notices since the last call, oldest first.
    fn take_target_notices(&self) -> Vec<String>;
}

impl NoticeSource for vigil_exec::ExecutionContext {
    fn take_target_notices(&self) -> Vec<String> {
        self.backend().take_notices()
    }
}

impl NoticeSource for vigil_exec::tmux::TmuxManager {
    fn take_target_notices(&self) -> Vec<String> {
        self.transport().take_notices()
    }
}

/// What a tool produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// The `result` member of the envelope the model sees.
    pub result: Value,
    /// Exit code, for tools that run processes.
    pub exit_code: Option<i32>,
    /// True when anything in `result` was cut for the model.
    pub truncated: bool,
    /// Files holding the full text of anything that was cut.
    pub spill: Vec<PathBuf>,
    /// What the model saw of each file in `spill` (same order; shorter when
    /// not known).
    pub seen: Vec<ModelSaw>,
    /// What the console's timeline shows instead of the full result (e.g.
    /// `read /etc/motd (120 bytes)` rather than the content). `None`: the
    /// console shows the result itself.
    pub timeline: Option<String>,
}

impl ToolOutput {
    pub fn new(result: Value) -> Self {
        ToolOutput {
            result,
            ..Default::default()
        }
    }

    pub fn text(s: impl Into<String>) -> Self {
        ToolOutput::new(Value::String(s.into()))
    }

    /// Set the timeline view.
    pub fn with_timeline(mut self, line: impl Into<String>) -> Self {
        self.timeline = Some(line.into());
        self
    }
}

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The model's arguments were unusable.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The action was attempted and failed.
    #[error("execution failed: {0}")]
    ExecutionFailed(String),
    /// The action was attempted and failed in a way with a known class
    /// (built with [`ToolError::failed`]; see [`ToolError::class`]).
    #[error("execution failed: {message}")]
    Failed {
        class: FailureClass,
        message: String,
    },
}

/// The tool contract.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Unique name the model uses when calling this tool.
    fn name(&self) -> &str;

    /// OpenAI-compatible function definition sent with every request.
    fn definition(&self) -> ToolDefinition;

    /// The lazy-visibility domain this tool belongs to (`web`, `mcp:NAME`,
    /// ...). `None`: a core tool, always visible.
    fn domain(&self) -> Option<&str> {
        None
    }

    /// The shell text a call with these arguments runs (a command, the
    /// text typed into a pane's shell), which the registry reads once into
    /// the call's [`ToolCall::command`]. `None`: no shell reads it.
    fn shell_text<'a>(&self, _args: &'a Value) -> Option<&'a str> {
        None
    }

    /// Why the shell text of [`Tool::shell_text`] may not be the line a
    /// shell runs (keys a terminal acts on, text left on the line for a
    /// later Enter): every command guard then asks the call.
    fn shell_text_doubt(&self, _args: &Value) -> Option<String> {
        None
    }

    /// A call (already read) that is refused before anyone is asked (the
    /// operator's shell denylist): why. `None`: the call goes on to the
    /// gate.
    fn refusal(&self, _call: &ToolCall) -> Option<ToolError> {
        None
    }

    /// When a call with these (already parsed) arguments needs the operator's
    /// approval, what to show. `None`: the call runs without asking.
    fn gate(&self, _args: &Value) -> Option<GateInfo> {
        None
    }

    /// For a gated call that changes a file: what it would change, read on
    /// the target (the approval card shows it as a diff). `None`: nothing
    /// to show.
    async fn preview(&self, _args: &Value) -> Option<vigil_protocol::approval::FileChange> {
        None
    }

    /// For a gated call: what vigil itself establishes about it before
    /// asking (the canonical paths it writes and where a symlink leads,
    /// every argument when the action line cannot show them, the directory
    /// a command runs in). The registry adds the digest of the call.
    async fn facts(&self, _args: &Value) -> vigil_protocol::approval::CallFacts {
        vigil_protocol::approval::CallFacts::default()
    }

    /// One line naming what a call does, for the timeline's Started entry
    /// (e.g. the command). `None`: the registry summarises the arguments.
    fn summary(&self, _args: &Value) -> Option<String> {
        None
    }

    /// Execute the call as the registry read it: its validated arguments
    /// ([`ToolCall::args`]) and the command in it, never the text again.
    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// Run the call in the throwaway view instead of for real
    /// (`approval = "by_effect"`): its output when the view saw no effect,
    /// else the report and why it must be asked. By default a tool cannot
    /// be tried.
    async fn trial(&self, _call: &ToolCall, _ctx: &ToolContext) -> Trial {
        Trial::Asks {
            why: format!("{} cannot be tried in the view", self.name()),
            report: None,
        }
    }
}

/// The outcome of [`Tool::trial`].
pub enum Trial {
    /// The view saw no effect: this is the call's result.
    Clean(ToolOutput),
    /// The view saw no effect and the command does nothing but change a
    /// managed pane's directory or shell variables (`cd`, `X=1`; not what
    /// later commands there run with: an alias, an export, an option are
    /// asked): it runs for real in
    /// the pane, unasked, so the pane and the model agree. Why, for the
    /// record.
    InPane(String),
    /// The view saw only files made or changed beneath folders git
    /// ignores (a build's or a test's outputs): it runs for real in the
    /// kernel sandbox, writing only there ([`build_outputs`]).
    Outputs(OutputsRun),
    /// Ask the operator: why, and the view's report when it ran.
    Asks {
        why: String,
        report: Option<Box<vigil_protocol::preview::PreviewReport>>,
    },
}

/// A call's arguments as the tool's own type `T` (from the value read
/// once), mapping failures to [`ToolError::InvalidArguments`].
pub fn args_of<T: serde::de::DeserializeOwned>(call: &ToolCall) -> Result<T, ToolError> {
    call.args_as()
        .map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// The arguments of a call as a JSON object, or why they are not one.
pub fn object_args(call: &ToolCall) -> Result<&Value, ToolError> {
    match &call.args {
        v @ Value::Object(_) => Ok(v),
        _ => Err(ToolError::InvalidArguments(
            "arguments must be a JSON object".into(),
        )),
    }
}

/// A call of `tool` with the argument text as sent, read but not
/// validated: for driving one tool outside the registry (benches, tests).
/// Text that is not JSON becomes a string value, which no tool takes.
pub fn call_as_sent(tool: &dyn Tool, text: &str) -> ToolCall {
    let text = if text.trim().is_empty() { "{}" } else { text };
    let args: Value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into()));
    ToolCall::read(tool.name(), args.clone(), tool.shell_text(&args))
}

/// [`call_as_sent`] for a tool's own unit tests, as if of `run_shell`'s
/// shape (its `command` is the shell text).
#[cfg(test)]
pub(crate) fn test_call(text: &str) -> ToolCall {
    let text = if text.trim().is_empty() { "{}" } else { text };
    let args: Value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into()));
    let shell = args["command"].as_str().map(str::to_string);
    ToolCall::read("test", args, shell.as_deref())
}
