//! The mounts of the preview's view, made by its PID 1 in the view's own
//! mount namespace: everything read-only, without devices and set-uid;
//! overlays on the writable roots; the secret places masked; a fresh
//! minimal `/dev`; a `/proc` of the view's PID namespace.
//!
//! Each function mounts in the calling process's mount namespace; they must
//! only run in the view's PID 1, after it has its own mount namespace, and
//! never make a real directory writable (the real filesystem is only ever a
//! read-only lower layer).

use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The device files of the view's `/dev` (bound from the real ones);
/// every other device file anywhere reads as `nodev`.
pub const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// `MOUNT_ATTR_*` of `mount_setattr(2)`.
const ATTR_RDONLY: u64 = 0x1;
/// `MOUNT_ATTR_NOATIME` and `MOUNT_ATTR__ATIME` (the atime field's mask).
const ATTR_NOATIME: u64 = 0x10;
const ATTR_ATIME_MASK: u64 = 0x70;
const ATTR_NOSUID: u64 = 0x2;
const ATTR_NODEV: u64 = 0x4;

pub fn os_err(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

pub fn cstr(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{} holds a NUL", p.display()))
}

pub fn mount(
    src: &str,
    target: &Path,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> Result<(), String> {
    let (s, t) = (CString::new(src).unwrap_or_default(), cstr(target)?);
    let (f, d) = (
        CString::new(fstype).unwrap_or_default(),
        CString::new(data).unwrap_or_default(),
    );
    // SAFETY: every pointer is a NUL-terminated string that outlives the call.
    let rc = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, d.as_ptr().cast()) };
    if rc != 0 {
        return Err(os_err(&format!(
            "cannot mount {fstype} on {}",
            target.display()
        )));
    }
    Ok(())
}

fn bind(src: &Path, target: &Path) -> Result<(), String> {
    bind_with(src, target, libc::MS_BIND)
}

/// Bind `src` and every mount beneath it at `target` (a mount namespace
/// made by a user namespace refuses to show a folder without what is
/// mounted beneath it).
pub fn bind_tree(src: &Path, target: &Path) -> Result<(), String> {
    bind_with(src, target, libc::MS_BIND | libc::MS_REC)
}

fn bind_with(src: &Path, target: &Path, flags: libc::c_ulong) -> Result<(), String> {
    let (s, t) = (cstr(src)?, cstr(target)?);
    // SAFETY: NUL-terminated strings that outlive the call; no data.
    let rc = unsafe {
        libc::mount(
            s.as_ptr(),
            t.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(os_err(&format!("cannot bind {}", target.display())));
    }
    Ok(())
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn set_attr(path: &Path, set: u64, clear: u64, flags: libc::c_uint) -> Result<(), String> {
    let p = cstr(path)?;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `p` is NUL-terminated; `attr` has the size we pass.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            p.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(os_err(&format!(
            "cannot change the mount of {}",
            path.display()
        )));
    }
    Ok(())
}

/// Read-only, no devices, no set-uid.
pub const FROZEN: u64 = ATTR_RDONLY | ATTR_NODEV | ATTR_NOSUID;

/// Set `set` on the mount at `path` (and every mount beneath it when
/// `recursive`).
pub fn set_attr_path(path: &Path, set: u64, recursive: bool) -> Result<(), String> {
    let flags = if recursive {
        libc::AT_RECURSIVE as libc::c_uint
    } else {
        0
    };
    set_attr(path, set, 0, flags)
}

/// Every mount of this namespace private, read-only, `nodev` (no device
/// file opens anywhere: a terminal, a disk) and `nosuid`.
pub fn freeze_everything() -> Result<(), String> {
    mount(
        "none",
        Path::new("/"),
        "",
        libc::MS_REC | libc::MS_PRIVATE,
        "",
    )?;
    // noatime too where the mounts allow it (a read through an overlay's
    // lower layer must not stamp the real file's access time); in a user
    // namespace the inherited mounts' atime setting is locked.
    let all = libc::AT_RECURSIVE as libc::c_uint;
    let frozen = ATTR_RDONLY | ATTR_NODEV | ATTR_NOSUID;
    set_attr(Path::new("/"), frozen | ATTR_NOATIME, ATTR_ATIME_MASK, all)
        .or_else(|_| set_attr(Path::new("/"), frozen, 0, all))
        .map_err(|e| format!("cannot make the view read-only: {e}"))
}

/// A directory handle that keeps reaching `path` after something is
/// mounted over it (through `/proc/self/fd/N`).
pub fn hold(path: &Path) -> Result<File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))
}

