//! Previews: run a proposed command in a throwaway copy-on-write view of
//! this machine and report its effects ([`PreviewReport`]) before the
//! operator decides.
//!
//! The view ([`view`], built by the sandbox helper in preview mode) is made
//! with the kernel directly: mount + PID + network + IPC namespaces, an
//! overlay over the working tree (the git top level, else the directory),
//! home and `/tmp` whose upper layer is a size-limited tmpfs, the rest of
//! `/` read-only and `nodev` with a fresh minimal `/dev`, Landlock so
//! nothing outside the overlays is written ([`fence`]), the secret places
//! masked, no capabilities even as root, no terminal, no network (attempts
//! are recorded and refused: [`netwatch`]), a time limit, and every process
//! killed at the end ([`supervise`]). Bubblewrap is not used: Debian
//! bookworm's 0.8 has no `--overlay` (it came in 0.9), and an overlay is
//! what makes writes land in a throwaway layer.
//!
//! This module (the vigil side) picks the writable roots, starts the
//! helper, captures the command's output and reads the report the view
//! wrote. It never runs the command outside the view, and a view that
//! cannot be built is an error, never a plain run.

pub mod bounds;
pub mod disguise;
pub mod effects;
pub mod fence;
pub mod limits;
pub mod memory;
pub mod mounts;
pub mod netwatch;
pub mod readwatch;
pub mod rootfs;
pub mod supervise;
pub mod view;
pub mod writewatch;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use vigil_protocol::preview::PreviewReport;

use super::capture::Retain;
use super::sandbox;

/// The default wall-clock limit of a preview.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(10);
/// The default size of the view's writable layer.
pub const DEFAULT_SIZE_LIMIT: u64 = 256 * 1024 * 1024;
/// Bytes of output kept at each end.
const OUTPUT_WINDOW: usize = 4096;
/// How long a view that is given up on (or whose vigil is exiting) has to
/// end its processes and remove its control groups before its helper is
/// killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Where the view's staging directory is made (outside every root).
const STAGING_BASE: &str = "/dev/shm";

/// The limits of one preview.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreviewOptions {
    pub time_limit: Duration,
    pub size_limit: u64,
}

impl Default for PreviewOptions {
    fn default() -> Self {
        PreviewOptions {
            time_limit: DEFAULT_TIME_LIMIT,
            size_limit: DEFAULT_SIZE_LIMIT,
        }
    }
}

/// Why a preview could not be made (the command did not run).
#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    #[error("preview unavailable: {0}")]
    Unavailable(String),
    #[error("cannot preview in {}: {why}", dir.display())]
    Directory { dir: PathBuf, why: String },
    #[error("the preview view could not be built: {0}")]
    Setup(String),
    #[error("cannot start the preview: {0}")]
    Exec(#[from] super::ExecError),
    #[error("the preview's report is unreadable: {0}")]
    Report(String),
}

use sandbox::masks::working_tree;

/// Where a command in the view may write and read.
#[derive(Debug, Clone, PartialEq)]
pub struct Places {
    /// The working tree (writable, with its real contents).
    pub tree: PathBuf,
    /// Home and `/tmp` (writable, shown empty: the command's own).
    pub fresh: Vec<PathBuf>,
    /// The readable world (see [`sandbox::world`]).
    pub world: sandbox::world::World,
}

impl Places {
    /// Every writable root: the tree, then the fresh places.
    pub fn writable(&self) -> Vec<PathBuf> {
        std::iter::once(self.tree.clone())
            .chain(self.fresh.iter().cloned())
            .collect()
    }
}

/// Folders a working tree must not be: the trial would read all of them.
const NOT_A_TREE: &[&str] = &[
    "/tmp", "/var/tmp", "/dev/shm", "/run", "/var", "/etc", "/usr",
];

