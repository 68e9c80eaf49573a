//! Seeing every read a trial *tries* outside its readable world.
//!
//! The view's root ([`super::rootfs`]) holds only the readable places, so
//! a read of anything else fails there with "No such file" where a real
//! run would have read it: the trial's result would be a wrong answer. So
//! the view's seccomp filter sends every call that names a path to read,
//! list, run or look at (`open`/`openat` without write flags, `execve*`,
//! the `stat` family, `access`/`faccessat*`, `readlink*`, `chdir`,
//! `getxattr`/`listxattr`, `inotify_add_watch`, `name_to_handle_at`,
//! `statfs`) to the supervisor, which resolves the path on the real
//! machine and records it when it exists there, outside the readable
//! places: that trial is asked ("reads outside the readable places").
//! A `stat` of a folder on the way to a readable place is not recorded
//! (the view has it); opening one is (its listing differs).
//!
//! The path is read from the caller's memory, so a racing thread could
//! show another one than the kernel then uses: the record can miss a read,
//! never let one through (what the command can read is decided by the
//! root and Landlock, not here). Every call goes on unchanged.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::writewatch::{absolute, read_path, resolved, through_proc};
use crate::sandbox::seccomp;

/// Most distinct places recorded.
const MAX_RECORDED: usize = 200;
/// Most distinct paths remembered as checked (a repeated `stat` of the
/// same name is checked once).
const MAX_SEEN: usize = 200_000;

/// `AT_FDCWD` as the low 32 bits of a register.
const AT_FDCWD: u64 = libc::AT_FDCWD as u32 as u64;

/// A watched call: `(number, dirfd argument, path argument, opens it)`.
type Call = (i64, Option<usize>, usize, bool);

