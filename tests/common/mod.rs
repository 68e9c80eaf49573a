//! Shared helpers for the managed-tmux tests: a private tmux server per
//! test (unique `-L` socket, killed on drop) and pane shells with a clean
//! environment. Never touches the user's default tmux server.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use vigil::exec::tmux::{TmuxBackend, TmuxOptions};
use vigil::exec::transport::Local;

static N: AtomicUsize = AtomicUsize::new(0);

/// Kills its private tmux server when dropped.
pub struct Server {
    pub socket: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .env_remove("TMUX")
            .output();
    }
}

impl Server {
    /// Run a tmux command on this private server.
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// A pane shell command with a clean environment.
pub fn shell_cmd(shell: &str) -> String {
    let prog = match shell {
        "bash" => "bash --norc --noprofile",
        "zsh" => "zsh -f",
        other => other,
    };
    format!("env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp TERM=screen PS1='$ ' {prog}")
}

pub fn socket() -> String {
    format!(
        "vigil-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

pub fn options(socket: &str, shell: &str) -> TmuxOptions {
    TmuxOptions {
        socket: socket.to_string(),
        agent_name: "test".into(),
        shell: Some(shell_cmd(shell)),
        max_sessions: 3,
        max_panes: 3,
        width: 120,
        height: 40,
        ..Default::default()
    }
}

pub async fn start(shell: &str) -> (Arc<TmuxBackend<Local>>, Server) {
    let socket = socket();
    let server = Server {
        socket: socket.clone(),
    };
    let backend = TmuxBackend::start(Local, options(&socket, shell))
        .await
        .expect("tmux backend starts");
    (backend, server)
}
