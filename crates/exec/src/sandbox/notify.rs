//! The three seccomp user-notification calls a supervisor makes: take the
//! next notification, check that it is still valid (its caller alive, so
//! its pid and memory are still the caller's), and answer it. Shared by the
//! view's network and path watch (`preview::netwatch`) and the confined
//! build's `flock` (`sandbox::locks`).
//!
//! It never decides anything: what to answer is the caller's.

use std::os::fd::RawFd;

/// The next notification on `listener`; `None` when the listener is done
/// (the filtered processes are gone).
pub fn next(listener: RawFd) -> Option<libc::seccomp_notif> {
    loop {
        // SAFETY: plain data, zero is a valid value.
        let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: the ioctl writes one `seccomp_notif` into `req`.
        if unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut req) } == 0 {
            return Some(req);
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR | libc::ENOENT) => continue,
            _ => return None,
        }
    }
}

/// Whether notification `id` is still pending (its caller has not died,
/// so what was read of it is the caller's).
pub fn still_valid(listener: RawFd, id: u64) -> bool {
    // SAFETY: the ioctl reads the u64 id.
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0 }
}

/// How a notification is answered.
pub enum Answer {
    /// The call goes ahead in the caller, as if never stopped.
    Continue,
    /// The call returns this value (0: success) in the caller.
    Value(i64),
    /// The call fails with this errno in the caller.
    Fail(i32),
}

/// Answer notification `id`.
pub fn answer(listener: RawFd, id: u64, answer: Answer) {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: 0,
        flags: 0,
    };
    match answer {
        Answer::Continue => resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        Answer::Value(v) => resp.val = v,
        Answer::Fail(errno) => resp.error = -errno,
    }
    // SAFETY: the ioctl reads one `seccomp_notif_resp`.
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) };
}
