//! Writing a file on this machine exactly where its path says: every
//! directory is opened one component at a time with `O_NOFOLLOW`, the file
//! itself too, so a symlink anywhere on the way (one swapped in after the
//! operator approved the write, say) makes the write fail instead of
//! redirecting it. Only a regular file is written (a FIFO, device or socket
//! is refused, never opened for writing and never truncated).
//!
//! The file tools hand it paths already resolved (`vigil_tools::paths`, a crate above this one),
//! which hold no symlink: meeting one here means the filesystem changed
//! under the call. This module never follows a link and never creates a
//! directory.

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// Why an exact write did not happen.
#[derive(Debug)]
pub enum ExactWriteError {
    /// A component of the path is a symlink (the path as far as it).
    Symlink(String),
    /// The target exists and is not a regular file.
    NotRegular(String),
    /// The path is not absolute, or names no file.
    BadPath(String),
    Io(io::Error),
}

impl std::fmt::Display for ExactWriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExactWriteError::Symlink(at) => write!(
                f,
                "{at} is a symlink: vigil writes only to the resolved path the approval \
                 named, and a link on the way could lead anywhere; nothing was written"
            ),
            ExactWriteError::NotRegular(at) => write!(
                f,
                "{at} is not a regular file (a FIFO, device, socket or directory); nothing \
                 was written"
            ),
            ExactWriteError::BadPath(p) => write!(f, "{p} is not an absolute file path"),
            ExactWriteError::Io(e) => write!(f, "{e}"),
        }
    }
}

fn cstr(name: &[u8]) -> Result<CString, ExactWriteError> {
    CString::new(name).map_err(|_| ExactWriteError::BadPath("a path with a NUL byte".into()))
}

fn openat(dir: &OwnedFd, name: &CString, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated
    // string, both alive for the call; the result is checked before use.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether `name` in `dir` is a symlink (for the error after ELOOP/ENOTDIR).
fn is_link_at(dir: &OwnedFd, name: &CString) -> bool {
    // SAFETY: a zeroed stat is a valid out-buffer for fstatat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, NUL-terminated name, a writable stat.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    rc == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFLNK
}

/// Write `content` to the absolute `path`, creating the file (mode 0666
/// before the umask) or replacing its content, following no symlink.
/// Returns the bytes written.
pub fn write_exact(path: &Path, content: &[u8]) -> Result<u64, ExactWriteError> {
    let shown = path.display().to_string();
    if !path.is_absolute() {
        return Err(ExactWriteError::BadPath(shown));
    }
    let names: Vec<&[u8]> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.as_bytes()),
            _ => None,
        })
        .collect();
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(ExactWriteError::BadPath(shown));
    }
    let Some((file, dirs)) = names.split_last() else {
        return Err(ExactWriteError::BadPath(shown));
    };
    let root = cstr(b"/")?;
    // SAFETY: opening "/" with constant flags; checked below.
    let fd = unsafe {
        libc::open(
            root.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(ExactWriteError::Io(io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let mut dir = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut so_far = std::path::PathBuf::from("/");
    let dir_flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    for name in dirs {
        so_far.push(std::ffi::OsStr::from_bytes(name));
        let c = cstr(name)?;
        dir = match openat(&dir, &c, dir_flags, 0) {
            Ok(next) => next,
            Err(_) if is_link_at(&dir, &c) => {
                return Err(ExactWriteError::Symlink(so_far.display().to_string()));
            }
            Err(e) => return Err(ExactWriteError::Io(e)),
        };
    }
    let c = cstr(file)?;
    // No O_TRUNC yet: a FIFO or device must not be truncated or blocked on.
    let flags =
        libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    let fd = match openat(&dir, &c, flags, 0o666) {
        Ok(fd) => fd,
        Err(_) if is_link_at(&dir, &c) => return Err(ExactWriteError::Symlink(shown)),
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err(ExactWriteError::NotRegular(shown));
        }
        Err(e) => return Err(ExactWriteError::Io(e)),
    };
    let mut out = std::fs::File::from(fd);
    let meta = out.metadata().map_err(ExactWriteError::Io)?;
    if !meta.file_type().is_file() {
        return Err(ExactWriteError::NotRegular(shown));
    }
    out.set_len(0).map_err(ExactWriteError::Io)?;
    out.write_all(content).map_err(ExactWriteError::Io)?;
    out.flush().map_err(ExactWriteError::Io)?;
    Ok(content.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_creates_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().canonicalize().unwrap().join("f.txt");
        assert_eq!(write_exact(&p, b"hello").unwrap(), 5);
        assert_eq!(std::fs::read(&p).unwrap(), b"hello");
        write_exact(&p, b"hi").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"hi");
    }

    #[test]
    fn a_symlink_anywhere_on_the_way_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let victim = base.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        // The file itself a link.
        std::os::unix::fs::symlink(&victim, base.join("link")).unwrap();
        let e = write_exact(&base.join("link"), b"x").unwrap_err();
        assert!(matches!(e, ExactWriteError::Symlink(_)), "{e}");
        // A directory on the way a link.
        std::os::unix::fs::symlink(base.join("real"), base.join("dirlink")).unwrap();
        let e = write_exact(&base.join("dirlink/new"), b"x").unwrap_err();
        assert!(e.to_string().contains("dirlink is a symlink"), "{e}");
        assert!(!base.join("real/new").exists());
        // A dangling link is not created through.
        std::os::unix::fs::symlink(base.join("nowhere"), base.join("dangling")).unwrap();
        assert!(write_exact(&base.join("dangling"), b"x").is_err());
        assert!(!base.join("nowhere").exists());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn fifos_and_devices_are_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().canonicalize().unwrap().join("fifo");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = write_exact(&fifo, b"x").unwrap_err();
        assert!(matches!(e, ExactWriteError::NotRegular(_)), "{e}");
        let e = write_exact(Path::new("/dev/null"), b"x").unwrap_err();
        assert!(matches!(e, ExactWriteError::NotRegular(_)), "{e}");
        assert!(write_exact(Path::new("relative"), b"x").is_err());
    }
}