pub fn via(fd: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Mount overlay `i` of `lower` at `target` (upper and work directories
/// on the tmpfs); in a user namespace overlay keeps its marks in `user.`
/// xattrs.
pub fn overlay(
    staging: &Path,
    i: usize,
    lower: &Path,
    target: &Path,
    userns: bool,
) -> Result<(), String> {
    let (upper, work) = (staging.join(format!("u{i}")), staging.join(format!("w{i}")));
    for d in [&upper, &work] {
        std::fs::create_dir(d).map_err(|e| format!("cannot make {}: {e}", d.display()))?;
    }
    let bad = |p: &Path| p.as_os_str().as_bytes().iter().any(|b| b",:\\".contains(b));
    if [lower, &upper, &work].iter().any(|p| bad(p)) {
        return Err(format!(
            "{} holds a comma, colon or backslash",
            lower.display()
        ));
    }
    // No redirects, no metadata-only copies: every changed file is whole
    // in the upper layer. A user namespace has neither (they need trusted
    // xattrs) and refuses the options.
    let extra = if userns {
        "userxattr"
    } else {
        "redirect_dir=off,metacopy=off,index=off"
    };
    let data = format!(
        "lowerdir={},upperdir={},workdir={},{extra}",
        lower.display(),
        upper.display(),
        work.display()
    );
    mount(
        "overlay",
        target,
        "overlay",
        libc::MS_NODEV | libc::MS_NOSUID,
        &data,
    )
}

/// Mask the secret place `path` (the `i`th): an empty mode-000 directory
/// over a directory (every lookup in it fails with "Permission denied",
/// which a trial counts as a refusal), an empty read-only-mode file (made
/// in `staging`) over a file. Neither mount is read-only, so reading the
/// file stamps its access time, which starts at the epoch: [`masks_read`]
/// tells afterwards which places were read. A write reaches only the
/// throwaway mask (the command has no capability to override its mode;
/// as its owner it may change the mode first), and every write tried on
/// a mask is recorded ([`super::writewatch`]).
pub fn mask(path: &Path, staging: &Path, i: usize) -> Result<(), String> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let done = if meta.is_dir() {
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        mount("tmpfs", path, "tmpfs", flags, "size=4k,mode=000")
    } else {
        blank_file(staging, i).and_then(|blank| {
            bind(&blank, path).and_then(|()| set_attr(path, ATTR_NODEV | ATTR_NOSUID, 0, 0))
        })
    };
    match done {
        Err(e) if std::fs::metadata(path).is_ok() => {
            Err(format!("cannot mask a secret place: {e}"))
        }
        Err(_) => Ok(()),
        Ok(()) => to_epoch(path),
    }
}

/// Set the access and modification times of `path` to the epoch.
fn to_epoch(path: &Path) -> Result<(), String> {
    let p = cstr(path)?;
    let times = [libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    }; 2];
    // SAFETY: `p` is NUL-terminated; `times` holds the two timespecs.
    if unsafe { libc::utimensat(libc::AT_FDCWD, p.as_ptr(), times.as_ptr(), 0) } != 0 {
        return Err(os_err(&format!("cannot stamp {}", path.display())));
    }
    Ok(())
}

/// The masked places whose content was read (a read or a directory
/// listing moved the access time off the epoch).
pub fn masks_read(root: &Path, masks: &[PathBuf]) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    masks
        .iter()
        .filter(|m| {
            std::fs::metadata(super::rootfs::beneath(root, m)).is_ok_and(|meta| meta.atime() != 0)
        })
        .map(|m| m.display().to_string())
        .collect()
}

/// The empty read-only-mode file mask `i` is bound from, made in `dir`.
fn blank_file(dir: &Path, i: usize) -> Result<PathBuf, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(format!("blank{i}"));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o444)
        .open(&path)
        .map_err(|e| format!("cannot make {}: {e}", path.display()))?;
    Ok(path)
}

/// A fresh `/dev`: a small tmpfs with [`DEVICES`] bound from the real ones
/// (reached through `real_dev`, a handle held before), the `fd` and
/// `stdin`/`stdout`/`stderr` links, then made read-only. No terminal, no
/// pty, no disk, no `shm`, no `mqueue`.
pub fn fresh_dev(real_dev: &File, dev: &Path) -> Result<(), String> {
    mount(
        "tmpfs",
        dev,
        "tmpfs",
        libc::MS_NOSUID | libc::MS_NOEXEC,
        "size=64k,mode=0755",
    )?;
    let real = via(real_dev);
    for name in DEVICES {
        let node = dev.join(name);
        File::create(&node).map_err(|e| format!("cannot make {}: {e}", node.display()))?;
        bind(&real.join(name), &node)?;
        set_attr(&node, ATTR_NOSUID, ATTR_NODEV | ATTR_RDONLY, 0)?;
    }
    for (link, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(to, dev.join(link))
            .map_err(|e| format!("cannot make /dev/{link}: {e}"))?;
    }
    mount(
        "none",
        dev,
        "",
        libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NOEXEC,
        "",
    )
}
