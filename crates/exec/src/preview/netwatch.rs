//! Seeing and refusing the network attempts of a previewed command, and
//! the view's seccomp filter.
//!
//! The view has its own network namespace (no interface is up), so nothing
//! can leave the machine anyway; this makes the attempts visible. A seccomp
//! user-notification filter (`SECCOMP_FILTER_FLAG_NEW_LISTENER`) sends
//! every `connect`, every `sendto` that names an address, and every
//! `sendmsg`/`sendmmsg`, to a supervisor thread of the view's PID 1.
//! `connect` and an addressed `sendto` are refused (`ECONNREFUSED`) when
//! their address pointer (a register, which no other thread can change) is
//! set, whatever the address; the supervisor only reads the address to
//! record it. `sendmsg`/`sendmmsg` are recorded (every message) and then
//! let through unchanged: what they could reach is decided by the filter,
//! not by memory a second thread could swap after the read — no unix
//! datagram or seqpacket socket exists in the view (`socket` and
//! `socketpair` refuse them), a unix stream socket ignores a message's
//! address, and the network namespace has no route.
//!
//! The same filter (decided on registers only): `socket` only for unix
//! streams, IPv4, IPv6 and netlink route/sock_diag (packet, vsock, alg…
//! fail); no keyring call (the user keyring outlives the view); no call
//! that names another process but the caller ([`seccomp::pid_naming`]: the
//! view's PID 1 is visible to the command); `io_uring_setup` fails (its
//! operations would bypass the filter). SysV and POSIX IPC stay: the view
//! has its own IPC namespace. This must only run in the view's PID 1,
//! never in vigil itself.

use std::sync::{Arc, Mutex};

use super::memory::read_memory;
use super::writewatch::{self, Writes};
use crate::sandbox::{notify, seccomp};
use vigil_protocol::preview::RefusedConnection;

/// The attempts recorded so far.
pub type Attempts = Arc<Mutex<Vec<RefusedConnection>>>;

/// What the supervisor saw: network attempts and tried writes
/// ([`writewatch`]).
#[derive(Default, Clone)]
pub struct Watched {
    pub attempts: Attempts,
    pub writes: Writes,
    pub reads: std::sync::Arc<super::readwatch::ReadWatch>,
}

/// Most distinct attempts recorded (a retry loop would otherwise fill
/// memory).
const MAX_RECORDED: usize = 200;

fn filter() -> Vec<libc::sock_filter> {
    let mut p = seccomp::prologue();
    p.extend(seccomp::on_call(
        libc::SYS_connect,
        libc::SECCOMP_RET_USER_NOTIF,
    ));
    // sendto: only with an address (argument 4, a register).
    p.extend(seccomp::block(
        libc::SYS_sendto,
        vec![
            seccomp::load_arg(4),
            seccomp::jump_eq(0, 0, 3),
            seccomp::load_arg_high(4),
            seccomp::jump_eq(0, 0, 1),
            seccomp::ret(seccomp::ALLOW),
            seccomp::ret(libc::SECCOMP_RET_USER_NOTIF),
        ],
    ));
    for nr in [libc::SYS_sendmsg, libc::SYS_sendmmsg] {
        p.extend(seccomp::on_call(nr, libc::SECCOMP_RET_USER_NOTIF));
    }
    p.extend(seccomp::on_call(
        libc::SYS_io_uring_setup,
        seccomp::errno(libc::EPERM),
    ));
    p.extend(seccomp::no_unix_datagrams(&[libc::AF_INET, libc::AF_INET6]));
    p.extend(seccomp::keyrings());
    p.extend(seccomp::pid_naming());
    p.extend(writewatch::rules());
    p.extend(super::readwatch::rules());
    p.push(seccomp::allow_rest());
    p
}

