//! Wiring: builds the tool registry, the execution context, the model client
//! and the agent from a [`Config`], for the console, `exec` and `tool` modes
//! alike. It decides nothing about presentation.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::agent::anthropic::AnthropicClient;
use crate::agent::approval::{ApprovalBroker, Policy};
use crate::agent::client::{ChatModel, ModelClient, ModelClientConfig};
use crate::agent::restore::Restored;
use crate::agent::retry::RetryPolicy;
use crate::agent::runner::{AgentSetup, DEFAULT_SYSTEM_PROMPT, spawn_agent};
use crate::agent::session::{SessionStore, tee};
use crate::config::{ApiDialect, Config};
use crate::event::{AgentCommand, AgentEvent};
use crate::exec::ExecutionContext;
use crate::redact::Redactor;
use crate::scripted::{Scenario, ScriptedServer};
use crate::tools::files::{ReadFile, WriteFile};
use crate::tools::shell::{RunShell, ShellConfig};
use crate::tools::time::TimeTool;
use crate::tools::{Approver, ToolRegistry};

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
                ..ShellConfig::default()
            },
        ));
    }
    if t.files_enabled {
        registry.register(ReadFile::new(exec.clone()));
        registry.register(WriteFile::new(exec.clone(), t.write_confirm));
    }
    if t.time_enabled {
        registry.register(TimeTool);
    }
    registry
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
}

/// What to start beyond the config.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Resume this session (its conversation, tool history and standing
    /// approvals) instead of starting a new one.
    pub resume: Option<String>,
}

/// Start the agent for `config`. With `demo`, a scripted model server is
/// started on loopback first and the client pointed at it.
pub async fn start_agent(config: &Config, demo: bool, policy: Policy) -> Result<Running, String> {
    start_agent_with(config, demo, policy, StartOptions::default()).await
}

/// [`start_agent`] with options (resume).
pub async fn start_agent_with(
    config: &Config,
    demo: bool,
    policy: Policy,
    options: StartOptions,
) -> Result<Running, String> {
    let (event_tx, event_rx) = mpsc::unbounded_channel();
    let (inner_tx, inner_rx) = mpsc::unbounded_channel();
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();

    let mut demo_server = None;
    let (base_url, model_label, model_name) = if demo {
        let server = ScriptedServer::start(Scenario::demo())
            .await
            .map_err(|e| format!("cannot start the demo model server: {e}"))?;
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
    crate::redact::set_global(redactor.clone());

    let exec = ExecutionContext::local();
    let target = exec.target();
    let broker = Arc::new(ApprovalBroker::new(
        inner_tx.clone(),
        target.clone(),
        policy,
    ));
    let registry = Arc::new(build_registry(config, &exec, broker.clone()));
    let client_config = ModelClientConfig {
        base_url,
        model: model_name,
        api_key,
        connect_timeout: Duration::from_secs(config.model.connect_timeout_secs),
        request_timeout: Duration::from_secs(config.model.idle_timeout_secs),
    };
    let model: Arc<dyn ChatModel> = match config.model.api {
        ApiDialect::Anthropic if !demo => Arc::new(
            AnthropicClient::new(client_config, config.model.max_tokens)
                .map_err(|e| format!("cannot build the HTTP client: {e}"))?,
        ),
        _ => Arc::new(
            ModelClient::new(client_config)
                .map_err(|e| format!("cannot build the HTTP client: {e}"))?,
        ),
    };

    let store = SessionStore::new(&config.data_dir());
    let (session, restore) = match &options.resume {
        Some(id) => {
            let restored = Restored::load(&store, id).map_err(|e| e.to_string())?;
            for (tool, action) in &restored.standing {
                broker.add_standing(tool, action);
            }
            let writer = store.reopen(id, redactor).map_err(|e| e.to_string())?;
            (Some(Arc::new(writer)), Some(restored))
        }
        None => match store.create(&model_label, &target, redactor) {
            Ok(w) => (Some(Arc::new(w)), None),
            Err(e) => {
                tracing::warn!("session recording disabled: {e}");
                (None, None)
            }
        },
    };
    let session_id = session.as_ref().map(|s| s.id().to_string());
    if let Some(id) = &session_id {
        let days = config.sessions.retention_days;
        let max_age = (days > 0).then(|| Duration::from_secs(days * 86_400));
        let pruned = store.prune(max_age, config.sessions.keep.max(1), id);
        if pruned > 0 {
            tracing::info!("pruned {pruned} old sessions");
        }
    }
    let spill_dir = match &session {
        Some(s) => s.spill_dir(),
        None => config.data_dir().join("spill"),
    };
    tokio::spawn(tee(inner_rx, session.clone(), event_tx));

    let setup = AgentSetup {
        model,
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
        model_label,
        target,
        demo,
        mirror: exec.mirror(),
        spill_dir: Some(spill_dir),
        session,
        restore,
    };
    let task = spawn_agent(setup, inner_tx, cmd_rx);
    Ok(Running {
        events: event_rx,
        commands: cmd_tx,
        task,
        demo_server,
        broker,
        session_id,
    })
}
