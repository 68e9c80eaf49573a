//! Agents on another machine, reached through ssh rather than a new network
//! protocol: `vigil ps user@host` runs `vigil ps --json` there over a
//! ControlMaster vigil starts (with the `[ssh]` identity and options), and
//! `vigil attach user@host:ID` forwards a private local socket to that
//! agent's socket with ssh's own forwarding (`ssh -S CTL -O forward -L
//! local:remote`). The agent's peer check sees the ssh user, so only an
//! agent of the user logged in as is reachable.
//!
//! It never opens a TCP port and never leaves the master or the local
//! socket behind: [`Tunnel`] closes both when dropped or closed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::fleetcmd::{Fleet, now_ms, print_json, table};
use crate::cli::headless::exit;
use crate::config::Config;
use crate::exec::ssh::{SshError, SshOptions, SshTransport};

/// How long the remote `vigil ps` may take.
const PS_WAIT: Duration = Duration::from_secs(30);

/// Why a remote agent cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("`{0}` is not USER@HOST[:PORT]:ID (the session id after the last `:`)")]
    BadTarget(String),
    #[error(transparent)]
    Ssh(#[from] SshError),
    #[error("cannot run `{command}` on {target}: {why}")]
    Ps {
        command: String,
        target: String,
        why: String,
    },
    #[error("{target} has no running agent for session {id} (`vigil ps {target}` lists them)")]
    NoSuchAgent { target: String, id: String },
    #[error("cannot make a private directory for the forwarded socket: {0}")]
    Local(std::io::Error),
    #[error("ssh could not forward {remote} on {target}: {why}")]
    Forward {
        target: String,
        remote: PathBuf,
        why: String,
    },
}

/// `user@host[:port]:ID` → (`user@host[:port]`, `ID`); None for a local id.
pub fn split_remote(arg: &str) -> Option<Result<(String, String), RemoteError>> {
    let (target, id) = arg.rsplit_once(':')?;
    if target.is_empty() || id.is_empty() {
        return Some(Err(RemoteError::BadTarget(arg.into())));
    }
    Some(Ok((target.into(), id.into())))
}

/// A ControlMaster to `target`, with the `[ssh]` identity, options and
/// timeout.
pub async fn master(config: &Config, target: &str) -> Result<SshTransport, RemoteError> {
    let mut opts = SshOptions::new(target.to_string());
    opts.identity_file = config.ssh.identity_file.clone();
    opts.options = config.ssh.options.clone();
    opts.connect_timeout = Duration::from_secs(config.ssh.connect_timeout_secs.max(1));
    Ok(SshTransport::connect(opts).await?)
}

/// The running agents on the other end (`remote_vigil ps --json` there).
pub async fn fleet(
    ssh: &SshTransport,
    target: &str,
    remote_vigil: &str,
) -> Result<Fleet, RemoteError> {
    let command = format!("{remote_vigil} ps --json");
    let failed = |why: String| RemoteError::Ps {
        command: command.clone(),
        target: target.into(),
        why,
    };
    let mut cmd = ssh.client();
    cmd.arg(&command)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = match tokio::time::timeout(PS_WAIT, cmd.output()).await {
        Err(_) => return Err(failed(format!("no answer within {} s", PS_WAIT.as_secs()))),
        Ok(Err(e)) => return Err(failed(e.to_string())),
        Ok(Ok(out)) => out,
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(failed(format!("{} ({})", err.trim(), out.status)));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| failed(format!("its answer: {e}")))
}

/// A local socket that reaches a remote agent's socket through ssh.
pub struct Tunnel {
    ssh: SshTransport,
    /// Holds the local socket (removed with it).
    dir: tempfile::TempDir,
    local: PathBuf,
    remote: PathBuf,
}

impl Tunnel {
    /// Forward a private local socket to `remote` over `ssh`'s master.
    pub async fn open(ssh: SshTransport, remote: &Path) -> Result<Tunnel, RemoteError> {
        let dir = tempfile::Builder::new()
            .prefix("vigil-fwd-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map_err(RemoteError::Local)?;
        let local = dir.path().join("agent.sock");
        let tunnel = Tunnel {
            ssh,
            dir,
            local,
            remote: remote.into(),
        };
        let why = match tunnel.control("forward").output().await {
            Ok(o) if o.status.success() => return Ok(tunnel),
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
            Err(e) => e.to_string(),
        };
        let err = tunnel.forward_error(why);
        tunnel.close().await;
        Err(err)
    }

    /// The local end to connect to.
    pub fn local(&self) -> &Path {
        &self.local
    }

    /// Cancel the forwarding and close the master.
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.control("cancel").status()).await;
        self.ssh.shutdown().await;
        drop(self.dir);
    }

    /// `ssh -S CTL -O op -L local:remote destination`.
    fn control(&self, op: &str) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("ssh");
        cmd.arg("-S")
            .arg(self.ssh.socket())
            .args(["-O", op, "-L"])
            .arg(format!(
                "{}:{}",
                self.local.display(),
                self.remote.display()
            ))
            .arg("--")
            .arg(self.ssh.target().destination())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    fn forward_error(&self, why: String) -> RemoteError {
        RemoteError::Forward {
            target: self.ssh.target().to_string(),
            remote: self.remote.clone(),
            why,
        }
    }
}

/// `vigil ps user@host[:port]`: the agents of another machine.
pub async fn ps_remote(config: &Config, target: &str, remote_vigil: &str, json: bool) -> i32 {
    let listed = match master(config, target).await {
        Ok(ssh) => {
            let fleet = fleet(&ssh, target, remote_vigil).await;
            ssh.shutdown().await;
            fleet
        }
        Err(e) => Err(e),
    };
    match listed {
        Ok(fleet) if json => print_json(&fleet),
        Ok(fleet) => {
            println!("on {target}:");
            print!("{}", table(&fleet, now_ms()));
            exit::OK
        }
        Err(e) => {
            eprintln!("vigil: {e}");
            exit::FAILED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_ids_split_at_the_last_colon() {
        assert!(split_remote("1795446872002-24210").is_none());
        let (t, id) = split_remote("root@127.0.0.1:2222:s-1").unwrap().unwrap();
        assert_eq!((t.as_str(), id.as_str()), ("root@127.0.0.1:2222", "s-1"));
        let (t, id) = split_remote("op@box:s-2").unwrap().unwrap();
        assert_eq!((t.as_str(), id.as_str()), ("op@box", "s-2"));
        assert!(split_remote("op@box:").unwrap().is_err());
    }
}