/// Load the filter into the calling thread (`no_new_privs` must be set)
/// and start the supervisor thread; what the command starts afterwards is
/// watched.
pub fn start(reads: super::readwatch::Readable) -> std::io::Result<Watched> {
    let watched = Watched {
        reads: std::sync::Arc::new(super::readwatch::ReadWatch::new(reads)),
        ..Watched::default()
    };
    let seen = watched.clone();
    // The supervisor thread starts first, so the filter (loaded into the
    // calling thread only) does not bind it: it reads other processes'
    // memory, which the filter refuses.
    let (tx, rx) = std::sync::mpsc::channel::<i32>();
    std::thread::Builder::new()
        .name("preview-net".into())
        .spawn(move || {
            if let Ok(fd) = rx.recv() {
                supervise(fd, &seen);
            }
        })?;
    let fd = seccomp::install(
        &mut filter(),
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as libc::c_ulong,
    )?;
    tx.send(fd)
        .map_err(|_| std::io::Error::other("the network supervisor is gone"))?;
    Ok(watched)
}

fn supervise(fd: i32, watched: &Watched) {
    while let Some(req) = notify::next(fd) {
        let pid = req.pid as libc::pid_t;
        let nr = i64::from(req.data.nr);
        let args = &req.data.args;
        let path_call = writewatch::watches(nr) || super::readwatch::watches(nr);
        if path_call {
            if writewatch::watches(nr) && writewatch::is_write(nr, args) {
                writewatch::record(&watched.writes, pid, nr, args);
            } else {
                watched.reads.record(pid, nr, args);
            }
            notify::answer(fd, req.id, notify::Answer::Continue);
            continue;
        }
        let (call, addresses) = judge(pid, nr, &req.data.args);
        // The caller may have died and its pid been reused: only trust
        // what was read while the notification is still valid.
        let valid = notify::still_valid(fd, req.id);
        if valid {
            for address in addresses {
                record(&watched.attempts, call, address, pid);
            }
        }
        // Decided on the call and its registers only (see the module doc).
        let refuse = match nr {
            libc::SYS_connect => req.data.args[1] != 0,
            libc::SYS_sendto => req.data.args[4] != 0,
            _ => false,
        };
        let answer = if refuse {
            notify::Answer::Fail(libc::ECONNREFUSED)
        } else {
            notify::Answer::Continue
        };
        notify::answer(fd, req.id, answer);
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

/// Most messages of one `sendmmsg` read (the kernel's own cap).
const MAX_MESSAGES: u64 = 1024;
/// `sizeof(struct mmsghdr)` and `sizeof(struct msghdr)` on 64-bit Linux.
const MMSGHDR: usize = 64;
const MSGHDR: usize = 56;

/// The call's name and every address it names (only to record them).
fn judge(pid: libc::pid_t, nr: i64, args: &[u64; 6]) -> (&'static str, Vec<String>) {
    match nr {
        libc::SYS_connect => (
            "connect",
            address(pid, args[1], args[2]).into_iter().collect(),
        ),
        libc::SYS_sendto => (
            "sendto",
            address(pid, args[4], args[5]).into_iter().collect(),
        ),
        libc::SYS_sendmsg => ("sendmsg", headers(pid, args[1], 1, MSGHDR)),
        _ => (
            "sendmmsg",
            headers(pid, args[1], args[2].min(MAX_MESSAGES), MMSGHDR),
        ),
    }
}

/// The addresses named by `count` message headers `stride` bytes apart at
/// `ptr` (each starts with `msg_name` and `msg_namelen`).
fn headers(pid: libc::pid_t, ptr: u64, count: u64, stride: usize) -> Vec<String> {
    let Some(all) = read_memory(pid, ptr, count as usize * stride) else {
        return vec!["an unreadable address".into()];
    };
    all.chunks_exact(stride)
        .filter_map(|h| {
            let name = u64::from_ne_bytes(h[..8].try_into().unwrap_or_default());
            let len = u32::from_ne_bytes(h[8..12].try_into().unwrap_or_default());
            address(pid, name, u64::from(len))
        })
        .collect()
}

/// The address at `ptr` in words (`None`: no address).
fn address(pid: libc::pid_t, ptr: u64, len: u64) -> Option<String> {
    if ptr == 0 {
        return None;
    }
    let raw = read_memory(pid, ptr, len.min(128) as usize);
    Some(raw.map_or("an unreadable address".into(), |b| describe(&b)))
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
