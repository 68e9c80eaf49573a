//! Where and how commands run: the [`ExecutionContext`] the tools delegate to,
//! and its backends.
//!
//! How a process is started on a target (local spawn, `ssh` through a
//! ControlMaster, `podman|docker exec`) is one small [`transport::Transport`];
//! everything above it (running a command with streaming and timeouts, file
//! transfer, the managed tmux layer) is written once on top of any transport.
//! This module knows nothing about models, approvals or the console.

pub mod backend;
pub mod bulk;
pub mod capture;
pub mod container;
pub mod env;
pub mod exact_write;
pub mod follow;
pub mod leave;
pub mod preview;
pub mod process;
pub mod pump;
pub mod sandbox;
pub mod shell_replay;
pub mod ssh;
mod ssh_errors;
pub mod stopping;
pub mod store;
pub mod tether;
pub mod tmux;
pub mod transport;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use vigil_protocol::pane::MirrorTarget;
use vigil_protocol::tool::OutputStream;

/// Receives output chunks as they arrive (already valid UTF-8).
pub type OutputFn = Arc<dyn Fn(OutputStream, &str) + Send + Sync>;

/// One command to run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunRequest {
    /// Shell text, run with `sh -c` on the target.
    pub command: String,
    /// That text as the registry read it for the call's decisions (the
    /// tmux guard reads this same parse); `None`: read here when needed.
    pub read: Option<std::sync::Arc<vigil_shell::Command>>,
    /// Give up (and kill the command) after this long; `None`: wait for exit.
    pub timeout: Option<Duration>,
    /// `false`: dispatch and return at once (tmux-backed targets only).
    pub detach: bool,
    /// Managed tmux session / pane selectors (tmux-backed targets only).
    pub session: Option<String>,
    pub pane: Option<String>,
    /// Run under the kernel sandbox ([`sandbox`]): set for calls that run
    /// without a fresh operator decision. A backend that cannot enforce it
    /// refuses the run ([`Backend::can_sandbox`]); it never runs it plain.
    pub sandbox: bool,
    /// With `sandbox`: what the run may write and which shell reads it
    /// (nothing but `/dev/null`, `/bin/sh`, by default).
    pub grants: sandbox::Grants,
    /// Keep only windows of the output in memory and stream the rest to a
    /// spill file (`None`: keep every byte in `stdout` / `stderr`, for
    /// helpers whose output is small or must be whole).
    pub retain: Option<capture::Retain>,
}

/// What a finished command left behind.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunOutcome {
    /// `None` when the process was killed by a signal.
    pub exit_code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Set for detached runs: where the command went and how to poll it.
    pub dispatched: Option<String>,
    /// Things the model must know about the run that are not output (a
    /// recreated terminal, a program left on the alternate screen).
    pub notes: Vec<String>,
    /// With [`RunRequest::retain`]: what was kept of stdout and stderr
    /// (`stdout` / `stderr` then hold only the head windows).
    pub captured: Option<Box<[capture::Captured; 2]>>,
}

impl RunOutcome {
    /// What was kept of stdout and stderr: the capture's summaries, or
    /// summaries of the whole bytes when the backend kept everything.
    pub fn captured(&self) -> [capture::Captured; 2] {
        match &self.captured {
            Some(c) => (**c).clone(),
            None => [
                capture::Captured::of(&self.stdout),
                capture::Captured::of(&self.stderr),
            ],
        }
    }
}

/// Why a command or file operation could not be carried out.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecError {
    #[error("command timed out after {}", humanize(*.limit))]
    Timeout {
        limit: Duration,
        /// What the command had written before it was killed.
        partial: Box<RunOutcome>,
    },
    #[error("could not start `{program}`: {message}")]
    Spawn { program: String, message: String },
    #[error("{0}")]
    Io(String),
    /// The file or directory does not exist (message names the path).
    #[error("{0}")]
    NotFound(String),
    /// The target refused access (message names the path).
    #[error("{0}")]
    PermissionDenied(String),
    #[error("not supported on this target: {0}")]
    NotSupported(String),
    #[error("{0}")]
    Failed(String),
}

