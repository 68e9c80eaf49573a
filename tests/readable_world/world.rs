//! The world of the readable-world tests: a home full of stores nobody
//! lists, a project beside it, the scripted model and the configs of each
//! mode.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use base64::Engine;
use vigil_scripted::{Scenario, ScriptedServer};

use super::common;

pub const MARKER: &str = "UNLISTED-STORE-7f3c";
pub const NOBODY: u32 = 65534;

/// One store: where it lives (`{HOME}`, `{BASE}`, `{TMP}` filled in), what
/// it holds, and how a command reads it.
pub struct Store {
    pub class: &'static str,
    pub path: &'static str,
    pub read: &'static str,
    /// Only as root (a root-only file: an ordinary user cannot read it
    /// without vigil either).
    pub root_only: bool,
}

pub const STORES: &[Store] = &[
    Store {
        class: "token file",
        path: "{HOME}/.config/hub",
        read: "cat ~/.config/hub",
        root_only: false,
    },
    Store {
        class: "token file, encoded",
        path: "{HOME}/.config/hub",
        read: "base64 ~/.config/hub",
        root_only: false,
    },
    Store {
        class: "history",
        path: "{HOME}/.histfile",
        read: "grep -h export ~/.histfile",
        root_only: false,
    },
    Store {
        class: "ticket cache",
        path: "{TMP}/krb5cc_{TAG}",
        read: "cat {TMP}/krb5cc_{TAG}",
        root_only: false,
    },
    Store {
        class: "display cookie",
        path: "{HOME}/.Xauthority",
        read: "cat ~/.Xauthority",
        root_only: false,
    },
    Store {
        class: "package registry",
        path: "{HOME}/.gem/credentials",
        read: "cat ~/.gem/credentials",
        root_only: false,
    },
    Store {
        class: "package registry",
        path: "{HOME}/.config/rclone/rclone.conf",
        read: "cat ~/.config/rclone/rclone.conf",
        root_only: false,
    },
    Store {
        class: "cloud config",
        path: "{HOME}/.oci/config",
        read: "cat ~/.oci/config",
        root_only: false,
    },
    Store {
        class: "browser profile",
        path: "{HOME}/.mozilla/firefox/ab12.default/cookies.sqlite",
        read: "cat ~/.mozilla/firefox/*/cookies.sqlite",
        root_only: false,
    },
    Store {
        class: ".env anywhere",
        path: "{BASE}/other/.env",
        read: "cat ../other/.e$(printf nv)",
        root_only: false,
    },
    Store {
        class: "another process's root",
        path: "{HOME}/.config/hub",
        // In the view PID 1 is its init, outside the command's root; the
        // control reads through its own root (this machine's PID 1 may be
        // out of reach without vigil too).
        read: "cat /proc/1/root{HOME}/.config/hub || cat /proc/self/root{HOME}/.config/hub",
        root_only: false,
    },
    Store {
        class: "root-only file",
        path: "/etc/vigil-rw-{TAG}.conf",
        read: "cat /etc/vigil-rw-{TAG}.conf",
        root_only: true,
    },
];

/// Reads of the environment variable vigil was started with.
pub const ENV_READS: &[&str] = &["env", "printenv SSHPASS", "echo $SSHPASS"];

/// A home with the stores, a project beside it, and the files made
/// outside (removed when dropped).
pub struct World {
    pub _dir: tempfile::TempDir,
    pub base: PathBuf,
    pub home: PathBuf,
    pub proj: PathBuf,
    pub tag: String,
    pub outside: Vec<PathBuf>,
    pub uid: Option<u32>,
}

impl Drop for World {
    fn drop(&mut self) {
        for f in &self.outside {
            let _ = std::fs::remove_file(f);
        }
    }
}

pub fn write(path: &Path, text: &str, mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

pub fn chown_all(path: &Path, uid: u32) {
    let ok = std::process::Command::new("chown")
        .args(["-R", &format!("{uid}:{uid}")])
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success());
}

