//! Issue 35: what a command that runs unasked may read is an allow-list.
//!
//! Stores nobody lists (a hub token, a history with an exported key, a
//! Kerberos ticket cache in /tmp, the X11 cookie, RubyGems and rclone
//! credentials, a cloud config, a browser cookie database, a `.env` outside
//! the tree opened under a computed name, a root-only file under /etc, an
//! environment variable of an unknown name) through the real `vigil exec`
//! against the scripted model, under `by_effect` (plain and in a managed
//! tmux pane), `auto_low`, and `ask` with a policy `allow` rule for the
//! program: none of their bytes (nor their base64) reaches the model. As
//! root and as an ordinary user (uid 65534 through `setpriv`). Each row has
//! a control that reads it without vigil, and one run with `approve_all`
//! shows the harness sees a leak when there is one.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use base64::Engine;
use vigil::scripted::{Scenario, ScriptedServer};

const MARKER: &str = "UNLISTED-STORE-7f3c";
const NOBODY: u32 = 65534;

/// One store: where it lives (`{HOME}`, `{BASE}`, `{TMP}` filled in), what
/// it holds, and how a command reads it.
struct Store {
    class: &'static str,
    path: &'static str,
    read: &'static str,
    /// Only as root (a root-only file: an ordinary user cannot read it
    /// without vigil either).
    root_only: bool,
}

const STORES: &[Store] = &[
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
        class: "root-only file",
        path: "/etc/vigil-rw-{TAG}.conf",
        read: "cat /etc/vigil-rw-{TAG}.conf",
        root_only: true,
    },
];

/// Reads of the environment variable vigil was started with.
const ENV_READS: &[&str] = &["env", "printenv SSHPASS", "echo $SSHPASS"];

/// A home with the stores, a project beside it, and the files made
/// outside (removed when dropped).
struct World {
    _dir: tempfile::TempDir,
    base: PathBuf,
    home: PathBuf,
    proj: PathBuf,
    tag: String,
    outside: Vec<PathBuf>,
    uid: Option<u32>,
}

impl Drop for World {
    fn drop(&mut self) {
        for f in &self.outside {
            let _ = std::fs::remove_file(f);
        }
    }
}

fn write(path: &Path, text: &str, mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown_all(path: &Path, uid: u32) {
    let ok = std::process::Command::new("chown")
        .args(["-R", &format!("{uid}:{uid}")])
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success());
}

