//! Wiring: builds the tool registry, the execution context, the model client
//! and the agent from a [`Config`], for the console, `exec` and `tool` modes
//! alike. It decides nothing about presentation.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::agent::approval::{ApprovalBroker, Policy};
use crate::agent::model::ModelError;
use crate::agent::model::anthropic::AnthropicClient;
use crate::agent::model::retry::RetryPolicy;
use crate::agent::model::{ChatModel, ModelClient, ModelClientConfig};
use crate::agent::restore::Restored;
use crate::agent::runner::{AgentSetup, DEFAULT_SYSTEM_PROMPT, spawn_agent};
use crate::agent::session::SessionError;
use crate::agent::session::{Launch, SessionStore, SessionWriter, tee};
use crate::config::ConfigError;
use crate::config::{ApiDialect, Config, TmuxMode};
use crate::event::{AgentCommand, AgentEvent};
use crate::exec::ExecutionContext;
use crate::exec::backend::CommandBackend;
use crate::exec::container::ContainerError;
use crate::exec::leave::Leave;
use crate::exec::ssh::SshError;
use crate::exec::tmux::TmuxError;
use crate::exec::tmux::manager::TmuxManager;
use crate::exec::tmux::{TmuxBackend, TmuxOptions, spawn_mirror_feed, tmux_available};
use crate::exec::transport::{Local, Transport};
use crate::redact::Redactor;
use crate::scripted::{Scenario, ScriptedServer};
use crate::tools::edit::{Edit, EditConfig};
use crate::tools::fetch::{FetchConfig, FetchUrl};
use crate::tools::files::{ReadFile, WriteFile};
use crate::tools::mcp::{self, McpState, StateSink};
use crate::tools::paths::PathPolicy;
use crate::tools::request_tools::RequestTools;
use crate::tools::search::{SearchConfig, WebSearch};
use crate::tools::shell::{RunShell, ShellConfig};
use crate::tools::time::TimeTool;
use crate::tools::tmux_capture::CapturePane;
use crate::tools::tmux_keys::SendKeys;
use crate::tools::tmux_manage::TmuxManage;
use crate::tools::visibility::DomainPolicy;
use crate::tools::{Approver, ToolRegistry};

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

/// Register the built-in tools the config enables.
pub fn build_registry(
    config: &Config,
    exec: &ExecutionContext,
    approver: Arc<dyn Approver>,
) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.set_approver(approver);
    let t = &config.tools;
    if t.shell_enabled {
        registry.register(RunShell::new(
            exec.clone(),
            ShellConfig {
                confirm: t.shell_confirm,
                denylist: t.shell_denylist.clone(),
                always_sandboxed: t.shell_always_sandboxed,
                ..ShellConfig::default()
            },
        ));
    }
    // The one list of secret places, for the risk estimate and the file tools.
    let secrets = config.secret_places();
    crate::policy::secret_reads::install(secrets.clone());
    let paths = PathPolicy {
        allowed_roots: t.files_allowed_paths.clone(),
        secrets,
    };
    if t.files_enabled {
        registry.register(ReadFile::new(exec.clone()).with_paths(paths.clone()));
        registry.register(WriteFile::new(exec.clone(), t.write_confirm).with_paths(paths.clone()));
    }
    if t.edit_enabled {
        registry.register(Edit::new(
            exec.clone(),
            EditConfig {
                confirm: t.edit_confirm,
                paths,
                ..EditConfig::default()
            },
        ));
    }
    if t.fetch_enabled {
        registry.register(FetchUrl::new(FetchConfig {
            allow_private: t.fetch_allow_private,
            allow_domains: t.fetch_allow_domains.clone(),
            deny_domains: t.fetch_deny_domains.clone(),
            timeout: Duration::from_secs(t.fetch_timeout_secs),
            max_bytes: t.fetch_max_bytes,
            confirm: t.fetch_confirm,
            unasked_hosts: t.fetch_unasked_hosts.clone(),
            ..FetchConfig::default()
        }));
    }
    if t.search_enabled {
        registry.register(WebSearch::new(SearchConfig {
            base_url: t.search_base_url.clone(),
            confirm: t.search_confirm,
            ..SearchConfig::default()
        }));
    }
    if t.time_enabled {
        registry.register(TimeTool);
    }
    registry
}