/// The places of a command run in `cwd`: its working tree (the git top
/// level, else `cwd`), `home` and `/tmp` shown empty, and its readable
/// world. A tree that is `/`, the home folder or one holding it, or a
/// shared folder (`/tmp`…) is refused: it would make all of it readable.
pub fn places(cwd: &Path, home: Option<&Path>) -> Result<Places, PreviewError> {
    let bad = |why: &str| PreviewError::Directory {
        dir: cwd.to_path_buf(),
        why: why.into(),
    };
    let cwd = cwd
        .canonicalize()
        .map_err(|e| bad(&format!("it cannot be opened: {e}")))?;
    let tree = working_tree(&cwd);
    if tree == Path::new("/") {
        return Err(bad("the working tree would be / (the whole machine)"));
    }
    let home = home.and_then(|h| h.canonicalize().ok());
    if home.as_ref().is_some_and(|h| h.starts_with(&tree)) {
        return Err(bad(
            "the working tree would be the home folder (or hold it): all of it would be readable",
        ));
    }
    if NOT_A_TREE.iter().any(|t| tree == Path::new(t)) {
        return Err(bad(
            "the working tree would be a folder every program shares",
        ));
    }
    let fresh: Vec<PathBuf> = [home.as_deref(), Some(Path::new("/tmp"))]
        .into_iter()
        .flatten()
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| p.is_dir() && !p.starts_with(&tree))
        .collect();
    let world = sandbox::world::world(&tree);
    Ok(Places { tree, fresh, world })
}

/// The directories made writable for a command run in `cwd` (canonical):
/// its working tree, `home`, `/tmp`.
pub fn writable_roots(cwd: &Path, home: Option<&Path>) -> Result<Vec<PathBuf>, PreviewError> {
    places(cwd, home).map(|p| p.writable())
}

/// The preview helper's arguments that give the view its readable world
/// (`--read`, `--link`, `--hide`; the writable roots and masks are
/// passed apart).
pub fn world_args(world: &sandbox::world::World) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = Vec::new();
    for r in &world.places {
        args.extend(["--read".into(), r.into()]);
    }
    for (at, to) in &world.links {
        args.extend(["--link".into(), at.into(), to.into()]);
    }
    for h in &world.hidden {
        args.extend(["--hide".into(), h.into()]);
    }
    args
}

/// The staging directory: an empty directory outside every root.
fn staging(roots: &[PathBuf]) -> Result<tempfile::TempDir, PreviewError> {
    let base = Path::new(STAGING_BASE);
    if !base.is_dir() || roots.iter().any(|r| base.starts_with(r)) {
        return Err(PreviewError::Unavailable(format!(
            "{STAGING_BASE} is missing or inside a writable root"
        )));
    }
    tempfile::Builder::new()
        .prefix(".tmp")
        .tempdir_in(base)
        .map_err(|e| PreviewError::Unavailable(format!("cannot make a staging directory: {e}")))
}

/// How the view runs a command: a preview for the operator's card, or a
/// trial whose output is the call's result.
#[derive(Default)]
pub struct Run<'a> {
    /// Keep the command's environment and its stderr apart (a trial).
    pub trial: bool,
    /// The command's environment (a managed pane's); `None`: the one
    /// every tool process gets ([`super::env`]).
    pub env: Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    /// Where the output goes (spill files, windows); `None`: a window of
    /// 4 KiB at each end, in memory.
    pub retain: Option<&'a Retain>,
    /// Live output, as a real run streams it.
    pub on_output: Option<super::OutputFn>,
    /// The shell that reads the command (`None`: `/bin/sh`).
    pub shell: Option<PathBuf>,
}

/// The helper command for `script` (see [`view::Request`]).
fn command(
    script: &str,
    cwd: &Path,
    places: &Places,
    staging: &Path,
    opts: PreviewOptions,
    run: &Run<'_>,
) -> Result<tokio::process::Command, PreviewError> {
    let helper = sandbox::helper_path().map_err(PreviewError::Unavailable)?;
    let mut cmd = std::process::Command::new(helper);
    match &run.env {
        Some(vars) => {
            cmd.env_clear().envs(vars.iter().cloned());
        }
        None => super::env::apply_tool_env(&mut cmd),
    }
    cmd.args([sandbox::helper::MODE, sandbox::helper::PREVIEW])
        .args(sandbox::env_args())
        .arg("--staging")
        .arg(staging)
        .arg("--cwd")
        .arg(cwd)
        .args(["--time-ms", &opts.time_limit.as_millis().to_string()])
        .args(["--size", &opts.size_limit.to_string()]);
    if run.trial {
        cmd.arg("--trial");
    }
    cmd.arg("--root").arg(&places.tree);
    for f in &places.fresh {
        cmd.arg("--fresh").arg(f);
    }
    cmd.args(world_args(&places.world));
    for m in sandbox::masks_for(Some(cwd)) {
        cmd.arg("--mask").arg(m);
    }
    let shell = run.shell.as_deref().unwrap_or(Path::new("/bin/sh"));
    cmd.args([OsStr::new("--"), shell.as_os_str(), OsStr::new("-c")])
        .arg(script)
        .current_dir(cwd);
    Ok(tokio::process::Command::from(cmd))
}

