//! Unit tests of the seccomp filters, run through a small BPF interpreter.

use super::*;

/// Run `prog` on one system call (x86_64 or aarch64 numbers as built).
fn run(prog: &[libc::sock_filter], nr: i64, args: [u64; 6]) -> u32 {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&(nr as u32).to_ne_bytes());
    data[4..8].copy_from_slice(&AUDIT_ARCH.to_ne_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
    }
    let (mut acc, mut pc) = (0u32, 0usize);
    loop {
        let ins = prog[pc];
        pc += 1;
        match ins.code {
            LD_W_ABS => {
                let k = ins.k as usize;
                acc = u32::from_ne_bytes(data[k..k + 4].try_into().unwrap());
            }
            AND_K => acc &= ins.k,
            RET_K => return ins.k,
            JEQ_K | JGE_K | JSET_K => {
                let hit = match ins.code {
                    JEQ_K => acc == ins.k,
                    JGE_K => acc >= ins.k,
                    _ => acc & ins.k != 0,
                };
                pc += usize::from(if hit { ins.jt } else { ins.jf });
            }
            other => panic!("unexpected instruction {other:#x}"),
        }
    }
}

fn eperm() -> u32 {
    errno(libc::EPERM)
}

#[test]
fn the_sandbox_filter_decides_each_class_on_registers() {
    let p = program();
    let a = |nr, args| run(&p, nr, args);
    let z = [0u64; 6];
    let pid = |p: u64| [p, 0, 0, 0, 0, 0];
    // Calls that name another process.
    for nr in PID_NAMING_DENIED {
        assert_eq!(a(*nr, pid(1)), eperm(), "{nr}");
    }
    for nr in PID_NAMING_SELF_ONLY {
        assert_eq!(a(*nr, pid(0)), ALLOW, "{nr} on itself");
        assert_eq!(a(*nr, pid(4242)), eperm(), "{nr} on another");
    }
    let prio = |which: u64, who: u64| [which, who, 0, 0, 0, 0];
    assert_eq!(a(libc::SYS_setpriority, prio(0, 0)), ALLOW);
    assert_eq!(a(libc::SYS_setpriority, prio(0, 7)), eperm());
    assert_eq!(a(libc::SYS_setpriority, prio(1, 0)), eperm(), "own group");
    assert_eq!(a(libc::SYS_setpriority, prio(2, 0)), eperm(), "own user");
    assert_eq!(a(libc::SYS_ioprio_set, prio(1, 0)), ALLOW);
    assert_eq!(a(libc::SYS_ioprio_set, prio(1, 9)), eperm());
    assert_eq!(a(libc::SYS_ioprio_set, prio(2, 0)), eperm());
    // IPC, keys, namespaces, groups.
    for nr in IPC_CALLS.iter().chain(KEYRING_CALLS) {
        assert_eq!(a(*nr, z), eperm(), "{nr}");
    }
    for nr in [
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_setsid,
        libc::SYS_setpgid,
    ] {
        assert_eq!(a(nr, z), eperm(), "{nr}");
    }
    assert_eq!(a(libc::SYS_clone3, z), errno(libc::ENOSYS));
    let fork_flags = (libc::CLONE_CHILD_SETTID | libc::CLONE_CHILD_CLEARTID) as u64 | 17;
    assert_eq!(a(libc::SYS_clone, pid(fork_flags)), ALLOW);
    let newuser = fork_flags | libc::CLONE_NEWUSER as u64;
    assert_eq!(a(libc::SYS_clone, pid(newuser)), eperm());
    // Sockets: netlink route and sock_diag only; unix pairs not datagrams.
    let sock = |f: i32, t: i32, p: u64| [f as u64, t as u64, p, 0, 0, 0];
    let nl = libc::AF_NETLINK;
    assert_eq!(a(libc::SYS_socket, sock(nl, libc::SOCK_RAW, 0)), ALLOW);
    assert_eq!(a(libc::SYS_socket, sock(nl, libc::SOCK_DGRAM, 4)), ALLOW);
    let eacces = errno(libc::EACCES);
    for proto in [2, 15, 16] {
        assert_eq!(a(libc::SYS_socket, sock(nl, libc::SOCK_RAW, proto)), eacces);
    }
    for fam in [
        libc::AF_UNIX,
        libc::AF_INET,
        libc::AF_INET6,
        libc::AF_PACKET,
        38,
        40,
    ] {
        assert_eq!(a(libc::SYS_socket, sock(fam, libc::SOCK_STREAM, 0)), eacces);
    }
    let un = libc::AF_UNIX;
    let cloexec = libc::SOCK_CLOEXEC;
    assert_eq!(
        a(
            libc::SYS_socketpair,
            sock(un, libc::SOCK_STREAM | cloexec, 0)
        ),
        ALLOW
    );
    assert_eq!(
        a(libc::SYS_socketpair, sock(un, libc::SOCK_SEQPACKET, 0)),
        ALLOW
    );
    assert_eq!(
        a(
            libc::SYS_socketpair,
            sock(un, libc::SOCK_DGRAM | cloexec, 0)
        ),
        eacces
    );
    // Everything else passes.
    for nr in [
        libc::SYS_read,
        libc::SYS_openat,
        libc::SYS_getpriority,
        libc::SYS_kill,
    ] {
        assert_eq!(a(nr, z), ALLOW, "{nr}");
    }
}

