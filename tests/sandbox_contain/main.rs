//! The sandbox's hostile table, by class, on this kernel through the real
//! helper (`vigil-sandbox`): as root through `run_shell`'s path
//! (`ExecutionContext` with `sandbox: true`), and as an ordinary user
//! (uid 65534 through `setpriv`, the helper started directly) where the
//! case allows. Each row names the class it stands for; each checks the
//! effect from outside (a marker process's limits and priority, the
//! machine's IPC objects and keys, a socket's and a terminal's reader, a
//! secret's reader), and a control shows the same action works unsandboxed.
//!
//! Its own test binary: it sets the process-wide secret places once. This
//! file holds the shared harness; `processes`, `channels` (IPC, sockets,
//! terminals) and `files` (secrets, metadata) the rows.

#[path = "../common/mod.rs"]
mod common;

mod channels;
mod files;
mod processes;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use vigil::config::secrets::{SecretPlaces, SecretsConfig};
use vigil::exec::{ExecutionContext, RunOutcome, RunRequest, sandbox};

use common::contain::{Marker, drained, ipc_and_keys, pty, reach, reach_in, winsize};

/// A home of this test process holding secrets (the secret list is set
/// once per process: defaults with this home, plus a vigil folder).
struct Home {
    home: PathBuf,
    vigil: PathBuf,
}

fn home() -> &'static Home {
    static HOME: OnceLock<Home> = OnceLock::new();
    HOME.get_or_init(|| {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        // Earlier runs' homes (their processes are gone) go first.
        for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("vigil-contain-") {
                if pid.parse().is_ok_and(|p: i32| !common::alive(p)) {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let base = tmp.join(format!("vigil-contain-{}", std::process::id()));
        let home = base.join("home");
        let vigil = home.join(".config/vigil");
        for d in [home.join(".ssh"), vigil.clone()] {
            std::fs::create_dir_all(&d).unwrap();
        }
        for (f, text) in [
            (".ssh/id_ed25519", "PRIVATE-KEY-1f2e"),
            (".netrc", "machine x password NETRC-PW-77"),
            (".config/vigil/config.toml", "api_key = \"sk-CONFIG-KEY-9\""),
            ("notes.txt", "plain notes"),
        ] {
            std::fs::write(home.join(f), text).unwrap();
        }
        open_up(&base);
        let places = SecretPlaces::new(
            &SecretsConfig::default(),
            Some(&home),
            std::slice::from_ref(&vigil),
        );
        sandbox::set_secret_places(places);
        sandbox::set_helper(common::sandbox_helper_bin());
        Home { home, vigil }
    })
}

/// Everything under `dir` readable (and folders enterable) by anyone, so
/// the ordinary user's control can read what the sandbox must not.
fn open_up(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
            }
        }
    }
}

fn req(cmd: &str, sandboxed: bool) -> RunRequest {
    RunRequest {
        command: cmd.into(),
        timeout: Some(Duration::from_secs(30)),
        sandbox: sandboxed,
        ..Default::default()
    }
}

/// `cmd` in the sandbox, started in `cwd` (its working tree's secret
/// names are masked).
async fn boxed_in(cmd: &str, cwd: &Path) -> RunOutcome {
    home();
    sandbox::run(cmd, Some(cwd), Some(Duration::from_secs(30)), None)
        .await
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

/// `cmd` as `run_shell` runs a call nobody approved.
async fn boxed(cmd: &str) -> RunOutcome {
    home();
    ExecutionContext::local()
        .run(req(cmd, true), None)
        .await
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

async fn plain(cmd: &str) -> RunOutcome {
    home();
    ExecutionContext::local()
        .run(req(cmd, false), None)
        .await
        .unwrap()
}

fn as_nobody(program: &Path) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(program)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home().home)
        .stdin(Stdio::null())
        .process_group(0);
    c
}

/// `cmd` in the sandbox as uid 65534 (the helper started directly, with
/// the masks vigil would pass for `cwd`).
fn nobody_boxed(cmd: &str, cwd: &Path) -> Output {
    let mut c = as_nobody(&common::sandbox_helper_bin());
    c.arg(sandbox::helper::MODE)
        .args(sandbox::helper_args(Some(cwd)));
    c.args(["--", "/bin/sh", "-c", cmd]).current_dir(cwd);
    c.output().unwrap()
}

fn nobody_plain(cmd: &str, cwd: &Path) -> Output {
    let mut c = as_nobody(Path::new("/bin/sh"));
    c.args(["-c", cmd]).current_dir(cwd);
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `NAME=RESULT` lines of reach.py.
fn results(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn all_refused(out: &str, except: &[&str], what: &str) {
    let r = results(out);
    assert!(r.len() > 3, "{what}: {out}");
    for (name, got) in r {
        if !except.contains(&name.as_str()) {
            assert_ne!(got, "ok", "{what}: {name} went through\n{out}");
        }
    }
}
