//! The session lock: the file `<id>.lock` in the runtime directory, held
//! with `flock` by the one agent process of a session for its whole life,
//! with that process's pid written in it so that a second agent can say
//! who holds it.
//!
//! The kernel releases the lock when the process dies, however it dies, so
//! a lock is never stale. It never signals or removes another process.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use vigil_protocol::runtime;

/// Why the session lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("session {id} already has an agent (pid {pid}): `vigil attach {id}`")]
    Held { id: String, pid: String },
    #[error("cannot open the session lock {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The held lock (released when dropped, or by [`SessionLock::release`]).
#[derive(Debug)]
pub struct SessionLock {
    file: File,
    path: PathBuf,
}

impl SessionLock {
    /// Take the lock of session `id` in `dir`, or say who holds it.
    pub fn acquire(dir: &Path, id: &str) -> Result<SessionLock, LockError> {
        let path = runtime::lock_path(dir, id);
        let open_err = |source| LockError::Open {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(open_err)?;
        // SAFETY: flock on a descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(open_err(err));
            }
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let pid = text.trim();
            return Err(LockError::Held {
                id: id.to_string(),
                pid: if pid.is_empty() {
                    "unknown".into()
                } else {
                    pid.into()
                },
            });
        }
        let write = |f: &mut File| -> std::io::Result<()> {
            f.set_len(0)?;
            f.rewind()?;
            writeln!(f, "{}", std::process::id())?;
            f.flush()
        };
        write(&mut file).map_err(open_err)?;
        Ok(SessionLock { file, path })
    }

    /// Remove the lock file, then let the lock go.
    pub fn release(self) {
        let _ = std::fs::remove_file(&self.path);
        drop(self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_pid_of_the_first() {
        let tmp = tempfile::tempdir().unwrap();
        let held = SessionLock::acquire(tmp.path(), "s1").unwrap();
        let err = SessionLock::acquire(tmp.path(), "s1").unwrap_err();
        let pid = std::process::id().to_string();
        assert!(
            matches!(&err, LockError::Held { pid: p, .. } if *p == pid),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!("session s1 already has an agent (pid {pid}): `vigil attach s1`")
        );
        SessionLock::acquire(tmp.path(), "other").unwrap();
        held.release();
        assert!(!runtime::lock_path(tmp.path(), "s1").exists());
        SessionLock::acquire(tmp.path(), "s1").unwrap();
    }
}
