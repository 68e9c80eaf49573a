//! One default managed session per vigil: the default session name is
//! claimed with a lock file held for the life of the process, so a second
//! vigil on this machine, against the same target and tmux socket, takes the
//! next free name (`vigil-agent-2`, …) instead of typing into the first
//! one's pane. A session the operator names in the config is theirs to
//! share and is never renamed. It only picks a name; it never talks to tmux.

use std::fs::{DirBuilder, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

use super::script::sanitize;

/// How many names are tried before sharing the default one.
const TRIES: usize = 9;

/// The held lock of a claimed name (released when dropped, or when the
/// process ends however it ends).
#[derive(Debug)]
pub struct Claim {
    _file: File,
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
fn try_lock(dir: &std::path::Path, target: &str, socket: &str, name: &str) -> Option<Claim> {
    let key = sanitize(&format!("{target}-{socket}-{name}"));
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(format!("{key}.lock")))
        .ok()?;
    // SAFETY: flock on a descriptor this function owns.
    let got = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    got.then_some(Claim { _file: file })
}

/// The default session name this vigil uses: `default` when no other vigil
/// holds it, else the first free `default-N`. Without a lock folder, or with
/// every name taken, it is `default`, unclaimed (as before claims existed).
pub fn claim(target: &str, socket: &str, default: &str) -> (String, Option<Claim>) {
    let Some(dir) = lock_dir() else {
        return (default.to_string(), None);
    };
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
    }
}