/// [`build_registry`] plus the configured MCP servers, started concurrently
/// (each within its `timeout_secs`); `sink` hears their state changes.
pub async fn build_registry_async(
    config: &Config,
    exec: &ExecutionContext,
    tmux: Option<&Arc<TmuxManager>>,
    approver: Arc<dyn Approver>,
    sink: Option<StateSink>,
) -> ToolRegistry {
    let mut registry = build_registry(config, exec, approver);
    if let Some(tmux) = tmux {
        register_tmux_tools(&mut registry, config, tmux);
    }
    let mut policy = DomainPolicy {
        hidden: config.tools.hidden_domains.iter().cloned().collect(),
        blocked: config
            .tools
            .blocked_domains
            .iter()
            .map(|d| (d.clone(), "blocked by the operator".to_string()))
            .collect(),
    };
    let offer_request_tools = !policy.is_empty() || config.mcp.servers.values().any(|s| s.hidden);
    for started in mcp::start_all(&config.mcp, sink).await {
        let domain = mcp::domain_of(started.server.name());
        if started.server.config().hidden {
            policy.hidden.insert(domain.clone());
        }
        match started.tools {
            Ok(tools) => tools.into_iter().for_each(|t| registry.register(t)),
            Err(e) => {
                policy.blocked.entry(domain).or_insert(e.to_string());
            }
        }
    }
    if offer_request_tools {
        registry.register(RequestTools::new(registry.domains(), policy.clone()));
    }
    registry.set_domain_policy(policy);
    registry
}

/// Report MCP server states as [`AgentEvent::McpServerState`].
pub fn mcp_events(events: mpsc::UnboundedSender<AgentEvent>) -> StateSink {
    Arc::new(move |name: &str, state: McpState, tools: usize| {
        let _ = events.send(AgentEvent::McpServerState {
            name: name.to_string(),
            state,
            tools,
        });
    })
}

