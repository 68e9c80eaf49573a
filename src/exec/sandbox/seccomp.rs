//! The seccomp filter of the sandbox: the few system calls Landlock cannot
//! judge.
//!
//! - `setsid` and `setpgid` fail (EPERM): nothing can leave the process
//!   group, so killing the group ends every process of the call.
//! - `socket` succeeds only for `AF_NETLINK` (what `ip`, `ss` read with);
//!   every other family fails with EACCES. Landlock stops TCP; this stops
//!   UDP, raw sockets and pathname unix sockets (a tmux or docker socket
//!   would otherwise be a way out).
//! - `io_uring_setup` fails (its operations would bypass this filter).
//! - A system call of another ABI (i386, x32) kills the process.
//!
//! This module only builds and loads the filter for the calling thread; it
//! must be loaded after `no_new_privs` is set and never be loaded into
//! vigil's own process.

use super::SandboxError;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// Offsets in `struct seccomp_data`.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0: u32 = 16;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;

pub(crate) fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA)
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The common start of vigil's filters: kill a system call of another ABI,
/// then load the system call number.
pub(crate) fn prologue() -> Vec<libc::sock_filter> {
    let mut p = vec![
        stmt(LD_W_ABS, OFF_ARCH),
        jump(JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(RET_K, KILL),
        stmt(LD_W_ABS, OFF_NR),
    ];
    if cfg!(target_arch = "x86_64") {
        // x32 system calls carry bit 30.
        p.push(jump(JGE_K, 0x4000_0000, 0, 1));
        p.push(stmt(RET_K, KILL));
    }
    p
}

/// Answer `action` for system call `nr` (the number must be loaded).
pub(crate) fn on_call(nr: i64, action: u32) -> [libc::sock_filter; 2] {
    [jump(JEQ_K, nr as u32, 0, 1), stmt(RET_K, action)]
}

/// Allow whatever reached this point.
pub(crate) fn allow_rest() -> libc::sock_filter {
    stmt(RET_K, ALLOW)
}

/// The filter program (see the module doc).
pub fn program() -> Vec<libc::sock_filter> {
    let denied: [(i64, i32); 3] = [
        (libc::SYS_setsid, libc::EPERM),
        (libc::SYS_setpgid, libc::EPERM),
        (libc::SYS_io_uring_setup, libc::EPERM),
    ];
    let mut p = prologue();
    for (nr, e) in denied {
        p.extend(on_call(nr, errno(e)));
    }
    p.push(jump(JEQ_K, libc::SYS_socket as u32, 1, 0));
    p.push(stmt(RET_K, ALLOW));
    // socket(family, …): only netlink.
    p.push(stmt(LD_W_ABS, OFF_ARG0));
    p.push(jump(JEQ_K, libc::AF_NETLINK as u32, 0, 1));
    p.push(stmt(RET_K, ALLOW));
    p.push(stmt(RET_K, errno(libc::EACCES)));
    p
}

/// Load `filter` into the calling thread (and what it starts) with
/// `flags`; returns what the kernel returned (a listener descriptor with
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`).
pub(crate) fn install(
    filter: &mut [libc::sock_filter],
    flags: libc::c_ulong,
) -> std::io::Result<i32> {
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `prog` points at `filter`, which outlives the call; the
    // kernel copies the program.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(rc as i32)
}

/// Load the filter into the calling thread (and what it starts).
pub fn load() -> Result<(), SandboxError> {
    install(&mut program(), 0)
        .map(|_| ())
        .map_err(SandboxError::Seccomp)
}