impl World {
    pub fn new(uid: Option<u32>) -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (home, proj) = (base.join("home"), base.join("proj"));
        std::fs::create_dir_all(&proj).unwrap();
        std::fs::write(proj.join("notes.txt"), "plain notes\n").unwrap();
        let git = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&proj)
            .status()
            .unwrap();
        assert!(git.success());
        let tag = format!("{}-{}", std::process::id(), fastrand::u32(..));
        let mut w = World {
            _dir: dir,
            base,
            home,
            proj,
            tag,
            outside: Vec::new(),
            uid,
        };
        for s in STORES {
            let path = PathBuf::from(w.fill(s.path));
            if !path.starts_with(&w.base) {
                w.outside.push(path.clone());
            }
            let body = format!("export AWS_SECRET_ACCESS_KEY={MARKER}\ntoken = {MARKER}\n");
            write(&path, &body, 0o600);
            if let (Some(uid), false) = (uid, s.root_only) {
                chown_all(&path, uid);
            }
        }
        std::fs::create_dir_all(w.base.join("data")).unwrap();
        if let Some(uid) = uid {
            chown_all(&w.base, uid);
        }
        w
    }

    pub fn fill(&self, text: &str) -> String {
        text.replace("{HOME}", &self.home.display().to_string())
            .replace("{BASE}", &self.base.display().to_string())
            .replace("{TMP}", "/tmp")
            .replace("{TAG}", &self.tag)
    }

    /// The reads this world's user can make without vigil.
    pub fn reads(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = STORES
            .iter()
            .filter(|s| self.uid.is_none() || !s.root_only)
            .map(|s| (s.class.to_string(), self.fill(s.read)))
            .collect();
        out.extend(
            ENV_READS
                .iter()
                .map(|r| ("environment".to_string(), r.to_string())),
        );
        out
    }

    /// `sh -c COMMAND` as this world's user, in the project, without vigil.
    pub fn plain(&self, command: &str) -> Output {
        let mut cmd = self.as_user("sh");
        cmd.args(["-c", command]);
        cmd.output().unwrap()
    }

    pub fn as_user(&self, program: &str) -> std::process::Command {
        let mut cmd = match self.uid {
            None => std::process::Command::new(program),
            Some(uid) => {
                let mut c = std::process::Command::new("setpriv");
                c.args([
                    format!("--reuid={uid}"),
                    format!("--regid={uid}"),
                    "--clear-groups".into(),
                    "--".into(),
                    program.into(),
                ]);
                c
            }
        };
        cmd.current_dir(&self.proj)
            .env("HOME", &self.home)
            .env("SSHPASS", MARKER)
            .env("VIGIL_DATA_DIR", self.base.join("data"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("VIGIL_API_KEY")
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// `vigil exec "run case-I."` with `config`, against `server`.
    pub fn exec(&self, server: &ScriptedServer, i: usize, config: &str, socket: &str) -> Output {
        let cfg = self.base.join(format!("config-{i}.toml"));
        std::fs::write(&cfg, config).unwrap();
        if let Some(uid) = self.uid {
            chown_all(&cfg, uid);
        }
        let bin = common::vigil_bin();
        let mut cmd = self.as_user(bin.to_str().unwrap());
        cmd.arg("--config")
            .arg(&cfg)
            .args(["exec", &format!("run case-{i}.")])
            .env("VIGIL_BASE_URL", server.base_url())
            .env("VIGIL_MODEL", "stores")
            .env("VIGIL_TMUX_SOCKET", socket);
        let child = cmd.output();
        child.unwrap()
    }
}

/// A scenario in which the prompt `case-I.` runs command I.
pub async fn scripted(commands: &[String]) -> ScriptedServer {
    let turns: Vec<Vec<String>> = commands.iter().map(|c| vec![c.clone()]).collect();
    scripted_turns(&turns).await
}

/// A scenario in which the prompt `case-I.` runs turn I's calls, in order,
/// in one model answer.
pub async fn scripted_turns(turns: &[Vec<String>]) -> ScriptedServer {
    let mut s = String::from("model = \"stores\"\nchunk_delay_ms = 0\n");
    for (i, calls) in turns.iter().enumerate() {
        s.push_str(&format!(
            "[[rule]]\nwhen = {{ role = \"user\", contains = \"case-{i}.\" }}\ntimes = 0\n"
        ));
        for command in calls {
            s.push_str(&format!(
                "[[rule.tool_calls]]\nname = \"run_shell\"\n[rule.tool_calls.arguments]\n\
                 command = {command:?}\nrisk = \"low\"\nmutation = false\nprivesc = false\n\
                 why = \"look\"\n"
            ));
        }
    }
    s.push_str("[[rule]]\nwhen = { role = \"tool\" }\ntimes = 0\ntext = \"done\"\n");
    ScriptedServer::start(Scenario::from_toml_str(&s).unwrap())
        .await
        .unwrap()
}

/// The config of one mode.
pub fn config(mode: &str, tmux: bool) -> String {
    let tmux = if tmux { "on" } else { "off" };
    let (approval, rules) = match mode {
        "allow rule" => (
            "ask",
            ["cat", "base64", "grep", "printenv", "echo"]
                .iter()
                .map(|p| format!("[[approval.rules]]\ncommand = [\"{p}\"]\ndecision = \"allow\"\n"))
                .collect::<String>(),
        ),
        other => (other, String::new()),
    };
    format!(
        "[agent]\napproval = \"{approval}\"\n[model]\nretry_attempts = 1\n\
         [tmux]\nmode = \"{tmux}\"\n{rules}"
    )
}

/// What of the stores reached the model, if anything.
pub fn leaked(server: &ScriptedServer) -> Option<String> {
    let sent = serde_json::to_string(&server.requests()).unwrap();
    let body = format!("export AWS_SECRET_ACCESS_KEY={MARKER}\ntoken = {MARKER}\n");
    let encoded = base64::engine::general_purpose::STANDARD.encode(body.as_bytes());
    let head: String = encoded.chars().take(24).collect();
    (sent.contains(MARKER) || sent.contains(&head)).then_some(sent)
}
