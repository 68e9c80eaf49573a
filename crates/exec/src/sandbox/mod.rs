//! The kernel sandbox for commands that run without a fresh operator
//! decision (`RunRequest.sandbox`).
//!
//! A sandboxed command runs under the sandbox helper ([`helper`]: the small
//! `vigil-sandbox` executable next to `vigil`, or else the hidden
//! `vigil __sandbox` mode of this binary; started by absolute path), which
//! stays outside the sandbox and forks a child that confines itself
//! ([`confine`]) before it starts `/bin/sh -c SCRIPT`. Every way out, by
//! class:
//!
//! - **files**: read and execute beneath `/`, except the secret places
//!   ([`masks`]: the configured list and secret names in the working tree;
//!   they read as denied) and the device folder: no device file is opened
//!   except `/dev/null`, `zero`, `full`, `random` and `urandom` (opening a
//!   device can act: arm a watchdog, allocate a pty, read a disk raw);
//!   write only `/dev/null` and the files named with `--write` (and, for a
//!   build after its trial, beneath the git-ignored folders it wrote and a
//!   private `TMPDIR`: [`Grants`]), so no FIFO
//!   or file outside is written (descriptors opened before, such as the
//!   output pipes, keep working);
//! - **sockets**: no TCP bind or connect (Landlock ≥ 4), no socket but
//!   netlink for `ip`/`ss` (route, sock_diag; seccomp: no UDP, raw,
//!   packet, vsock, alg or unix sockets), no abstract unix socket outside
//!   (Landlock ≥ 6);
//! - **IPC and keyrings**: no SysV message queue, semaphore or shared
//!   memory, no POSIX queue (seccomp; POSIX shared memory is files in
//!   `/dev/shm`, which is neither read nor written), no keyring call;
//! - **other processes**: no signal outside the sandbox (Landlock ≥ 6), no
//!   ptrace (Landlock, seccomp), no call that names another process:
//!   resource limits, priorities, scheduling, I/O priority, memory of
//!   another process (seccomp, [`seccomp::pid_naming`]); no capabilities;
//!   no namespaces; the helper is outside the sandbox, so the command can
//!   neither kill nor re-limit it;
//! - **processes left behind**: no new session or process group, so
//!   killing the group ends every process of the call; the helper (a
//!   subreaper) kills what the command left running when it exits, even
//!   when the command killed what it could;
//! - **terminals**: no controlling terminal, and a terminal on descriptor
//!   0–2 is replaced by `/dev/null` ([`session`]); in tmux mode the pane
//!   shows the output as inert text;
//! - **environment**: vigil's tool environment ([`crate::env`]) cut
//!   down to an allow-list ([`clean_env`]) with a fixed [`SAFE_PATH`].
//!
//! Not a PID namespace: `ps` must see the machine and `/proc/$$` must be
//! the command's own (a fresh `/proc` would hide the machine, the host's
//! would name other processes by the namespace's numbers), and an ordinary
//! user would need a user namespace (files of other users would show as
//! `nobody` in `ls -l`). Stated limits: a hard link to a secret file made
//! elsewhere before the run reads as that file; a name walk is bounded
//! ([`masks::WALK_MAX_DIRS`]); signal scoping needs Landlock ABI 6 (Linux
//! 6.12).
//!
//! Support is probed once per process by running the helper in probe mode
//! ([`available`]); when the probe fails, or the target is not this
//! machine, a sandboxed run is refused with [`ExecError::NotSupported`],
//! never run without the sandbox. This module never confines vigil itself.

pub mod confine;
pub mod helper;
pub mod locks;
pub mod masks;
pub mod notify;
pub mod readable;
pub mod seccomp;
pub mod session;
pub mod walk_cache;
pub mod world;

pub use masks::{masks_for, set_secret_places};

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::process::Command;

use super::{ExecError, OutputFn, RunOutcome};

