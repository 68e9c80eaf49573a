//! `flock` for a build confined to its outputs, decided by the sandbox
//! helper: a lock is taken only on a file the build may write — opened for
//! writing (Landlock lets it open for writing nothing but its write
//! folders) or lying beneath one of its write folders. Any other `flock`
//! (a source, `/etc/passwd`, a lock file of the operator's tools that the
//! readable world shows) fails with `EOPNOTSUPP`, as on a file system
//! without locks (cargo then goes on without that lock), so the build can
//! never hold the operator's programs waiting on a lock.
//!
//! The command's filter sends every `flock` to the helper (a seccomp user
//! notification, [`super::seccomp::program_for`]); the helper takes a copy
//! of the caller's descriptor (`pidfd_getfd`: the same open file, so the
//! same lock), judges that copy — what it is cannot change under the
//! judgement, unlike the caller's descriptor number — and takes or drops
//! the lock itself on it, answering with the result. A blocking request
//! waits in a thread of its own.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use super::notify;

/// Send the listener `fd` over `to` (in the confined child, after its
/// filter is loaded, before the exec): no allocation.
pub fn send_listener(to: RawFd, fd: RawFd) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // Room for one descriptor's control message, aligned.
    let mut space = [0u64; 4];
    // SAFETY: plain data, zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as _;
    // SAFETY: `msg` points at `space`, large enough for one descriptor.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        if libc::sendmsg(to, &msg, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Receive the listener from the child (none when it ended before
/// sending one).
fn receive_listener(from: &UnixStream) -> Option<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut space = [0u64; 4];
    // SAFETY: plain data, zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&space) as _;
    // SAFETY: `msg` points at buffers that outlive the call.
    let n = unsafe { libc::recvmsg(from.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n <= 0 {
        return None;
    }
    // SAFETY: the kernel filled the control buffer; one SCM_RIGHTS
    // message carries the descriptor, now ours.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
        Some(OwnedFd::from_raw_fd(fd))
    }
}

/// Start answering the confined command's `flock` calls: the listener
/// arrives over `from`; `dirs` are its write folders.
pub fn supervise(from: UnixStream, dirs: Vec<PathBuf>) {
    let _ = std::thread::Builder::new()
        .name("sandbox-locks".into())
        .spawn(move || {
            if let Some(listener) = receive_listener(&from) {
                answer_all(&listener, &dirs);
            }
        });
}

fn answer_all(listener: &OwnedFd, dirs: &[PathBuf]) {
    let fd = listener.as_raw_fd();
    while let Some(req) = notify::next(fd) {
        let (id, pid) = (req.id, req.pid as libc::pid_t);
        let (target, op) = (req.data.args[0] as i32, req.data.args[1] as i32);
        let Some(copy) = copy_of(pid, target) else {
            respond(fd, id, Err(libc::EBADF));
            continue;
        };
        // The pid may have been reused: only a still-valid request's copy
        // is the caller's.
        if !notify::still_valid(fd, id) {
            continue;
        }
        if op & libc::LOCK_UN == 0 && !writable(&copy, dirs) {
            respond(fd, id, Err(libc::EOPNOTSUPP));
            continue;
        }
        if op & libc::LOCK_NB != 0 || op & libc::LOCK_UN != 0 {
            respond(fd, id, lock(&copy, op));
        } else {
            let _ = std::thread::Builder::new()
                .name("sandbox-lock-wait".into())
                .spawn(move || respond(fd, id, lock(&copy, op)));
        }
    }
}

/// The caller's descriptor `target`, as a descriptor of ours on the same
/// open file.
fn copy_of(pid: libc::pid_t, target: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open and pidfd_getfd take integers; each returns a
    // new descriptor that becomes ours.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid, 0);
        if pidfd < 0 {
            return None;
        }
        let pidfd = OwnedFd::from_raw_fd(pidfd as RawFd);
        let copy = libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), target, 0);
        (copy >= 0).then(|| OwnedFd::from_raw_fd(copy as RawFd))
    }
}

/// Whether the open file may be locked: open for writing, or beneath a
/// write folder.
fn writable(copy: &OwnedFd, dirs: &[PathBuf]) -> bool {
    // SAFETY: F_GETFL on a descriptor we own.
    let flags = unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_GETFL) };
    if flags >= 0 && flags & libc::O_PATH == 0 && flags & libc::O_ACCMODE != libc::O_RDONLY {
        return true;
    }
    let link = format!("/proc/self/fd/{}", copy.as_raw_fd());
    std::fs::read_link(Path::new(&link))
        .is_ok_and(|p| p.is_absolute() && dirs.iter().any(|d| p.starts_with(d)))
}

fn lock(copy: &OwnedFd, op: i32) -> Result<(), i32> {
    // SAFETY: flock on a descriptor we own.
    match unsafe { libc::flock(copy.as_raw_fd(), op) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ENOLCK)),
    }
}

fn respond(fd: RawFd, id: u64, result: Result<(), i32>) {
    let answer = match result {
        Ok(()) => notify::Answer::Value(0),
        Err(errno) => notify::Answer::Fail(errno),
    };
    notify::answer(fd, id, answer);
}
