//! Transports: the one place that knows how a process is started on a target.
//!
//! A transport turns "run this shell text there" into a
//! [`tokio::process::Command`]. Everything else (streaming, timeouts, files,
//! tmux) is built on top of it and never special-cases a target.

use tokio::process::Command;

/// How to start a shell command on a target.
pub trait Transport: Send + Sync + 'static {
    /// Short description (`local`, `ssh user@host`, `podman:box`).
    fn label(&self) -> String;

    /// A command that runs `script` with `sh -c` on the target. When `stdin`
    /// is true the command's stdin must reach the remote shell.
    fn shell(&self, script: &str, stdin: bool) -> Command;

    /// True when the target's filesystem is this machine's.
    fn is_local(&self) -> bool {
        false
    }
}

/// Processes on this machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct Local;

impl Transport for Local {
    fn label(&self) -> String {
        "local".into()
    }

    fn shell(&self, script: &str, _stdin: bool) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script);
        cmd
    }

    fn is_local(&self) -> bool {
        true
    }
}

/// Quote `s` for a POSIX shell (single quotes, `'` written as `'\''`).
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@%+,".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_the_shell() {
        for s in ["plain", "with space", "it's", "", "$HOME `x` \"q\"", "a\nb"] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", sh_quote(s)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), s);
        }
    }
}
