//! The sandbox helper: the hidden mode `vigil __sandbox [--write FILE]…
//! [--read PATH]… [--mask PATH]… -- PROGRAM ARGS…` of the vigil binary, started by
//! absolute path.
//!
//! It runs before anything else in `main` (no async runtime, one thread).
//! In order: become its own process-group leader, a child subreaper,
//! non-dumpable, and tied to its parent (vigil's death reaches it as
//! SIGTERM, answered by killing the group); mark inherited descriptors
//! close-on-exec; give up any terminal ([`super::session`]); build the
//! Landlock ruleset ([`super::confine::prepare`], secret places masked);
//! then fork the child that confines itself ([`super::confine::apply`]) and
//! starts PROGRAM with a clean environment and a fixed `PATH`. The helper
//! itself stays outside the sandbox: the command cannot signal, trace or
//! re-limit it (Landlock scoping and the seccomp filter), so it always
//! outlives the command, then kills whatever was left behind (nothing can
//! leave the group, and every orphan is re-parented here) and exits with
//! the command's status. `__sandbox --preview …` builds a preview's
//! throwaway view instead ([`crate::preview::view`]). `__sandbox
//! --probe` confines itself and exits 0, or prints why it cannot and
//! fails. It must never run PROGRAM unconfined: any failure before the
//! start exits [`SETUP_FAILED`] with the reason on stderr.

use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use super::confine::{Allowances, apply, confine, prepare};
use super::{SAFE_PATH, clean_env, session};

/// The helper's hidden subcommand.
pub const MODE: &str = "__sandbox";

/// The flag (right after [`MODE`]) of the preview mode: build a
/// throwaway view and run the command there ([`crate::preview::view`]).
pub const PREVIEW: &str = "--preview";

/// Exit status when the sandbox could not be set up (nothing ran).
pub const SETUP_FAILED: i32 = 125;

/// What the command line asked for.
#[derive(Debug, PartialEq)]
struct Request {
    probe: bool,
    allow: Allowances,
    /// The operator's `[sandbox] env_add` names.
    env_add: Vec<String>,
    /// The command's own temporary folder (`TMPDIR`), writable.
    tmpdir: Option<OsString>,
    /// `PATH` instead of [`SAFE_PATH`] (the one a build's trial ran with).
    path: Option<OsString>,
    program: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Request, String> {
    let mut req = Request {
        probe: false,
        allow: Allowances::default(),
        env_add: Vec::new(),
        tmpdir: None,
        path: None,
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
            Some("--write-dir") => {
                let path = it.next().ok_or("--write-dir needs a folder")?;
                req.allow.write_dirs.push(PathBuf::from(path));
            }
            Some("--tmpdir") => {
                let path = it.next().ok_or("--tmpdir needs a folder")?;
                req.allow.write_dirs.push(PathBuf::from(path));
                req.tmpdir = Some(path.clone());
            }
            Some("--path") => {
                req.path = Some(it.next().ok_or("--path needs a value")?.clone());
            }
            Some("--mask") => {
                let path = it.next().ok_or("--mask needs a path")?;
                req.allow.masks.push(PathBuf::from(path));
            }
            Some("--env") => {
                let name = it
                    .next()
                    .and_then(|n| n.to_str())
                    .ok_or("--env needs a name")?;
                req.env_add.push(name.to_string());
            }
            Some("--read") => {
                let path = it.next().ok_or("--read needs a path")?;
                req.allow.readable.push(PathBuf::from(path));
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
        return Some(crate::preview::view::main(&args[3..]));
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

fn run(req: Request) -> i32 {
    if let Err(e) = session::detach_from_caller().and_then(|()| session::drop_terminal()) {
        return fail(&e);
    }
    if req.probe {
        return match confine(&req.allow) {
            Ok(()) => 0,
            Err(e) => fail(&e.to_string()),
        };
    }
    super::world::set_config(vigil_config::readable::SandboxConfig {
        env_add: req.env_add.clone(),
        ..Default::default()
    });
    let prepared = match prepare(&req.allow) {
        Ok(p) => p,
        Err(e) => return fail(&e.to_string()),
    };
    let mut cmd = Command::new(&req.program[0]);
    cmd.args(&req.program[1..])
        .env_clear()
        .envs(clean_env(std::env::vars_os()))
        .env("PATH", req.path.as_deref().unwrap_or(SAFE_PATH.as_ref()));
    if let Some(dir) = &req.tmpdir {
        cmd.env("TMPDIR", dir);
    }
    // A build's `flock` calls come to this helper (see `super::locks`):
    // the child sends the listener over this pair.
    let pair = match req.allow.write_dirs.is_empty() {
        true => None,
        false => match UnixStream::pair() {
            Ok(p) => Some(p),
            Err(e) => return fail(&format!("cannot make a socket pair: {e}")),
        },
    };
    let to_helper = pair.as_ref().map(|(_, child)| child.as_raw_fd());
    // SAFETY: the helper is single-threaded until the child is started
    // (the lock thread starts after), so the child may allocate; it only
    // confines itself (and sends the listener) before the exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            let listener = apply(&prepared).map_err(std::io::Error::other)?;
            if let (Some(fd), Some(to)) = (listener, to_helper) {
                super::locks::send_listener(to, fd)?;
                libc::close(fd);
            }
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(&format!("cannot start {:?} confined: {e}", req.program[0])),
    };
    if let Some((mine, theirs)) = pair {
        drop(theirs);
        super::locks::supervise(mine, req.allow.write_dirs.clone());
    }
    let status = session::wait_for(child.id() as libc::pid_t);
    session::kill_leftovers();
    session::exit_like(status)
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
        let r = parse(&os(&["--mask", "/root/.ssh", "--", "ls"])).unwrap();
        assert_eq!(r.allow.masks, vec![PathBuf::from("/root/.ssh")]);
        assert!(parse(&os(&["--mask"])).is_err());
        assert!(parse(&os(&["--probe"])).unwrap().probe);
        assert!(parse(&os(&["--"])).unwrap_err().contains("nothing to run"));
        assert!(parse(&os(&["--write"])).is_err());
        let r = parse(&os(&[
            "--write-dir",
            "/w/target",
            "--tmpdir",
            "/tmp/t",
            "--",
            "x",
        ]))
        .unwrap();
        assert_eq!(
            r.allow.write_dirs,
            vec![PathBuf::from("/w/target"), PathBuf::from("/tmp/t")]
        );
        assert_eq!(r.tmpdir, Some(OsString::from("/tmp/t")));
        assert!(parse(&os(&["--write-dir"])).is_err());
        assert!(parse(&os(&["--bogus", "--", "x"])).is_err());
        // Everything after `--` belongs to the program, flags included.
        let r = parse(&os(&["--", "ls", "--write", "x"])).unwrap();
        assert_eq!(r.program, os(&["ls", "--write", "x"]));
    }
}
