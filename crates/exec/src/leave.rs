//! Leaving a target: what happens to vigil's managed tmux sessions and to
//! the connection when vigil ends.
//!
//! On a remote target (ssh, container) the console asks the operator (keep
//! or remove); `vigil exec` keeps them and says how to reach them. On this
//! machine the sessions this agent created go with it (their shells, and
//! the private tmux server once it has no session left) unless the
//! operator said keep. Either way the connection is closed (the ssh master
//! exits). This module never decides against the operator's word and never
//! removes a session this agent did not create (locally) or own (remote).

use std::sync::Arc;

use super::tmux::TmuxManager;
use super::transport::Transport;

use vigil_protocol::tool::OnExit;

/// The target as vigil leaves it.
#[derive(Clone)]
pub struct Leave {
    transport: Arc<dyn Transport>,
    tmux: Option<Arc<TmuxManager>>,
}

impl Leave {
    pub fn new(transport: Arc<dyn Transport>, tmux: Option<Arc<TmuxManager>>) -> Leave {
        Leave { transport, tmux }
    }

    /// The remote managed tmux layer, when there is one to ask about.
    fn remote_tmux(&self) -> Option<&Arc<TmuxManager>> {
        self.tmux.as_ref().filter(|_| !self.transport.is_local())
    }

    /// What the operator is asked about on exit (None: nothing to ask).
    pub fn question(&self) -> Option<String> {
        let mgr = self.remote_tmux()?;
        Some(format!(
            "vigil's tmux sessions on {} (e.g. {}) are still there",
            self.transport.label(),
            mgr.default_session()
        ))
    }

    /// Carry out the choice, then close the connection. Returns what the
    /// operator should read afterwards (None: nothing to say).
    pub async fn finish(&self, choice: OnExit) -> Option<String> {
        let said = match (self.remote_tmux(), choice) {
            (None, OnExit::Keep) => {
                // Kept, as the operator said: only the command directory goes.
                if let Some(mgr) = &self.tmux {
                    mgr.forget_dir().await;
                }
                None
            }
            (None, _) => {
                // A local managed layer: the sessions this agent created go
                // (and the server with its last session).
                if let Some(mgr) = &self.tmux {
                    mgr.remove_created().await;
                }
                None
            }
            (Some(mgr), OnExit::Remove) => Some(match mgr.remove_all().await {
                Ok(gone) if gone.is_empty() => format!(
                    "no managed tmux sessions were left on {}",
                    self.transport.label()
                ),
                Ok(gone) => format!(
                    "removed the managed tmux sessions {} on {}",
                    gone.join(", "),
                    self.transport.label()
                ),
                Err(e) => format!(
                    "could not remove the managed tmux sessions on {}: {e}",
                    self.transport.label()
                ),
            }),
            (Some(mgr), OnExit::Keep | OnExit::Unsaid) => {
                let sessions = mgr.managed_sessions().await.unwrap_or_default();
                mgr.forget_dir().await;
                (!sessions.is_empty()).then(|| {
                    format!(
                        "kept the managed tmux sessions {} on {}; attach there with: {}",
                        sessions.join(", "),
                        self.transport.label(),
                        mgr.attach_command()
                    )
                })
            }
        };
        self.transport.close().await;
        said
    }
}
