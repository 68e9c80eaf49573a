//! [`TmuxBackend`]: the [`Backend`] whose commands run in the managed pane.
//!
//! Commands go to [`super::run`]; files go out of band through the same
//! transport (a [`CommandBackend`]: `tokio::fs` locally, `cat` elsewhere),
//! so their content is byte-exact and never passes through the screen.
//! This module adds no behaviour of its own beyond wiring.

use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;

use super::manager::TmuxManager;
use super::{TmuxError, TmuxOptions};
use crate::backend::CommandBackend;
use crate::transport::Transport;
use crate::{Backend, ExecError, OutputFn, RunOutcome, RunRequest};
use vigil_protocol::pane::MirrorTarget;

/// Runs commands in a managed tmux pane on any transport.
pub struct TmuxBackend<T: Transport> {
    manager: Arc<TmuxManager>,
    files: CommandBackend<Arc<dyn Transport>>,
    _transport: PhantomData<fn() -> T>,
}

impl<T: Transport> TmuxBackend<T> {
    /// Start (or adopt) the private server and the default session.
    pub async fn start(transport: T, opts: TmuxOptions) -> Result<Arc<Self>, TmuxError> {
        let shared: Arc<dyn Transport> = Arc::new(transport);
        let manager = TmuxManager::start(shared.clone(), opts).await?;
        Ok(Arc::new(TmuxBackend {
            manager,
            files: CommandBackend::new(shared),
            _transport: PhantomData,
        }))
    }

    /// The handle the tmux tools and the console use.
    pub fn manager(&self) -> Arc<TmuxManager> {
        self.manager.clone()
    }

    /// How to attach, for the startup line.
    pub fn startup_notice(&self) -> String {
        self.manager.startup_notice()
    }
}

/// The pane's shell state for a trial, or why it cannot be had.
async fn pane_shell(
    mgr: &TmuxManager,
    shell: &std::path::Path,
    (session, pane): (Option<&str>, Option<&str>),
    replayed: &(dyn Fn(&str) -> bool + Sync),
    defined: &[String],
) -> Result<crate::PaneShell, String> {
    use crate::shell_replay::{ShellKind, replay};
    let kind = ShellKind::of(shell).ok_or_else(|| {
        format!(
            "vigil cannot read the state of the pane's shell `{}` (bash, zsh and dash only)",
            shell.display()
        )
    })?;
    let dumps = super::shell_state::capture(mgr, kind, session, pane, defined).await?;
    let replay = replay(kind, &dumps, replayed)
        .ok_or_else(|| "the pane's shell state could not be read for sure".to_string())?;
    Ok(crate::PaneShell { kind, replay })
}

#[async_trait]
impl<T: Transport> Backend for TmuxBackend<T> {
    fn target(&self) -> String {
        let t = self.manager.transport();
        if t.is_local() {
            format!("tmux {}", self.manager.default_session())
        } else {
            format!("tmux {} ({})", self.manager.default_session(), t.label())
        }
    }

    fn mirror(&self) -> Option<MirrorTarget> {
        Some(self.manager.mirror_target())
    }

    fn supports_detach(&self) -> bool {
        true
    }

    /// The pane's current directory (`pane_current_path`): where the
    /// shell's next command, or a sandboxed run, starts.
    /// A session vigil has not made yet is not made for the card (that
    /// would start a shell before anyone approved anything): `None`.
    async fn workdir(&self, session: Option<&str>, pane: Option<&str>) -> Option<String> {
        let name = self.manager.session_name(session);
        let known = self
            .manager
            .known_sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&name);
        if !known {
            return None;
        }
        let pane = self.manager.resolve(session, pane).await.ok()?;
        let line = pane
            .control
            .cmd(&format!(
                "display -p -t {} \"#{{pane_current_path}}\"",
                pane.id
            ))
            .await
            .ok()?
            .join("");
        let dir = line.trim();
        (!dir.is_empty()).then(|| dir.to_string())
    }

    /// The pane's shell (its executable) with the environment it started
    /// with, filtered like every tool process's, and its state now
    /// (variables, functions, aliases, options, umask), captured in the
    /// pane ([`super::shell_state`]) for the trial to replay.
    async fn trial_shell(
        &self,
        session: Option<&str>,
        pane: Option<&str>,
    ) -> Option<crate::TrialShell> {
        if !self.can_sandbox() {
            return None;
        }
        self.workdir(session, pane).await?;
        let named = pane;
        let pane = self.manager.resolve(session, pane).await.ok()?;
        let line = pane
            .control
            .cmd(&format!("display -p -t {} \"#{{pane_pid}}\"", pane.id))
            .await
            .ok()?
            .join("");
        let pid: u32 = line.trim().parse().ok()?;
        let shell = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let vars = environ.split(|b| *b == 0).filter_map(|kv| {
            use std::os::unix::ffi::OsStrExt;
            let eq = kv.iter().position(|b| *b == b'=')?;
            let (k, v) = (&kv[..eq], &kv[eq + 1..]);
            Some((
                std::ffi::OsStr::from_bytes(k).to_os_string(),
                std::ffi::OsStr::from_bytes(v).to_os_string(),
            ))
        });
        let env = crate::env::current().filter(vars);
        // The pane's variables a trial may see: the readable world's
        // environment allow-list and what vigil's own commands assigned
        // there; nothing else of the pane exists for the trial.
        let world = crate::sandbox::world::config();
        let slot = pane.slot.clone();
        let defined = slot.defined_names();
        let replayed = move |name: &str| world.env_allowed(name) || slot.assigned(name);
        let state = pane_shell(&self.manager, &shell, (session, named), &replayed, &defined).await;
        Some(crate::TrialShell {
            shell,
            env: Some(env),
            state: Some(state),
        })
    }

    /// Files go through the same transport: on this machine, paths can
    /// be resolved here (symlinks followed for the card and the rules).
    fn is_local(&self) -> bool {
        self.manager.transport().is_local()
    }

    fn can_sandbox(&self) -> bool {
        self.manager.transport().is_local() && crate::sandbox::available()
    }

    async fn run(
        &self,
        req: RunRequest,
        on_output: Option<OutputFn>,
    ) -> Result<RunOutcome, ExecError> {
        if req.sandbox {
            return super::sandboxed::run_sandboxed(&self.manager, req, on_output).await;
        }
        super::run::run_in_pane(&self.manager, req, on_output).await
    }

    fn take_notices(&self) -> Vec<String> {
        self.manager.transport().take_notices()
    }

    async fn read_file(&self, path: &str) -> Result<Vec<u8>, ExecError> {
        self.files.read_file(path).await
    }

    async fn write_file(&self, path: &str, content: &[u8]) -> Result<u64, ExecError> {
        self.files.write_file(path, content).await
    }
}