/// `PATH` inside the sandbox, whatever the caller's was.
pub const SAFE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The readable world of a run in `cwd` (vigil's directory when `None`).
pub fn world_for(cwd: Option<&Path>) -> world::World {
    let dir = cwd
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())
        .and_then(|d| d.canonicalize().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    world::world(&masks::working_tree(&dir))
}

/// The sandbox helper's arguments for a run in `cwd`: the operator's
/// environment names, the readable world (`--read`), and what must read
/// as denied inside it (`--mask`: secret places, entries closed to
/// others).
pub fn helper_args(cwd: Option<&Path>) -> Vec<OsString> {
    let mut args = env_args();
    let world = world_for(cwd);
    for p in std::iter::once(&world.tree).chain(&world.places) {
        args.extend([OsString::from("--read"), p.into()]);
    }
    for m in masks_for(cwd).iter().chain(&world.hidden) {
        args.extend([OsString::from("--mask"), m.into()]);
    }
    args
}

/// Why the sandbox could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the kernel sandbox is unavailable: {0}")]
    Unsupported(String),
    #[error("cannot set up Landlock: {0}")]
    Landlock(String),
    #[error("Landlock is not fully enforced ({0}); refusing to run unconfined")]
    NotEnforced(String),
    #[error("cannot allow writing {}: {message}", path.display())]
    WriteTarget { path: PathBuf, message: String },
    #[error("cannot drop capabilities: {0}")]
    Capabilities(std::io::Error),
    #[error("cannot load the seccomp filter: {0}")]
    Seccomp(std::io::Error),
}

/// The allow-listed part of `vars`: the names of
/// [`vigil_config::readable::ENV_ALLOW`], `LC_*` and the operator's
/// `[sandbox] env_add` ([`world::config`]); nothing else.
pub fn clean_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let config = world::config();
    vars.into_iter()
        .filter(|(k, _)| k.to_str().is_some_and(|k| config.env_allowed(k)))
        .collect()
}

/// The helper arguments that carry the operator's `[sandbox] env_add`
/// names (the helper is another process: it learns them from its
/// command line, see [`helper`]).
pub fn env_args() -> Vec<OsString> {
    world::config()
        .env_add
        .iter()
        .flat_map(|n| [OsString::from("--env"), OsString::from(n)])
        .collect()
}

static HELPER: OnceLock<PathBuf> = OnceLock::new();
static PROBE: OnceLock<Result<(), String>> = OnceLock::new();

/// Use `path` as the helper binary (tests and benchmarks, whose own
/// executable is not vigil). Call before the first sandboxed run.
pub fn set_helper(path: impl Into<PathBuf>) {
    let _ = HELPER.set(path.into());
}

/// The small helper executable installed next to `vigil` (it starts in a
/// fraction of the full binary's time; see BENCHMARKS.md).
pub const HELPER_BIN: &str = "vigil-sandbox";

/// The helper binary, by absolute path: what [`set_helper`] said, else
/// [`HELPER_BIN`] next to this executable, else this executable itself
/// (`vigil __sandbox`). No `PATH` lookup is involved.
pub fn helper_path() -> Result<PathBuf, String> {
    if let Some(p) = HELPER.get() {
        return Ok(p.clone());
    }
    let me =
        std::env::current_exe().map_err(|e| format!("cannot find vigil's own executable: {e}"))?;
    let small = me.with_file_name(HELPER_BIN);
    Ok(if small.is_file() { small } else { me })
}

/// Probe once whether the sandbox can be enforced here: the helper must
/// confine itself fully and say so.
pub fn probe() -> Result<(), String> {
    PROBE
        .get_or_init(|| {
            let helper = helper_path()?;
            let out = std::process::Command::new(&helper)
                .args([helper::MODE, "--probe"])
                .env_clear()
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| format!("cannot run the sandbox helper {}: {e}", helper.display()))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
            }
        })
        .clone()
}

/// Whether sandboxed runs are possible on this machine (probed once).
pub fn available() -> bool {
    probe().is_ok()
}

/// What a sandboxed run may write beyond `/dev/null`, and which shell
/// reads its text. The default grants nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Existing folders it may write beneath (a build's outputs that git
    /// ignores, the write-set its trial saw). With any, the run also gets
    /// a private temporary folder as `TMPDIR`, removed when it ends.
    pub write_dirs: Vec<PathBuf>,
    /// The shell given the text with `-c` (`/bin/sh` when `None`): the
    /// pane's shell, for a text that replays the pane's state.
    pub shell: Option<PathBuf>,
    /// The text that shell reads instead of the request's command (a
    /// trial's own: the pane's replayed state, then the command); the
    /// command is still what is shown and recorded.
    pub script: Option<String>,
    /// `PATH` for the run instead of [`SAFE_PATH`]: the one its trial ran
    /// with, so the real run finds the programs the trial found (a
    /// toolchain in `~/.cargo/bin`).
    pub path: Option<OsString>,
}

