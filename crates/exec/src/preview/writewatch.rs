//! Seeing every write a previewed command *tries*, including the ones the
//! view refuses.
//!
//! The overlays show what a command changed inside the writable roots; a
//! write elsewhere (`/etc`, `/usr`, a masked secret place) fails in the
//! view (read-only, or Landlock) and leaves no trace in any layer, yet a
//! real run would have made it. So the view's seccomp filter (see
//! [`super::netwatch`]) also sends these calls to the supervisor, which
//! records the path and lets the call go on unchanged:
//! - `open`/`openat` whose flags ask for writing (`O_WRONLY`, `O_RDWR`,
//!   `O_CREAT`, `O_TRUNC`, `O_APPEND`: decided on the register), every
//!   `creat` and `openat2`;
//! - every call that changes a name or an inode's metadata by path:
//!   `mkdir*`, `rmdir`, `unlink*`, `rename*`, `link*`, `symlink*`, `mknod*`,
//!   `truncate`, `chmod`/`fchmodat*`, `chown`/`lchown`/`fchownat`,
//!   `utime*`/`futimesat`, `setxattr`/`removexattr` (and their `l` forms).
//!
//! Read-only opens are never sent (the filter looks at the flags), so a
//! command that only reads pays nothing. The path is read from the
//! caller's memory, so a hostile command could show another path than the
//! one the kernel then uses: the record can miss a refused write, never
//! cause one (the call is decided by the kernel as without the watch).
//! What a missed record costs is a view result the real run would not
//! have given; the real machine is untouched either way. [`classify`]
//! turns the recorded paths into the report's words after the run.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::sandbox::seccomp;

/// The paths recorded so far (absolute, as the caller named them).
pub type Writes = Arc<Mutex<Vec<PathBuf>>>;

/// Most distinct paths recorded.
const MAX_RECORDED: usize = 200;

/// `O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND`.
const WRITE_FLAGS: u32 =
    (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND) as u32;

/// `AT_FDCWD` as the low 32 bits of a register.
const AT_FDCWD: u64 = libc::AT_FDCWD as u32 as u64;

/// Where a watched call names its path(s): `(dirfd argument, path argument)`.
type Named = &'static [(Option<usize>, usize)];

