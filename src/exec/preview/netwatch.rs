//! Seeing and refusing the network attempts of a previewed command.
//!
//! The view has its own network namespace (no interface is up), so nothing
//! can leave the machine anyway; this makes the attempts visible. A seccomp
//! user-notification filter (`SECCOMP_FILTER_FLAG_NEW_LISTENER`) sends
//! every `connect`, and every `sendto`/`sendmsg`/`sendmmsg` that names an
//! address, to a supervisor thread of the view's PID 1, which reads the
//! address from the caller's memory, records it and answers
//! `ECONNREFUSED`. Pathname unix sockets are refused as well: a socket of
//! a daemon outside the view (docker, tmux) would be a way out.
//! `io_uring_setup` fails (its operations would bypass the filter).
//!
//! Limits: `sendmmsg` is judged by its first message; an address given
//! only in a later one is not recorded (the namespace still has no route).
//! This must only run in the view's PID 1, never in vigil itself.

use std::sync::{Arc, Mutex};

use super::report::RefusedConnection;
use crate::exec::sandbox::seccomp;

/// The attempts recorded so far.
pub type Attempts = Arc<Mutex<Vec<RefusedConnection>>>;

/// Most attempts recorded (a retry loop would otherwise fill memory).
const MAX_RECORDED: usize = 200;

fn filter() -> Vec<libc::sock_filter> {
    let mut p = seccomp::prologue();
    for nr in [
        libc::SYS_connect,
        libc::SYS_sendto,
        libc::SYS_sendmsg,
        libc::SYS_sendmmsg,
    ] {
        p.extend(seccomp::on_call(nr, libc::SECCOMP_RET_USER_NOTIF));
    }
    p.extend(seccomp::on_call(
        libc::SYS_io_uring_setup,
        seccomp::errno(libc::EPERM),
    ));
    p.push(seccomp::allow_rest());
    p
}

/// Load the filter into the calling thread (`no_new_privs` must be set)
/// and start the supervisor thread; what the command starts afterwards is
/// watched.
pub fn start() -> std::io::Result<Attempts> {
    let fd = seccomp::install(
        &mut filter(),
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as libc::c_ulong,
    )?;
    let attempts: Attempts = Arc::default();
    let seen = attempts.clone();
    std::thread::Builder::new()
        .name("preview-net".into())
        .spawn(move || supervise(fd, &seen))?;
    Ok(attempts)
}

fn supervise(fd: i32, attempts: &Attempts) {
    loop {
        // SAFETY: plain data, zero is a valid value.
        let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: the ioctl writes one `seccomp_notif` into `req`.
        if unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut req) } != 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR | libc::ENOENT) => continue,
                _ => return,
            }
        }
        let pid = req.pid as libc::pid_t;
        let (call, address) = judge(pid, i64::from(req.data.nr), &req.data.args);
        // The caller may have died and its pid been reused: only trust
        // what was read while the notification is still valid.
        // SAFETY: the ioctl reads the u64 id.
        let valid = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) } == 0;
        let mut resp = libc::seccomp_notif_resp {
            id: req.id,
            val: 0,
            error: 0,
            flags: 0,
        };
        match address {
            Some(address) if valid => {
                resp.error = -libc::ECONNREFUSED;
                record(attempts, call, address, pid);
            }
            Some(_) => resp.error = -libc::ECONNREFUSED,
            None => resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        }
        // SAFETY: the ioctl reads one `seccomp_notif_resp`.
        unsafe {
            libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp);
        }
    }
}

fn record(attempts: &Attempts, call: &str, address: String, pid: libc::pid_t) {
    let program = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let Ok(mut list) = attempts.lock() else {
        return;
    };
    let same =
        |r: &&mut RefusedConnection| r.call == call && r.address == address && r.program == program;
    if let Some(r) = list.iter_mut().find(|r| same(r)) {
        r.times = r.times.saturating_add(1);
    } else if list.len() < MAX_RECORDED {
        list.push(RefusedConnection {
            address,
            call: call.into(),
            program,
            times: 1,
        });
    }
}

/// The call's name and the address it names (`None`: no address, let it
/// through, e.g. `send` on a connected socket pair).
fn judge(pid: libc::pid_t, nr: i64, args: &[u64; 6]) -> (&'static str, Option<String>) {
    let (call, ptr, len) = match nr {
        libc::SYS_connect => ("connect", args[1], args[2]),
        libc::SYS_sendto => ("sendto", args[4], args[5]),
        libc::SYS_sendmsg => ("sendmsg", args[1], 0),
        _ => ("sendmmsg", args[1], 0),
    };
    let (ptr, len) = if call.starts_with("sendm") {
        // struct msghdr starts with msg_name (pointer) and msg_namelen.
        match read(pid, ptr, 12) {
            Some(h) => (
                u64::from_ne_bytes(h[..8].try_into().unwrap_or_default()),
                u64::from(u32::from_ne_bytes(h[8..12].try_into().unwrap_or_default())),
            ),
            None => return (call, Some("an unreadable address".into())),
        }
    } else {
        (ptr, len)
    };
    if ptr == 0 {
        return (call, None);
    }
    let raw = read(pid, ptr, len.min(128) as usize);
    (
        call,
        Some(raw.map_or("an unreadable address".into(), |b| describe(&b))),
    )
}

/// `len` bytes at `addr` in process `pid`.
fn read(pid: libc::pid_t, addr: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: the kernel writes at most `len` bytes into `buf` and reads
    // the other process's memory, never ours.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    (n == len as isize).then_some(buf)
}

/// A socket address in words: `1.2.3.4:80`, `[::1]:22`, `unix:/path`.
pub fn describe(raw: &[u8]) -> String {
    let family = raw.get(..2).map(|f| u16::from_ne_bytes([f[0], f[1]]));
    let port = |b: &[u8]| u16::from_be_bytes([b[2], b[3]]);
    match family.map(i32::from) {
        Some(libc::AF_INET) if raw.len() >= 8 => {
            let ip = std::net::Ipv4Addr::new(raw[4], raw[5], raw[6], raw[7]);
            format!("{ip}:{}", port(raw))
        }
        Some(libc::AF_INET6) if raw.len() >= 24 => {
            let mut o = [0u8; 16];
            o.copy_from_slice(&raw[8..24]);
            format!("[{}]:{}", std::net::Ipv6Addr::from(o), port(raw))
        }
        Some(libc::AF_UNIX) => {
            let path = &raw[2..];
            let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
            match path.first() {
                Some(0) => format!(
                    "unix:@{}",
                    String::from_utf8_lossy(&path[1..]).trim_end_matches('\0')
                ),
                _ => format!("unix:{}", String::from_utf8_lossy(&path[..end])),
            }
        }
        Some(f) => format!("an address of family {f}"),
        None => "an empty address".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_described() {
        let mut v4 = vec![0u8; 16];
        v4[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&443u16.to_be_bytes());
        v4[4..8].copy_from_slice(&[203, 0, 113, 5]);
        assert_eq!(describe(&v4), "203.0.113.5:443");
        let mut un = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        un.extend(b"/run/docker.sock\0");
        assert_eq!(describe(&un), "unix:/run/docker.sock");
        assert_eq!(describe(&[]), "an empty address");
    }
}
