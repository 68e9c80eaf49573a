//! Confining a process: every capability dropped, Landlock (filesystem
//! read-only except named files and, for a build whose trial wrote only
//! outputs git ignores, the folders named to it; device files and masked secret places
//! unreadable, no TCP bind/connect, scoped signals and abstract unix
//! sockets), then the seccomp filter.
//!
//! In two steps: [`prepare`] builds the Landlock ruleset in the sandbox
//! helper (which stays outside the sandbox, so the command can neither
//! signal nor trace it), and [`apply`] enforces it and the rest in the
//! child that then starts the command. [`apply`] either returns with all of
//! it in force or returns an error; it never leaves a half-confined process
//! believing it is sandboxed. It must only ever run in a child of the
//! sandbox helper (or the probe), never in vigil's own threads.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::{SandboxError, readable, seccomp};

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

/// What the sandbox may read and write.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Allowances {
    /// Existing files the command may write (its own output files).
    pub write_files: Vec<PathBuf>,
    /// Existing folders beneath which the command may make, change and
    /// remove files and folders (never devices, FIFOs or sockets): a
    /// build's outputs and its private temporary folder.
    pub write_dirs: Vec<PathBuf>,
    /// The readable places (its world: [`super::world`]); nothing else is
    /// read, listed or executed, but `/proc` and [`READABLE_DEVICES`].
    pub readable: Vec<PathBuf>,
    /// Places inside them that must read as denied: secret places and
    /// entries unreadable to others (see [`super::readable`]).
    pub masks: Vec<PathBuf>,
}

/// Drop every capability: the bounding set (so an exec as root gains
/// none), the ambient set, and the effective/permitted/inheritable sets.
pub fn drop_capabilities() -> Result<(), SandboxError> {
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

/// What a command may do beneath a write folder: make, change, rename and
/// remove files, folders and symlinks; never make a device, FIFO or socket
/// file, never execute what is not also readable world.
fn dir_rights(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_all(abi)
        & !(AccessFs::Execute
            | AccessFs::MakeChar
            | AccessFs::MakeBlock
            | AccessFs::MakeFifo
            | AccessFs::MakeSock
            | AccessFs::IoctlDev)
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

/// A Landlock ruleset built and ready to enforce (see [`prepare`]).
#[derive(Debug)]
pub struct Prepared {
    ruleset: OwnedFd,
    /// `flock` allowed (a run given write folders: a build).
    locks: bool,
}

/// Build the ruleset: read, list and execute beneath the readable places
/// but the masked ones, read `/proc` (the machine's processes, as `ps`
/// shows them; another process's memory and environment stay behind the
/// ptrace checks Landlock scopes) and [`READABLE_DEVICES`], write the
/// allowed files and `/dev/null`, no TCP, scoped signals and abstract
/// sockets (ABI ≥ 6). Nothing is enforced yet.
pub fn prepare(allow: &Allowances) -> Result<Prepared, SandboxError> {
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
    for path in &allow.write_dirs {
        let fd = PathFd::new(path).map_err(|e| SandboxError::WriteTarget {
            path: path.clone(),
            message: e.to_string(),
        })?;
        created = created
            .add_rule(PathBeneath::new(fd, dir_rights(abi)))
            .map_err(ruleset_error)?;
    }
    let fd: Option<OwnedFd> = created.into();
    let ruleset = fd.ok_or_else(|| SandboxError::NotEnforced("no ruleset".into()))?;
    let mut excluded = readable::real_places(&allow.masks);
    excluded.push(PathBuf::from("/dev"));
    let places = readable::real_places(&allow.readable);
    let (readable, entered) =
        readable::readable_and_entered(&places, &excluded).map_err(SandboxError::Landlock)?;
    for path in readable {
        add_read_rule(
            &ruleset,
            &path,
            ACCESS_READ_FILE | ACCESS_READ_DIR | ACCESS_EXECUTE,
        )?;
    }
    // A folder holding a masked place is listed (names only, beneath it);
    // so is the device folder.
    for path in entered
        .iter()
        .map(PathBuf::as_path)
        .chain([std::path::Path::new("/dev")])
    {
        add_read_rule(&ruleset, path, ACCESS_READ_DIR)?;
    }
    add_read_rule(
        &ruleset,
        std::path::Path::new("/proc"),
        ACCESS_READ_FILE | ACCESS_READ_DIR,
    )?;
    for dev in READABLE_DEVICES {
        add_read_rule(&ruleset, std::path::Path::new(dev), ACCESS_READ_FILE)?;
    }
    Ok(Prepared {
        ruleset,
        locks: !allow.write_dirs.is_empty(),
    })
}

/// `struct landlock_path_beneath_attr` (packed).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `LANDLOCK_ACCESS_FS_EXECUTE`, `_READ_FILE`, `_READ_DIR`.
const ACCESS_EXECUTE: u64 = 1;
const ACCESS_READ_FILE: u64 = 1 << 2;
const ACCESS_READ_DIR: u64 = 1 << 3;

/// One read rule (`rights`) beneath `path`, added with the raw system
/// calls (there are many: one per sibling along each masked place); an
/// entry that vanished since it was listed is skipped. A file gets only
/// the rights a file can have.
fn add_read_rule(
    ruleset: &OwnedFd,
    path: &std::path::Path,
    rights: u64,
) -> Result<(), SandboxError> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return Ok(());
    };
    // SAFETY: `c` is NUL-terminated; O_PATH opens nothing for reading.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Ok(());
    }
    let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
    let attr = PathBeneathAttr {
        allowed_access: if is_dir {
            rights
        } else {
            rights & !ACCESS_READ_DIR
        },
        parent_fd: fd,
    };
    // SAFETY: the attribute is the packed layout the kernel expects and
    // outlives the call; both descriptors are open; `fd` is ours to close.
    let rc = unsafe {
        let rc = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            1, // LANDLOCK_RULE_PATH_BENEATH
            &attr as *const PathBeneathAttr,
            0u32,
        );
        libc::close(fd);
        rc
    };
    if rc != 0 {
        return Err(SandboxError::Landlock(format!(
            "cannot allow reading {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Enforce a ruleset on the calling thread (and what it starts):
/// `no_new_privs`, then `landlock_restrict_self`. Allocates nothing.
pub fn restrict_self(ruleset: RawFd) -> std::io::Result<()> {
    // SAFETY: prctl and landlock_restrict_self take integers; the ruleset
    // descriptor is open for the duration of the call.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Confine the calling process for good: every capability dropped, the
/// prepared Landlock ruleset, the seccomp filter. For a build (write
/// folders), the listener of its `flock` calls ([`super::locks`]).
pub fn apply(prepared: &Prepared) -> Result<Option<RawFd>, SandboxError> {
    drop_capabilities()?;
    restrict_self(prepared.ruleset.as_raw_fd())
        .map_err(|e| SandboxError::NotEnforced(format!("landlock_restrict_self: {e}")))?;
    seccomp::load(prepared.locks)
}

/// Prepare and apply in the calling process (the probe).
pub fn confine(allow: &Allowances) -> Result<(), SandboxError> {
    let listener = apply(&prepare(allow)?)?;
    if let Some(fd) = listener {
        // SAFETY: the listener is this process's, closed once.
        unsafe { libc::close(fd) };
    }
    Ok(())
}
