//! One default managed session per vigil: the default session name is
//! claimed with a lock file held for the life of the process, so a second
//! vigil on this machine, against the same target and tmux socket, takes the
//! next free name (`vigil-agent-2`, …) instead of typing into the first
//! one's pane. A session the operator names in the config is theirs to
//! share and is never renamed. It only picks a name; it never talks to tmux.
//!
//! The locks live in `$TMPDIR/vigil-locks-<uid>` (else `/tmp`); a released
//! claim removes its file and the folder once empty, and lock files that
//! agents killed uncleanly left are removed by the next claim.

use std::fs::{DirBuilder, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::script::sanitize;

/// How many names are tried before sharing the default one.
const TRIES: usize = 9;

/// The held lock of a claimed name (released when dropped, or when the
/// process ends however it ends).
#[derive(Debug)]
pub struct Claim {
    _file: File,
    path: PathBuf,
}

impl Drop for Claim {
    /// The lock file goes while still held (a claim that opened it
    /// meanwhile sees it unlinked and does not count), then the folder
    /// when no other claim is in it.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Where the locks live: one private folder per user.
fn lock_dir() -> Option<PathBuf> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let dir = std::env::temp_dir().join(format!("vigil-locks-{uid}"));
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .ok()?;
    Some(dir)
}

/// Take the lock for `name` on `target`/`socket`, if nobody holds it.
fn try_lock(dir: &Path, target: &str, socket: &str, name: &str) -> Option<Claim> {
    let key = sanitize(&format!("{target}-{socket}-{name}"));
    let path = dir.join(format!("{key}.lock"));
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .ok()?;
    if !super::leftovers::lock(&file) || !still_there(&file, &path) {
        return None;
    }
    Some(Claim { _file: file, path })
}

/// The locked file is still the one at `path` (not one a released claim
/// unlinked after this one opened it).
fn still_there(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    }
}

/// Remove the lock files nobody holds (agents killed uncleanly).
fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "lock")
            && let Ok(file) = File::open(&path)
            && super::leftovers::lock(&file)
            && still_there(&file, &path)
        {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The default session name this vigil uses: `default` when no other vigil
/// holds it, else the first free `default-N`. Without a lock folder, or with
/// every name taken, it is `default`, unclaimed (as before claims existed).
pub fn claim(target: &str, socket: &str, default: &str) -> (String, Option<Claim>) {
    let Some(dir) = lock_dir() else {
        return (default.to_string(), None);
    };
    sweep(&dir);
    (1..=TRIES)
        .map(|i| match i {
            1 => default.to_string(),
            n => format!("{default}-{n}"),
        })
        .find_map(|name| try_lock(&dir, target, socket, &name).map(|c| (name, Some(c))))
        .unwrap_or_else(|| (default.to_string(), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_takes_the_next_name_and_a_released_one_comes_back() {
        let socket = format!("claim-test-{}", std::process::id());
        let (a, ca) = claim("local", &socket, "vigil-x");
        let (b, cb) = claim("local", &socket, "vigil-x");
        assert_eq!(a, "vigil-x");
        assert_eq!(b, "vigil-x-2");
        assert!(ca.is_some() && cb.is_some());
        drop(ca);
        let (c, _cc) = claim("local", &socket, "vigil-x");
        assert_eq!(c, "vigil-x");
        let (other, _co) = claim("ssh host", &socket, "vigil-x");
        assert_eq!(other, "vigil-x", "another target is another name space");
        // A released claim leaves no file behind; one nobody holds (its
        // agent was killed) is swept by the next claim.
        let path = cb.as_ref().map(|c| c.path.clone()).unwrap();
        drop(cb);
        assert!(!path.exists());
        std::fs::write(&path, "").unwrap();
        drop(claim("local", &socket, "vigil-y"));
        assert!(!path.exists(), "a stale lock file stayed");
    }
}
