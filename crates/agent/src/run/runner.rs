//! The agent task's front door: what the binary (or a test) hands it
//! ([`AgentSetup`]) and how it is started ([`spawn_agent`]). The task runs in
//! three phases, each in its own module: the start-up ([`crate::run::start`]:
//! announce, settle the context window, build the shared state, restore a
//! resumed session), the loop ([`crate::run::agent_loop`]: commands and the
//! running job) and the stop (the end of that loop). What one turn does lives
//! in [`crate::run::turn`].
//!
//! It never renders, never reads the terminal and holds no logic of its own
//! beyond the order of the phases.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::approval::ApprovalBroker;
use crate::model::ChatModel;
use crate::model::discover_cache::DiscoverCache;
use crate::model::retry::RetryPolicy;
use crate::record::restore::Restored;
use crate::record::session::SessionWriter;
use crate::run::start::start;
use vigil_exec::tmux::TmuxManager;
use vigil_protocol::{AgentCommand, AgentEvent, MirrorTarget};
use vigil_tools::ToolRegistry;

/// The system prompt used when the config gives none.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are an assistant that operates a real machine \
through tools, supervised live by a human operator who sees every call and must approve \
risky ones. Prefer small, inspectable steps. For run_shell, label risk honestly \
(low/medium/high), say whether the command mutates state or escalates privileges, and \
give a short why. If a call is denied, do not retry it in another form: explain and ask. \
Answer concisely.";

/// The context window assumed when none is configured and the server
/// publishes none.
pub const DEFAULT_CONTEXT_LIMIT: u64 = 32_768;

/// Everything the agent needs, built by the binary (or a test).
pub struct AgentSetup {
    /// The model, in whichever dialect.
    pub model: Arc<dyn ChatModel>,
    pub registry: Arc<ToolRegistry>,
    pub broker: Arc<ApprovalBroker>,
    pub system_prompt: String,
    pub max_rounds: u32,
    pub retry: RetryPolicy,
    /// The model's context window, in tokens; None: as the server publishes
    /// it ([`ChatModel::discover`]), else [`DEFAULT_CONTEXT_LIMIT`].
    pub context_limit: Option<u64>,
    /// Where the window the server published is remembered, so its model
    /// list is asked once per server and not at every start; None: asked at
    /// every start (the demo, tests).
    pub model_cache: Option<DiscoverCache>,
    pub model_label: String,
    pub target: String,
    pub demo: bool,
    pub mirror: Option<MirrorTarget>,
    /// Where full outputs go when the model sees a cut view.
    pub spill_dir: Option<PathBuf>,
    /// Where the session is recorded (messages; events are recorded by the
    /// channel tee, see [`crate::record::session::tee`]).
    pub session: Option<Arc<SessionWriter>>,
    /// A session read back for resume.
    pub restore: Option<Restored>,
    /// Told to the operator right after the session starts.
    pub notices: Vec<String>,
    /// What the target lacks (e.g. no tmux there), told right after the
    /// session starts as [`AgentEvent::TargetNotice`]s.
    pub target_notices: Vec<String>,
    /// The managed tmux layer, for the operator's key passthrough
    /// ([`AgentCommand::PaneKeys`]); None when commands run as processes.
    pub tmux: Option<Arc<TmuxManager>>,
}

/// Start the agent task.
pub fn spawn_agent(
    setup: AgentSetup,
    events: mpsc::UnboundedSender<AgentEvent>,
    commands: mpsc::UnboundedReceiver<AgentCommand>,
) -> JoinHandle<()> {
    tokio::spawn(run_agent(setup, events, commands))
}

/// The agent task: the start-up, then the loop until `Quit` (or the command
/// channel closing), then the stop.
async fn run_agent(
    setup: AgentSetup,
    events: mpsc::UnboundedSender<AgentEvent>,
    commands: mpsc::UnboundedReceiver<AgentCommand>,
) {
    let agent_loop = start(setup, events).await;
    agent_loop.run(commands).await;
}
