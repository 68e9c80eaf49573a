//! Managed tmux: the agent's terminal on a private tmux server, written once
//! on top of any [`Transport`](crate::transport::Transport) (local
//! now; ssh and `podman exec` reuse it unchanged).
//!
//! - [`TmuxBackend`] is the [`Backend`](crate::Backend) that runs
//!   commands in the managed pane with exact output, exit codes and stdout
//!   apart from stderr (see [`run`]).
//! - [`TmuxManager`] owns sessions and panes (ownership options, limits,
//!   recreation) and serves the tmux tools and the console's mirror.
//! - [`guard_shared_shell`] refuses commands that would break the shared
//!   shell.
//!
//! Every tmux invocation goes through the transport and names the private
//! socket (`-L`/`-S`): this module must never talk to the user's default
//! tmux server, never kill anything it does not own, and never find
//! command output by scraping the screen.

pub mod backend;
pub mod claim;
pub mod control;
pub mod feed;
pub mod fetch;
pub mod guard;
pub mod inert;
pub mod leftovers;
pub mod manager;
pub mod names;
pub mod ops;
mod probe;
pub mod run;
pub mod sandboxed;
pub mod script;
pub mod shell_state;
pub mod slot;
pub mod stream;

pub use backend::TmuxBackend;
pub use feed::spawn_mirror_feed;
pub use guard::guard_shared_shell;
pub use manager::{SHARED, TmuxManager};

use crate::ExecError;
use vigil_protocol::pane::MirrorTarget;

/// How the managed tmux layer is set up.
#[derive(Debug, Clone, PartialEq)]
pub struct TmuxOptions {
    /// Private server: a `-L` socket name, or a path (`-S`) when it holds a `/`.
    pub socket: String,
    /// Default session name (`--tmux [session]`); canonicalised to the
    /// owner prefix. `None`: `vigil-<agent>`.
    pub session: Option<String>,
    /// Owner of the managed sessions.
    pub agent_name: String,
    /// `[tmux].max_sessions`, `[tmux].max_panes` (per session, incl. shared).
    pub max_sessions: usize,
    pub max_panes: usize,
    /// Program for new panes (`None`: tmux's default shell).
    pub shell: Option<String>,
    /// Size of new windows.
    pub width: u16,
    pub height: u16,
}

impl Default for TmuxOptions {
    fn default() -> Self {
        TmuxOptions {
            socket: "vigil".into(),
            session: None,
            agent_name: "agent".into(),
            max_sessions: 4,
            max_panes: 8,
            shell: None,
            width: 200,
            height: 50,
        }
    }
}

/// Why a managed-tmux operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TmuxError {
    /// The selected managed session or pane does not exist.
    #[error("{0}")]
    Missing(String),
    /// Not allowed (ownership, limits, protected pane).
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Exec(#[from] ExecError),
}

/// Whether a usable `tmux` is installed on this machine.
pub fn tmux_available() -> bool {
    std::process::Command::new("tmux")
        .arg("-V")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The mirror's snapshot of a pane on this machine, with colours
/// (`capture-pane -e -p`). Empty when the pane is gone.
pub async fn capture_for_mirror(target: &MirrorTarget) -> String {
    let mut cmd = tokio::process::Command::new("tmux");
    cmd.args(&target.server_args)
        .args(["capture-pane", "-e", "-p", "-t", &target.pane])
        .env_remove("TMUX")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    match tokio::time::timeout(std::time::Duration::from_secs(5), cmd.output()).await {
        Ok(Ok(out)) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        _ => String::new(),
    }
}
