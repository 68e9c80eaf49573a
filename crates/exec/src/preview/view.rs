//! The throwaway view, built by the sandbox helper in preview mode
//! (`vigil __sandbox --preview …`, see [`Request`]).
//!
//! With the kernel directly (bubblewrap 0.8, Debian bookworm's, has no
//! overlay support, which this needs): the helper gives up any terminal,
//! unshares a mount, PID, network and IPC namespace (and a user namespace
//! when not root), then forks the view's PID 1, which
//! 1. starts a session of its own and looks like an ordinary init
//!    ([`super::disguise`]);
//! 2. makes every mount private, read-only, `nodev` and `nosuid`, mounts a
//!    `tmpfs` of the size limit (a full one is ENOSPC: the size limit) and,
//!    on each writable root (working tree, home, /tmp), an `overlay` whose
//!    upper layer lives on that tmpfs; masks the secret places; mounts a
//!    fresh minimal `/dev` ([`super::mounts`]);
//! 3. hides the tmpfs, mounts a read-only `/proc` of the new PID namespace;
//! 4. watches the network ([`super::netwatch`]), fences the command with
//!    Landlock ([`super::fence`]) and runs it without capabilities
//!    ([`super::supervise`]) under the time limit;
//! 5. reads the effects from the upper layers ([`super::effects`]) and
//!    writes the [`PreviewReport`] as JSON to the report file.
//!
//! When PID 1 returns the namespaces vanish with every process and the
//! upper layers. It must never make a real directory writable: the real
//! filesystem is only ever a read-only lower layer.
//!
//! Asked to stop (SIGTERM: vigil gave up on the run, or is exiting), the
//! helper ends the view (its builder is killed, PID 1 and every process of
//! the view follow), waits for it, removes the view's control groups and
//! exits: when the helper is gone, so is everything it made.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::effects::{self, Caps, Layer};
use super::mounts::{self, cstr, hold, mount, os_err, via};
use super::{disguise, fence, limits, netwatch, readwatch, rootfs, supervise, writewatch};
use vigil_protocol::preview::PreviewReport;

/// Exit status when the view could not be built (nothing ran).
pub const SETUP_FAILED: i32 = 125;

/// What the helper was asked to do.
#[derive(Debug, Default, PartialEq)]
pub struct Request {
    /// Where the view's tmpfs is mounted (an empty directory outside every
    /// root); the report file lives there before the mount.
    pub staging: PathBuf,
    pub time_limit: Duration,
    pub size_limit: u64,
    pub cwd: PathBuf,
    /// Writable places shown with their real contents (the working tree).
    pub roots: Vec<PathBuf>,
    /// Writable places shown empty (home, `/tmp`): the command's own.
    pub fresh: Vec<PathBuf>,
    /// Readable places (see [`crate::sandbox::world`]).
    pub reads: Vec<PathBuf>,
    /// Symbolic links among them, made again: `(where, what it says)`.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// Secret places to mask (see [`crate::sandbox::masks`]).
    pub masks: Vec<PathBuf>,
    /// Entries of the readable places unreadable to others, masked too.
    pub hide: Vec<PathBuf>,
    /// The operator's `[sandbox] env_add` names.
    pub env_add: Vec<String>,
    /// A trial run whose output is the call's result: the command keeps
    /// the environment the helper was given (the one a real run gets) and
    /// its stderr apart from its stdout.
    pub trial: bool,
    pub program: Vec<OsString>,
}

/// The report file inside the staging directory.
pub const REPORT_FILE: &str = "report.json";

fn value<'a>(
    it: &mut impl Iterator<Item = &'a OsString>,
    flag: &str,
) -> Result<&'a OsString, String> {
    it.next().ok_or(format!("{flag} needs a value"))
}

fn number(v: &OsString, flag: &str) -> Result<u64, String> {
    v.to_str()
        .and_then(|s| s.parse().ok())
        .ok_or(format!("{flag} needs a number, not {v:?}"))
}

