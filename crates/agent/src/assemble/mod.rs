//! Wiring: builds the tool registry, the execution context, the model client
//! and the agent from a [`Config`], for the console, `exec` and `tool` modes
//! alike. It decides nothing about presentation.

mod demo;
pub mod hooks;
mod registry;
mod target;

pub use demo::DemoServer;
pub use registry::*;
pub use target::*;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::approval::{ApprovalBroker, Policy};
use crate::model::ModelError;
use crate::model::anthropic::AnthropicClient;
use crate::model::discover_cache::DiscoverCache;
use crate::model::retry::RetryPolicy;
use crate::model::{ChatModel, ModelClient, ModelClientConfig};
use crate::record::redact::Redactor;
use crate::record::restore::Restored;
use crate::record::session::SessionError;
use crate::record::session::{Launch, SessionStore, SessionWriter, tee};
use crate::run::runner::{AgentSetup, DEFAULT_SYSTEM_PROMPT, spawn_agent};
use vigil_config::ConfigError;
use vigil_config::{ApiDialect, Config};
use vigil_exec::container::ContainerError;
use vigil_exec::leave::Leave;
use vigil_exec::ssh::SshError;
use vigil_exec::tmux::TmuxError;
use vigil_exec::tmux::spawn_mirror_feed;
use vigil_protocol::{AgentCommand, AgentEvent};

