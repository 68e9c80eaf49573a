//! Transports: the one place that knows how a process is started on a target.
//!
//! A transport turns "run this shell text there" into a
//! [`tokio::process::Command`]. Everything else (streaming, timeouts, files,
//! tmux) is built on top of it and never special-cases a target; commands
//! that finish go through [`run`], the one place that asks the transport
//! whether it, not the command, failed.

use std::time::Duration;

use futures::future::BoxFuture;
use tokio::process::Command;

use super::{ExecError, OutputFn, RunOutcome, process};

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

    /// Make the target reachable before a command: call it before
    /// [`Transport::shell`]. A transport with a connection (SSH's
    /// ControlMaster) re-establishes a dead one here and leaves a notice;
    /// an error means the target cannot be reached at all. Default: ready.
    fn prepare(&self) -> BoxFuture<'_, Result<(), ExecError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Changes whenever the connection was re-established: processes that
    /// lived over the old one (tmux control clients, helpers) are gone even
    /// if that has not shown yet, and must be replaced. Default: 0.
    fn epoch(&self) -> u64 {
        0
    }

    /// Release the connection for good (SSH: tell the master to exit).
    /// Later commands fail. Default: nothing to release.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// Notices for the operator since the last call (e.g. "the ssh
    /// connection was re-established"), oldest first. Default: none.
    fn take_notices(&self) -> Vec<String> {
        Vec::new()
    }

    /// When a command through this transport failed because of the
    /// transport itself (connection lost, container stopped) rather than
    /// the command, the error to report instead of the exit code.
    /// Default: never.
    fn failure(&self, _exit_code: Option<i32>, _stderr: &[u8]) -> Option<ExecError> {
        None
    }

    /// Like [`Transport::failure`], for what only the target can tell (a
    /// container that stopped under the command): asked by [`run`] after
    /// `failure` found nothing. Keep it cheap: look at the target only when
    /// the outcome is abnormal. Default: never.
    fn diagnose<'a>(&'a self, _outcome: &'a RunOutcome) -> BoxFuture<'a, Option<ExecError>> {
        Box::pin(std::future::ready(None))
    }
}

/// Run `script` on the target to completion: make the transport ready, run
/// the command (with `input` on its stdin when given), and report a failure
/// of the transport itself ([`Transport::failure`], then
/// [`Transport::diagnose`]) instead of the command's exit code.
pub async fn run<T: Transport + ?Sized>(
    transport: &T,
    script: &str,
    input: Option<Vec<u8>>,
    timeout: Option<Duration>,
    on_output: Option<OutputFn>,
) -> Result<RunOutcome, ExecError> {
    run_retaining(transport, script, input, timeout, on_output, None).await
}

/// [`run`] keeping only what `retain` asks for in memory
/// ([`process::run_retaining`]).
pub async fn run_retaining<T: Transport + ?Sized>(
    transport: &T,
    script: &str,
    input: Option<Vec<u8>>,
    timeout: Option<Duration>,
    on_output: Option<OutputFn>,
    retain: Option<&super::capture::Retain>,
) -> Result<RunOutcome, ExecError> {
    transport.prepare().await?;
    let cmd = transport.shell(script, input.is_some());
    let out = process::run_retaining(cmd, input, timeout, on_output, retain).await?;
    if let Some(e) = transport.failure(out.exit_code, &out.stderr) {
        return Err(e);
    }
    match transport.diagnose(&out).await {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Pass-through so a shared transport (`Arc<SshTransport>`) can be used by
/// several backends (the plain backend and a tmux layer) at once.
impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn label(&self) -> String {
        (**self).label()
    }
    fn shell(&self, script: &str, stdin: bool) -> Command {
        (**self).shell(script, stdin)
    }
    fn is_local(&self) -> bool {
        (**self).is_local()
    }
    fn prepare(&self) -> BoxFuture<'_, Result<(), ExecError>> {
        (**self).prepare()
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        (**self).close()
    }
    fn epoch(&self) -> u64 {
        (**self).epoch()
    }
    fn take_notices(&self) -> Vec<String> {
        (**self).take_notices()
    }
    fn failure(&self, exit_code: Option<i32>, stderr: &[u8]) -> Option<ExecError> {
        (**self).failure(exit_code, stderr)
    }
    fn diagnose<'a>(&'a self, outcome: &'a RunOutcome) -> BoxFuture<'a, Option<ExecError>> {
        (**self).diagnose(outcome)
    }
}

/// Processes on this machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct Local;

impl Transport for Local {
    fn label(&self) -> String {
        "local".into()
    }

    /// `sh -c` with the tool environment (no keys, no secrets: see
    /// [`super::env`]).
    fn shell(&self, script: &str, _stdin: bool) -> Command {
        let mut cmd = std::process::Command::new("sh");
        super::env::apply_tool_env(&mut cmd);
        cmd.arg("-c").arg(script);
        Command::from(cmd)
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
