//! Start the real `vigil` console in tmux against a scripted model server
//! with a test scenario, in its own data, config and working directories.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use crate::common::{self, Tmux, vigil_bin};
use vigil_scripted::{Scenario, ScriptedServer};

pub const WAIT: Duration = Duration::from_secs(20);

/// The scenario every console test shares.
pub const SCENARIO: &str = r#"
model = "e2e"
chunk_delay_ms = 0

[[rule]]
when = { role = "user", contains = "gate-me" }
times = 0
text = "I will run a gated command."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "touch gated-ran && echo original-cmd"
risk = "medium"
mutation = true
privesc = false
why = "e2e gate"

[[rule]]
when = { role = "user", contains = "flood" }
times = 0
text = "Flooding."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "seq 1 20000"
risk = "low"
mutation = false
privesc = false
why = "e2e flood"

[[rule]]
when = { role = "user", contains = "hang" }
times = 0
text = "Sleeping."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "sleep 30"
risk = "low"
mutation = false
privesc = false
why = "e2e hang"

[[rule]]
when = { role = "user", contains = "markdown" }
times = 0
text = """
Plan:
- **first** step with `ls -l`
- second step
```sh
echo in-a-code-block
```"""

[[rule]]
when = { role = "tool" }
times = 0
text = "TOOL SAID: {last_tool}"

[[rule]]
when = { role = "user" }
times = 0
text = "echo: {last_user}"
"#;

pub struct Console {
    pub tmux: Tmux,
    /// vigil's own managed tmux server (`VIGIL_TMUX_SOCKET`).
    pub agent_tmux: common::Server,
    pub session: String,
    pub dir: tempfile::TempDir,
    pub server: ScriptedServer,
    /// The shell command that starts vigil, without the extra args.
    launch: String,
    _rt: tokio::runtime::Runtime,
}

impl Console {
    /// Start with extra `[console]` / `[agent]` config lines and extra args.
    pub fn start(tag: &str, config: &str, args: &str, env: &str) -> Console {
        Console::start_scenario(tag, SCENARIO, config, args, env)
    }

    /// Like [`Console::start`] with another model scenario.
    pub fn start_scenario(
        tag: &str,
        scenario: &str,
        config: &str,
        args: &str,
        env: &str,
    ) -> Console {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let scenario = Scenario::from_toml_str(scenario).expect("scenario");
        let server = rt
            .block_on(ScriptedServer::start(scenario))
            .expect("server");
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = dir.path().join("config.toml");
        std::fs::write(&cfg, config).expect("write config");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).expect("work dir");
        // vigil's own managed tmux server, private to this test.
        let agent_tmux = common::Server {
            socket: common::socket(),
        };
        let launch = format!(
            "cd {work} && env -u NO_COLOR TERM=xterm-256color VIGIL_DATA_DIR={data} \
             VIGIL_TMUX_SOCKET={sock} XDG_CONFIG_HOME={xdg} {env} {bin} --config {cfg} \
             --base-url {url} --model e2e",
            sock = agent_tmux.socket,
            work = work.display(),
            data = dir.path().join("data").display(),
            xdg = dir.path().join("xdg").display(),
            bin = vigil_bin().display(),
            cfg = cfg.display(),
            url = server.base_url(),
        );
        let tmux = Tmux::new(tag);
        let session = "console".to_string();
        tmux.start(&session, 100, 30, &format!("{launch} {args}"));
        tmux.wait_text(&session, "e2e", WAIT);
        Console {
            tmux,
            agent_tmux,
            session,
            dir,
            server,
            launch,
            _rt: rt,
        }
    }

    /// The pid of the running vigil: the pane's process or the first of
    /// its descendants running the vigil binary.
    pub fn vigil_pid(&self) -> i32 {
        let bin = vigil_bin().canonicalize().expect("vigil binary");
        let pane: i32 = self
            .tmux
            .display(&self.session, "#{pane_pid}")
            .parse()
            .expect("pane pid");
        let mut todo = vec![pane];
        while let Some(pid) = todo.pop() {
            if std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == bin) {
                return pid;
            }
            todo.extend(children(pid));
        }
        panic!("no vigil process under pane process {pane}");
    }

    /// Start vigil again in the same pane, data, config and working
    /// directories, with other extra args (e.g. `resume --last`). The pane's
    /// previous process is killed if it still runs.
    pub fn restart(&self, args: &str) {
        let cmd = format!("{} {args}", self.launch);
        self.tmux
            .cmd()
            .args(["respawn-pane", "-k", "-t", &self.session, &cmd])
            .status()
            .expect("respawn-pane");
        self.tmux.wait_text(&self.session, "e2e", WAIT);
    }

    /// Start another console in this tmux server (same data, config,
    /// working and runtime directories), in session `session`, with `args`
    /// (e.g. `attach --last --watch`).
    pub fn open(&self, session: &str, args: &str) {
        self.tmux
            .start(session, 100, 30, &format!("{} {args}", self.launch));
    }

    /// The agent processes this test's consoles started.
    pub fn agent_pids(&self) -> Vec<i32> {
        common::agent_pids(self.tmux.runtime_dir())
    }

    /// `vigil ARGS` run here (not in tmux), with this test's directories:
    /// `ps`, `stop`. Returns the exit code, stdout and stderr.
    pub fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = std::process::Command::new(vigil_bin())
            .current_dir(self.work())
            .env("VIGIL_DATA_DIR", self.dir.path().join("data"))
            .env("VIGIL_RUNTIME_DIR", self.tmux.runtime_dir())
            .env("VIGIL_TMUX_SOCKET", &self.agent_tmux.socket)
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg"))
            .arg("--config")
            .arg(self.dir.path().join("config.toml"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("vigil ran");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `vigil ps --json`: the running agents' ids, oldest first.
    pub fn live_ids(&self) -> Vec<String> {
        let (code, out, err) = self.run(&["ps", "--json"]);
        assert_eq!(code, Some(0), "vigil ps failed: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("ps --json");
        v["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .map(|a| a["id"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    pub fn keys(&self, keys: &[&str]) {
        self.tmux.keys(&self.session, keys);
    }

    pub fn type_text(&self, text: &str) {
        self.tmux.type_text(&self.session, text);
    }

    /// Type a message into the input box (moving there first, as an
    /// operator does) and send it.
    pub fn send(&self, text: &str) {
        self.tmux.to_message_box(&self.session);
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    /// Answer the waiting approval with `key`, from its pane.
    pub fn answer(&self, key: &str) {
        self.tmux.answer(&self.session, key);
    }

    /// Move to the approvals pane, as the operator does before answering.
    pub fn to_approvals(&self) {
        self.tmux.to_approvals(&self.session);
    }

    pub fn wait(&self, text: &str) -> String {
        self.tmux.wait_text(&self.session, text, WAIT)
    }

    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.tmux.wait_for(&self.session, what, WAIT, pred)
    }

    pub fn screen(&self) -> String {
        self.tmux.screen(&self.session)
    }

    /// The screen with colour escapes (`capture-pane -e`).
    pub fn screen_ansi(&self) -> String {
        let out = self
            .tmux
            .cmd()
            .args(["capture-pane", "-e", "-p", "-t", &self.session])
            .output()
            .expect("capture");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The child processes of `pid`, from /proc.
fn children(pid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            // Field 4 (the parent), after the parenthesised command name.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok())
                == Some(pid)
        })
        .collect()
}

/// Config for the tests: no bell, low-risk commands run without asking.
pub const BASE_CONFIG: &str = "[agent]\napproval = \"auto_low\"\n[console]\nbell = false\n";