/// Read the arguments after `--preview`.
pub fn parse(args: &[OsString]) -> Result<Request, String> {
    let mut req = Request::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let flag = a.to_str().unwrap_or("");
        match flag {
            "--staging" => req.staging = value(&mut it, flag)?.into(),
            "--cwd" => req.cwd = value(&mut it, flag)?.into(),
            "--root" => req.roots.push(value(&mut it, flag)?.into()),
            "--fresh" => req.fresh.push(value(&mut it, flag)?.into()),
            "--read" => req.reads.push(value(&mut it, flag)?.into()),
            "--link" => {
                let at = value(&mut it, flag)?.into();
                req.links.push((at, value(&mut it, flag)?.into()));
            }
            "--mask" => req.masks.push(value(&mut it, flag)?.into()),
            "--hide" => req.hide.push(value(&mut it, flag)?.into()),
            "--env" => {
                let name = value(&mut it, flag)?.to_str().ok_or("--env needs a name")?;
                req.env_add.push(name.to_string());
            }
            "--time-ms" => {
                req.time_limit = Duration::from_millis(number(value(&mut it, flag)?, flag)?);
            }
            "--size" => req.size_limit = number(value(&mut it, flag)?, flag)?,
            "--trial" => req.trial = true,
            "--" => {
                req.program = it.cloned().collect();
                break;
            }
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    if req.program.is_empty() || req.roots.is_empty() || req.staging.as_os_str().is_empty() {
        return Err("expected --staging DIR --root DIR… -- PROGRAM [ARGS…]".into());
    }
    if req.size_limit == 0 || req.time_limit.is_zero() {
        return Err("--size and --time-ms must be more than 0".into());
    }
    Ok(req)
}

fn fail(msg: &str) -> i32 {
    eprintln!("vigil preview: {msg}; nothing was run");
    SETUP_FAILED
}

/// The helper's preview mode: build the view, run, report; the exit
/// status is the view's (0 when a report was written).
pub fn main(args: &[OsString]) -> i32 {
    let req = match parse(args) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    crate::sandbox::world::set_config(vigil_config::readable::SandboxConfig {
        env_add: req.env_add.clone(),
        ..Default::default()
    });
    crate::sandbox::session::cloexec_inherited();
    if let Err(e) = crate::sandbox::session::drop_terminal() {
        return fail(&e);
    }
    let made = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(req.staging.join(REPORT_FILE));
    let report = match made {
        Ok(f) => f,
        Err(e) => return fail(&format!("cannot write the report file: {e}")),
    };
    let Ok(mut amend) = report.try_clone() else {
        return fail("cannot keep the report file open");
    };
    stop_on_term();
    let mut limits = limits::enter();
    // The view is built by a child, so this process stays in the machine's
    // namespaces (where the view's control groups can be removed).
    // SAFETY: the helper is single-threaded here; the child only runs
    // Rust code of this process and exits with `_exit`.
    match unsafe { libc::fork() } {
        -1 => fail(&os_err("cannot fork the view's builder")),
        0 => {
            // SAFETY: prctl and signal with integer arguments; only the
            // helper itself answers SIGTERM by ending the view.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
            }
            let code = build_and_run(&req, report);
            // SAFETY: leave without running the parent's destructors.
            unsafe { libc::_exit(code) }
        }
        child => {
            let code = wait_exit(child);
            let hit = limits.hit();
            let missing = std::mem::take(&mut limits.missing);
            limits.remove();
            if code == 0 {
                add_limits(&mut amend, hit, missing);
            }
            code
        }
    }
}

/// Enter the view's namespaces, fork its PID 1 and wait for it.
fn build_and_run(req: &Request, report: File) -> i32 {
    let userns = match enter_namespaces() {
        Ok(userns) => userns,
        Err(e) => return fail(&e),
    };
    // SAFETY: as in `main`.
    match unsafe { libc::fork() } {
        -1 => fail(&os_err("cannot fork the view's first process")),
        0 => {
            let code = match pid1(req, report, userns) {
                Ok(()) => 0,
                Err(e) => fail(&e),
            };
            // SAFETY: leave without running the parent's destructors.
            unsafe { libc::_exit(code) }
        }
        child => wait_exit(child),
    }
}

