//! Wiring: builds the tool registry, the execution context, the model client
//! and the agent from a [`Config`], for the console, `exec` and `tool` modes
//! alike. It decides nothing about presentation.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::agent::approval::{ApprovalBroker, Policy};
use crate::agent::client::{ModelClient, ModelClientConfig};
use crate::agent::runner::{AgentSetup, DEFAULT_SYSTEM_PROMPT, spawn_agent};
use crate::config::Config;
use crate::event::{AgentCommand, AgentEvent};
use crate::exec::ExecutionContext;
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
}

/// Start the agent for `config`. With `demo`, a scripted model server is
/// started on loopback first and the client pointed at it.
pub async fn start_agent(config: &Config, demo: bool, policy: Policy) -> Result<Running, String> {
    let (event_tx, event_rx) = mpsc::unbounded_channel();
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

    let exec = build_exec(config).await?;
    let target = exec.target();
    let broker = Arc::new(ApprovalBroker::new(
        event_tx.clone(),
        target.clone(),
        policy,
    ));
    let registry = Arc::new(build_registry(config, &exec, broker.clone()));
    let client = ModelClient::new(ModelClientConfig {
        base_url,
        model: model_name,
        api_key: if demo { None } else { config.api_key() },
        connect_timeout: Duration::from_secs(config.model.connect_timeout_secs),
        request_timeout: Duration::from_secs(config.model.idle_timeout_secs),
    })
    .map_err(|e| format!("cannot build the HTTP client: {e}"))?;

    let session_dir = session_dir(config);
    let setup = AgentSetup {
        client,
        registry,
        broker: broker.clone(),
        system_prompt: config
            .agent
            .system_prompt
            .clone()
            .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_string()),
        max_rounds: config.agent.max_rounds,
        model_label,
        target,
        demo,
        mirror: exec.mirror(),
        spill_dir: Some(session_dir.join("spill")),
    };
    let task = spawn_agent(setup, event_tx, cmd_rx);
    Ok(Running {
        events: event_rx,
        commands: cmd_tx,
        task,
        demo_server,
        broker,
    })
}

/// The execution context the config names: an SSH target, a container, or
/// this machine. Connects (SSH master, container check) before returning, so
/// a host-key, authentication or stopped-container problem is reported here.
pub async fn build_exec(config: &Config) -> Result<ExecutionContext, String> {
    use crate::config::EngineSetting;
    use crate::exec::backend::CommandBackend;
    use crate::exec::container::{ContainerOptions, ContainerTransport, Engine, EngineChoice};
    use crate::exec::ssh::{SshOptions, SshTransport};

    match (&config.ssh.target, &config.container.name) {
        (Some(_), Some(_)) => {
            Err("choose one target: --ssh / [ssh] target or --container / [container] name".into())
        }
        (Some(target), None) => {
            let mut opts = SshOptions::new(target.clone());
            opts.identity_file = config.ssh.identity_file.clone();
            opts.options = config.ssh.options.clone();
            opts.connect_timeout = Duration::from_secs(config.ssh.connect_timeout_secs.max(1));
            let transport = SshTransport::connect(opts)
                .await
                .map_err(|e| e.to_string())?;
            Ok(ExecutionContext::new(CommandBackend::new(transport)))
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
            .await
            .map_err(|e| e.to_string())?;
            Ok(ExecutionContext::new(CommandBackend::new(transport)))
        }
        (None, None) => Ok(ExecutionContext::local()),
    }
}

/// A fresh directory name for this run's session files.
fn session_dir(config: &Config) -> PathBuf {
    let stamp = crate::tools::envelope::unix_millis();
    config
        .data_dir()
        .join("sessions")
        .join(format!("{stamp}-{}", std::process::id()))
}
