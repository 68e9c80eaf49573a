//! The seccomp filters: the system calls Landlock cannot judge.
//!
//! The sandbox's filter ([`program`]), by class:
//! - **process groups**: `setsid` and `setpgid` fail (EPERM): nothing can
//!   leave the process group, so killing the group ends every process of
//!   the call.
//! - **calls that name another process** ([`pid_naming`]): `ptrace`,
//!   `process_vm_readv`/`writev`, `pidfd_getfd`, `kcmp`, `perf_event_open`,
//!   `migrate_pages`, `move_pages`, `process_madvise`, `process_mrelease`,
//!   `get_robust_list` fail; `prlimit64` and `sched_setaffinity`/`setparam`/
//!   `setscheduler`/`setattr` work only on the caller itself (pid 0);
//!   `setpriority` only as `PRIO_PROCESS, 0`, `ioprio_set` only as
//!   `IOPRIO_WHO_PROCESS, 0`. Signals (`kill`, `tgkill`, `pidfd_send_signal`,
//!   `F_SETOWN`…) are Landlock's (scoped to the sandbox, ABI ≥ 6).
//! - **IPC** ([`ipc`]): every SysV message, semaphore and shared-memory call
//!   and every POSIX message-queue call fails: a queue or segment is shared
//!   with every process of the machine.
//! - **keyrings** ([`keyrings`]): `add_key`, `keyctl`, `request_key` fail
//!   (the user keyring is shared by every process of the user).
//! - **namespaces** ([`namespaces`]): `unshare`, `setns` and a `clone` with a
//!   `CLONE_NEW*` flag fail; `clone3` is ENOSYS (its flags are in memory the
//!   filter cannot read; the C library falls back to `clone`).
//! - **sockets**: `socket` succeeds only for `AF_NETLINK` with
//!   `NETLINK_ROUTE` or `NETLINK_SOCK_DIAG` (what `ip` and `ss` read with;
//!   neither can send to another process without `CAP_NET_ADMIN`); every
//!   other family or netlink protocol fails with EACCES. Landlock stops
//!   TCP; this stops UDP, raw, packet, vsock, alg and unix sockets (a tmux
//!   or docker socket would otherwise be a way out). `socketpair` makes
//!   only unix streams and seqpackets: a datagram pair could still send to
//!   any socket path.
//! - **file metadata** ([`metadata`]): Landlock judges opening, writing,
//!   creating and removing, not a file's mode, owner, times, extended
//!   attributes (ACLs), inode flags or leases: every `chmod`, `chown`,
//!   `utime*`, `setxattr`/`removexattr` call, the inode-flag ioctls
//!   (`chattr`), `F_SETLEASE` and `flock` fail (a build confined to its
//!   outputs sends `flock` to the helper, which locks only what it may
//!   write: [`super::locks`]), so a read-only run cannot
//!   make a file setuid, open a key's folder to everyone or lock another
//!   process out.
//! - `io_uring_setup` fails (its operations would bypass this filter).
//! - A system call of another ABI (i386, x32) kills the process.
//!
//! Every decision is taken on the system call number and its register
//! arguments, never on memory the caller could change afterwards.
//! This module only builds and loads filters for the calling thread; they
//! must be loaded after `no_new_privs` is set and never into vigil's own
//! process.

use super::SandboxError;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// Offsets in `struct seccomp_data` (low 32 bits of each argument).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const fn off_arg(i: u32) -> u32 {
    16 + 8 * i
}

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

pub(crate) const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;

/// `CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET`
/// (`CLONE_NEWTIME` shares its bit with the exit signal in `clone`).
const CLONE_NEW_ANY: u32 = 0x7E02_0000;
/// `NETLINK_SOCK_DIAG` (`ss`).
const NETLINK_SOCK_DIAG: u32 = 4;
/// `IOPRIO_WHO_PROCESS`.
const IOPRIO_WHO_PROCESS: u32 = 1;

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

pub(crate) fn ret(action: u32) -> libc::sock_filter {
    stmt(RET_K, action)
}

pub(crate) fn load_arg(i: u32) -> libc::sock_filter {
    stmt(LD_W_ABS, off_arg(i))
}

