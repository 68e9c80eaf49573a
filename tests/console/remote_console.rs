//! The console on remote targets, end to end: the real binary inside a
//! detached tmux session, a real sshd on 127.0.0.1 or a real podman
//! container whose tmux runs vigil's managed pane (and the console mirrors
//! it). A killed ControlMaster comes back on the next
//! command and the status bar says so; quitting asks whether to keep or
//! remove the remote managed sessions, and the answer is carried out (seen
//! with tmux on the remote socket, over ssh); the master is closed either
//! way.

use super::common;

use std::process::Command;
use std::time::Duration;

use common::podman::{store, tmux_container};
use common::sshd::Sshd;
use common::{Tmux, mirror_region, vigil_bin};
use vigil_scripted::{Scenario, ScriptedServer};

const WAIT: Duration = Duration::from_secs(40);

const SCENARIO: &str = r#"
[[rule]]
when = { role = "user", contains = "run" }
times = 0
text = "Running."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "echo ran-$((40+2))"
risk = "low"
mutation = false
privesc = false
why = "test"

[[rule]]
when = { role = "tool" }
times = 0
text = "Done."
"#;

/// Pids of ssh ControlMasters vigil process `vigil_pid` started (their
/// control socket lives in `vigil-ssh-<pid>-…`).
fn masters(vigil_pid: &str) -> Vec<i32> {
    let needle = format!("vigil-ssh-{vigil_pid}-");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains("ControlMaster=yes") && text.contains(&needle) {
            found.push(pid);
        }
    }
    found
}

/// `tmux -L socket list-sessions` run on the remote through a fresh ssh.
fn remote_sessions(s: &Sshd, socket: &str) -> String {
    let mut cmd = Command::new("ssh");
    cmd.arg("-i")
        .arg(&s.client_key)
        .args(["-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"])
        .args(["-p", &s.port.to_string()]);
    for o in s.trust_options() {
        cmd.args(["-o", &o]);
    }
    let out = cmd
        .arg(format!("{}@127.0.0.1", s.user))
        .arg(format!(
            "tmux -L {socket} list-sessions -F '#{{session_name}}' 2>&1"
        ))
        .output()
        .expect("ssh runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

struct Run {
    tmux: Tmux,
    /// The agent process (it owns the ssh connection).
    pid: String,
    /// The data folder, whose logs are printed when the test fails.
    data: std::path::PathBuf,
}

impl Drop for Run {
    /// A failure mid-run prints the end of vigil's logs (debug level), so a
    /// rare hang says where it waited.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for entry in std::fs::read_dir(&self.data)
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "log") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(80)..].join("\n");
                eprintln!("--- {} (last 80 lines)\n{tail}", path.display());
            }
        }
    }
}

/// Where the console runs its commands.
struct On {
    /// The config file's text.
    config: String,
    /// `--ssh TARGET` or `--container NAME`.
    flag: &'static str,
    target: String,
    /// How the status bar names the managed pane's target.
    shown: &'static str,
}

fn on_ssh(s: &Sshd) -> On {
    On {
        config: s.config_toml(&s.client_key),
        flag: "--ssh",
        target: s.target(),
        shown: "on tmux vigil-agent (ssh",
    }
}

/// Start the console; returns once the first command ran in the remote
/// managed pane.
fn start(on: &On, url: &str, socket: &str, data: &std::path::Path, tag: &str) -> Run {
    let config = data.join("config.toml");
    std::fs::write(&config, &on.config).unwrap();
    let tmux = Tmux::new(tag);
    let cmd = format!(
        "exec env -u VIGIL_API_KEY VIGIL_LOG=vigil=debug VIGIL_DATA_DIR={} VIGIL_TMUX_SOCKET={socket} \
         VIGIL_BASE_URL={url} VIGIL_MODEL=test {} --config {} {} {} --auto-approve",
        data.display(),
        vigil_bin().display(),
        config.display(),
        on.flag,
        on.target
    );
    tmux.start("c", 150, 40, &cmd);
    tmux.wait_text("c", on.shown, WAIT);
    let agents = common::agent_pids(tmux.runtime_dir());
    assert_eq!(agents.len(), 1, "one agent process: {agents:?}");
    let pid = agents[0].to_string();
    tmux.type_text("c", "please run it");
    tmux.keys("c", &["Enter"]);
    tmux.wait_text("c", "ran-42", WAIT);
    Run {
        tmux,
        pid,
        data: data.to_path_buf(),
    }
}

fn open_quit_question(run: &Run) {
    // Leave the input box (Esc when idle), then the quit key.
    run.tmux
        .wait_for("c", "the turn to end", WAIT, |s| s.contains("│ idle"));
    run.tmux.keys("c", &["Escape"]);
    std::thread::sleep(Duration::from_millis(200));
    run.tmux.keys("c", &["q"]);
    run.tmux.wait_text("c", "leave this console", WAIT);
    run.tmux.keys("c", &["s"]);
    run.tmux
        .wait_text("c", "k keep (Enter) · r remove · Esc back", WAIT);
}