/// Add to the report what only the helper knows after the view ended:
/// whether the process or memory limit refused something, which limits
/// could not be set.
fn add_limits(file: &mut File, hit: bool, missing: Vec<String>) {
    use std::io::{Read, Seek, SeekFrom};
    let mut json = Vec::new();
    if file.seek(SeekFrom::Start(0)).is_err() || file.read_to_end(&mut json).is_err() {
        return;
    }
    let Ok(mut report) = serde_json::from_slice::<PreviewReport>(&json) else {
        return;
    };
    report.hit_task_limit = hit;
    report.unlimited = missing;
    if let Ok(json) = serde_json::to_vec(&report) {
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = file.write_all(&json);
    }
}

/// Set by SIGTERM in the helper: end the view now.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// SIGTERM sets [`STOP`] and interrupts the helper's wait (no restart).
fn stop_on_term() {
    // SAFETY: a zeroed sigaction with a handler that only stores an atomic
    // (async-signal-safe); no SA_RESTART, so a blocked waitpid returns EINTR.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_term as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGTERM, &act, std::ptr::null_mut());
    }
}

/// Wait for `child`; once asked to stop ([`STOP`]) kill it first (the
/// view's processes die with it: each has the one before as its parent
/// and a death signal).
fn wait_exit(child: libc::pid_t) -> i32 {
    let mut status = 0;
    loop {
        if STOP.load(Ordering::SeqCst) {
            // SAFETY: `child` is our own unreaped child.
            unsafe { libc::kill(child, libc::SIGKILL) };
        }
        // SAFETY: waitpid writes only to `status`.
        if unsafe { libc::waitpid(child, &mut status, 0) } >= 0 {
            break;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return SETUP_FAILED;
        }
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        SETUP_FAILED
    }
}

/// New mount, PID and network namespaces (user too when not root: then
/// `Ok(true)`); our death kills the view.
fn enter_namespaces() -> Result<bool, String> {
    // SAFETY: process-attribute calls with integer arguments.
    let (uid, gid) = unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        (libc::geteuid(), libc::getegid())
    };
    if uid != 0 {
        // SAFETY: unshare takes flags only.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
            return Err(os_err("cannot create a user namespace (not root)"));
        }
        let maps = [
            ("/proc/self/setgroups", "deny".to_string()),
            ("/proc/self/uid_map", format!("0 {uid} 1")),
            ("/proc/self/gid_map", format!("0 {gid} 1")),
        ];
        for (file, text) in maps {
            std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))?;
        }
    }
    let flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWNET | libc::CLONE_NEWIPC;
    // SAFETY: unshare takes flags only.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(os_err(
            "cannot create the mount, PID, network and IPC namespaces",
        ));
    }
    Ok(uid != 0)
}