/// Preview `script` as `sh -c` would run it in `cwd` on this machine.
pub async fn preview(
    script: &str,
    cwd: &Path,
    opts: PreviewOptions,
) -> Result<PreviewReport, PreviewError> {
    view_run(script, cwd, opts, Run::default())
        .await
        .map(|(report, _)| report)
}

/// Run `script` in the view as a trial: the report, and the command's
/// own stdout, stderr and exit status as a real run would have captured
/// them (see [`Run`]).
pub async fn trial(
    script: &str,
    cwd: &Path,
    opts: PreviewOptions,
    run: Run<'_>,
) -> Result<(PreviewReport, super::RunOutcome), PreviewError> {
    let run = Run { trial: true, ..run };
    view_run(script, cwd, opts, run).await
}

async fn view_run(
    script: &str,
    cwd: &Path,
    opts: PreviewOptions,
    run: Run<'_>,
) -> Result<(PreviewReport, super::RunOutcome), PreviewError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let places = places(cwd, home.as_deref())?;
    let cwd = cwd.canonicalize().map_err(|e| PreviewError::Directory {
        dir: cwd.to_path_buf(),
        why: e.to_string(),
    })?;
    let staging = staging(&places.writable())?;
    let cmd = command(script, &cwd, &places, staging.path(), opts, &run)?;
    let window = Retain {
        spill_dir: None,
        labels: ["preview-stdout".into(), "preview-stderr".into()],
        window: OUTPUT_WINDOW,
        cap: None,
    };
    let retain = run.retain.unwrap_or(&window);
    let grace = opts.time_limit + Duration::from_secs(30);
    let on_output = run.on_output.clone();
    let mut out =
        super::process::run_asked(cmd, Some(grace), on_output, Some(retain), STOP_GRACE).await?;
    let mut report = read_report(staging.path(), script, &out)?;
    // The helper's status said the view worked; the command's is the
    // report's.
    out.exit_code = report.exit_code;
    if let Some(c) = out.captured.as_deref() {
        let stdout = &c[0];
        report.output_head = String::from_utf8_lossy(&stdout.head).into_owned();
        report.output_tail = String::from_utf8_lossy(&stdout.tail).into_owned();
        report.output_bytes = stdout.total;
    }
    Ok((report, out))
}

/// The report the view wrote, or why there is none (the helper's own
/// words: the view could not be built, nothing ran).
fn read_report(
    staging: &Path,
    script: &str,
    out: &super::RunOutcome,
) -> Result<PreviewReport, PreviewError> {
    if out.exit_code != Some(0) {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(PreviewError::Setup(if why.is_empty() {
            format!("the helper ended with {:?}", out.exit_code)
        } else {
            why
        }));
    }
    let json = std::fs::read(staging.join(view::REPORT_FILE))
        .map_err(|e| PreviewError::Report(e.to_string()))?;
    let mut report: PreviewReport =
        serde_json::from_slice(&json).map_err(|e| PreviewError::Report(e.to_string()))?;
    report.command = script.to_string();
    report.limits = vigil_protocol::preview::HONEST_LIMITS
        .iter()
        .map(|s| s.to_string())
        .collect();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_writable_home_and_tmp_are_the_commands_own() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        let home = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = places(&repo.join("src/deep"), Some(home.path())).unwrap();
        let home = home.path().canonicalize().unwrap();
        assert_eq!(p.tree, repo.canonicalize().unwrap());
        assert_eq!(p.fresh, vec![home.clone(), PathBuf::from("/tmp")]);
        assert!(p.world.places.contains(&PathBuf::from("/usr")));
        let err = writable_roots(Path::new("/"), None).unwrap_err();
        assert!(err.to_string().contains("whole machine"), "{err}");
        let err = places(&home, Some(&home)).unwrap_err();
        assert!(err.to_string().contains("home folder"), "{err}");
        let err = places(Path::new("/tmp"), None).unwrap_err();
        assert!(err.to_string().contains("shares"), "{err}");
    }
}
