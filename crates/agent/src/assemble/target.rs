//! Where commands run: the execution context a configuration names (this
//! machine, ssh, a container; with or without a managed tmux pane).

use super::*;
use std::sync::Arc;
use std::time::Duration;
use vigil_config::{Config, TmuxMode};
use vigil_exec::ExecutionContext;
use vigil_exec::backend::CommandBackend;
use vigil_exec::leave::Leave;
use vigil_exec::tmux::manager::TmuxManager;
use vigil_exec::tmux::{TmuxBackend, TmuxOptions, tmux_available};
use vigil_exec::transport::{Local, Transport};
use vigil_tools::ToolRegistry;
use vigil_tools::tmux_capture::CapturePane;
use vigil_tools::tmux_keys::SendKeys;
use vigil_tools::tmux_manage::TmuxManage;

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
    use vigil_config::EngineSetting;
    use vigil_exec::container::{ContainerOptions, ContainerTransport, Engine, EngineChoice};
    use vigil_exec::ssh::{SshOptions, SshTransport};

    // Every process started from here on gets the filtered environment.
    vigil_exec::env::install(vigil_exec::env::EnvPolicy::from_config(config)?);
    // Runs nobody approved (sandbox, preview) mask the configured secrets.
    vigil_exec::sandbox::set_secret_places(config.secret_places());
    // And see only their readable world, with the allow-listed environment.
    vigil_exec::sandbox::world::set_config(config.sandbox.clone());
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
    let probe = vigil_exec::process::run(cmd, None, Some(Duration::from_secs(20)), None);
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