/// A running agent and the ends of its channels.
pub struct Running {
    pub events: mpsc::UnboundedReceiver<AgentEvent>,
    pub commands: mpsc::UnboundedSender<AgentCommand>,
    pub task: tokio::task::JoinHandle<()>,
    /// Kept alive for the demo: the scripted model server.
    pub demo_server: Option<ScriptedServer>,
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
    pub answers: Arc<crate::agent::answers::AnswerBook>,
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

/// Where commands run, with what the operator should be told about it.
pub struct Target {
    pub exec: ExecutionContext,
    /// The managed tmux layer, when commands run in a tmux pane.
    pub tmux: Option<Arc<TmuxManager>>,
    pub notices: Vec<String>,
    /// What the target lacks (no tmux there…): told to the operator as
    /// [`AgentEvent::TargetNotice`]s, shown in the console's status bar.
    pub target_notices: Vec<String>,
    /// What to do with the target when vigil ends.
    pub leave: Leave,
}

impl From<ExecutionContext> for Target {
    fn from(exec: ExecutionContext) -> Self {
        Target {
            exec,
            tmux: None,
            notices: Vec::new(),
            target_notices: Vec::new(),
            leave: Leave::new(Arc::new(Local), None),
        }
    }
}

/// Build the execution target the config names — an SSH target, a
/// container, or this machine — and put the managed tmux pane on top of it
/// when tmux is on (or, in auto mode, when the target has tmux and the shell
/// is enabled). Connecting happens here, so a host-key, authentication or
/// stopped-container problem is reported before the console opens.
pub async fn build_exec(config: &Config) -> Result<Target, StartError> {
    use crate::config::EngineSetting;
    use crate::exec::container::{ContainerOptions, ContainerTransport, Engine, EngineChoice};
    use crate::exec::ssh::{SshOptions, SshTransport};

    // Every process started from here on gets the filtered environment.
    crate::exec::env::install(crate::exec::env::EnvPolicy::from_config(config)?);
    // Runs nobody approved (sandbox, preview) mask the configured secrets.
    crate::exec::sandbox::set_secret_places(config.secret_places());
    match (&config.ssh.target, &config.container.name) {
        (Some(_), Some(_)) => Err(StartError::TwoTargets),
        (Some(target), None) => {
            let mut opts = SshOptions::new(target.clone());
            opts.identity_file = config.ssh.identity_file.clone();
            opts.options = config.ssh.options.clone();
            opts.connect_timeout = Duration::from_secs(config.ssh.connect_timeout_secs.max(1));
            let transport = SshTransport::connect(opts).await?;
            on_transport(config, Arc::new(transport)).await
        }
        (None, Some(name)) => {
            let engine = match config.container.engine {
                EngineSetting::Auto => EngineChoice::Auto,
                EngineSetting::Docker => EngineChoice::Only(Engine::Docker),
                EngineSetting::Podman => EngineChoice::Only(Engine::Podman),
            };
            let transport = ContainerTransport::connect(ContainerOptions {
                name: name.clone(),
                engine,
                global_args: config.container.engine_args.clone(),
            })
            .await?;
            on_transport(config, Arc::new(transport)).await
        }
        (None, None) => on_transport(config, Arc::new(Local)).await,
    }
}

/// Plain processes or a managed tmux pane over `transport`.
async fn on_transport<T: Transport>(
    config: &Config,
    transport: Arc<T>,
) -> Result<Target, StartError> {
    let plain = |notice: Option<String>| Target {
        exec: ExecutionContext::new(CommandBackend::new(transport.clone())),
        tmux: None,
        notices: Vec::new(),
        target_notices: notice.into_iter().collect(),
        leave: Leave::new(transport.clone(), None),
    };
    let want = match config.tmux.mode {
        TmuxMode::Off => false,
        TmuxMode::On => true,
        TmuxMode::Auto => config.tools.shell_enabled && has_tmux(&*transport).await,
    };
    if !want {
        let notice =
            (config.tmux.mode == TmuxMode::Auto && config.tools.shell_enabled).then(|| {
                format!(
                    "tmux is not available on {}: commands run as plain processes (no managed \
                 pane, no wait=false, no capture-pane/send-keys)",
                    transport.label()
                )
            });
        return Ok(plain(notice));
    }
    let t = &config.tmux;
    let opts = TmuxOptions {
        socket: t.socket.clone(),
        session: t.session.clone(),
        agent_name: config.agent.name.clone(),
        max_sessions: t.max_sessions,
        max_panes: t.max_panes,
        shell: t.shell.clone(),
        width: t.width,
        height: t.height,
    };
    match TmuxBackend::start(transport.clone(), opts).await {
        Ok(backend) => {
            let notice = backend.startup_notice();
            let manager = backend.manager();
            Ok(Target {
                exec: ExecutionContext::from_arc(backend),
                leave: Leave::new(transport.clone(), Some(manager.clone())),
                tmux: Some(manager),
                notices: vec![notice],
                target_notices: Vec::new(),
            })
        }
        Err(e) if config.tmux.mode == TmuxMode::Auto => Ok(plain(Some(format!(
            "the managed tmux session could not start ({e}); commands run as plain processes"
        )))),
        Err(e) => Err(StartError::Tmux(e)),
    }
}

/// Whether the target can run tmux.
async fn has_tmux<T: Transport + ?Sized>(transport: &T) -> bool {
    if transport.is_local() {
        return tmux_available();
    }
    if transport.prepare().await.is_err() {
        return false;
    }
    let cmd = transport.shell("command -v tmux >/dev/null 2>&1", false);
    let probe = crate::exec::process::run(cmd, None, Some(Duration::from_secs(20)), None);
    matches!(probe.await, Ok(outcome) if outcome.exit_code == Some(0))
}

/// Register the tmux tools on a registry.
pub fn register_tmux_tools(registry: &mut ToolRegistry, config: &Config, tmux: &Arc<TmuxManager>) {
    registry.register(CapturePane::new(tmux.clone()));
    registry.register(SendKeys::new(tmux.clone()).with_confirm(config.tmux.send_keys_confirm));
    for tool in TmuxManage::all(tmux) {
        registry.register(tool);
    }
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
    crate::redact::set_global(model.redactor.clone());

    let target = exec.target();
    let broker = Arc::new(ApprovalBroker::new(
        inner_tx.clone(),
        target.clone(),
        policy,
    ));
    broker.set_can_sandbox(exec.can_sandbox());
    broker.set_rules(crate::policy::rules::PolicyRules::from_config(
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
    let answers = Arc::new(crate::agent::answers::AnswerBook::default());
    let label = super::hookwiring::agent_label(config, &model.label, &target);
    let hooked =
        super::hookwiring::wire(config, label, &broker, session.as_ref(), &answers, inner_rx);
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
    let task = super::hookwiring::with_session_end(task, hooked.lifecycle, hooked.exporter);
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
) -> Option<Arc<crate::agent::notify::Notifier>> {
    let agent = super::hookwiring::agent_label(config, model, target);
    let timeout = Duration::from_secs(config.notify.command_timeout_secs);
    crate::agent::notify::Notifier::new(&config.notify.command, timeout, agent, session)
}

/// The model the agent talks to, with what goes along with it.
struct BuiltModel {
    chat: Arc<dyn ChatModel>,
    /// The name shown to the operator and recorded in the session.
    label: String,
    /// Scrubs the API key from whatever is shown or recorded.
    redactor: Redactor,
    /// The scripted server `--demo` talks to (stopped when dropped).
    demo_server: Option<ScriptedServer>,
}

/// The configured model client, or the demo's scripted server and a client
/// for it.
async fn build_model(config: &Config, demo: bool) -> Result<BuiltModel, StartError> {
    let mut demo_server = None;
    let (base_url, label, model_name) = if demo {
        let server = ScriptedServer::start(Scenario::demo())
            .await
            .map_err(StartError::DemoServer)?;
        let url = server.base_url();
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
            broker.hold_restored(crate::agent::approval::Restored {
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
