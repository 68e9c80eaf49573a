//! The agent's Unix socket: bound 0600 in the runtime directory (a stale
//! socket left by a dead agent is removed first, and said), and every peer
//! checked with `SO_PEERCRED` to be the same user, and named by it (uid,
//! pid, the pid's controlling terminal: [`peer_of`]).
//!
//! It binds, accepts and checks; what a connection says is [`super::conn`]'s
//! business. It never removes a socket that answers, nor a file that is not
//! a socket.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::{UnixListener, UnixStream};

use vigil_protocol::runtime;
use vigil_protocol::wire::Peer;

/// Why the socket could not be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error("{path} answers: another agent is listening on it")]
    InUse { path: PathBuf },
    #[error("{path} exists and is not a socket: refusing to replace it")]
    NotASocket { path: PathBuf },
    #[error("cannot remove the stale socket {path}: {source}")]
    RemoveStale {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot listen on {path}: {source}")]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A bound socket, and what was done to bind it.
pub struct Bound {
    pub listener: UnixListener,
    pub path: PathBuf,
    /// Set when a stale socket was removed first (for the log).
    pub removed_stale: bool,
}

/// Bind `path` 0600, removing a stale socket first. The caller holds the
/// session lock, so no live agent of this session can own the socket.
pub fn bind(path: &Path) -> Result<Bound, BindError> {
    let removed_stale = remove_stale(path)?;
    let listener = UnixListener::bind(path).map_err(|source| BindError::Bind {
        path: path.into(),
        source,
    })?;
    // The directory is 0700 already; the socket is closed to others too.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|source| {
        BindError::Bind {
            path: path.into(),
            source,
        }
    })?;
    Ok(Bound {
        listener,
        path: path.into(),
        removed_stale,
    })
}

/// Remove `path` when it is a socket nobody answers on.
fn remove_stale(path: &Path) -> Result<bool, BindError> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(false);
    };
    if !meta.file_type().is_socket() {
        return Err(BindError::NotASocket { path: path.into() });
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(BindError::InUse { path: path.into() });
    }
    std::fs::remove_file(path).map_err(|source| BindError::RemoveStale {
        path: path.into(),
        source,
    })?;
    Ok(true)
}

/// The peer's uid when it is not ours (None: the same user, may talk).
pub fn foreign_peer(stream: &UnixStream) -> Option<String> {
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == runtime::uid() => None,
        Ok(cred) => Some(format!(
            "uid {} may not talk to this agent (it belongs to uid {})",
            cred.uid(),
            runtime::uid()
        )),
        Err(e) => Some(format!("cannot check who is connecting: {e}")),
    }
}

/// Who is at the other end of `stream`, as the kernel says (None: it
/// would not say).
pub fn peer_of(stream: &UnixStream) -> Option<Peer> {
    let cred = stream.peer_cred().ok()?;
    let pid = cred.pid().and_then(|p| u32::try_from(p).ok())?;
    Some(Peer {
        uid: cred.uid(),
        pid,
        tty: controlling_tty(pid),
    })
}

/// The controlling terminal of process `pid` (`pts/3`, `tty1`, `ttyS0`, or
/// `tty 4:70` when it has no better name), from `tty_nr` in
/// `/proc/PID/stat`; None when it has none.
pub fn controlling_tty(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp session tty_nr …`; comm may hold
    // spaces and parentheses, so count from the last `)`.
    let after = &stat[stat.rfind(')')? + 1..];
    let tty_nr: u64 = after.split_whitespace().nth(4)?.parse().ok()?;
    tty_name(tty_nr)
}

/// The name of the terminal device number `tty_nr` (the kernel's
/// encoding: major in bits 8–19, minor in bits 0–7 and 20–31).
pub fn tty_name(tty_nr: u64) -> Option<String> {
    if tty_nr == 0 {
        return None;
    }
    let major = (tty_nr >> 8) & 0xfff;
    let minor = (tty_nr & 0xff) | ((tty_nr >> 12) & 0xfff00);
    Some(match major {
        136..=143 => format!("pts/{}", (major - 136) * 256 + minor),
        4 if minor < 64 => format!("tty{minor}"),
        4 => format!("ttyS{}", minor - 64),
        _ => std::fs::read_to_string(format!("/sys/dev/char/{major}:{minor}/uevent"))
            .ok()
            .and_then(|u| {
                u.lines()
                    .find_map(|l| l.strip_prefix("DEVNAME=").map(String::from))
            })
            .unwrap_or_else(|| format!("tty {major}:{minor}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stale_socket_is_replaced_and_a_live_one_or_a_file_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.sock");
        // A socket whose listener is gone: stale.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let bound = bind(&path).unwrap();
        assert!(bound.removed_stale);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A live one is left alone.
        assert!(matches!(bind(&path), Err(BindError::InUse { .. })));
        let file = tmp.path().join("f.sock");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(bind(&file), Err(BindError::NotASocket { .. })));
        assert!(file.exists());
        // Our own uid may talk.
        let client = UnixStream::connect(&path).await.unwrap();
        let (server, _) = bound.listener.accept().await.unwrap();
        assert_eq!(foreign_peer(&server), None);
        let peer = peer_of(&server).unwrap();
        assert_eq!((peer.uid, peer.pid), (runtime::uid(), std::process::id()));
        assert_eq!(peer.tty, controlling_tty(std::process::id()));
        drop(client);
    }

    #[test]
    fn terminal_numbers_are_named() {
        assert_eq!(tty_name(0), None);
        assert_eq!(tty_name(136 << 8 | 3).as_deref(), Some("pts/3"));
        // pts/300: major 137, minor 44.
        assert_eq!(tty_name(137 << 8 | 44).as_deref(), Some("pts/300"));
        // Minor 256 of major 136: the high minor bits live at bit 20.
        assert_eq!(tty_name((136 << 8) | (1 << 20)).as_deref(), Some("pts/256"));
        assert_eq!(tty_name(4 << 8 | 1).as_deref(), Some("tty1"));
        assert_eq!(tty_name(4 << 8 | 64).as_deref(), Some("ttyS0"));
    }
}