/// The view's PID 1 (see the module doc).
fn pid1(req: &Request, mut report_file: File, userns: bool) -> Result<(), String> {
    // SAFETY: process-attribute calls with integer arguments; setsid gives
    // up the controlling terminal (a fresh child is no group leader).
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::setsid();
    }
    disguise::look_like_init();
    mounts::freeze_everything()?;
    let real_dev = hold(Path::new("/dev"))?;
    let size = format!("size={},mode=0700", req.size_limit);
    mount(
        "tmpfs",
        &req.staging,
        "tmpfs",
        libc::MS_NOSUID | libc::MS_NODEV,
        &size,
    )?;
    let staging = hold(&req.staging)?;
    let root = req.staging.join("r");
    let plan = rootfs::Plan {
        root: &root,
        staging: &req.staging,
        trees: &req.roots,
        fresh: &req.fresh,
        reads: &req.reads,
        links: &req.links,
        userns,
    };
    let lower_paths = rootfs::build(&plan)?;
    mounts::fresh_dev(&real_dev, &root.join("dev"))?;
    drop(real_dev);
    let proc_flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY;
    mount("proc", &root.join("proc"), "proc", proc_flags, "")?;
    // PID 1's own `/proc` shows the view's processes too (the watchers
    // read the callers' folders there).
    mount("proc", Path::new("/proc"), "proc", proc_flags, "")?;
    for (i, place) in req.masks.iter().chain(&req.hide).enumerate() {
        mounts::mask(&rootfs::beneath(&root, place), &req.staging, i)?;
    }
    rootfs::seal(&root)?;
    let all_roots: Vec<PathBuf> = req.roots.iter().chain(&req.fresh).cloned().collect();
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    let ruleset = fence::build(&root, &all_roots)?;
    writewatch::set_view_root(&root);
    let watched =
        netwatch::start(readable_of(req)).map_err(|e| format!("cannot watch the command: {e}"))?;
    let command = supervise::Command {
        program: &req.program,
        root: &root,
        cwd: &req.cwd,
        limit: req.time_limit,
        ruleset: &ruleset,
        trial: req.trial,
    };
    let ended = supervise::run(&command)?;
    let writes = watched.writes.lock().map(|w| w.clone()).unwrap_or_default();
    let tried = writewatch::classify(&writes, &all_roots, &req.fresh, &req.masks);
    let mut secrets = mounts::masks_read(&root, &req.masks);
    secrets.extend(tried.secrets);
    secrets.sort();
    secrets.dedup();
    let mut outside = watched.reads.outside();
    outside.extend(mounts::masks_read(&root, &req.hide));
    outside.sort();
    outside.dedup();
    let mut report = PreviewReport {
        cwd: req.cwd.clone(),
        writable: all_roots.clone(),
        exit_code: ended.exit_code,
        signal: ended.signal,
        duration_ms: ended.duration.as_millis() as u64,
        leftovers: ended.leftovers,
        hit_time_limit: ended.hit_time_limit,
        time_limit_ms: req.time_limit.as_millis() as u64,
        size_limit: req.size_limit,
        refused: watched
            .attempts
            .lock()
            .map(|a| a.clone())
            .unwrap_or_default(),
        writes_refused: tried.refused,
        reads_outside: outside,
        secrets,
        bound_hit: ended.bound_hit,
        ..PreviewReport::default()
    };
    let top = via(&staging);
    report.hit_size_limit = nearly_full(&top, req.size_limit);
    let uppers: Vec<PathBuf> = (0..all_roots.len())
        .map(|i| top.join(format!("u{i}")))
        .collect();
    let layers: Vec<Layer<'_>> = all_roots
        .iter()
        .zip(&uppers)
        .zip(&lower_paths)
        .map(|((real, upper), lower)| Layer { real, upper, lower })
        .collect();
    let caps = Caps {
        relative_to: &req.cwd,
        ..Caps::default()
    };
    let found = effects::collect(&layers, caps);
    report.files = found.effects;
    report.files_cut = found.cut;
    let json = serde_json::to_vec(&report).map_err(|e| format!("cannot encode the report: {e}"))?;
    report_file
        .write_all(&json)
        .map_err(|e| format!("cannot write the report: {e}"))
}

/// What the command may read, for the read watch.
fn readable_of(req: &Request) -> readwatch::Readable {
    let reads: Vec<PathBuf> = req.roots.iter().chain(&req.reads).cloned().collect();
    let mut ways = reads.clone();
    ways.extend(req.fresh.iter().cloned());
    ways.extend(req.links.iter().map(|(l, _)| l.clone()));
    readwatch::Readable {
        reads,
        hidden: req.masks.iter().chain(&req.hide).cloned().collect(),
        ways,
    }
}

/// Whether the tmpfs is within 1% (at least 64 KiB) of full.
fn nearly_full(top: &Path, limit: u64) -> bool {
    let Ok(path) = cstr(top) else { return false };
    // SAFETY: statvfs writes one struct into `st`.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return false;
    }
    let free = st.f_bavail as u64 * st.f_frsize as u64;
    free <= (limit / 100).max(64 * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_request_is_read_strictly() {
        let r = parse(&os(&[
            "--staging",
            "/dev/shm/s",
            "--cwd",
            "/r",
            "--root",
            "/r",
            "--root",
            "/tmp",
            "--time-ms",
            "1500",
            "--size",
            "8388608",
            "--",
            "/bin/sh",
            "-c",
            "ls",
        ]))
        .unwrap();
        assert_eq!(r.roots, [PathBuf::from("/r"), PathBuf::from("/tmp")]);
        assert_eq!(r.time_limit, Duration::from_millis(1500));
        assert_eq!(r.program, os(&["/bin/sh", "-c", "ls"]));
        assert!(parse(&os(&["--staging", "/s", "--", "ls"])).is_err());
        assert!(parse(&os(&["--size", "x"])).unwrap_err().contains("number"));
        assert!(parse(&os(&["--bogus"])).is_err());
    }
}
