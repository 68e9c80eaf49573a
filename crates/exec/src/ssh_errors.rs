//! What went wrong with an SSH connection, as a typed error.
//!
//! `ssh` reports its own failures only as exit status 255 plus English text
//! on stderr (or in the master's `-E` log). This module is the one place that
//! reads that text; everything above it matches on [`SshError`]. It must
//! never classify a command's own output unless ssh itself exited 255.

use super::ExecError;

/// Why the SSH target could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SshError {
    #[error("bad ssh target `{target}`: {reason} (expected user@host[:port])")]
    BadTarget { target: String, reason: String },
    #[error(
        "ssh {target}: the host key is not trusted ({detail}); add the host's key to known_hosts \
         (or check for an impostor) and try again"
    )]
    HostKey { target: String, detail: String },
    #[error(
        "ssh {target}: authentication failed ({detail}); check the identity file and the \
         remote authorized_keys"
    )]
    Auth { target: String, detail: String },
    #[error("ssh {target}: unreachable ({detail})")]
    Unreachable { target: String, detail: String },
    #[error("ssh {target}: the connection was lost ({detail})")]
    ConnectionLost { target: String, detail: String },
    #[error("ssh {target} failed: {detail}")]
    Other { target: String, detail: String },
    #[error("ssh: {0}")]
    Local(String),
}

impl From<SshError> for ExecError {
    fn from(e: SshError) -> Self {
        ExecError::Failed(e.to_string())
    }
}

/// The lines of ssh's text that matter (no blank lines, no debug noise).
fn gist(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("debug") && !l.starts_with('@'))
        .collect();
    let joined = lines.join("; ");
    if joined.is_empty() {
        "ssh exited 255 without saying why".into()
    } else {
        joined
    }
}

/// Classify text ssh printed when it exited 255. `None` when the text does
/// not look like one of ssh's own failures.
pub fn classify(target: &str, text: &str) -> Option<SshError> {
    let lower = text.to_ascii_lowercase();
    let target = target.to_string();
    let detail = gist(text);
    let has = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
    if has(&[
        "host key verification failed",
        "remote host identification has changed",
        "host key is known for",
        "no matching host key type",
    ]) {
        return Some(SshError::HostKey { target, detail });
    }
    if has(&[
        "permission denied (",
        "too many authentication failures",
        "no more authentication methods",
        "authentication failed",
    ]) {
        return Some(SshError::Auth { target, detail });
    }
    if has(&[
        "could not resolve hostname",
        "connection refused",
        "connection timed out",
        "operation timed out",
        "no route to host",
        "network is unreachable",
        "kex_exchange_identification",
        "connection closed by",
        "connection reset by",
    ]) {
        return Some(SshError::Unreachable { target, detail });
    }
    if has(&[
        "mux_client",
        "control socket",
        "broken pipe",
        "timeout, server",
        "not responding",
        "master is not running",
    ]) {
        return Some(SshError::ConnectionLost { target, detail });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_failures_become_typed_errors() {
        let t = "root@h:22";
        assert!(matches!(
            classify(t, "Host key verification failed.\r\n"),
            Some(SshError::HostKey { .. })
        ));
        assert!(matches!(
            classify(t, "root@127.0.0.1: Permission denied (publickey).\n"),
            Some(SshError::Auth { .. })
        ));
        assert!(matches!(
            classify(
                t,
                "ssh: connect to host 127.0.0.1 port 1: Connection refused\n"
            ),
            Some(SshError::Unreachable { .. })
        ));
        assert!(matches!(
            classify(
                t,
                "mux_client_read_packet: read header failed: Broken pipe\n"
            ),
            Some(SshError::ConnectionLost { .. })
        ));
        assert_eq!(classify(t, "my script failed\n"), None);
    }

    #[test]
    fn messages_say_what_to_do() {
        let e = classify("root@h", "Host key verification failed.\n").unwrap();
        let s = e.to_string();
        assert!(s.contains("root@h") && s.contains("known_hosts"), "{s}");
        let e = classify("root@h", "root@h: Permission denied (publickey).\n").unwrap();
        assert!(e.to_string().contains("identity file"), "{e}");
        assert!(gist("").contains("without saying why"));
    }
}