/// Load the high 32 bits of argument `i` (a pointer's upper half).
pub(crate) fn load_arg_high(i: u32) -> libc::sock_filter {
    stmt(LD_W_ABS, off_arg(i) + 4)
}

/// `if A == k` jump `jt` forward, else `jf`.
pub(crate) fn jump_eq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    jump(JEQ_K, k, jt, jf)
}

/// The common start of vigil's filters: kill a system call of another ABI,
/// then load the system call number.
pub(crate) fn prologue() -> Vec<libc::sock_filter> {
    let mut p = vec![
        stmt(LD_W_ABS, OFF_ARCH),
        jump(JEQ_K, AUDIT_ARCH, 1, 0),
        ret(KILL),
        stmt(LD_W_ABS, OFF_NR),
    ];
    if cfg!(target_arch = "x86_64") {
        // x32 system calls carry bit 30.
        p.push(jump(JGE_K, 0x4000_0000, 0, 1));
        p.push(ret(KILL));
    }
    p
}

/// Answer `action` for system call `nr` (the number must be loaded).
pub(crate) fn on_call(nr: i64, action: u32) -> [libc::sock_filter; 2] {
    [jump(JEQ_K, nr as u32, 0, 1), ret(action)]
}

/// For system call `nr`, run `body` (which must end every path in a
/// return); other calls skip it with the number still loaded.
pub(crate) fn block(nr: i64, body: Vec<libc::sock_filter>) -> Vec<libc::sock_filter> {
    let skip = u8::try_from(body.len()).expect("a filter block under 256 instructions");
    let mut p = vec![jump(JEQ_K, nr as u32, 0, skip)];
    p.extend(body);
    p
}

/// Allow `nr` only when argument `arg` is 0 (the caller itself), else
/// `action`.
fn only_zero(nr: i64, arg: u32, action: u32) -> Vec<libc::sock_filter> {
    block(
        nr,
        vec![load_arg(arg), jump(JEQ_K, 0, 0, 1), ret(ALLOW), ret(action)],
    )
}

/// Allow `nr` only when argument 0 is `which` and argument 1 is 0.
fn only_self_as(nr: i64, which: u32) -> Vec<libc::sock_filter> {
    block(
        nr,
        vec![
            load_arg(0),
            jump(JEQ_K, which, 0, 3),
            load_arg(1),
            jump(JEQ_K, 0, 0, 1),
            ret(ALLOW),
            ret(errno(libc::EPERM)),
        ],
    )
}

/// Allow whatever reached this point.
pub(crate) fn allow_rest() -> libc::sock_filter {
    ret(ALLOW)
}

/// Every system call that names another process (see the module doc).
pub(crate) fn pid_naming() -> Vec<libc::sock_filter> {
    let eperm = errno(libc::EPERM);
    let mut p = Vec::new();
    for nr in PID_NAMING_DENIED {
        p.extend(on_call(*nr, eperm));
    }
    for nr in PID_NAMING_SELF_ONLY {
        p.extend(only_zero(*nr, 0, eperm));
    }
    p.extend(only_self_as(libc::SYS_setpriority, libc::PRIO_PROCESS));
    p.extend(only_self_as(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS));
    p
}

/// Calls that act on another process, refused outright.
pub const PID_NAMING_DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_kcmp,
    libc::SYS_perf_event_open,
    libc::SYS_migrate_pages,
    libc::SYS_move_pages,
    libc::SYS_process_madvise,
    libc::SYS_process_mrelease,
    libc::SYS_get_robust_list,
];

/// Calls whose first argument names a process: allowed for 0 (the caller).
pub const PID_NAMING_SELF_ONLY: &[i64] = &[
    libc::SYS_prlimit64,
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_setparam,
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_setattr,
];

/// SysV and POSIX IPC, refused.
pub const IPC_CALLS: &[i64] = &[
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmdt,
    libc::SYS_shmctl,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_timedreceive,
    libc::SYS_mq_notify,
    libc::SYS_mq_getsetattr,
];

/// Keyring calls, refused.
pub const KEYRING_CALLS: &[i64] = &[libc::SYS_add_key, libc::SYS_keyctl, libc::SYS_request_key];

fn deny_all(calls: &[i64], e: i32) -> Vec<libc::sock_filter> {
    calls.iter().flat_map(|nr| on_call(*nr, errno(e))).collect()
}

