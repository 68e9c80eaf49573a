//! What a local agent leaves in the temporary folder (`$TMPDIR`, else
//! `/tmp`): its command directory `vigil-<socket>-<hex>`, held by a lock
//! file while the agent lives. An agent killed uncleanly (SIGKILL) cannot
//! remove its own; the next agent on the same socket finds the ones nobody
//! holds and removes them.
//!
//! It only handles folders on this machine, named as vigil names them; it
//! never touches a folder another live agent holds, and never talks to
//! tmux.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The lock file inside a command directory, held while its agent lives.
const OWNER: &str = "owner.lock";
/// A directory without its lock file is left alone this long (its agent
/// may be creating it right now).
const UNLOCKED_GRACE: Duration = Duration::from_secs(60);

/// A held command directory (released when dropped or when the process
/// ends, however it ends).
#[derive(Debug)]
pub struct Held {
    _file: File,
}

/// A new command directory for the tmux `socket`: on this machine in the
/// temporary folder the environment names (after removing the ones agents
/// killed uncleanly left), on a remote target in its `/tmp`.
pub fn command_dir(local: bool, socket: &str) -> String {
    let socket = super::script::sanitize(socket)
        .trim_matches('-')
        .to_string();
    let hex = &super::names::random_hex()[..16];
    if local {
        sweep(&socket);
        local_dir(&socket, hex).display().to_string()
    } else {
        format!("/tmp/vigil-{socket}-{hex}")
    }
}

/// Where a local command directory for `socket` (already sanitized) goes:
/// the temporary folder the environment names.
pub fn local_dir(socket: &str, hex: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{}{hex}", prefix(socket)))
}

fn prefix(socket: &str) -> String {
    format!("vigil-{socket}-")
}

/// Hold `dir` for this process: create its lock file and lock it.
pub fn hold(dir: &Path) -> Option<Held> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(OWNER))
        .ok()?;
    lock(&file).then_some(Held { _file: file })
}

/// Try an exclusive lock without waiting.
pub(super) fn lock(file: &File) -> bool {
    // SAFETY: flock on a descriptor the caller owns.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Remove the command directories for `socket` that no live agent holds.
/// Returns how many went.
pub fn sweep(socket: &str) -> usize {
    let prefix = prefix(socket);
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix(&prefix))
                .is_some_and(is_hex_tail)
        })
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| abandoned(&e.path()))
        .filter(|e| std::fs::remove_dir_all(e.path()).is_ok())
        .count()
}

/// The random tail vigil gives a directory (so `vigil-s-x` of a socket
/// named `s-x` is never mistaken for one of socket `s`).
fn is_hex_tail(tail: &str) -> bool {
    tail.len() == 16 && tail.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Nobody holds `dir`: its lock file can be locked, or it has none and is
/// older than the grace period.
fn abandoned(dir: &Path) -> bool {
    match File::open(dir.join(OWNER)) {
        Ok(file) => lock(&file),
        Err(_) => std::fs::metadata(dir)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > UNLOCKED_GRACE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_directory_stays_and_an_abandoned_one_goes() {
        let socket = format!("leftover-test-{}", std::process::id());
        let live = local_dir(&socket, "0123456789abcdef");
        let dead = local_dir(&socket, "fedcba9876543210");
        let other = std::env::temp_dir().join(format!("vigil-{socket}-x-0123456789abcdef"));
        for d in [&live, &dead, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        let held = hold(&live).expect("held");
        drop(hold(&dead).expect("held once"));
        assert_eq!(sweep(&socket), 1);
        assert!(live.exists() && other.exists() && !dead.exists());
        drop(held);
        assert_eq!(sweep(&socket), 1);
        assert!(!live.exists());
        std::fs::remove_dir_all(&other).unwrap();
    }
}
