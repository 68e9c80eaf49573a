//! Where agent processes put their sockets: the runtime directory, checked
//! to be the user's own and closed to everyone else.
//!
//! `$VIGIL_RUNTIME_DIR` if set, else `$XDG_RUNTIME_DIR/vigil`, else
//! `/tmp/vigil-<uid>`. The directory is created 0700; one that exists with
//! another owner or with group/other permissions is refused, never
//! "repaired" (somebody else may be waiting in it). It only names and
//! checks paths: it never binds, connects or removes a socket.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why the runtime directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot create the runtime directory {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the runtime directory {path} belongs to uid {owner}, not to you (uid {uid}): \
         refusing to use it (set VIGIL_RUNTIME_DIR to a directory of your own)"
    )]
    NotOwned { path: PathBuf, owner: u32, uid: u32 },
    #[error(
        "the runtime directory {path} is open to others (mode {mode:o}): \
         refusing to use it (chmod 700 it, or set VIGIL_RUNTIME_DIR)"
    )]
    TooOpen { path: PathBuf, mode: u32 },
    #[error("cannot read the runtime directory {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The user's id (the socket's peer must have the same).
pub fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The directory path, without creating or checking it.
pub fn dir_path() -> PathBuf {
    if let Some(d) = std::env::var_os("VIGIL_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        let x = PathBuf::from(x);
        if x.is_dir() {
            return x.join("vigil");
        }
    }
    std::env::temp_dir().join(format!("vigil-{}", uid()))
}

/// The runtime directory, created 0700 when missing, checked when present.
pub fn dir() -> Result<PathBuf, RuntimeError> {
    let path = dir_path();
    ensure(&path)?;
    Ok(path)
}

/// Create `path` 0700 if missing; refuse it unless it is ours and closed.
pub fn ensure(path: &Path) -> Result<(), RuntimeError> {
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(RuntimeError::Create {
                path: path.into(),
                source,
            });
        }
    }
    let meta = std::fs::symlink_metadata(path).map_err(|source| RuntimeError::Read {
        path: path.into(),
        source,
    })?;
    let me = uid();
    if meta.uid() != me || !meta.is_dir() {
        return Err(RuntimeError::NotOwned {
            path: path.into(),
            owner: meta.uid(),
            uid: me,
        });
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(RuntimeError::TooOpen {
            path: path.into(),
            mode,
        });
    }
    Ok(())
}

/// The socket of session `id` in `dir`.
pub fn socket_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.sock"))
}

/// The lock file the agent of session `id` holds while it lives (a second
/// agent on the same session finds it taken).
pub fn lock_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.lock"))
}

/// The session ids that have a socket in `dir` (live or stale: connecting
/// tells which), sorted.
pub fn socket_ids(dir: &Path) -> Result<Vec<String>, RuntimeError> {
    let entries = std::fs::read_dir(dir).map_err(|source| RuntimeError::Read {
        path: dir.into(),
        source,
    })?;
    let mut ids: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_suffix(".sock").map(str::to_string)
        })
        .collect();
    ids.sort();
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_directory_is_private_and_an_open_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("rt");
        ensure(&d).unwrap();
        let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = ensure(&d).unwrap_err();
        assert!(
            matches!(err, RuntimeError::TooOpen { mode: 0o755, .. }),
            "{err}"
        );
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(socket_path(&d, "b"), "").unwrap();
        std::fs::write(socket_path(&d, "a"), "").unwrap();
        std::fs::write(lock_path(&d, "a"), "").unwrap();
        assert_eq!(socket_ids(&d).unwrap(), vec!["a", "b"]);
    }
}
