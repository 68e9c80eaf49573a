//! Stopping a child that cleans up after itself (the sandbox helper's
//! preview mode ends its view and removes the view's control groups): it is
//! asked first (SIGTERM), given a bounded time, and only then killed.
//!
//! From async code the caller waits ([`stop`]). From a destructor (the
//! call's future was dropped: the run was cancelled, or the process is
//! exiting) the wait is handed to a thread ([`stop_detached`]) that
//! [`settle`] joins, so an exiting vigil leaves after its helpers did.
//! Signals go only to the one child, through a pidfd taken while it is
//! still unreaped: a wrong pid is never signalled. It never kills a group.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::process::Child;

/// The threads still waiting for an asked child (see [`settle`]).
static PENDING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// How long a killed child may take to be gone, after its grace.
const AFTER_KILL: Duration = Duration::from_secs(1);

/// Ask `child` to stop, wait at most `grace`, then kill it; returns once it
/// has been reaped.
pub async fn stop(child: &mut Child, grace: Duration) {
    if let Some(pid) = child.id() {
        // SAFETY: `pid` is our child and unreaped (we hold it, not waited).
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
}

/// [`stop`] from a destructor: ask `pid` (an unreaped child of ours) now;
/// a thread kills it if it is not gone within `grace`.
pub fn stop_detached(pid: u32, grace: Duration) {
    let Some(fd) = pidfd(pid) else {
        return;
    };
    // SAFETY: the pidfd names exactly this process, even after a reap.
    unsafe { send(&fd, libc::SIGTERM) };
    let waiter = std::thread::Builder::new()
        .name("vigil-stop".into())
        .spawn(move || {
            if !exited_within(&fd, grace) {
                // SAFETY: as above.
                unsafe { send(&fd, libc::SIGKILL) };
                exited_within(&fd, AFTER_KILL);
            }
        });
    if let Ok(handle) = waiter {
        PENDING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(handle);
    }
}

/// Wait until every child handed to [`stop_detached`] is gone (each wait is
/// bounded by its grace). Called as vigil exits.
pub fn settle() {
    let handles = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|e| e.into_inner()));
    for handle in handles {
        let _ = handle.join();
    }
}

/// A pidfd for `pid` (a child of ours, still unreaped, so it is the one
/// meant), or None.
pub(crate) fn pidfd(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; a result >= 0 is a new
    // descriptor we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: see above.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// # Safety
/// `fd` must be a pidfd.
unsafe fn send(fd: &OwnedFd, signal: i32) {
    // SAFETY: pidfd_send_signal with a pidfd, a signal, no info, no flags.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
}

/// Whether the process of pidfd `fd` exits within `limit` (a pidfd turns
/// readable when its process has exited, reaped or not).
fn exited_within(fd: &OwnedFd, limit: Duration) -> bool {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(limit.as_millis()).unwrap_or(i32::MAX);
    loop {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut poll, 1, ms) };
        if n >= 0 {
            return n > 0;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::sh;
    use std::time::Instant;

    #[tokio::test]
    async fn a_child_that_answers_sigterm_ends_its_own_way() {
        let dir = tempfile::tempdir().unwrap();
        let done = dir.path().join("cleaned");
        let script = format!(
            "trap 'touch {}; exit 0' TERM; echo up; while :; do sleep 0.05; done",
            done.display()
        );
        let mut child = sh(&script)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut b = [0u8; 3];
        tokio::io::AsyncReadExt::read_exact(&mut out, &mut b)
            .await
            .unwrap();
        stop(&mut child, Duration::from_secs(5)).await;
        assert!(done.exists(), "the child's own cleanup ran");
    }

    #[tokio::test]
    async fn a_child_that_ignores_sigterm_is_killed_after_its_grace() {
        let mut child = sh("trap '' TERM; while :; do sleep 0.05; done")
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let start = Instant::now();
        stop(&mut child, Duration::from_millis(300)).await;
        assert!(start.elapsed() >= Duration::from_millis(300));
        assert!(child.try_wait().unwrap().is_some(), "reaped");
    }

    #[tokio::test]
    async fn a_detached_stop_is_waited_for_at_settle() {
        let child = sh("trap '' TERM; while :; do sleep 0.05; done")
            .kill_on_drop(false)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop_detached(pid, Duration::from_millis(200));
        drop(child);
        settle();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        assert!(
            stat.is_empty() || state.starts_with('Z'),
            "killed once its grace ran out: {stat}"
        );
    }
}