/// Every watched call but the flag-gated opens, with where its paths are.
fn by_path() -> Vec<(i64, Named)> {
    let mut v: Vec<(i64, Named)> = vec![
        (libc::SYS_openat2, &[(Some(0), 1)]),
        (libc::SYS_mkdirat, &[(Some(0), 1)]),
        (libc::SYS_unlinkat, &[(Some(0), 1)]),
        (libc::SYS_renameat, &[(Some(0), 1), (Some(2), 3)]),
        (libc::SYS_renameat2, &[(Some(0), 1), (Some(2), 3)]),
        (libc::SYS_linkat, &[(Some(2), 3)]),
        (libc::SYS_symlinkat, &[(Some(1), 2)]),
        (libc::SYS_mknodat, &[(Some(0), 1)]),
        (libc::SYS_truncate, &[(None, 0)]),
        (libc::SYS_fchmodat, &[(Some(0), 1)]),
        (libc::SYS_fchownat, &[(Some(0), 1)]),
        (libc::SYS_utimensat, &[(Some(0), 1)]),
        (libc::SYS_setxattr, &[(None, 0)]),
        (libc::SYS_lsetxattr, &[(None, 0)]),
        (libc::SYS_removexattr, &[(None, 0)]),
        (libc::SYS_lremovexattr, &[(None, 0)]),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend_from_slice(&[
        (libc::SYS_creat, &[(None, 0)][..]),
        (libc::SYS_mkdir, &[(None, 0)]),
        (libc::SYS_rmdir, &[(None, 0)]),
        (libc::SYS_unlink, &[(None, 0)]),
        (libc::SYS_rename, &[(None, 0), (None, 1)]),
        (libc::SYS_link, &[(None, 1)]),
        (libc::SYS_symlink, &[(None, 1)]),
        (libc::SYS_mknod, &[(None, 0)]),
        (libc::SYS_chmod, &[(None, 0)]),
        (libc::SYS_chown, &[(None, 0)]),
        (libc::SYS_lchown, &[(None, 0)]),
        (libc::SYS_utime, &[(None, 0)]),
        (libc::SYS_utimes, &[(None, 0)]),
        (libc::SYS_futimesat, &[(Some(0), 1)]),
    ]);
    v.push((libc::SYS_fchmodat2, &[(Some(0), 1)]));
    v
}

/// The opens watched only when their flags ask for writing: `(call, dirfd
/// argument, path argument, flags argument)`.
fn flag_gated() -> Vec<(i64, Option<usize>, usize, u32)> {
    let mut v = vec![(libc::SYS_openat, Some(0), 1, 2)];
    #[cfg(target_arch = "x86_64")]
    v.push((libc::SYS_open, None, 0, 1));
    v
}

/// The filter's part for writes (the call number must be loaded; every
/// watched call is answered with a user notification).
pub fn rules() -> Vec<libc::sock_filter> {
    let notify = libc::SECCOMP_RET_USER_NOTIF;
    let mut p = Vec::new();
    // Every open: a read-only one is [`super::readwatch`]'s to look at.
    for (nr, ..) in flag_gated() {
        p.extend(seccomp::on_call(nr, notify));
    }
    for (nr, _) in by_path() {
        p.extend(seccomp::on_call(nr, notify));
    }
    p
}

/// Whether call `nr` with these arguments asks to write (an open without
/// write flags only reads).
pub fn is_write(nr: i64, args: &[u64; 6]) -> bool {
    match flag_gated().iter().find(|(n, ..)| *n == nr) {
        Some((.., flags)) => args[*flags as usize] as u32 & WRITE_FLAGS != 0,
        None => true,
    }
}

/// Whether `nr` is one of this module's calls.
pub fn watches(nr: i64) -> bool {
    flag_gated().iter().any(|(n, ..)| *n == nr) || by_path().iter().any(|(n, _)| *n == nr)
}

/// Record the paths call `nr` of process `pid` names.
pub fn record(writes: &Writes, pid: libc::pid_t, nr: i64, args: &[u64; 6]) {
    let named: Vec<(Option<usize>, usize)> = match flag_gated().iter().find(|(n, ..)| *n == nr) {
        Some((_, dirfd, path, _)) => vec![(*dirfd, *path)],
        None => match by_path().into_iter().find(|(n, _)| *n == nr) {
            Some((_, named)) => named.to_vec(),
            None => return,
        },
    };
    for (dirfd, path) in named {
        let Some(name) = read_path(pid, args[path]) else {
            continue;
        };
        let base = dirfd.map_or(AT_FDCWD, |i| args[i] & 0xffff_ffff);
        let Some(full) = absolute(pid, base, &name).map(|p| through_proc(pid, p)) else {
            continue;
        };
        let Ok(mut list) = writes.lock() else { return };
        if !list.contains(&full) && list.len() < MAX_RECORDED {
            list.push(full);
        }
    }
}

/// The NUL-terminated path at `ptr` in `pid` (at most `PATH_MAX`).
pub fn read_path(pid: libc::pid_t, ptr: u64) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    if ptr == 0 {
        return None;
    }
    let mut out = Vec::new();
    let mut at = ptr;
    while out.len() < libc::PATH_MAX as usize {
        // Never read across a page boundary in one go: the next page may
        // be unmapped although the string ends before it.
        let room = 4096 - (at % 4096) as usize;
        let chunk = super::memory::read_memory(pid, at, room)?;
        if let Some(end) = chunk.iter().position(|b| *b == 0) {
            out.extend_from_slice(&chunk[..end]);
            return Some(PathBuf::from(std::ffi::OsString::from_vec(out)));
        }
        out.extend_from_slice(&chunk);
        at += room as u64;
    }
    None
}

static VIEW_ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The view's root folder as PID 1 sees it (the command runs `chroot`ed
/// there): a folder a watcher reads from `/proc/PID/…` is named from it.
pub fn set_view_root(root: &Path) {
    let _ = VIEW_ROOT.set(root.to_path_buf());
}

/// `path` as PID 1 sees it, named as the command sees it.
pub fn from_view(path: PathBuf) -> PathBuf {
    match VIEW_ROOT.get().and_then(|r| path.strip_prefix(r).ok()) {
        Some(rest) => Path::new("/").join(rest),
        None => path,
    }
}

