//! Confining the calling process: every capability dropped, Landlock
//! (filesystem read-only except named files, device files unreadable but
//! for a harmless few, no TCP bind/connect, scoped signals and abstract
//! unix sockets), then the seccomp filter.
//!
//! [`confine`] either returns with all of it in force or returns an error;
//! it never leaves a half-confined process believing it is sandboxed
//! (Landlock must report the ruleset fully enforced). It must only ever run
//! in the sandbox helper process (it restricts the calling thread and what
//! it starts, irrevocably), never in vigil's own threads.

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::{SandboxError, seccomp};

/// The lowest Landlock ABI that can enforce the sandbox (TCP rules).
pub const MIN_ABI: i32 = 4;

/// The kernel's Landlock ABI version (0: none).
pub fn kernel_abi() -> i32 {
    // SAFETY: the version query takes no pointer the kernel writes to.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// The ABI whose rights the ruleset asks for: what the kernel has, up to
/// the newest vigil knows (V6: signal and abstract-socket scoping).
fn target_abi() -> Result<ABI, SandboxError> {
    match kernel_abi() {
        v if v < MIN_ABI => Err(SandboxError::Unsupported(if v == 0 {
            "the kernel has no Landlock (not built in or not enabled at boot)".into()
        } else {
            format!(
                "the kernel's Landlock ABI is {v}; the sandbox needs {MIN_ABI} (Linux 6.7) for network rules"
            )
        })),
        4 => Ok(ABI::V4),
        5 => Ok(ABI::V5),
        _ => Ok(ABI::V6),
    }
}

/// What the sandbox may write besides reading everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Allowances {
    /// Existing files the command may write (its own output files).
    pub write_files: Vec<PathBuf>,
}

/// Drop every capability: the bounding set (so an exec as root gains
/// none), the ambient set, and the effective/permitted/inheritable sets.
fn drop_capabilities() -> Result<(), SandboxError> {
    const PR_CAP_AMBIENT: libc::c_int = 47;
    const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;
    // SAFETY: prctl calls with integer arguments only.
    unsafe {
        for cap in 0..64 {
            // EINVAL past the last capability, EPERM without CAP_SETPCAP
            // (then no_new_privs keeps an exec from gaining any).
            libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
        }
        libc::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = Header {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [Data::default(); 2];
    // SAFETY: header and data are the v3 layout capset expects.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) };
    if rc != 0 {
        return Err(SandboxError::Capabilities(std::io::Error::last_os_error()));
    }
    Ok(())
}

fn ruleset_error(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(e.to_string())
}

/// Device files a sandboxed command may read: opening any other device can
/// act (a watchdog arms, a tape rewinds, a disk is read raw, a pty is
/// allocated), so "read-only" stops at the device folder.
pub const READABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Apply Landlock: list and execute beneath `/`, read files beneath every
/// entry of `/` but `/dev` (and [`READABLE_DEVICES`] there), write the
/// allowed files and `/dev/null`, no TCP, scoped signals and abstract
/// sockets (ABI ≥ 6).
fn landlock(allow: &Allowances) -> Result<ABI, SandboxError> {
    let abi = target_abi()?;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(ruleset_error)?
        .handle_access(AccessNet::from_all(abi))
        .map_err(ruleset_error)?;
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(ruleset_error)?;
    }
    let mut created = ruleset.create().map_err(ruleset_error)?;
    let root = PathFd::new("/").map_err(ruleset_error)?;
    created = created
        .add_rule(PathBeneath::new(
            root,
            AccessFs::Execute | AccessFs::ReadDir,
        ))
        .map_err(ruleset_error)?;
    for path in readable_beneath() {
        // An entry that vanished or dangles since it was listed is skipped.
        if let Ok(fd) = PathFd::new(&path) {
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::ReadFile))
                .map_err(ruleset_error)?;
        }
    }
    let file_rights: BitFlags<AccessFs> = AccessFs::from_file(abi) & !AccessFs::Execute;
    let mut writable = vec![PathBuf::from("/dev/null")];
    writable.extend(allow.write_files.iter().cloned());
    for path in writable {
        let fd = PathFd::new(&path).map_err(|e| SandboxError::WriteTarget {
            path: path.clone(),
            message: e.to_string(),
        })?;
        created = created
            .add_rule(PathBeneath::new(fd, file_rights))
            .map_err(ruleset_error)?;
    }
    let status = created.restrict_self().map_err(ruleset_error)?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(SandboxError::NotEnforced(format!("{:?}", status.ruleset)));
    }
    Ok(abi)
}

/// Where files may be read: every entry of `/` except the device folder
/// (and anything that resolves into it), then the readable devices.
fn readable_beneath() -> Vec<PathBuf> {
    let dev = std::path::Path::new("/dev");
    let mut out: Vec<PathBuf> = std::fs::read_dir("/")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| std::fs::canonicalize(p).is_ok_and(|real| !real.starts_with(dev)))
        .collect();
    out.extend(READABLE_DEVICES.iter().map(PathBuf::from));
    out
}

/// Confine the calling process for good (see the module doc); returns the
/// Landlock ABI in force.
pub fn confine(allow: &Allowances) -> Result<ABI, SandboxError> {
    drop_capabilities()?;
    let abi = landlock(allow)?;
    seccomp::load()?;
    Ok(abi)
}