impl World {
    fn new(uid: Option<u32>) -> World {
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

    fn fill(&self, text: &str) -> String {
        text.replace("{HOME}", &self.home.display().to_string())
            .replace("{BASE}", &self.base.display().to_string())
            .replace("{TMP}", "/tmp")
            .replace("{TAG}", &self.tag)
    }

    /// The reads this world's user can make without vigil.
    fn reads(&self) -> Vec<(String, String)> {
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
    fn plain(&self, command: &str) -> Output {
        let mut cmd = self.as_user("sh");
        cmd.args(["-c", command]);
        cmd.output().unwrap()
    }

    fn as_user(&self, program: &str) -> std::process::Command {
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
    fn exec(&self, server: &ScriptedServer, i: usize, config: &str, socket: &str) -> Output {
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
async fn scripted(commands: &[String]) -> ScriptedServer {
    let mut s = String::from("model = \"stores\"\nchunk_delay_ms = 0\n");
    for (i, command) in commands.iter().enumerate() {
        s.push_str(&format!(
            "[[rule]]\nwhen = {{ role = \"user\", contains = \"case-{i}.\" }}\ntimes = 0\n\
             [[rule.tool_calls]]\nname = \"run_shell\"\n[rule.tool_calls.arguments]\n\
             command = {command:?}\nrisk = \"low\"\nmutation = false\nprivesc = false\n\
             why = \"look\"\n"
        ));
    }
    s.push_str("[[rule]]\nwhen = { role = \"tool\" }\ntimes = 0\ntext = \"done\"\n");
    ScriptedServer::start(Scenario::from_toml_str(&s).unwrap())
        .await
        .unwrap()
}

/// The config of one mode.
fn config(mode: &str, tmux: bool) -> String {
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
fn leaked(server: &ScriptedServer) -> Option<String> {
    let sent = serde_json::to_string(&server.requests()).unwrap();
    let body = format!("export AWS_SECRET_ACCESS_KEY={MARKER}\ntoken = {MARKER}\n");
    let encoded = base64::engine::general_purpose::STANDARD.encode(body.as_bytes());
    let head: String = encoded.chars().take(24).collect();
    (sent.contains(MARKER) || sent.contains(&head)).then_some(sent)
}

/// Run every read of `world` in `mode`; the rows that let something out.
async fn through_vigil(world: &World, mode: &str, tmux: bool) -> Vec<String> {
    let reads = world.reads();
    let commands: Vec<String> = reads.iter().map(|(_, c)| c.clone()).collect();
    let server = scripted(&commands).await;
    let tmux_server = common::Server {
        socket: common::socket(),
    };
    let cfg = config(mode, tmux);
    let mut failures = Vec::new();
    for (i, (class, command)) in reads.iter().enumerate() {
        let before = server.requests().len();
        let out = world.exec(&server, i, &cfg, &tmux_server.socket);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.contains(MARKER) || server.requests().len() == before {
            failures.push(format!(
                "[{class}] {command} ({mode}): exit {:?}\n{stdout}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    if let Some(sent) = leaked(&server) {
        failures.push(format!("({mode}) a store reached the model: {sent}"));
    }
    failures
}

/// Every row's control: read without vigil, the store is there.
fn controls_hold(world: &World) {
    for (class, command) in world.reads() {
        let out = world.plain(&command);
        let text = String::from_utf8_lossy(&out.stdout);
        let seen = text.contains(MARKER)
            || text.contains(
                &base64::engine::general_purpose::STANDARD
                    .encode(format!("export AWS_SECRET_ACCESS_KEY={MARKER}\n").as_bytes())[..20],
            );
        assert!(
            seen,
            "[{class}] the control cannot read it: {command}: {text}"
        );
    }
}

fn run_modes(uid: Option<u32>, modes: &[(&str, bool)]) {
    let world = World::new(uid);
    controls_hold(&world);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut failures = Vec::new();
    for (mode, tmux) in modes {
        failures.extend(rt.block_on(through_vigil(&world, mode, *tmux)));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

#[test]
fn no_unlisted_store_reaches_the_model_as_root() {
    run_modes(
        None,
        &[
            ("by_effect", false),
            ("by_effect", true),
            ("auto_low", false),
            ("allow rule", false),
        ],
    );
}

#[test]
fn no_unlisted_store_reaches_the_model_as_an_ordinary_user() {
    run_modes(
        Some(NOBODY),
        &[
            ("by_effect", false),
            ("auto_low", false),
            ("allow rule", false),
        ],
    );
}

#[test]
fn the_harness_sees_a_store_that_gets_through() {
    let world = World::new(None);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let command = world.fill("cat ~/.config/hub");
    let server = rt.block_on(scripted(std::slice::from_ref(&command)));
    let socket = common::socket();
    let out = world.exec(&server, 0, &config("approve_all", false), &socket);
    assert!(out.status.success(), "{out:?}");
    assert!(leaked(&server).is_some(), "the harness missed a leak");
}

// ---- bounds: for every user -----------------------------------------------

/// `vigil policy check --preview -- COMMAND` as the world's user.
fn preview_as(world: &World, command: &str) -> String {
    let bin = common::vigil_bin();
    let mut cmd = world.as_user(bin.to_str().unwrap());
    cmd.args([
        "policy",
        "check",
        "--preview",
        "--time-limit",
        "20",
        "--",
        command,
    ]);
    let out = cmd.output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn bombs_are_stopped(uid: Option<u32>) {
    let world = World::new(uid);
    let cases = [
        (
            "python3 -c 'x = bytearray(3 * 1024**3)'",
            &["memory past", "process limit"][..],
        ),
        (
            "python3 -c 'import threading, time\nfor _ in range(900): threading.Thread(target=time.sleep, args=(8,)).start()'",
            &["processes and threads", "process limit"][..],
        ),
        (
            "f(){ f|f& };f; sleep 5",
            &["processes and threads", "process limit"][..],
        ),
    ];
    for (command, bound) in cases {
        let said = preview_as(&world, command);
        assert!(
            bound.iter().any(|b| said.contains(b)),
            "{uid:?} {command}: no bound named\n{said}"
        );
    }
}

#[test]
fn memory_and_task_bombs_are_stopped_with_the_bound_named_as_root() {
    bombs_are_stopped(None);
}

#[test]
fn memory_and_task_bombs_are_stopped_with_the_bound_named_as_an_ordinary_user() {
    bombs_are_stopped(Some(NOBODY));
}

/// Total bytes of the files beneath `dir`.
fn bytes_beneath(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

fn a_flood_is_capped(uid: Option<u32>) {
    let world = World::new(uid);
    let tmp = world.base.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    if let Some(uid) = uid {
        chown_all(&tmp, uid);
    }
    let command = "head -c 2000000000 /dev/zero; echo flooded".to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(scripted(std::slice::from_ref(&command)));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watch = {
        let (stop, dirs) = (stop.clone(), [tmp.clone(), world.base.join("data")]);
        std::thread::spawn(move || {
            let mut most = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(dirs.iter().map(|d| bytes_beneath(d)).sum::<u64>());
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            most
        })
    };
    let cfg = config("by_effect", false);
    let path = world.base.join("flood.toml");
    std::fs::write(&path, &cfg).unwrap();
    let bin = common::vigil_bin();
    let mut cmd = world.as_user(bin.to_str().unwrap());
    cmd.arg("--config")
        .arg(&path)
        .args(["exec", "run case-0."])
        .env("TMPDIR", &tmp)
        .env("VIGIL_BASE_URL", server.base_url())
        .env("VIGIL_MODEL", "stores");
    let out = cmd.output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = watch.join().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "not asked: {said}");
    let cap = 64 * 1024 * 1024;
    assert!(most <= cap + 1024 * 1024, "{most} bytes on the disk");
    assert!(bytes_beneath(&tmp) + bytes_beneath(&world.base.join("data")) < cap);
}

#[test]
fn a_trial_flooding_stdout_is_capped_on_the_disk_and_asked_as_root() {
    a_flood_is_capped(None);
}

#[test]
fn a_trial_flooding_stdout_is_capped_on_the_disk_and_asked_as_an_ordinary_user() {
    a_flood_is_capped(Some(NOBODY));
}

/// The same flood as a trial of `run_shell` (in this process): asked, the
/// bound named, its spill gone.
#[test]
fn a_trial_flooding_stdout_names_the_bound() {
    use vigil::tools::shell::{RunShell, ShellConfig};
    use vigil::tools::{Tool, ToolContext, Trial};
    vigil::exec::sandbox::set_helper(common::sandbox_helper_bin());
    let world = World::new(None);
    let spill = world.base.join("spill");
    let shell = RunShell::new(
        vigil::exec::ExecutionContext::local(),
        ShellConfig::default(),
    );
    let mut ctx = ToolContext::new("t").with_spill_dir(spill.clone());
    ctx.approved_cwd = Some(world.proj.display().to_string());
    let args = serde_json::json!({
        "command": "head -c 2000000000 /dev/zero", "risk": "low", "mutation": false,
        "privesc": false, "why": "t",
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    match rt.block_on(shell.trial(&args.to_string(), &ctx)) {
        Trial::Asks { why, .. } => assert!(why.contains("output past 64 MB"), "{why}"),
        Trial::Clean(out) => panic!("ran unasked: {:?}", out.result),
    }
    assert_eq!(bytes_beneath(&spill), 0, "the trial's spill stayed");
}

// ---- property: random files outside the readable world ---------------------

/// Random files of random modes and names in random places outside the
/// readable world (home, /tmp, /var/tmp, and owner-only files in /etc),
/// read by random commands in clean trials: no clean trial's output holds
/// any of their contents.
#[test]
fn no_clean_trial_shows_a_file_outside_the_readable_world() {
    vigil::exec::sandbox::set_helper(common::sandbox_helper_bin());
    let seed = std::env::var("VIGIL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    let mut rng = fastrand::Rng::with_seed(seed);
    let world = World::new(None);
    let mut guard = Vec::new();
    let mut files = Vec::new();
    for i in 0..24 {
        let name: String = (0..rng.usize(1..9))
            .map(|_| {
                rng.choice(b"abcdefxyz._-".iter())
                    .map(|c| *c as char)
                    .unwrap()
            })
            .collect();
        let name = format!("{}{name}{i}", if rng.bool() { "." } else { "" });
        let dir = match rng.usize(0..4) {
            0 => world.home.join(format!("d{}", rng.u8(..))),
            1 => PathBuf::from("/tmp"),
            2 => PathBuf::from("/var/tmp"),
            _ => PathBuf::from("/etc"),
        };
        let mode = if dir == Path::new("/etc") {
            0o600
        } else {
            *rng.choice(&[0o600, 0o644, 0o640, 0o400, 0o604]).unwrap()
        };
        let path = dir.join(name);
        let content = format!("PROPERTY-{seed}-{i}-{}", rng.u64(..));
        write(&path, &format!("{content}\n"), mode);
        if !path.starts_with(&world.base) {
            guard.push(Removed(path.clone()));
        }
        files.push((path, content));
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let opts = vigil::exec::preview::PreviewOptions {
        time_limit: std::time::Duration::from_secs(5),
        ..Default::default()
    };
    for (i, (path, content)) in files.iter().enumerate() {
        let p = path.display().to_string();
        let (dir, file) = (path.parent().unwrap().display(), path.file_name().unwrap());
        let file = file.to_string_lossy();
        let command = match rng.usize(0..5) {
            0 => format!("cat '{p}'"),
            1 => format!("head -c 200 \"$(printf %s '{p}')\""),
            2 => format!("cd '{dir}' && cat -- '{file}'"),
            3 => format!("find '{dir}' -maxdepth 1 -type f -name '{file}' -exec cat {{}} +"),
            _ => format!("grep -rh PROPERTY '{dir}'"),
        };
        let (report, out) = rt
            .block_on(vigil::exec::preview::trial(
                &command,
                &world.proj,
                opts,
                vigil::exec::preview::Run::default(),
            ))
            .unwrap_or_else(|e| panic!("seed {seed} case {i}: {command}: {e}"));
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if report.effects().is_empty() {
            for (_, c) in &files {
                assert!(
                    !said.contains(c.as_str()),
                    "seed {seed} case {i}: a clean trial of `{command}` showed {c}"
                );
            }
        }
        // None of these files exists in the view: its own content never
        // shows, clean or not.
        assert!(
            !said.contains(content.as_str()),
            "seed {seed}: {command}: {said}"
        );
    }
}

/// Removes a file made outside the test's folder, on drop.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