/// Format a duration the way an operator writes it (`30s`, `10m`, `1h`, `1.5s`).
pub fn humanize(d: Duration) -> String {
    let secs = d.as_secs();
    if d.subsec_millis() == 0 && secs > 0 {
        if secs % 3600 == 0 {
            return format!("{}h", secs / 3600);
        }
        if secs % 60 == 0 {
            return format!("{}m", secs / 60);
        }
        return format!("{secs}s");
    }
    format!("{:.3}s", d.as_secs_f64())
}

/// See [`Backend::trial_shell`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialShell {
    /// The program that reads the command with `-c` (`sh` for plain runs,
    /// the pane's own shell for a managed pane).
    pub shell: std::path::PathBuf,
    /// The environment a real run starts with (a pane shell's, filtered
    /// like every tool process's); `None`: the one plain runs get.
    pub env: Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    /// A managed pane's shell state, captured for the trial to replay
    /// (`Err`: why it could not be read; `None`: plain runs, no state).
    pub state: Option<Result<PaneShell, String>>,
}

/// A managed pane's shell, as a trial replays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneShell {
    pub kind: shell_replay::ShellKind,
    pub replay: shell_replay::Replay,
}

/// An execution backend.
#[async_trait]
pub trait Backend: Send + Sync {
    /// A short description of the target for approvals and the status bar.
    fn target(&self) -> String;

    /// The managed pane the console may mirror, if any.
    fn mirror(&self) -> Option<MirrorTarget> {
        None
    }

    /// Whether a [`RunRequest::sandbox`] run is enforced here (the kernel
    /// sandbox, probed once). Default: no, and such runs are refused; calls
    /// approved without a fresh operator decision then ask instead.
    fn can_sandbox(&self) -> bool {
        false
    }

    /// The directory a command for `session`/`pane` (the defaults when
    /// `None`) would run in right now, for the approval card and the
    /// preview: a managed pane's current directory, the process directory
    /// of plain runs on this machine. `None`: not known (a remote target's
    /// login directory).
    async fn workdir(&self, _session: Option<&str>, _pane: Option<&str>) -> Option<String> {
        None
    }

    /// Whether `detach` (wait=false) is possible here.
    fn supports_detach(&self) -> bool {
        false
    }

    /// How a trial in the throwaway view reproduces a real run of a
    /// command for `session`/`pane` here (`approval = "by_effect"`): the
    /// shell that reads it and its environment. `None`: the view cannot
    /// stand in for this target (another machine, no kernel sandbox).
    async fn trial_shell(&self, _session: Option<&str>, _pane: Option<&str>) -> Option<TrialShell> {
        None
    }

    /// Run a command, reporting output chunks as they arrive. Dropping the
    /// returned future kills the command.
    async fn run(
        &self,
        req: RunRequest,
        on_output: Option<OutputFn>,
    ) -> Result<RunOutcome, ExecError>;

    /// Read a whole file as bytes.
    async fn read_file(&self, path: &str) -> Result<Vec<u8>, ExecError>;

    /// Create or overwrite a file; returns the number of bytes written.
    async fn write_file(&self, path: &str, content: &[u8]) -> Result<u64, ExecError>;

    /// Notices for the operator since the last call (e.g. a re-established
    /// connection), oldest first. Tools attach them to their results.
    fn take_notices(&self) -> Vec<String> {
        Vec::new()
    }

    /// True when the target's filesystem is this machine's (paths can be
    /// canonicalised here).
    fn is_local(&self) -> bool {
        false
    }

    /// What is at `path`. The default asks the target's shell with `test`.
    async fn path_kind(&self, path: &str) -> Result<PathKind, ExecError> {
        shell_path_kind(self, path).await
    }

    /// Remove one file (not a directory). The default runs `rm -f --`.
    async fn remove_file(&self, path: &str) -> Result<(), ExecError> {
        shell_remove_file(self, path).await
    }

