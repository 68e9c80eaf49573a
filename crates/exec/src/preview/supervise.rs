//! Running the previewed command as the view's PID 1: start it in a
//! session of its own (no controlling terminal), without any capability
//! (even as root), fenced by Landlock ([`super::fence`]), wait for it under
//! the time limit, note what it left running, then end every process of
//! the view.
//!
//! It must only run inside the view's PID namespace: "every other
//! process" is `kill(-1)` there, which outside would mean every process
//! the user may signal.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::sandbox::{SAFE_PATH, clean_env, confine};
use vigil_protocol::preview::Leftover;

/// How the command ended.
#[derive(Debug)]
pub struct Ended {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub hit_time_limit: bool,
    pub leftovers: Vec<Leftover>,
    pub duration: Duration,
    /// A bound of the view that stopped it ([`super::bounds`]).
    pub bound_hit: Option<String>,
}

/// What to run and how.
pub struct Command<'a> {
    pub program: &'a [OsString],
    /// The view's root folder (as PID 1 sees it): the command's `/`.
    pub root: &'a Path,
    /// Where it starts (as the command sees it).
    pub cwd: &'a Path,
    pub limit: Duration,
    /// The Landlock ruleset it enforces on itself.
    pub ruleset: &'a OwnedFd,
    /// A trial (its output is the call's result): `PATH` as given and
    /// stderr apart; else the sandbox's `PATH` and stderr merged.
    pub trial: bool,
}

/// Run the command in the view's root, confined by the Landlock ruleset
/// and the view's bounds, and wait at most its limit. It gets the clean
/// environment (an allow-list, [`clean_env`]) either way.
pub fn run(c: &Command<'_>) -> Result<Ended, String> {
    let started = Instant::now();
    let mut cmd = std::process::Command::new(&c.program[0]);
    // PID 1's own `/dev` is the machine's, `nodev`: the view's null device.
    let null = std::fs::File::open(super::rootfs::beneath(c.root, Path::new("/dev/null")))
        .map_err(|e| format!("cannot open the view's /dev/null: {e}"))?;
    cmd.args(&c.program[1..])
        .stdin(Stdio::from(null))
        .env_clear()
        .envs(clean_env(std::env::vars_os()));
    if c.trial {
        // `PWD` names where it runs (a shell that finds it wrong works its
        // directory out by listing every folder above: zsh, read as
        // reads outside the readable places); git takes no optional lock
        // (`git status` would refresh the index, a change of timestamps
        // only, and be asked for it).
        cmd.env("PWD", c.cwd).env("GIT_OPTIONAL_LOCKS", "0");
    } else {
        cmd.env("PATH", SAFE_PATH)
            .stderr(Stdio::from(merged_stderr()?));
    }
    let root = super::mounts::cstr(c.root)?;
    let cwd = super::mounts::cstr(c.cwd)?;
    let ruleset = c.ruleset.as_raw_fd();
    // SAFETY: the closure only makes system calls (setsid, prctl, chroot,
    // chdir, setrlimit, capset, landlock_restrict_self) on data made
    // before the fork and allocates nothing, as a child of a
    // multi-threaded process must.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::chroot(root.as_ptr()) != 0 || libc::chdir(cwd.as_ptr()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            super::bounds::apply_rlimits()?;
            confine::drop_capabilities()
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
            confine::restrict_self(ruleset)
        });
    }
    let watchdog = super::bounds::Watchdog::start();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", c.program[0]))?;
    let pid = child.id() as libc::pid_t;
    let status = wait_until(pid, started + c.limit);
    let bound_hit = watchdog.stop();
    let leftovers = match status {
        Some(_) if bound_hit.is_none() => living(pid),
        _ => Vec::new(),
    };
    end_everything();
    let (exit_code, signal) = match status {
        Some(s) if libc::WIFEXITED(s) => (Some(libc::WEXITSTATUS(s)), None),
        Some(s) if libc::WIFSIGNALED(s) => (None, Some(libc::WTERMSIG(s))),
        _ => (None, None),
    };
    Ok(Ended {
        exit_code,
        signal,
        hit_time_limit: status.is_none(),
        leftovers,
        duration: started.elapsed(),
        bound_hit,
    })
}

/// The helper's stdout again, so the command's stderr interleaves with
/// its stdout (the helper's own errors keep the real stderr).
fn merged_stderr() -> Result<std::os::fd::OwnedFd, String> {
    use std::os::fd::AsFd;
    std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("cannot share the output pipe: {e}"))
}

/// The wait status of `pid`, or `None` when `deadline` passed first.
fn wait_until(pid: libc::pid_t, deadline: Instant) -> Option<libc::c_int> {
    // SAFETY: pidfd_open takes a pid and flags.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only to `status`.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            close(pidfd);
            return Some(status);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            close(pidfd);
            return None;
        }
        if pidfd < 0 {
            std::thread::sleep(left.min(Duration::from_millis(2)));
            continue;
        }
        let mut poll = libc::pollfd {
            fd: pidfd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: one pollfd.
        unsafe { libc::poll(&mut poll, 1, ms) };
    }
}

fn close(fd: libc::c_int) {
    if fd >= 0 {
        // SAFETY: closing a descriptor this module opened.
        unsafe { libc::close(fd) };
    }
}

/// Processes of the view still running (not zombies), besides PID 1 and
/// `main`.
fn living(main: libc::pid_t) -> Vec<Leftover> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == 1 || pid == main {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next());
        if matches!(state, None | Some('Z' | 'X')) {
            continue;
        }
        let mut command = command_line(pid);
        if command.is_empty() {
            // Caught mid-exec: look again once.
            std::thread::sleep(Duration::from_millis(5));
            command = command_line(pid);
        }
        if command.is_empty() {
            // Between fork and exec: name it by what it was forked from.
            let comm = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(')'));
            command = format!("({})", comm.map_or("?", |(c, _)| c));
        }
        found.push(Leftover { pid, command });
    }
    found.sort_by_key(|l| l.pid);
    found
}

/// `/proc/PID/cmdline` as words, cut at 200 characters; empty while the
/// process is between fork and exec.
fn command_line(pid: i32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut command = String::from_utf8_lossy(&cmdline)
        .split('\0')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if let Some((i, _)) = command.char_indices().nth(200) {
        command.truncate(i);
    }
    command
}

/// SIGKILL every other process of the view and reap them all.
fn end_everything() {
    // SAFETY: in the view's PID namespace, -1 means every process but us.
    unsafe { libc::kill(-1, libc::SIGKILL) };
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only to `status`.
        let got = unsafe { libc::waitpid(-1, &mut status, 0) };
        if got < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}
