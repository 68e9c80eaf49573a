//! Tethering a command on a remote target to the local process that started
//! it, so that killing the local `ssh` / `podman exec` client (timeout,
//! cancellation) also kills the command on the target.
//!
//! Neither sshd nor a container engine kills a command when its client goes
//! away without a terminal. The tether gives the client a stdin that never
//! delivers data nor EOF while vigil runs; the target side runs the script
//! under a small `sh` wrapper that kills its own process group when that
//! stdin closes (which happens when the client, and so the channel, dies).
//! This module must never write to the tether or change what the script
//! itself reads: the script's own stdin is `/dev/null`.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use tokio::process::Command;

use super::transport::sh_quote;

/// The wrapper run by `sh -c` on the target, with the script as `$1`: the
/// script runs with stdin from `/dev/null`; a watcher waits for EOF on the
/// tether (fd 3, a copy of stdin) and then kills the whole process group
/// (ssh and container engines start the command as a session leader; never
/// run it locally outside a process group of its own).
pub const WRAPPER: &str = "exec 3<&0; sh -c \"$1\" </dev/null & p=$!; \
(cat <&3 >/dev/null 2>&1; kill -KILL 0) >/dev/null 2>&1 & w=$!; \
exec 3<&-; wait $p; s=$?; kill $w 2>/dev/null; exit $s";

/// `$0` of the wrapper shell (shows up in `ps` on the target).
pub const WRAPPER_NAME: &str = "vigil";

/// The wrapper as one line of shell text for a login shell to parse
/// (`sh -c '<wrapper>' vigil '<script>'`): each part quoted exactly once.
pub fn wrapped_line(script: &str) -> String {
    format!(
        "sh -c {} {} {}",
        sh_quote(WRAPPER),
        WRAPPER_NAME,
        sh_quote(script)
    )
}

/// The wrapper as argv (for engines that take argv, not shell text).
pub fn wrapped_argv(script: &str) -> [&str; 5] {
    ["sh", "-c", WRAPPER, WRAPPER_NAME, script]
}

/// The never-ending stdin: a pipe whose write end vigil keeps and never
/// writes to. Shared by every command of one transport.
#[derive(Debug)]
pub struct Tether {
    read: OwnedFd,
    _write: OwnedFd,
}

impl Tether {
    /// A fresh pipe (both ends close-on-exec in vigil itself).
    pub fn new() -> std::io::Result<Arc<Tether>> {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 writes two descriptors into the array we own.
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        use std::os::fd::FromRawFd;
        // SAFETY: pipe2 succeeded, so both descriptors are open and ours.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(Arc::new(Tether {
            read,
            _write: write,
        }))
    }

    /// Make the tether `cmd`'s stdin. This wins over any `Stdio` set on the
    /// command later (it is applied in the child after the standard
    /// redirections), so use it only for commands that take no input.
    pub fn attach(self: &Arc<Self>, cmd: &mut Command) {
        let keep = Arc::clone(self);
        let fd = keep.read.as_raw_fd();
        // SAFETY: the closure only calls dup2(2), which is async-signal-safe,
        // and builds an io::Error from errno without allocating. `keep`
        // holds the descriptor open for as long as the command exists.
        unsafe {
            cmd.pre_exec(move || {
                let _ = &keep;
                if libc::dup2(fd, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn the_wrapper_keeps_exit_codes_and_streams() {
        let t = Tether::new().unwrap();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(wrapped_line("echo out; echo err >&2; exit 7"));
        t.attach(&mut cmd);
        let out = super::super::process::run(cmd, None, Some(Duration::from_secs(10)), None)
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(7));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[tokio::test]
    async fn the_script_reads_dev_null_not_the_tether() {
        let t = Tether::new().unwrap();
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(wrapped_line("cat; echo done"));
        t.attach(&mut cmd);
        let out = super::super::process::run(cmd, None, Some(Duration::from_secs(10)), None)
            .await
            .unwrap();
        assert_eq!(out.stdout, b"done\n");
    }

    #[tokio::test]
    async fn hostile_scripts_survive_the_wrapper() {
        let t = Tether::new().unwrap();
        for s in ["it's", "$HOME `id` \"q\"", "a\nb", "\\ \t;|&"] {
            // The wrapper kills its process group on EOF: process::run gives
            // it a group of its own, as sshd and container engines do.
            let mut cmd = Command::new("sh");
            cmd.arg("-c")
                .arg(wrapped_line(&format!("printf %s {}", sh_quote(s))));
            t.attach(&mut cmd);
            let out = super::super::process::run(cmd, None, Some(Duration::from_secs(10)), None)
                .await
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), s);
        }
    }
}
