//! Running the real `vigil exec --json` against a scripted model server
//! started by the test, with a config file the test writes: what the hook
//! and audit end-to-end tests share.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use vigil_scripted::{Scenario, ScriptedServer};

/// One finished `vigil exec` run.
pub struct Run {
    pub code: i32,
    /// Every event printed (`--json`), in order.
    pub events: Vec<Value>,
    pub stderr: String,
}

impl Run {
    /// The events of one type.
    pub fn of(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == kind).collect()
    }

    /// The one `approval_resolved` event (panics unless exactly one).
    pub fn resolved(&self) -> &Value {
        let all = self.of("approval_resolved");
        assert_eq!(
            all.len(),
            1,
            "one resolution expected: {:#?}\n{}",
            all,
            self.stderr
        );
        all[0]
    }

    /// The one `approval_requested` event's request.
    pub fn request(&self) -> &Value {
        let all = self.of("approval_requested");
        assert_eq!(
            all.len(),
            1,
            "one request expected: {:#?}\n{}",
            all,
            self.stderr
        );
        &all[0]["request"]
    }

    /// The session id the run recorded.
    pub fn session(&self) -> String {
        let rec = self.of("session_recording");
        rec[0]["id"].as_str().expect("a session id").to_string()
    }
}

/// A scenario where the model asks for `command` once, then says "done".
pub fn one_command(command: &str) -> String {
    format!(
        r#"
[[rule]]
when = {{ role = "user" }}
times = 1
text = "Running it."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = {command:?}
risk = "medium"
mutation = true
privesc = false
why = "the hook test asks"

[[rule]]
when = {{ role = "tool" }}
text = "done"
"#
    )
}

/// A private home for one run: config, data and runtime directories.
pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Home {
        let dir = tempfile::tempdir().expect("temp dir");
        for sub in ["data", "home", "xdg"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let rt = dir.path().join("rt");
        std::fs::create_dir_all(&rt).unwrap();
        std::fs::set_permissions(&rt, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        Home { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn data(&self) -> PathBuf {
        self.path().join("data")
    }

    /// A file in the home, for hooks to write.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path().join(name)
    }

    /// Run `vigil <args…>` (no model), returning code, stdout, stderr.
    pub fn vigil(&self, args: &[&str]) -> (i32, String, String) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_vigil"))
            .args(args)
            .env("VIGIL_DATA_DIR", self.data())
            .env("HOME", self.path().join("home"))
            .env("XDG_CONFIG_HOME", self.path().join("xdg"))
            .output()
            .expect("vigil runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `vigil exec --json go` with `config` (TOML) against a scripted
    /// model playing `scenario`.
    pub async fn exec(&self, config: &str, scenario: &str, extra: &[&str]) -> Run {
        self.run(config, scenario, extra, &["exec", "--json", "go"])
            .await
    }

    /// `vigil <extra…> <command…>` with `config` against a scripted model
    /// playing `scenario`; `command` must print JSON events (`--json`).
    pub async fn run(&self, config: &str, scenario: &str, extra: &[&str], command: &[&str]) -> Run {
        let mut args = vec!["--no-tmux"];
        args.extend_from_slice(extra);
        self.run_with(config, scenario, &args, command).await
    }

    /// `vigil exec --json go` with tmux (the config names a private
    /// `[tmux] socket`; the caller kills that server).
    pub async fn exec_tmux(&self, config: &str, scenario: &str, extra: &[&str]) -> Run {
        self.run_with(config, scenario, extra, &["exec", "--json", "go"])
            .await
    }

    async fn run_with(
        &self,
        config: &str,
        scenario: &str,
        extra: &[&str],
        command: &[&str],
    ) -> Run {
        let server = ScriptedServer::start(Scenario::from_toml_str(scenario).expect("scenario"))
            .await
            .expect("scripted server");
        let cfg = self.path().join("config.toml");
        std::fs::write(&cfg, config).unwrap();
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_vigil"));
        cmd.arg("--config")
            .arg(&cfg)
            .args(["--base-url", &server.base_url(), "--model", "m"])
            .args(extra)
            .args(command)
            .env("VIGIL_DATA_DIR", self.data())
            .env("VIGIL_RUNTIME_DIR", self.path().join("rt"))
            .env("HOME", self.path().join("home"))
            .env("XDG_CONFIG_HOME", self.path().join("xdg"))
            .env_remove("VIGIL_API_KEY")
            .current_dir(self.path())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
            .await
            .expect("vigil exec ends within 120 s")
            .expect("vigil exec runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        Run {
            code: out.status.code().unwrap_or(-1),
            events: stdout
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// A shell script in `home` named `name` with `body`; its argv for a config.
pub fn script(home: &Home, name: &str, body: &str) -> String {
    let path = home.file(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    format!("[\"sh\", {:?}]", path.display().to_string())
}
