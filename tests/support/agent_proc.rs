//! Start the real `vigil __agent` process against a scripted model server,
//! in private runtime, data and home directories, and talk to its socket
//! as a raw client speaking JSON lines.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vigil_protocol::wire::{ClientMsg, PROTOCOL_VERSION, Role, ServerMsg};
use vigil_protocol::{AgentCommand, AgentEvent};
use vigil_scripted::{Scenario, ScriptedServer};

pub const WAIT: Duration = Duration::from_secs(30);

/// The scenario: a gated command, a flood, echoes.
pub const SCENARIO: &str = r#"
model = "e2e"
chunk_delay_ms = 0
[[rule]]
when = { role = "user", contains = "gate-me" }
times = 0
tool_calls = [{ name = "run_shell", arguments = { command = "echo gated-ran", risk = "medium", mutation = true, privesc = false, why = "e2e gate" } }]
[[rule]]
when = { role = "user", contains = "flood" }
times = 0
tool_calls = [{ name = "run_shell", arguments = { command = "seq 1 300000", risk = "low", mutation = false, privesc = false, why = "e2e flood" } }]
[[rule]]
when = { role = "tool" }
times = 0
text = "TOOL SAID: {last_tool}"
[[rule]]
when = { role = "user" }
times = 0
text = "echo: {last_user}"
"#;

/// The directories one agent (or several on the same session) share.
pub struct Dirs {
    pub tmp: tempfile::TempDir,
    /// vigil's private tmux server (None: `--no-tmux`).
    pub tmux: Option<crate::common::Server>,
    pub server: ScriptedServer,
    _rt: tokio::runtime::Runtime,
}

impl Dirs {
    pub fn new() -> Dirs {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let scenario = Scenario::from_toml_str(SCENARIO).expect("scenario");
        let server = rt
            .block_on(ScriptedServer::start(scenario))
            .expect("server");
        let tmp = tempfile::tempdir().expect("tempdir");
        for d in ["home", "data", "xdg"] {
            std::fs::create_dir_all(tmp.path().join(d)).expect("dir");
        }
        Dirs {
            tmp,
            tmux: None,
            server,
            _rt: rt,
        }
    }

    /// Like [`Dirs::new`], the agent's commands in a managed tmux pane on
    /// a private tmux server (killed on drop).
    pub fn with_tmux() -> Dirs {
        let mut dirs = Dirs::new();
        dirs.tmux = Some(crate::common::Server {
            socket: crate::common::socket(),
        });
        dirs
    }

    pub fn runtime(&self) -> PathBuf {
        self.tmp.path().join("run")
    }

    /// The data folder (`VIGIL_DATA_DIR`): sessions, logs.
    pub fn data(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    pub fn log(&self) -> PathBuf {
        self.tmp.path().join("agent.log")
    }

    /// `vigil … __agent EXTRA`, its own process group, stdout piped.
    pub fn command(&self, extra: &[&str]) -> Command {
        let mut cmd = self.vigil();
        cmd.arg("__agent")
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        cmd
    }

    /// `vigil …` with this test's folders, target and model, in its own
    /// process group, stderr appended to the log; the caller adds the
    /// subcommand.
    pub fn vigil(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .expect("log");
        cmd.env("VIGIL_RUNTIME_DIR", self.runtime())
            .env("VIGIL_DATA_DIR", self.data())
            .env("HOME", self.tmp.path().join("home"))
            .env("XDG_CONFIG_HOME", self.tmp.path().join("xdg"))
            .env("PYENV_REHASH_TIMEOUT", "1")
            .env_remove("VIGIL_LOG");
        match &self.tmux {
            Some(server) => cmd.env("VIGIL_TMUX_SOCKET", &server.socket).arg("--tmux"),
            None => cmd.arg("--no-tmux"),
        };
        cmd.args(["--base-url", &self.server.base_url(), "--model", "e2e"])
            .current_dir(self.tmp.path())
            .stderr(log)
            .process_group(0);
        cmd
    }

    /// Start an agent and read its one stdout line.
    pub fn spawn(&self, extra: &[&str]) -> (Child, serde_json::Value) {
        let mut child = self.command(extra).spawn().expect("vigil __agent");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(WAIT).expect("a ready line in time");
        let value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}; log:\n{}", self.log_text()));
        (child, value)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        if let Some(server) = self.tmux.take() {
            let name = server.socket.clone();
            drop(server);
            // SAFETY: getuid cannot fail.
            let uid = unsafe { libc::getuid() };
            let _ = std::fs::remove_file(format!("/tmp/tmux-{uid}/{name}"));
        }
    }
}

/// A running agent process, killed (its own group only) when dropped.
pub struct Agent {
    pub child: Child,
    pub id: String,
    pub socket: PathBuf,
    pub pid: u32,
}

