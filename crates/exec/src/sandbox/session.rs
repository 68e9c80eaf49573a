//! The sandbox helper's hold on what it starts: its own process group,
//! child subreaper, not dumpable, tied to vigil's life; no terminal for
//! anything it starts; waiting for the program; killing what it left.
//!
//! These only change the helper's own process attributes and signal its
//! own descendants; they must never signal a process that is not one.

/// Own group, subreaper, not dumpable, SIGTERM when vigil goes away,
/// inherited descriptors above 2 close-on-exec.
pub fn detach_from_caller() -> Result<(), String> {
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
    }
    cloexec_inherited();
    Ok(())
}

/// Mark every inherited descriptor above 2 close-on-exec: nothing vigil's
/// own parent left open (a terminal, a socket) reaches the command.
pub fn cloexec_inherited() {
    // SAFETY: close_range with integer arguments only changes flags.
    unsafe {
        libc::close_range(
            3,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_int,
        );
    }
}

extern "C" fn on_parent_death(_: libc::c_int) {
    // SAFETY: kill is async-signal-safe; 0 addresses our own group.
    unsafe {
        libc::kill(0, libc::SIGKILL);
    }
}

/// No terminal for what this process starts: a terminal on descriptor 0,
/// 1 or 2 is replaced by `/dev/null`, and the controlling terminal is
/// given up (`TIOCNOTTY`; only a session leader could take one again, and
/// nothing started here may become one).
pub fn drop_terminal() -> Result<(), String> {
    // SAFETY: open/isatty/dup2/close/ioctl on descriptors this function
    // owns or on 0..=2; the path is a NUL-terminated literal.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null < 0 {
            return Err(format!(
                "cannot open /dev/null: {}",
                std::io::Error::last_os_error()
            ));
        }
        for fd in 0..=2 {
            if libc::isatty(fd) == 1 && libc::dup2(null, fd) < 0 {
                libc::close(null);
                return Err(format!(
                    "cannot detach descriptor {fd} from its terminal: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        libc::close(null);
        let tty = libc::open(
            c"/dev/tty".as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC | libc::O_NONBLOCK,
        );
        if tty >= 0 {
            // A session leader's TIOCNOTTY hangs up its foreground group.
            let old = libc::signal(libc::SIGHUP, libc::SIG_IGN);
            let rc = libc::ioctl(tty, libc::TIOCNOTTY);
            let err = std::io::Error::last_os_error();
            libc::signal(libc::SIGHUP, old);
            libc::close(tty);
            if rc != 0 {
                return Err(format!("cannot give up the controlling terminal: {err}"));
            }
        }
    }
    Ok(())
}

/// Wait for `pid`, reaping any orphan that exits meanwhile.
pub fn wait_for(pid: libc::pid_t) -> libc::c_int {
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
pub fn kill_leftovers() {
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
pub fn exit_like(status: libc::c_int) -> i32 {
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