/// `name` made absolute against `dirfd` (or the cwd) of `pid`.
pub fn absolute(pid: libc::pid_t, dirfd: u64, name: &Path) -> Option<PathBuf> {
    if name.is_absolute() {
        return Some(normal(name));
    }
    let link = if dirfd == AT_FDCWD {
        format!("/proc/{pid}/cwd")
    } else {
        format!("/proc/{pid}/fd/{dirfd}")
    };
    let dir = from_view(std::fs::read_link(link).ok()?);
    Some(normal(&dir.join(name)))
}

/// A path through the caller's `/proc/self/fd/N` (or its pid's) names the
/// file that descriptor is open on: resolved now, while the caller lives
/// (the supervisor's own `/proc/self` is another process).
pub fn through_proc(pid: libc::pid_t, path: PathBuf) -> PathBuf {
    let text = path.to_string_lossy();
    let own = text
        .strip_prefix("/proc/self/")
        .or_else(|| text.strip_prefix("/proc/thread-self/"))
        .map(|rest| PathBuf::from(format!("/proc/{pid}/{rest}")))
        .unwrap_or_else(|| path.clone());
    let is_fd = own
        .parent()
        .is_some_and(|p| p.file_name().is_some_and(|n| n == "fd"));
    match std::fs::read_link(&own) {
        Ok(target) if is_fd && target.is_absolute() => from_view(target),
        _ => own,
    }
}

/// `path` without `.` and with `..` taken back lexically.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// What the recorded writes mean, decided after the run.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Classified {
    /// Places outside the view's writable roots (the write failed in the
    /// view; a real run would have tried it for real).
    pub refused: Vec<String>,
    /// Masked secret places a write was tried on.
    pub secrets: Vec<String>,
}

/// Sort the recorded paths: inside a writable root (the layers show what
/// changed), a device or process file (no lasting effect), a masked place,
/// or elsewhere. Paths are resolved as far as they exist, so a symlink
/// inside a root that points outside counts as outside.
///
/// `fresh` are the writable roots the view shows empty (home, `/tmp`): a
/// write there on something the machine has (`rm -f /tmp/x`) did not
/// reach it in the view, so it counts as refused too.
pub fn classify(
    writes: &[PathBuf],
    roots: &[PathBuf],
    fresh: &[PathBuf],
    masks: &[PathBuf],
) -> Classified {
    let mut out = Classified::default();
    for w in writes {
        let real = resolved(w);
        let under = |bases: &[PathBuf], p: &Path| bases.iter().any(|b| p.starts_with(b));
        let unseen = under(fresh, &real) && !fresh.contains(&real) && real.exists();
        if under(masks, w) || under(masks, &real) {
            out.secrets.push(w.display().to_string());
        } else if harmless(&real) {
            continue;
        } else if !under(roots, &real) || unseen {
            out.refused.push(w.display().to_string());
        }
    }
    out
}

/// Writes with no lasting effect: the view's own devices, its processes'
/// files (a `/proc/self/fd/N` link is resolved first, so a write through
/// one to an outside file is not harmless; `/proc/sys` is the kernel's).
fn harmless(p: &Path) -> bool {
    p.starts_with("/dev") || (p.starts_with("/proc") && !p.starts_with("/proc/sys"))
}

/// `path` with its longest existing ancestor resolved.
pub fn resolved(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path.to_path_buf();
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |p, n| p.join(n));
        }
        match (at.file_name().map(|n| n.to_os_string()), at.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                at = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_sorted_by_where_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        let writes = vec![
            root.join("new.txt"),
            root.join("out/passwd"),
            PathBuf::from("/etc/hosts"),
            PathBuf::from("/dev/null"),
            PathBuf::from("/home/u/.ssh/id_rsa"),
        ];
        let c = classify(
            &writes,
            std::slice::from_ref(&root),
            &[],
            &[PathBuf::from("/home/u/.ssh")],
        );
        let out_passwd = root.join("out/passwd").display().to_string();
        assert_eq!(c.refused, vec![out_passwd, "/etc/hosts".to_string()]);
        assert_eq!(c.secrets, vec!["/home/u/.ssh/id_rsa".to_string()]);
    }

    #[test]
    fn dot_dot_is_taken_back() {
        assert_eq!(normal(Path::new("/a/b/../c/./d")), PathBuf::from("/a/c/d"));
        assert_eq!(normal(Path::new("/../x")), PathBuf::from("/x"));
    }

    #[test]
    fn every_watched_call_is_known() {
        assert!(watches(libc::SYS_openat));
        assert!(watches(libc::SYS_renameat2));
        assert!(!watches(libc::SYS_read));
    }
}