/// The command that runs `script` with `/bin/sh -c` (or `grants.shell`)
/// in the sandbox, in `cwd` when given, allowed to write `write_files`,
/// beneath `grants.write_dirs` and in `tmpdir` (its `TMPDIR`).
pub fn command(
    script: &str,
    cwd: Option<&Path>,
    write_files: &[PathBuf],
    grants: &Grants,
    tmpdir: Option<&Path>,
) -> Result<Command, ExecError> {
    probe().map_err(|why| ExecError::NotSupported(format!("sandboxed run refused: {why}")))?;
    let helper = helper_path().map_err(ExecError::NotSupported)?;
    let mut std_cmd = std::process::Command::new(&helper);
    super::env::apply_tool_env(&mut std_cmd);
    std_cmd.arg(helper::MODE);
    for f in write_files {
        std_cmd.arg("--write").arg(f);
    }
    for d in &grants.write_dirs {
        std_cmd.arg("--write-dir").arg(d);
    }
    if let Some(t) = tmpdir {
        std_cmd.arg("--tmpdir").arg(t);
    }
    if let Some(p) = &grants.path {
        std_cmd.arg("--path").arg(p);
    }
    std_cmd.args(helper_args(cwd));
    let shell = grants.shell.as_deref().unwrap_or(Path::new("/bin/sh"));
    std_cmd.args([OsStr::new("--"), shell.as_os_str(), OsStr::new("-c")]);
    std_cmd.arg(script);
    if let Some(dir) = cwd {
        std_cmd.current_dir(dir);
    }
    Ok(Command::from(std_cmd))
}

/// Run `script` in the sandbox on this machine to completion (own process
/// group, killed on timeout or when the future is dropped). A helper that
/// could not set the sandbox up is an error, not an exit code.
pub async fn run(
    script: &str,
    cwd: Option<&Path>,
    timeout: Option<Duration>,
    on_output: Option<OutputFn>,
) -> Result<RunOutcome, ExecError> {
    run_retaining(script, cwd, timeout, on_output, None, &Grants::default()).await
}

/// [`run`] keeping only what `retain` asks for in memory (the rest streams
/// to the spill file, as for an unsandboxed run).
pub async fn run_retaining(
    script: &str,
    cwd: Option<&Path>,
    timeout: Option<Duration>,
    on_output: Option<OutputFn>,
    retain: Option<&super::capture::Retain>,
    grants: &Grants,
) -> Result<RunOutcome, ExecError> {
    // A build's temporary files (a linker's, a test's) go to a folder of
    // its own that goes with the run.
    let tmp = match grants.write_dirs.is_empty() {
        true => None,
        false => Some(
            tempfile::Builder::new()
                .prefix("vigil-build-")
                .tempdir()
                .map_err(|e| ExecError::Failed(format!("cannot make a temporary folder: {e}")))?,
        ),
    };
    let script = grants.script.as_deref().unwrap_or(script);
    let cmd = command(script, cwd, &[], grants, tmp.as_ref().map(|t| t.path()))?;
    let out = super::process::run_contained(cmd, None, timeout, on_output, retain).await?;
    if out.exit_code == Some(helper::SETUP_FAILED) && out.stderr.starts_with(b"vigil sandbox: ") {
        return Err(ExecError::Failed(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clean_environment_is_an_allow_list() {
        let vars = [
            ("HOME", "/root"),
            ("LC_ALL", "C.UTF-8"),
            ("LD_PRELOAD", "/tmp/evil.so"),
            ("BASH_FUNC_ls%%", "() { rm -rf ~; }"),
            ("PATH", "/tmp/evil:/usr/bin"),
            ("BASH_ENV", "/tmp/rc"),
            ("VIGIL_API_KEY", "sk-secret"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let kept: Vec<String> = clean_env(vars)
            .into_iter()
            .map(|(k, _)| k.into_string().unwrap())
            .collect();
        assert_eq!(kept, ["HOME", "LC_ALL", "PATH"]);
    }

    #[test]
    fn the_filter_denies_what_it_must() {
        let prog = seccomp::program();
        let denied: Vec<u32> = prog.iter().map(|i| i.k).collect();
        for nr in [
            libc::SYS_setsid,
            libc::SYS_setpgid,
            libc::SYS_io_uring_setup,
        ] {
            assert!(
                denied.contains(&(nr as u32)),
                "syscall {nr} not in the filter"
            );
        }
        for nr in seccomp::PID_NAMING_DENIED
            .iter()
            .chain(seccomp::PID_NAMING_SELF_ONLY)
            .chain(seccomp::IPC_CALLS)
            .chain(seccomp::KEYRING_CALLS)
            .chain(&[
                libc::SYS_setpriority,
                libc::SYS_ioprio_set,
                libc::SYS_socket,
            ])
        {
            assert!(
                denied.contains(&(*nr as u32)),
                "syscall {nr} not in the filter"
            );
        }
        assert!(prog.len() < 200, "{}", prog.len());
    }
}
