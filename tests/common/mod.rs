//! Helpers shared by the end-to-end tests: a private tmux server to run the
//! real binary in (send keys, read the screen), and small polling utilities.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use vigil::exec::tmux::{TmuxBackend, TmuxOptions};
use vigil::exec::transport::Local;

/// The `vigil` binary cargo built for these tests.
pub fn vigil_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vigil"))
}

/// The small kernel-sandbox helper cargo built next to `vigil`.
pub fn sandbox_helper_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vigil-sandbox"))
}

/// A tmux server on a private socket, killed on drop. Everything started
/// in it gets a private `VIGIL_RUNTIME_DIR`; the agent processes vigil
/// starts there (in their own sessions, so killing tmux does not reach
/// them) are stopped on drop too.
pub struct Tmux {
    pub socket: String,
    /// The runtime directory (agent sockets) of what runs in this server.
    pub runtime: tempfile::TempDir,
}

impl Tmux {
    pub fn new(tag: &str) -> Tmux {
        let socket = format!(
            "vigil-test-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        // vigil refuses a runtime directory others can open.
        let runtime = tempfile::Builder::new()
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .expect("runtime dir");
        Tmux { socket, runtime }
    }

    /// The `VIGIL_RUNTIME_DIR` of what runs in this server.
    pub fn runtime_dir(&self) -> &std::path::Path {
        self.runtime.path()
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L").arg(&self.socket).arg("-f").arg("/dev/null");
        // Shells started here (and by vigil inside) read the machine's
        // rc files; where those run `pyenv rehash`, a lock left by a shell
        // killed mid-rehash makes every new shell wait 60 s. Cap the wait.
        c.env("PYENV_REHASH_TIMEOUT", "1");
        c
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Start a detached session running `shell_command` in a `width`×`height` pane.
    pub fn start(&self, session: &str, width: u16, height: u16, shell_command: &str) {
        let runtime = format!("VIGIL_RUNTIME_DIR={}", self.runtime_dir().display());
        self.ok(&[
            "new-session",
            "-d",
            "-e",
            &runtime,
            "-s",
            session,
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            shell_command,
        ]);
        self.ok(&["set-option", "-t", session, "remain-on-exit", "on"]);
    }

    /// The visible screen of the session's pane.
    pub fn screen(&self, session: &str) -> String {
        self.ok(&["capture-pane", "-p", "-t", session])
    }

    pub fn keys(&self, session: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", session];
        args.extend_from_slice(keys);
        self.ok(&args);
    }

    pub fn type_text(&self, session: &str, text: &str) {
        self.ok(&["send-keys", "-t", session, "-l", "--", text]);
    }

    /// A pane format variable (`#{pane_dead}`, `#{alternate_on}`...).
    pub fn display(&self, session: &str, format: &str) -> String {
        self.ok(&["display-message", "-p", "-t", session, format])
            .trim()
            .to_string()
    }

    /// Wait until the screen satisfies `pred`; panic with the last screen if not.
    pub fn wait_for(
        &self,
        session: &str,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen(session);
            if pred(&screen) {
                return screen;
            }
            if start.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for {what}; screen was:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_text(&self, session: &str, text: &str, timeout: Duration) -> String {
        self.wait_for(session, &format!("`{text}`"), timeout, |s| s.contains(text))
    }

    /// Answer the waiting approval as an operator does: move to the
    /// approvals pane (Tab, unless its thick border says it has the
    /// keyboard), wait until it shows a card, then press `key`.
    pub fn answer(&self, session: &str, key: &str) {
        self.to_approvals(session);
        self.keys(session, &[key]);
    }

    /// Move to the approvals pane (Tab) unless it has the keyboard; wait
    /// until it shows, focused, a card. Decided on a settled screen (a
    /// frame half written could hide the thick border), and converging:
    /// past it (the mirror) Shift-Tab comes back.
    pub fn to_approvals(&self, session: &str) {
        let focused = |s: &str| s.contains("┏ approvals (");
        for _ in 0..6 {
            let screen = self.settled(session);
            if focused(&screen) {
                return;
            }
            let key = if screen.contains("┏ mirror") {
                "BTab"
            } else {
                "Tab"
            };
            self.keys(session, &[key]);
            self.wait_for(session, "the focus to move", APPROVE_WAIT, |s| {
                thick(s) != thick(&screen)
            });
        }
        self.wait_for(session, "the approvals pane focused", APPROVE_WAIT, focused);
    }

    /// Put the keyboard in the message box (`i`) unless it is there
    /// (decided on a settled screen: `i` in the box would be text).
    pub fn to_message_box(&self, session: &str) {
        let focused = |s: &str| s.contains("┏ message");
        if !focused(&self.settled(session)) {
            self.keys(session, &["i"]);
        }
        self.wait_for(session, "the message box focused", APPROVE_WAIT, focused);
    }

    /// The screen once two captures in a row agree (no frame half written).
    pub fn settled(&self, session: &str) -> String {
        let mut last = self.screen(session);
        let start = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let now = self.screen(session);
            if now == last || start.elapsed() > APPROVE_WAIT {
                return now;
            }
            last = now;
        }
    }
}

/// The titles of the thick-bordered (focused) panes on a screen.
fn thick(screen: &str) -> Vec<String> {
    screen
        .match_indices("┏ ")
        .map(|(i, _)| screen[i..].chars().take(12).collect())
        .collect()
}

/// How long a focus change may take to show.
const APPROVE_WAIT: Duration = Duration::from_secs(30);

impl Tmux {
    /// Wait until the pane's process has exited; returns `status/signal`.
    /// tmux 3.3 sometimes marks the pane dead without reaping the child (it
    /// stays a zombie), so the status is then read from /proc like waitpid
    /// would report it.
    pub fn wait_exit(&self, session: &str, timeout: Duration) -> String {
        let pid = self.display(session, "#{pane_pid}");
        let start = Instant::now();
        loop {
            let state = self.display(
                session,
                "#{pane_dead}:#{pane_dead_status}/#{pane_dead_signal}",
            );
            if let Some(rest) = state.strip_prefix("1:") {
                if rest != "/" {
                    return rest.to_string();
                }
                if let Some(status) = zombie_status(&pid) {
                    return status;
                }
            }
            if start.elapsed() > timeout {
                panic!(
                    "process did not exit within {timeout:?} (state {state}); screen:\n{}",
                    self.screen(session)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// True while `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    !stat.is_empty() && !state.starts_with('Z') && !state.starts_with('X')
}

/// Run `req` on `backend`, wait until its stdout has printed `count`
/// process ids, then cancel the call the way the agent does (drop its
/// future) and return those ids.
pub async fn cancel_after_pids(
    backend: &dyn vigil::exec::Backend,
    req: vigil::exec::RunRequest,
    count: usize,
) -> Vec<i32> {
    use vigil::exec::OutputFn;
    use vigil_protocol::tool::OutputStream;
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let sink = seen.clone();
    let on_output: OutputFn = Arc::new(move |stream, text: &str| {
        if stream == OutputStream::Stdout {
            sink.lock().unwrap().push_str(text);
        }
    });
    let pids = || -> Vec<i32> {
        let text = seen.lock().unwrap();
        text.split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect()
    };
    {
        let call = backend.run(req, Some(on_output));
        tokio::pin!(call);
        let deadline = Instant::now() + Duration::from_secs(60);
        while pids().len() < count && Instant::now() < deadline {
            tokio::select! {
                ended = &mut call => panic!("the call ended before it was cancelled: {ended:?}"),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
    } // The call's future is dropped here: cancelled.
    pids()
}

/// Assert that every pid in `pids` is gone within 30 s (`what` says why it
/// should be).
pub fn assert_all_gone(pids: &[i32], what: &str) {
    for &pid in pids {
        assert!(
            gone_within(pid, Duration::from_secs(30)),
            "pid {pid} survived {what}"
        );
    }
}

/// Through `run_shell` on `ctx`: a call whose context says nobody was
/// asked for it (`ToolContext::sandboxed`) cannot create a file, and the
/// same call approved by the operator can.
pub async fn run_shell_sandboxes_only_unasked_calls(ctx: vigil::exec::ExecutionContext) {
    use vigil::tools::shell::{RunShell, ShellConfig};
    use vigil::tools::{Tool, ToolContext};
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let tool = RunShell::new(ctx, ShellConfig::default());
    let args = run_shell_args(&format!("touch {}; echo touch=$?", marker.display()));

    let mut unasked = ToolContext::new("t1");
    unasked.sandboxed = true;
    let out = tool
        .execute(&vigil::tools::call_as_sent(&tool, &args), &unasked)
        .await
        .unwrap();
    assert_eq!(out.result["stdout"], "touch=1\n", "{:?}", out.result);
    let stderr = out.result["stderr"].as_str().unwrap_or_default();
    assert!(stderr.contains("denied"), "{:?}", out.result);
    assert!(!marker.exists(), "the unasked call wrote a file");

    // The same call approved by the operator runs as today.
    let out = tool
        .execute(
            &vigil::tools::call_as_sent(&tool, &args),
            &ToolContext::new("t2"),
        )
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(0), "{:?}", out.result);
    assert!(marker.exists());
}

/// Whether `pid` is gone (or a zombie) within `timeout`.
pub fn gone_within(pid: i32, timeout: Duration) -> bool {
    eventually(timeout, || (!alive(pid)).then_some(())).is_some()
}

/// `run_shell` arguments for `command` (what the model would send).
pub fn run_shell_args(command: &str) -> String {
    serde_json::json!({
        "command": command, "risk": "low", "mutation": false, "privesc": false, "why": "test"
    })
    .to_string()
}

/// `status/signal` of an exited, unreaped process, from /proc/PID/stat.
fn zombie_status(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // fields[0] is the state (field 3); exit_code is field 52.
    if fields.first() != Some(&"Z") {
        return None;
    }
    let code: i32 = fields.get(49)?.parse().ok()?;
    Some(if code & 0x7f == 0 {
        format!("{}/", (code >> 8) & 0xff)
    } else {
        format!("/{}", code & 0x7f)
    })
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
        remove_tmux_socket(&self.socket);
        stop_agents(self.runtime_dir());
    }
}

/// Remove the socket of the tmux server `-L name` (a server that exits
/// leaves its socket file in tmux's socket directory).
pub fn remove_tmux_socket(name: &str) {
    let base = std::env::var_os("TMUX_TMPDIR").map_or_else(|| "/tmp".into(), PathBuf::from);
    // SAFETY: getuid(2) cannot fail.
    let uid = unsafe { libc::getuid() };
    let _ = std::fs::remove_file(base.join(format!("tmux-{uid}")).join(name));
}

/// The vigil agent processes started with `VIGIL_RUNTIME_DIR=dir`, found
/// in /proc by their environment.
pub fn agent_pids(dir: &std::path::Path) -> Vec<i32> {
    let needle = format!("VIGIL_RUNTIME_DIR={}", dir.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            cmdline.split(|b| *b == 0).any(|a| a == b"__agent")
                && environ.split(|b| *b == 0).any(|v| v == needle.as_bytes())
                && alive(*pid)
        })
        .collect()
}

/// Stop the agents of `dir`: SIGTERM to each one's process group (an agent
/// leads its own session: the group is the agent and what it started),
/// SIGKILL to what is left after 5 s.
pub fn stop_agents(dir: &std::path::Path) {
    let pids = agent_pids(dir);
    for &pid in &pids {
        // SAFETY: kill(2) on a process group a test's vigil started.
        unsafe { libc::kill(-pid, libc::SIGTERM) };
    }
    for &pid in &pids {
        if !gone_within(pid, Duration::from_secs(5)) {
            // SAFETY: as above.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
    }
}

/// The text inside the mirror pane's border on a console screen (empty when
/// there is no mirror pane on it).
pub fn mirror_region(screen: &str) -> String {
    let lines: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let Some((top, col)) = lines.iter().enumerate().find_map(|(i, l)| {
        let s: String = l.iter().collect();
        let at = s.find(" mirror ")?;
        let col = s[..at].chars().count().checked_sub(1)?;
        matches!(l.get(col), Some('┌' | '┏')).then_some((i, col))
    }) else {
        return String::new();
    };
    let mut out = String::new();
    for l in &lines[top + 1..] {
        if matches!(l.get(col), Some('└' | '┗')) {
            break;
        }
        let inner: String = l.iter().skip(col + 1).collect();
        out.push_str(inner.trim_end_matches(['│', '┃']).trim_end());
        out.push('\n');
    }
    out
}

/// Poll `f` until it returns Some or the timeout passes.
pub fn eventually<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---- Managed-tmux backend helpers -------------------------------------

static N: AtomicUsize = AtomicUsize::new(0);

/// Kills its private tmux server when dropped, and removes the command
/// folders vigil made for it (`/tmp/vigil-<socket>-*`: a local target's goes
/// with its manager, but a target reached through ssh or a container keeps
/// its own until vigil leaves it, which a test does not do).
pub struct Server {
    pub socket: String,
}

/// Processes whose command line (arguments joined by NUL) holds `needle`.
pub fn pids_with(needle: &[u8]) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            cmdline
                .windows(needle.len())
                .any(|w| w == needle)
                .then_some(pid)
        })
        .collect()
}

/// End every process started with `-L socket` (a tmux server or client of
/// this test process's own private socket: nothing else carries its name),
/// by signal: a server whose socket file is gone answers no `kill-server`.
/// Returns how many there were.
pub fn kill_by_socket(socket: &str) -> usize {
    let pids = pids_with(format!("-L\0{socket}\0").as_bytes());
    for &pid in &pids {
        // SAFETY: kill(2) of a process naming this test's private socket.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    pids.len()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .env_remove("TMUX")
            .output();
        kill_by_socket(&self.socket);
        remove_tmux_socket(&self.socket);
        let prefix = format!("vigil-{}-", self.socket);
        let tmp = [std::path::PathBuf::from("/tmp"), std::env::temp_dir()];
        for entry in tmp.iter().flat_map(std::fs::read_dir).flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
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

    /// Run `args` until its output satisfies `ready` (60 s at most, then
    /// fail showing the last output); returns that output. A test waits
    /// for what it needs to see, never for a fixed time.
    /// (Async: the work it waits for may run on the same runtime.)
    pub async fn until(&self, args: &[&str], what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let last = self.tmux(args);
            if ready(&last) {
                return last;
            }
            assert!(
                Instant::now() < deadline,
                "{what} never came; `tmux {}` said:\n{last}",
                args.join(" ")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A pane shell command with a clean environment.
pub fn shell_cmd(shell: &str) -> String {
    let prog = match shell {
        "bash" => "bash --norc --noprofile",
        "zsh" => "zsh -f",
        other => other,
    };
    // No history file: an interactive bash would leave /tmp/.bash_history.
    format!(
        "env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp HISTFILE=/dev/null TERM=screen \
         PS1='$ ' {prog}"
    )
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
pub mod contain;
pub mod demo;
pub mod podman;
pub mod sshd;

/// Collect agent events until `stop` matches (inclusive); fail, showing the
/// events seen, after 60 s.
pub async fn until(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<vigil_protocol::AgentEvent>,
    stop: impl Fn(&vigil_protocol::AgentEvent) -> bool,
) -> Vec<vigil_protocol::AgentEvent> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let ev = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out; events so far: {seen:#?}"))
            .expect("agent alive");
        let done = stop(&ev);
        seen.push(ev);
        if done {
            return seen;
        }
    }
}
