//! The sandbox helper: the hidden mode `vigil __sandbox [--write FILE]… --
//! PROGRAM ARGS…` of the vigil binary, started by absolute path.
//!
//! It runs before anything else in `main` (no async runtime, one thread).
//! In order: become its own process-group leader, a child subreaper,
//! non-dumpable (no ptrace from what it starts), and tied to its parent
//! (vigil's death reaches it as SIGTERM, answered by killing the group);
//! mark inherited descriptors close-on-exec; confine itself
//! ([`super::confine`]); start PROGRAM with a clean environment and a fixed
//! `PATH`; wait for it; then kill whatever it left behind (nothing can
//! leave the group, and every orphan is re-parented here) and exit with
//! its status. `__sandbox --preview …` builds a preview's throwaway view
//! instead ([`crate::exec::preview::view`]). `__sandbox --probe` confines
//! itself and exits 0, or prints
//! why it cannot and exits 1. It must never run PROGRAM unconfined: any
//! failure before the start exits [`SETUP_FAILED`] with the reason on
//! stderr.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use super::confine::{Allowances, confine};
use super::{SAFE_PATH, clean_env};

/// The helper's hidden subcommand.
pub const MODE: &str = "__sandbox";

/// The flag (right after [`MODE`]) of the preview mode: build a
/// throwaway view and run the command there ([`crate::exec::preview::view`]).
pub const PREVIEW: &str = "--preview";

/// Exit status when the sandbox could not be set up (nothing ran).
pub const SETUP_FAILED: i32 = 125;

/// What the command line asked for.
#[derive(Debug, PartialEq)]
struct Request {
    probe: bool,
    allow: Allowances,
    program: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Request, String> {
    let mut req = Request {
        probe: false,
        allow: Allowances::default(),
        program: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--probe") => req.probe = true,
            Some("--write") => {
                let path = it.next().ok_or("--write needs a file")?;
                req.allow.write_files.push(PathBuf::from(path));
            }
            Some("--") => {
                req.program = it.cloned().collect();
                break;
            }
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    if !req.probe && req.program.is_empty() {
        return Err("nothing to run: expected `-- PROGRAM [ARGS…]`".into());
    }
    Ok(req)
}

/// When `argv[1]` is the helper's mode, run the helper and return its exit
/// status; otherwise `None` (the normal command line follows).
pub fn main_if_requested() -> Option<i32> {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).and_then(|a| a.to_str()) != Some(MODE) {
        return None;
    }
    if args.get(2).and_then(|a| a.to_str()) == Some(PREVIEW) {
        return Some(crate::exec::preview::view::main(&args[3..]));
    }
    Some(match parse(&args[2..]) {
        Ok(req) => run(req),
        Err(e) => fail(&e),
    })
}

fn fail(msg: &str) -> i32 {
    eprintln!("vigil sandbox: {msg}; nothing was run");
    SETUP_FAILED
}

extern "C" fn on_parent_death(_: libc::c_int) {
    // SAFETY: kill is async-signal-safe; 0 addresses our own group.
    unsafe {
        libc::kill(0, libc::SIGKILL);
    }
}

/// Own group, subreaper, not dumpable, SIGTERM when vigil goes away.
fn detach_from_caller() -> Result<(), String> {
    // SAFETY: process-attribute calls with integer arguments; the handler
    // only calls kill.
    unsafe {
        if libc::getpgrp() != libc::getpid() && libc::setpgid(0, 0) != 0 {
            return Err(format!(
                "cannot start a process group: {}",
                std::io::Error::last_os_error()
            ));
        }
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::signal(
            libc::SIGTERM,
            on_parent_death as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        if libc::getppid() == 1 {
            return Err("vigil went away before the sandbox started".into());
        }
        libc::close_range(
            3,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_int,
        );
    }
    Ok(())
}

fn run(req: Request) -> i32 {
    if let Err(e) = detach_from_caller() {
        return fail(&e);
    }
    if let Err(e) = confine(&req.allow) {
        return fail(&e.to_string());
    }
    if req.probe {
        return 0;
    }
    let mut cmd = Command::new(&req.program[0]);
    cmd.args(&req.program[1..])
        .env_clear()
        .envs(clean_env(std::env::vars_os()))
        .env("PATH", SAFE_PATH);
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(&format!("cannot start {:?}: {e}", req.program[0])),
    };
    let status = wait_for(child.id() as libc::pid_t);
    kill_leftovers();
    exit_like(status)
}

/// Wait for `pid`, reaping any orphan that exits meanwhile.
fn wait_for(pid: libc::pid_t) -> libc::c_int {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only to `status`.
        let got = unsafe { libc::waitpid(-1, &mut status, 0) };
        if got == pid {
            return status;
        }
        if got < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // No children at all: the program is gone.
            return status;
        }
    }
}

/// Our children right now (orphans of the program are re-parented here).
fn children() -> Vec<libc::pid_t> {
    let me = std::process::id();
    std::fs::read_to_string(format!("/proc/{me}/task/{me}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Kill every descendant: each child, then the orphans that come to us,
/// until there is nothing left to wait for.
fn kill_leftovers() {
    loop {
        for pid in children() {
            // SAFETY: signalling a child of ours.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        let mut status = 0;
        // SAFETY: waitpid writes only to `status`.
        let got = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        match got {
            0 => std::thread::sleep(std::time::Duration::from_millis(1)),
            n if n > 0 => {}
            _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
            _ => return,
        }
    }
}

/// Exit with the program's code, or die of the signal that killed it.
fn exit_like(status: libc::c_int) -> i32 {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: restoring the default action and signalling ourselves.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
        }
        return 128 + sig;
    }
    libc::WEXITSTATUS(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn command_lines_are_read_strictly() {
        let r = parse(&os(&["--write", "/tmp/o", "--", "/bin/sh", "-c", "ls"])).unwrap();
        assert_eq!(r.allow.write_files, vec![PathBuf::from("/tmp/o")]);
        assert_eq!(r.program, os(&["/bin/sh", "-c", "ls"]));
        assert!(!r.probe);
        assert!(parse(&os(&["--probe"])).unwrap().probe);
        assert!(parse(&os(&["--"])).unwrap_err().contains("nothing to run"));
        assert!(parse(&os(&["--write"])).is_err());
        assert!(parse(&os(&["--bogus", "--", "x"])).is_err());
        // Everything after `--` belongs to the program, flags included.
        let r = parse(&os(&["--", "ls", "--write", "x"])).unwrap();
        assert_eq!(r.program, os(&["ls", "--write", "x"]));
    }
}