/// Every IPC call fails (EPERM).
pub(crate) fn ipc() -> Vec<libc::sock_filter> {
    deny_all(IPC_CALLS, libc::EPERM)
}

/// Every keyring call fails (EPERM).
pub(crate) fn keyrings() -> Vec<libc::sock_filter> {
    deny_all(KEYRING_CALLS, libc::EPERM)
}

/// No new namespace and no joining one (see the module doc).
pub(crate) fn namespaces() -> Vec<libc::sock_filter> {
    let mut p = deny_all(&[libc::SYS_unshare, libc::SYS_setns], libc::EPERM);
    p.extend(on_call(libc::SYS_clone3, errno(libc::ENOSYS)));
    p.extend(block(
        libc::SYS_clone,
        vec![
            load_arg(0),
            jump(JSET_K, CLONE_NEW_ANY, 0, 1),
            ret(errno(libc::EPERM)),
            ret(ALLOW),
        ],
    ));
    p
}

/// `socket(AF_NETLINK, _, NETLINK_ROUTE | NETLINK_SOCK_DIAG)` only.
fn netlink_only() -> Vec<libc::sock_filter> {
    block(
        libc::SYS_socket,
        vec![
            load_arg(0),
            jump(JEQ_K, libc::AF_NETLINK as u32, 0, 4),
            load_arg(2),
            jump(JEQ_K, libc::NETLINK_ROUTE as u32, 1, 0),
            jump(JEQ_K, NETLINK_SOCK_DIAG, 0, 1),
            ret(ALLOW),
            ret(errno(libc::EACCES)),
        ],
    )
}

/// With the socket type (argument 1) yet to load: allow a stream or a
/// seqpacket (`SOCK_*` flags ignored), refuse anything else with EACCES.
fn unix_stream_types() -> [libc::sock_filter; 6] {
    [
        load_arg(1),
        stmt(AND_K, 0xf),
        jump(JEQ_K, libc::SOCK_STREAM as u32, 1, 0),
        jump(JEQ_K, libc::SOCK_SEQPACKET as u32, 0, 1),
        ret(ALLOW),
        ret(errno(libc::EACCES)),
    ]
}

/// `socketpair` only of unix streams and seqpackets (a unix datagram
/// socket can send to any socket path, named in memory a second thread
/// could change after a check; a seqpacket socket ignores the address).
pub(crate) fn unix_pairs() -> Vec<libc::sock_filter> {
    block(
        libc::SYS_socketpair,
        [
            &[load_arg(0), jump(JEQ_K, libc::AF_UNIX as u32, 0, 5)][..],
            &unix_stream_types(),
        ]
        .concat(),
    )
}

/// The view's socket rules: `socketpair` as [`unix_pairs`]; `socket` of
/// the unix family only as a stream or seqpacket, of netlink only for
/// route and sock_diag, of another family only in `families`, else
/// EAFNOSUPPORT.
pub(crate) fn no_unix_datagrams(families: &[i32]) -> Vec<libc::sock_filter> {
    let mut p = unix_pairs();
    p.extend(view_socket(families));
    p
}

/// The preview's `socket` block: unix only as a stream, the other
/// `families` as they are, netlink for route and sock_diag, the rest
/// EAFNOSUPPORT.
fn view_socket(families: &[i32]) -> Vec<libc::sock_filter> {
    // 0: ld family
    // 1: jeq AF_UNIX → 2 else → 8
    // 2: ld type; 3: and 0xf; 4: jeq STREAM → 6; 5: jeq SEQPACKET → 6 else 7
    // 6: ret allow; 7: ret eacces
    // 8: jeq AF_NETLINK → 9 else 14
    // 9: ld proto; 10: jeq ROUTE → 13; 11: jeq DIAG → 13 else 12
    // 12: ret eacces; 13: ret allow
    // 14..: families, then ret eafnosupport, ret allow
    let n = families.len() as u8;
    let mut b = vec![load_arg(0), jump(JEQ_K, libc::AF_UNIX as u32, 0, 6)];
    b.extend(unix_stream_types());
    b.extend([
        jump(JEQ_K, libc::AF_NETLINK as u32, 0, 5),
        load_arg(2),
        jump(JEQ_K, libc::NETLINK_ROUTE as u32, 2, 0),
        jump(JEQ_K, NETLINK_SOCK_DIAG, 1, 0),
        ret(errno(libc::EACCES)),
        ret(ALLOW),
    ]);
    // The family is still loaded on the non-netlink path (index 8's false
    // branch lands at 14).
    for (i, f) in families.iter().enumerate() {
        // true: jump over the remaining tests and the refusal to the allow.
        let rest = n - i as u8 - 1;
        b.push(jump(JEQ_K, *f as u32, rest + 1, 0));
    }
    b.push(ret(errno(libc::EAFNOSUPPORT)));
    b.push(ret(ALLOW));
    block(libc::SYS_socket, b)
}