#[test]
fn the_views_socket_rules_refuse_unix_datagrams_and_odd_families() {
    let mut p = prologue();
    p.extend(no_unix_datagrams(&[libc::AF_INET, libc::AF_INET6]));
    p.push(allow_rest());
    let sock = |f: i32, t: i32, proto: u64| [f as u64, t as u64, proto, 0, 0, 0];
    let a = |f, t, proto| run(&p, libc::SYS_socket, sock(f, t, proto));
    assert_eq!(a(libc::AF_UNIX, libc::SOCK_STREAM, 0), ALLOW);
    assert_eq!(a(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0), ALLOW);
    assert_eq!(a(libc::AF_UNIX, libc::SOCK_DGRAM, 0), errno(libc::EACCES));
    assert_eq!(
        a(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK, 0),
        errno(libc::EACCES)
    );
    assert_eq!(a(libc::AF_INET, libc::SOCK_DGRAM, 0), ALLOW);
    assert_eq!(a(libc::AF_INET6, libc::SOCK_STREAM, 0), ALLOW);
    assert_eq!(a(libc::AF_NETLINK, libc::SOCK_RAW, 0), ALLOW);
    assert_eq!(a(libc::AF_NETLINK, libc::SOCK_RAW, 2), errno(libc::EACCES));
    for fam in [libc::AF_PACKET, 38, 40, libc::AF_BLUETOOTH] {
        assert_eq!(a(fam, libc::SOCK_STREAM, 0), errno(libc::EAFNOSUPPORT));
    }
    let pair = run(
        &p,
        libc::SYS_socketpair,
        sock(libc::AF_UNIX, libc::SOCK_DGRAM, 0),
    );
    assert_eq!(pair, errno(libc::EACCES));
}

#[test]
fn metadata_calls_fail_and_other_ioctls_and_fcntls_pass() {
    let p = program();
    let z = [0u64; 6];
    for nr in METADATA_CALLS {
        assert_eq!(run(&p, *nr, z), errno(libc::EPERM), "{nr}");
    }
    assert_eq!(run(&p, libc::SYS_flock, z), errno(libc::ENOLCK));
    // A build's `flock` goes to the helper, never through unjudged.
    assert_eq!(
        run(&program_for(true), libc::SYS_flock, z),
        libc::SECCOMP_RET_USER_NOTIF
    );
    for req in METADATA_IOCTLS {
        let args = [3, u64::from(*req), 0, 0, 0, 0];
        assert_eq!(
            run(&p, libc::SYS_ioctl, args),
            errno(libc::EPERM),
            "{req:#x}"
        );
    }
    // TCGETS, FIONREAD, FS_IOC_GETFLAGS: reading goes on.
    for req in [0x5401u64, 0x541b, 0x8008_6601] {
        assert_eq!(
            run(&p, libc::SYS_ioctl, [1, req, 0, 0, 0, 0]),
            ALLOW,
            "{req:#x}"
        );
    }
    assert_eq!(
        run(&p, libc::SYS_fcntl, [3, 1024, 1, 0, 0, 0]),
        errno(libc::EPERM),
        "F_SETLEASE"
    );
    for cmd in [
        libc::F_GETFL,
        libc::F_SETFD,
        libc::F_SETLK,
        libc::F_DUPFD_CLOEXEC,
    ] {
        assert_eq!(
            run(&p, libc::SYS_fcntl, [3, cmd as u64, 0, 0, 0, 0]),
            ALLOW,
            "{cmd}"
        );
    }
}