/// The pane's screen and scrollback (the console's last words are printed
/// after it left the alternate screen).
fn history(tmux: &Tmux) -> String {
    let out = tmux
        .cmd()
        .args(["capture-pane", "-p", "-J", "-S", "-", "-t", "c"])
        .output()
        .expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn no_masters(pid: &str) {
    let left = common::eventually(Duration::from_secs(60), || {
        masters(pid).is_empty().then_some(())
    });
    assert!(
        left.is_some(),
        "ssh master still running: {:?}",
        masters(pid)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn quitting_asks_to_keep_or_remove_remote_sessions_and_notices_show() {
    let s = Sshd::start().unwrap_or_else(|why| panic!("cannot start a real sshd: {why}"));
    let server = ScriptedServer::start(Scenario::from_toml_str(SCENARIO).unwrap())
        .await
        .unwrap();
    let url = server.base_url();
    tokio::task::spawn_blocking(move || {
        // Remove: the master is killed first and comes back with a notice in
        // the status bar; then q → r removes the remote session.
        let remote = common::Server {
            socket: common::socket(),
        };
        let data = tempfile::tempdir().unwrap();
        let run = start(&on_ssh(&s), &url, &remote.socket, data.path(), "rm");
        assert!(
            remote_sessions(&s, &remote.socket)
                .lines()
                .any(|l| l == "vigil-agent")
        );
        let old = masters(&run.pid);
        assert_eq!(old.len(), 1, "one master: {old:?}");
        // SAFETY: kill(2) on the master this vigil started.
        unsafe { libc::kill(old[0], libc::SIGKILL) };
        no_masters(&run.pid);
        run.tmux.type_text("c", "run again");
        run.tmux.keys("c", &["Enter"]);
        let screen = run.tmux.wait_text("c", "⚠ the ssh connection to", WAIT);
        assert!(screen.contains("re-established"), "{screen}");
        assert_eq!(
            screen.matches("ok exit 0").count(),
            2,
            "the second command ran:\n{screen}"
        );
        open_quit_question(&run);
        run.tmux.keys("c", &["r"]);
        run.tmux.wait_exit("c", WAIT);
        let left = remote_sessions(&s, &remote.socket);
        assert!(!left.lines().any(|l| l == "vigil-agent"), "{left}");
        no_masters(&run.pid);
        let screen = history(&run.tmux);
        assert!(
            screen.contains("removed the managed tmux sessions vigil-agent"),
            "{screen}"
        );

        // Keep: Esc goes back to the console first; then q → k keeps it.
        let remote = common::Server {
            socket: common::socket(),
        };
        let data = tempfile::tempdir().unwrap();
        let run = start(&on_ssh(&s), &url, &remote.socket, data.path(), "keep");
        open_quit_question(&run);
        run.tmux.keys("c", &["Escape"]);
        run.tmux.wait_for("c", "the question to close", WAIT, |s| {
            !s.contains("r remove · Esc back")
        });
        assert_eq!(run.tmux.display("c", "#{pane_dead}"), "0");
        open_quit_question(&run);
        run.tmux.keys("c", &["k"]);
        run.tmux.wait_exit("c", WAIT);
        let left = remote_sessions(&s, &remote.socket);
        assert!(left.lines().any(|l| l == "vigil-agent"), "{left}");
        no_masters(&run.pid);
        let screen = history(&run.tmux);
        assert!(
            screen.contains("kept the managed tmux sessions vigil-agent"),
            "{screen}"
        );
    })
    .await
    .unwrap();
}

/// `--container` with tmux inside (detected): the command runs in the
/// container's managed pane, the console's mirror shows that pane, and
/// quitting with "remove" removes the session inside the container.
#[tokio::test(flavor = "multi_thread")]
async fn the_console_mirrors_the_managed_pane_inside_a_container() {
    let c = tmux_container("console");
    let server = ScriptedServer::start(Scenario::from_toml_str(SCENARIO).unwrap())
        .await
        .unwrap();
    let url = server.base_url();
    tokio::task::spawn_blocking(move || {
        let args: Vec<String> = store()
            .global_args()
            .iter()
            .map(|a| format!("{a:?}"))
            .collect();
        let on = On {
            config: format!(
                "[container]\nengine = \"podman\"\nengine_args = [{}]\n",
                args.join(", ")
            ),
            flag: "--container",
            target: c.name.clone(),
            shown: "on tmux vigil-agent (podman:",
        };
        // The managed tmux server lives inside the container.
        let socket = common::socket();
        let data = tempfile::tempdir().unwrap();
        let run = start(&on, &url, &socket, data.path(), "ctr");
        run.tmux
            .wait_for("c", "the command's output in the mirror", WAIT, |s| {
                mirror_region(s).lines().any(|l| l.trim() == "ran-42")
            });
        let inside = |socket: &str| {
            let out = store()
                .podman()
                .args(["exec", &c.name, "tmux", "-L", socket])
                .args(["list-sessions", "-F", "#{session_name}"])
                .output()
                .expect("podman runs");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        assert!(inside(&socket).lines().any(|l| l == "vigil-agent"));
        open_quit_question(&run);
        run.tmux.keys("c", &["r"]);
        run.tmux.wait_exit("c", WAIT);
        let left = inside(&socket);
        assert!(!left.lines().any(|l| l == "vigil-agent"), "{left}");
    })
    .await
    .unwrap();
}