/// Calls that change a file's metadata, which Landlock does not judge.
pub const METADATA_CALLS: &[i64] = &[
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chmod,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chown,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_lchown,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_utime,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_utimes,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_futimesat,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    452, // fchmodat2 (the same number on every architecture)
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_utimensat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    463, // setxattrat
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    466, // removexattrat
];

/// `ioctl` requests that set inode flags or attributes (`chattr`).
pub const METADATA_IOCTLS: &[u32] = &[
    0x4008_6602, // FS_IOC_SETFLAGS
    0x4004_6602, // FS_IOC32_SETFLAGS
    0x401c_5820, // FS_IOC_FSSETXATTR
    0x4008_7602, // FS_IOC_SETVERSION
];

/// `fcntl(fd, F_SETLEASE, …)`.
const F_SETLEASE: u32 = 1024;

/// File metadata (see the module doc): the calls of [`METADATA_CALLS`]
/// and `flock` fail, `ioctl` with a request of [`METADATA_IOCTLS`] and
/// `fcntl` with `F_SETLEASE` fail; every other `ioctl`/`fcntl` goes on.
pub(crate) fn metadata(locks: bool) -> Vec<libc::sock_filter> {
    let mut p = deny_all(METADATA_CALLS, libc::EPERM);
    p.extend(on_call(
        libc::SYS_flock,
        match locks {
            true => libc::SECCOMP_RET_USER_NOTIF,
            false => errno(libc::ENOLCK),
        },
    ));
    let n = METADATA_IOCTLS.len() as u8;
    let mut b = vec![load_arg(1)];
    for (i, req) in METADATA_IOCTLS.iter().enumerate() {
        b.push(jump(JEQ_K, *req, n - i as u8, 0));
    }
    b.push(ret(ALLOW));
    b.push(ret(errno(libc::EPERM)));
    p.extend(block(libc::SYS_ioctl, b));
    p.extend(block(
        libc::SYS_fcntl,
        vec![
            load_arg(1),
            jump(JEQ_K, F_SETLEASE, 0, 1),
            ret(errno(libc::EPERM)),
            ret(ALLOW),
        ],
    ));
    p
}

/// The sandbox's filter program (see the module doc).
pub fn program() -> Vec<libc::sock_filter> {
    program_for(false)
}

/// [`program`], with `flock` sent to the helper when `locks` (a build
/// confined to its outputs: cargo locks its target folder; the helper
/// locks only what the build may write, [`super::locks`]).
pub fn program_for(locks: bool) -> Vec<libc::sock_filter> {
    let mut p = prologue();
    for nr in [
        libc::SYS_setsid,
        libc::SYS_setpgid,
        libc::SYS_io_uring_setup,
    ] {
        p.extend(on_call(nr, errno(libc::EPERM)));
    }
    p.extend(pid_naming());
    p.extend(ipc());
    p.extend(keyrings());
    p.extend(namespaces());
    p.extend(netlink_only());
    p.extend(unix_pairs());
    p.extend(metadata(locks));
    p.push(allow_rest());
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

/// Load the filter into the calling thread (and what it starts). With
/// `locks`, the listener whose notifications are its `flock` calls
/// ([`super::locks`]).
pub fn load(locks: bool) -> Result<Option<i32>, SandboxError> {
    let flags = match locks {
        true => libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as libc::c_ulong,
        false => 0,
    };
    install(&mut program_for(locks), flags)
        .map(|fd| locks.then_some(fd))
        .map_err(SandboxError::Seccomp)
}

#[cfg(test)]
#[path = "seccomp_tests.rs"]
mod tests;