impl Agent {
    pub fn start(dirs: &Dirs, extra: &[&str]) -> Agent {
        let (child, ready) = dirs.spawn(extra);
        let r = &ready["ready"];
        assert!(r.is_object(), "{ready}; log:\n{}", dirs.log_text());
        Agent {
            id: r["id"].as_str().expect("id").to_string(),
            socket: PathBuf::from(r["socket"].as_str().expect("socket")),
            pid: r["pid"].as_u64().expect("pid") as u32,
            child,
        }
    }

    pub fn connect(&self) -> Client {
        Client::connect(&self.socket)
    }

    /// Wait for the process to exit; its exit code.
    pub fn wait_exit(&mut self) -> Option<i32> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.code();
            }
            assert!(start.elapsed() < WAIT, "the agent did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill(&mut self) {
        // The group the test created for this child, and nothing else.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

/// A raw protocol client.
pub struct Client {
    pub reader: BufReader<UnixStream>,
    pub writer: UnixStream,
}

impl Client {
    pub fn connect(socket: &Path) -> Client {
        let stream = UnixStream::connect(socket).expect("connect");
        stream.set_read_timeout(Some(WAIT)).expect("timeout");
        Client {
            writer: stream.try_clone().expect("clone"),
            reader: BufReader::new(stream),
        }
    }

    pub fn send_raw(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).expect("write");
    }

    pub fn send(&mut self, msg: &ClientMsg) {
        let mut line = serde_json::to_string(msg).expect("encode");
        line.push('\n');
        self.send_raw(&line);
    }

    pub fn command(&mut self, command: AgentCommand) {
        self.send(&ClientMsg::Command { command });
    }

    /// The next message (None: the agent closed the connection).
    pub fn next(&mut self) -> Option<ServerMsg> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => Some(
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a server message ({e}): {line}")),
            ),
            Err(e) => panic!("read failed: {e}"),
        }
    }

    pub fn expect(&mut self) -> ServerMsg {
        self.next().expect("a message, not the end")
    }

    /// Hello, then the `Welcome`.
    pub fn hello(&mut self, role: Role, last_seq: u64, name: &str) -> ServerMsg {
        self.send(&ClientMsg::Hello {
            protocol: PROTOCOL_VERSION,
            role,
            last_seq,
            name: name.into(),
        });
        self.expect()
    }

    /// Attach: hello, welcome, the replayed events, the `Live` seq.
    pub fn attach(&mut self, role: Role, last_seq: u64, name: &str) -> Attached {
        let welcome = self.hello(role, last_seq, name);
        let ServerMsg::Welcome { you, agent, .. } = welcome else {
            panic!("no welcome: {welcome:?}");
        };
        let mut replay = Vec::new();
        loop {
            match self.expect() {
                ServerMsg::Event { seq, event } => replay.push((seq, event)),
                ServerMsg::Live { seq } => {
                    return Attached {
                        you: you.id,
                        agent,
                        replay,
                        live: seq,
                    };
                }
                other => panic!("unexpected during replay: {other:?}"),
            }
        }
    }

    /// Read events until `pred` holds; every event read, with seqs.
    pub fn until(
        &mut self,
        what: &str,
        pred: impl Fn(&AgentEvent) -> bool,
    ) -> Vec<(u64, AgentEvent)> {
        let mut seen = Vec::new();
        loop {
            match self.next() {
                Some(ServerMsg::Event { seq, event }) => {
                    let done = pred(&event);
                    seen.push((seq, event));
                    if done {
                        return seen;
                    }
                }
                Some(ServerMsg::Mirror { .. }) => {}
                Some(other) => panic!("waiting for {what}, got {other:?}"),
                None => panic!("waiting for {what}: the connection closed; saw {seen:?}"),
            }
        }
    }

    /// Read until a `Refused`, skipping events.
    pub fn refused(&mut self) -> String {
        loop {
            match self.expect() {
                ServerMsg::Refused { reason } => return reason,
                ServerMsg::Event { .. } | ServerMsg::Mirror { .. } => {}
                other => panic!("expected a refusal, got {other:?}"),
            }
        }
    }

    /// True when the agent closed the connection (skipping events).
    pub fn closed(&mut self) -> bool {
        let mut rest = Vec::new();
        let _ = self.reader.read_to_end(&mut rest);
        true
    }
}

/// What an attach returned.
pub struct Attached {
    pub you: u32,
    pub agent: vigil_protocol::wire::AgentInfo,
    pub replay: Vec<(u64, AgentEvent)>,
    pub live: u64,
}

pub fn turn_finished(e: &AgentEvent) -> bool {
    matches!(e, AgentEvent::TurnFinished { .. })
}

/// Poll `f` until it gives Some, for at most [`WAIT`].
pub fn eventually<T>(mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    while start.elapsed() < WAIT {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}
