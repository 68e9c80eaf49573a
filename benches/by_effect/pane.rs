//! The by_effect bench's managed tmux pane: a private tmux server (its own
//! `-L` socket, never the user's), a pane whose shell starts in the bench's
//! repository, and a way to put the pane back there after a command that
//! ran for real in it (`cd sub` runs in the pane under by_effect). The
//! server is killed and its socket removed when the guard drops, also on
//! panic.

use std::path::{Path, PathBuf};

use vigil::exec::ExecutionContext;
use vigil::exec::tmux::{TmuxBackend, TmuxOptions};
use vigil::exec::transport::Local;
use vigil::tools::shell::{RunShell, ShellConfig};
use vigil::tools::{Tool, ToolContext};

/// Kills the private tmux server and removes its socket when dropped.
pub struct Server {
    socket: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .env_remove("TMUX")
            .output();
        let base = std::env::var_os("TMUX_TMPDIR").map_or_else(|| "/tmp".into(), PathBuf::from);
        // SAFETY: getuid(2) cannot fail.
        let uid = unsafe { libc::getuid() };
        let _ = std::fs::remove_file(base.join(format!("tmux-{uid}")).join(&self.socket));
    }
}

/// A managed pane in `repo` and the tool that puts it back there.
pub struct Pane {
    pub context: ExecutionContext,
    reset: RunShell,
    repo: PathBuf,
    /// Dropped last: the server goes once nothing uses it.
    _server: Server,
}

/// bash without start-up files, with this process's `PATH` and `HOME`
/// (the tools an agent's pane would have: cargo, python through its
/// shims), nothing else of its environment.
fn shell() -> String {
    let quote = |s: String| format!("'{}'", s.replace('\'', r"'\''"));
    let path = quote(std::env::var("PATH").unwrap_or_default());
    let home = quote(std::env::var("HOME").unwrap_or_else(|_| "/tmp".into()));
    format!("env -i PATH={path} HOME={home} TERM=screen PS1='$ ' bash --norc --noprofile")
}

impl Pane {
    /// Starts a private tmux server whose pane's shell starts in `repo`
    /// (the process's current directory must be `repo`).
    pub async fn start(repo: &Path, tag: &str) -> Pane {
        assert_eq!(std::env::current_dir().expect("cwd"), repo);
        let socket = format!("vigil-bench-by-effect-{}-{tag}", std::process::id());
        let server = Server {
            socket: socket.clone(),
        };
        let backend = TmuxBackend::start(
            Local,
            TmuxOptions {
                socket,
                agent_name: "bench".into(),
                shell: Some(shell()),
                ..Default::default()
            },
        )
        .await
        .expect("tmux backend");
        let context = ExecutionContext::from_arc(backend);
        let reset = RunShell::new(
            context.clone(),
            ShellConfig {
                confirm: false,
                ..Default::default()
            },
        );
        let pane = Pane {
            context,
            reset,
            repo: repo.to_path_buf(),
            _server: server,
        };
        let out = pane.run("pwd").await;
        assert!(
            out.contains(&format!("{}\\n", repo.display())),
            "the pane starts in the repository: {out}"
        );
        pane
    }

    async fn run(&self, command: &str) -> String {
        let args = json_args(command);
        let args = vigil::tools::call_as_sent(&self.reset, &args);
        let out = self
            .reset
            .execute(&args, &ToolContext::default())
            .await
            .expect("run in the pane");
        out.result.to_string()
    }

    /// Back to the repository, after a command that ran in the pane.
    pub async fn reset(&self) {
        let q = self.repo.display().to_string().replace('\'', r"'\''");
        self.run(&format!("cd '{q}'")).await;
    }
}

fn json_args(command: &str) -> String {
    serde_json::json!({
        "command": command, "risk": "low", "mutation": false, "privesc": false,
        "why": "bench: the pane back in the repository",
    })
    .to_string()
}