/// Why the agent could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("choose one target: --ssh / [ssh] target or --container / [container] name")]
    TwoTargets,
    #[error(transparent)]
    Ssh(#[from] SshError),
    #[error(transparent)]
    Container(#[from] ContainerError),
    #[error("cannot start the managed tmux session: {0}")]
    Tmux(TmuxError),
    #[error("cannot start the demo model server: {0}")]
    DemoServer(std::io::Error),
    #[error("cannot build the HTTP client: {0}")]
    Http(ModelError),
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// The model name the demo reports.
pub const DEMO_MODEL: &str = "vigil-demo (scripted)";

/// A running agent and the ends of its channels.
pub struct Running {
    pub events: mpsc::UnboundedReceiver<AgentEvent>,
    pub commands: mpsc::UnboundedSender<AgentCommand>,
    pub task: tokio::task::JoinHandle<()>,
    /// Kept alive for the demo: the scripted model server.
    pub demo_server: Option<DemoServer>,
    pub broker: Arc<ApprovalBroker>,
    /// The id of the session being recorded (None: recording failed).
    pub session_id: Option<String>,
    /// The latest capture of the managed pane (with its colours), updated
    /// on change; None when commands do not run in a managed tmux pane.
    pub mirror: Option<watch::Receiver<String>>,
    /// What to do with the target when vigil ends (ask, keep or remove
    /// remote managed sessions; close the connection).
    pub leave: Leave,
    /// Who answered which approval (the consoles note, the record names).
    pub answers: Arc<crate::record::answers::AnswerBook>,
}

impl Running {
    /// Quit the agent loop and wait (up to `within`) until it has stopped,
    /// its record closed: what an embedder does before it removes the data
    /// folder the agent records into (a loop still quitting would write
    /// into it). False: it had not stopped by then.
    pub async fn finish(self, within: Duration) -> bool {
        let _ = self.commands.send(vigil_protocol::AgentCommand::Quit);
        tokio::time::timeout(within, self.task).await.is_ok()
    }
}

/// What to start beyond the config.
#[derive(Default)]
pub struct StartOptions {
    /// Resume this session (its conversation, tool history and standing
    /// approvals) instead of starting a new one.
    pub resume: Option<String>,
    /// Run commands here instead of the target the config describes (tests
    /// use a recording backend).
    pub target: Option<Target>,
    /// Let the session rules read from the resumed session's log approve
    /// at once (`--trust-session-rules`). Without it they approve nothing
    /// until the operator confirms them (`AgentCommand::RestoredRules`).
    pub trust_session_rules: bool,
    /// Lines for the operator at start-up (which model and target a
    /// resume used), sent as Notices.
    pub notices: Vec<String>,
}

/// Start the agent for `config`. With `demo`, a scripted model server is
/// started on loopback first and the client pointed at it.
pub async fn start_agent(
    config: &Config,
    demo: bool,
    policy: Policy,
) -> Result<Running, StartError> {
    start_agent_with(config, demo, policy, StartOptions::default()).await
}

/// [`start_agent`] with options (resume, a given execution target).
pub async fn start_agent_with(
    config: &Config,
    demo: bool,
    policy: Policy,
    mut options: StartOptions,
) -> Result<Running, StartError> {
    let Target {
        exec,
        tmux,
        mut notices,
        target_notices,
        leave,
    } = match options.target.take() {
        Some(target) => target,
        None => build_exec(config).await?,
    };
    let (event_tx, event_rx) = mpsc::unbounded_channel();
    let (inner_tx, inner_rx) = mpsc::unbounded_channel();
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let model = build_model(config, demo).await?;
    crate::record::redact::set_global(model.redactor.clone());

    let target = exec.target();
    let broker = Arc::new(ApprovalBroker::new(
        inner_tx.clone(),
        target.clone(),
        policy,
    ));
    broker.set_can_sandbox(exec.can_sandbox());
    broker.set_denylist(config.tools.shell_denylist.clone());
    broker.set_rules(vigil_policy::rules::PolicyRules::from_config(
        &config.approval,
    ));
    let mut registry = build_registry_async(
        config,
        &exec,
        tmux.as_ref(),
        broker.clone(),
        Some(mcp_events(event_tx.clone())),
    )
    .await;
    registry.set_trial_approver(broker.clone());
    let registry = Arc::new(registry);
    notices.append(&mut options.notices);
    let (session, restore) = open_session(config, &options, &broker, &model, &target)?;
    let session_id = session.as_ref().map(|s| s.id().to_string());
    let spill_dir = match &session {
        Some(s) => s.spill_dir(),
        None => config.data_dir().join("spill"),
    };
    let inner_rx = match notifier(config, &model.label, &target, session_id.clone()) {
        Some(n) => n.relay(inner_rx),
        None => inner_rx,
    };
    let answers = Arc::new(crate::record::answers::AnswerBook::default());
    let label = hooks::agent_label(config, &model.label, &target);
    let hooked = hooks::wire(config, label, &broker, session.as_ref(), &answers, inner_rx);
    tokio::spawn(tee(
        hooked.events,
        session.clone(),
        event_tx,
        answers.clone(),
    ));

    let setup = AgentSetup {
        model: model.chat,
        registry,
        broker: broker.clone(),
        system_prompt: config
            .agent
            .system_prompt
            .clone()
            .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_string()),
        max_rounds: config.agent.max_rounds,
        retry: RetryPolicy {
            max_attempts: config.model.retry_attempts,
            base_delay: Duration::from_millis(config.model.retry_base_ms),
            max_delay: Duration::from_secs(config.model.retry_max_secs),
        },
        context_limit: config.model.context_limit,
        // The demo's server is new at every start: nothing to remember.
        model_cache: (!demo).then(|| DiscoverCache::in_data_dir(&config.data_dir())),
        model_label: model.label,
        target,
        demo,
        mirror: exec.mirror(),
        spill_dir: Some(spill_dir),
        session,
        restore,
        notices,
        target_notices,
        tmux: tmux.clone(),
    };
    let mirror = tmux.as_ref().map(spawn_mirror_feed);
    let task = spawn_agent(setup, inner_tx, cmd_rx);
    let task = hooks::with_session_end(task, hooked.lifecycle, hooked.exporter);
    Ok(Running {
        mirror,
        events: event_rx,
        commands: cmd_tx,
        task,
        demo_server: model.demo_server,
        broker,
        session_id,
        leave,
        answers,
    })
}

/// The `[notify] command` runner, when one is configured.
fn notifier(
    config: &Config,
    model: &str,
    target: &str,
    session: Option<String>,
) -> Option<Arc<crate::telemetry::notify::Notifier>> {
    let agent = hooks::agent_label(config, model, target);
    let timeout = Duration::from_secs(config.notify.command_timeout_secs);
    crate::telemetry::notify::Notifier::new(&config.notify.command, timeout, agent, session)
}

/// The model the agent talks to, with what goes along with it.
struct BuiltModel {
    chat: Arc<dyn ChatModel>,
    /// The name shown to the operator and recorded in the session.
    label: String,
    /// Scrubs the API key from whatever is shown or recorded.
    redactor: Redactor,
    /// The scripted server `--demo` talks to (stopped when dropped).
    demo_server: Option<DemoServer>,
}

/// The configured model client, or the demo's scripted server and a client
/// for it.
async fn build_model(config: &Config, demo: bool) -> Result<BuiltModel, StartError> {
    let mut demo_server = None;
    let (base_url, label, model_name) = if demo {
        let (server, url) = demo::start().await?;
        demo_server = Some(server);
        (url, DEMO_MODEL.to_string(), "vigil-demo".to_string())
    } else {
        (
            config.model.base_url.clone(),
            config.model.model.clone(),
            config.model.model.clone(),
        )
    };
    let api_key = if demo { None } else { config.api_key() };
    let redactor = Redactor::new(api_key.clone());
    let client_config = ModelClientConfig {
        base_url,
        model: model_name,
        api_key,
        connect_timeout: Duration::from_secs(config.model.connect_timeout_secs),
        request_timeout: Duration::from_secs(config.model.idle_timeout_secs),
    };
    let chat: Arc<dyn ChatModel> = match config.model.api {
        ApiDialect::Anthropic if !demo => Arc::new(
            AnthropicClient::new(client_config, config.model.max_tokens)
                .map_err(StartError::Http)?,
        ),
        _ => Arc::new(
            ModelClient::new(client_config)
                .map_err(StartError::Http)?
                .with_tool_protocol(
                    config.model.tool_protocol,
                    config.model.json_tags_multiple_calls,
                )
                .with_max_tokens(Some(config.model.max_tokens)),
        ),
    };
    Ok(BuiltModel {
        chat,
        label,
        redactor,
        demo_server,
    })
}

/// The session to record into: the resumed one (its rules held for the
/// operator to confirm) or a new one, older sessions pruned. A new session
/// that cannot be created only disables recording.
fn open_session(
    config: &Config,
    options: &StartOptions,
    broker: &ApprovalBroker,
    model: &BuiltModel,
    target: &str,
) -> Result<(Option<Arc<SessionWriter>>, Option<Restored>), StartError> {
    let store = SessionStore::new(&config.data_dir());
    let redactor = model.redactor.clone();
    let (session, restore) = match &options.resume {
        Some(id) => {
            let restored = Restored::load(&store, id)?;
            // The log is a file anyone with access can append to: what it
            // says approves nothing until the operator confirms it.
            broker.hold_restored(crate::approval::Restored {
                standing: restored.standing.clone(),
                prefixes: restored.prefixes.clone(),
            });
            if options.trust_session_rules {
                broker.confirm_restored();
            }
            let writer = store.reopen(id, redactor)?;
            (Some(Arc::new(writer)), Some(restored))
        }
        None => match store.create_with(
            &model.label,
            target,
            Some(Launch::of(config, model.demo_server.is_some())),
            redactor,
        ) {
            Ok(w) => (Some(Arc::new(w)), None),
            Err(e) => {
                tracing::warn!("session recording disabled: {e}");
                (None, None)
            }
        },
    };
    if let Some(s) = &session {
        let days = config.sessions.retention_days;
        let max_age = (days > 0).then(|| Duration::from_secs(days * 86_400));
        let pruned = store.prune(max_age, config.sessions.keep.max(1), s.id());
        if pruned > 0 {
            tracing::info!("pruned {pruned} old sessions");
        }
    }
    Ok((session, restore))
}