fn calls() -> Vec<Call> {
    let mut v: Vec<Call> = vec![
        (libc::SYS_openat, Some(0), 1, true),
        (libc::SYS_execve, None, 0, true),
        (libc::SYS_execveat, Some(0), 1, true),
        (libc::SYS_newfstatat, Some(0), 1, false),
        (libc::SYS_statx, Some(0), 1, false),
        (libc::SYS_faccessat, Some(0), 1, false),
        (libc::SYS_faccessat2, Some(0), 1, false),
        (libc::SYS_readlinkat, Some(0), 1, false),
        (libc::SYS_chdir, None, 0, false),
        (libc::SYS_getxattr, None, 0, true),
        (libc::SYS_lgetxattr, None, 0, true),
        (libc::SYS_listxattr, None, 0, true),
        (libc::SYS_llistxattr, None, 0, true),
        (libc::SYS_inotify_add_watch, None, 1, true),
        (libc::SYS_name_to_handle_at, Some(0), 1, false),
        (libc::SYS_statfs, None, 0, false),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend_from_slice(&[
        (libc::SYS_open, None, 0, true),
        (libc::SYS_stat, None, 0, false),
        (libc::SYS_lstat, None, 0, false),
        (libc::SYS_access, None, 0, false),
        (libc::SYS_readlink, None, 0, false),
    ]);
    v
}

/// The filter's part for reads (the call number must be loaded): every
/// watched call but the opens, whose block [`super::writewatch::rules`]
/// owns (it sends every open).
pub fn rules() -> Vec<libc::sock_filter> {
    let opens = [libc::SYS_openat, OPEN];
    calls()
        .into_iter()
        .filter(|(nr, ..)| !opens.contains(nr))
        .flat_map(|(nr, ..)| seccomp::on_call(nr, libc::SECCOMP_RET_USER_NOTIF))
        .collect()
}

#[cfg(target_arch = "x86_64")]
const OPEN: i64 = libc::SYS_open;
#[cfg(not(target_arch = "x86_64"))]
const OPEN: i64 = -1;

/// Whether `nr` is one of this module's calls.
pub fn watches(nr: i64) -> bool {
    calls().iter().any(|(n, ..)| *n == nr)
}

/// What the command may read, as the helper was told (real paths).
#[derive(Debug, Default, Clone)]
pub struct Readable {
    /// Readable places: the trees and the bound places.
    pub reads: Vec<PathBuf>,
    /// Entries of them that are not readable (secret, closed to others).
    pub hidden: Vec<PathBuf>,
    /// Everything the view's root has as an entry (readable places, the
    /// fresh home and `/tmp`, links): their folders exist on the way.
    pub ways: Vec<PathBuf>,
}

impl Readable {
    /// Whether reading `real` (canonical) is within the readable world.
    fn reads(&self, real: &Path) -> bool {
        let under = |b: &PathBuf| real.starts_with(b);
        self.reads.iter().any(under) && !self.hidden.iter().any(under)
    }

    /// Whether `real` is a folder the view's root has on the way to (or
    /// as) one of its entries.
    fn on_the_way(&self, real: &Path) -> bool {
        self.ways.iter().any(|w| w.starts_with(real))
    }
}

/// The supervisor's record of reads outside (see the module doc).
#[derive(Default)]
pub struct ReadWatch {
    pub readable: Readable,
    seen: Mutex<HashSet<(PathBuf, bool)>>,
    outside: Mutex<Vec<String>>,
}

impl ReadWatch {
    pub fn new(readable: Readable) -> Self {
        ReadWatch {
            readable,
            ..ReadWatch::default()
        }
    }

    /// The places recorded, sorted.
    pub fn outside(&self) -> Vec<String> {
        let mut v = self.outside.lock().map(|o| o.clone()).unwrap_or_default();
        v.sort();
        v
    }

    /// Look at call `nr` of process `pid`.
    pub fn record(&self, pid: libc::pid_t, nr: i64, args: &[u64; 6]) {
        let Some(&(_, dirfd, path, opens)) = calls().iter().find(|(n, ..)| *n == nr) else {
            return;
        };
        let Some(name) = read_path(pid, args[path]) else {
            return;
        };
        if name.as_os_str().is_empty() {
            // `AT_EMPTY_PATH`: the descriptor itself, opened before.
            return;
        }
        let base = dirfd.map_or(AT_FDCWD, |i| args[i] & 0xffff_ffff);
        let Some(full) = absolute(pid, base, &name).map(|p| through_proc(pid, p)) else {
            return;
        };
        if let Ok(mut seen) = self.seen.lock() {
            if seen.len() >= MAX_SEEN || !seen.insert((full.clone(), opens)) {
                return;
            }
        }
        if let Some(place) = self.judge(&full, opens)
            && let Ok(mut out) = self.outside.lock()
            && !out.contains(&place)
            && out.len() < MAX_RECORDED
        {
            out.push(place);
        }
    }

    /// The place `path` reads outside the readable world, if it does.
    fn judge(&self, path: &Path, opens: bool) -> Option<String> {
        if path.starts_with("/proc") || path.starts_with("/dev") {
            return None;
        }
        // Only what exists on the machine differs from the view.
        let real = path.canonicalize().ok()?;
        let fine = self.readable.reads(&real) || (!opens && self.readable.on_the_way(&real));
        (!fine).then(|| {
            let shown = resolved(path);
            shown.display().to_string()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_judged_by_where_they_lead_on_the_machine() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().canonicalize().unwrap();
        for d in ["home/.cargo", "home/proj", "home/.config/gh"] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        std::fs::write(t.join("home/.config/gh/hosts.yml"), "token").unwrap();
        std::fs::write(t.join("home/proj/a"), "x").unwrap();
        std::os::unix::fs::symlink(t.join("home/.config/gh/hosts.yml"), t.join("home/proj/l"))
            .unwrap();
        let w = ReadWatch::new(Readable {
            reads: vec![t.join("home/proj"), t.join("home/.cargo")],
            hidden: vec![],
            ways: vec![t.join("home/proj"), t.join("home/.cargo"), t.join("home")],
        });
        assert_eq!(w.judge(&t.join("home/proj/a"), true), None);
        // A file of the machine outside: recorded.
        let gh = t.join("home/.config/gh/hosts.yml");
        assert_eq!(w.judge(&gh, true), Some(gh.display().to_string()));
        // Through a link in the tree: recorded by where it leads.
        assert!(w.judge(&t.join("home/proj/l"), true).is_some());
        // A folder on the way: a stat is fine, a listing is not.
        assert_eq!(w.judge(&t.join("home"), false), None);
        assert!(w.judge(&t.join("home"), true).is_some());
        // What the machine does not have either: nothing differs.
        assert_eq!(w.judge(&t.join("home/.netrc"), true), None);
        assert!(watches(libc::SYS_newfstatat));
        assert!(!watches(libc::SYS_read));
    }
}