    /// Non-hidden entries under directory `path`, up to `depth` levels,
    /// sorted; directories end in `/`. The default runs `find`.
    async fn list_dir(&self, path: &str, depth: u32) -> Result<Vec<String>, ExecError> {
        shell_list_dir(self, path, depth).await
    }
}

/// Run a short helper script on the target (one minute at most).
async fn run_script<B: Backend + ?Sized>(b: &B, script: String) -> Result<RunOutcome, ExecError> {
    let req = RunRequest {
        command: script,
        timeout: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    b.run(req, None).await
}

/// What is at `path`, asked of the target's shell with `test` (the
/// [`Backend::path_kind`] fallback, usable by any backend).
pub async fn shell_path_kind<B: Backend + ?Sized>(
    b: &B,
    path: &str,
) -> Result<PathKind, ExecError> {
    let q = transport::sh_quote(path);
    let script = format!(
        "if [ -d {q} ]; then echo dir; elif [ -e {q} ]; then echo file; else echo none; fi"
    );
    let out = run_script(b, script).await?;
    match String::from_utf8_lossy(&out.stdout).trim() {
        "dir" => Ok(PathKind::Dir),
        "file" => Ok(PathKind::File),
        "none" => Ok(PathKind::Missing),
        other => Err(ExecError::Failed(format!(
            "cannot inspect {path}: unexpected answer {other:?}"
        ))),
    }
}

/// Remove one file (not a directory). The default runs `rm -f --`.
pub async fn shell_remove_file<B: Backend + ?Sized>(b: &B, path: &str) -> Result<(), ExecError> {
    let script = format!("rm -f -- {}", transport::sh_quote(path));
    let out = run_script(b, script).await?;
    if out.exit_code == Some(0) {
        Ok(())
    } else {
        Err(ExecError::Failed(format!(
            "cannot remove {path}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Non-hidden entries under directory `path`, up to `depth` levels,
/// sorted; directories end in `/`. The default runs `find`.
pub async fn shell_list_dir<B: Backend + ?Sized>(
    b: &B,
    path: &str,
    depth: u32,
) -> Result<Vec<String>, ExecError> {
    let q = transport::sh_quote(path);
    let script = format!(
        "cd {q} && find . -mindepth 1 -maxdepth {depth} ! -path '*/.*' \\( -type d -exec printf '%s/\\n' {{}} + -o -print \\)"
    );
    let out = run_script(b, script).await?;
    if out.exit_code != Some(0) {
        return Err(ExecError::Failed(format!(
            "cannot list {path}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let mut entries: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("./"))
        .map(str::to_string)
        .collect();
    entries.sort();
    Ok(entries)
}

/// What a path names on the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    File,
    Dir,
    Missing,
}

/// The handle every tool holds: a shared backend.
#[derive(Clone)]
pub struct ExecutionContext {
    inner: Arc<dyn Backend>,
}

impl ExecutionContext {
    pub fn new(backend: impl Backend + 'static) -> Self {
        ExecutionContext {
            inner: Arc::new(backend),
        }
    }

    pub fn from_arc(inner: Arc<dyn Backend>) -> Self {
        ExecutionContext { inner }
    }

    pub fn backend(&self) -> &dyn Backend {
        &*self.inner
    }

    /// Plain processes and files on this machine (no tmux).
    pub fn local() -> Self {
        ExecutionContext::new(backend::CommandBackend::new(transport::Local))
    }
}

impl std::ops::Deref for ExecutionContext {
    type Target = dyn Backend;
    fn deref(&self) -> &Self::Target {
        &*self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_an_operator_wrote_them() {
        assert_eq!(humanize(Duration::from_secs(30)), "30s");
        assert_eq!(humanize(Duration::from_secs(600)), "10m");
        assert_eq!(humanize(Duration::from_secs(3600)), "1h");
        assert_eq!(humanize(Duration::from_millis(1500)), "1.500s");
    }
}

#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
