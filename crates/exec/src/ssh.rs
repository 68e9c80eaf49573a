//! [`SshTransport`]: commands on a remote machine through one explicitly
//! started OpenSSH ControlMaster per target.
//!
//! The master is started once (`ssh -f -N -o ControlMaster=yes`, batch mode,
//! a connect timeout, keep-alives, a control socket in a private 0700
//! directory, its log in a file so it never holds our pipes); every command
//! is a multiplexed client of it (`ssh -S socket -o ControlMaster=no ...`).
//! A dead master is re-established by [`Transport::prepare`] with a notice.
//! ssh's own failures (host key, authentication, unreachable) become
//! [`SshError`]s. On [`SshTransport::shutdown`] or drop the master is told to
//! exit. This module must never start a master implicitly (no
//! `ControlMaster=auto`: an auto master would live in a command's process
//! group and hold its pipes), never prompt (BatchMode), and never let the
//! remote login shell re-parse a script: each layer is quoted exactly once.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::process::Command;

use super::ExecError;
pub use super::ssh_errors::SshError;
use super::ssh_errors::classify;
use super::tether::{self, Tether};
use super::transport::{Transport, sh_quote};

/// How long an idle master may outlive a vigil that died without closing it.
const CONTROL_PERSIST: &str = "30m";

/// Seconds between keep-alives on the master, and how many may go missing.
const ALIVE_INTERVAL_SECS: u32 = 15;
const ALIVE_COUNT: u32 = 3;

/// `[user@]host[:port]`, with `[v6addr]:port` for IPv6.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

impl SshTarget {
    pub fn parse(s: &str) -> Result<SshTarget, SshError> {
        let bad = |reason: &str| SshError::BadTarget {
            target: s.to_string(),
            reason: reason.to_string(),
        };
        let s_trim = s.trim();
        if s_trim.is_empty() {
            return Err(bad("it is empty"));
        }
        if s_trim.starts_with('-') || s_trim.chars().any(|c| c.is_whitespace()) {
            return Err(bad("it must not start with `-` or contain spaces"));
        }
        let (user, rest) = match s_trim.rsplit_once('@') {
            Some((u, r)) if !u.is_empty() => (Some(u.to_string()), r),
            Some(_) => return Err(bad("the user before `@` is empty")),
            None => (None, s_trim),
        };
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed `[`"))?;
            match after {
                "" => (h, None),
                p => (
                    h,
                    Some(p.strip_prefix(':').ok_or_else(|| bad("junk after `]`"))?),
                ),
            }
        } else {
            match rest.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            }
        };
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| bad("the port is not a number in 1..=65535"))?,
            ),
            None => None,
        };
        Ok(SshTarget {
            user,
            host: host.to_string(),
            port,
        })
    }

    /// `user@host` as ssh's destination argument.
    pub fn destination(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        }
    }
}

impl std::fmt::Display for SshTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        match (self.host.contains(':'), self.port) {
            (true, Some(p)) => write!(f, "[{}]:{p}", self.host),
            (false, Some(p)) => write!(f, "{}:{p}", self.host),
            _ => write!(f, "{}", self.host),
        }
    }
}

/// How to reach the target.
#[derive(Debug, Clone, PartialEq)]
pub struct SshOptions {
    /// `[user@]host[:port]`.
    pub target: String,
    /// `-i` (with `IdentitiesOnly=yes`).
    pub identity_file: Option<PathBuf>,
    /// Extra `-o` options, each `Key=Value` (e.g. `StrictHostKeyChecking=yes`).
    pub options: Vec<String>,
    /// `ConnectTimeout`; the whole master start may take 15 s longer.
    pub connect_timeout: Duration,
    /// The ssh client to run.
    pub program: PathBuf,
}

impl SshOptions {
    pub fn new(target: impl Into<String>) -> SshOptions {
        SshOptions {
            target: target.into(),
            identity_file: None,
            options: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            program: PathBuf::from("ssh"),
        }
    }
}

/// Commands on an SSH target, multiplexed over one ControlMaster.
pub struct SshTransport {
    target: SshTarget,
    program: PathBuf,
    /// Options shared by the master and its clients, after the fixed ones.
    common: Vec<String>,
    connect_timeout: Duration,
    dir: PathBuf,
    socket: PathBuf,
    log: PathBuf,
    tether: Arc<Tether>,
    restart: tokio::sync::Mutex<()>,
    notices: Mutex<Vec<String>>,
    closed: AtomicBool,
    /// Masters started so far (see [`Transport::epoch`]).
    epoch: AtomicU64,
}

/// A fresh private (0700) directory for the control socket and the log.
fn private_dir() -> Result<PathBuf, SshError> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut last = None;
    for _ in 0..16 {
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("vigil-ssh-{}-{seq}-{nanos:x}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => last = Some(e),
        }
    }
    Err(SshError::Local(format!(
        "cannot create a private directory for the control socket under {}: {}",
        base.display(),
        last.map(|e| e.to_string()).unwrap_or_default()
    )))
}

impl SshTransport {
    /// Start the ControlMaster. Fails with a typed error when the host key
    /// is not trusted, authentication fails or the host cannot be reached.
    pub async fn connect(opts: SshOptions) -> Result<SshTransport, SshError> {
        let target = SshTarget::parse(&opts.target)?;
        let mut common = Vec::new();
        if let Some(port) = target.port {
            common.extend(["-p".to_string(), port.to_string()]);
        }
        if let Some(id) = &opts.identity_file {
            common.extend(["-i".to_string(), id.display().to_string()]);
            common.extend(["-o".to_string(), "IdentitiesOnly=yes".to_string()]);
        }
        for o in &opts.options {
            let o = o.trim();
            if o.is_empty() || !o.contains('=') || o.starts_with('-') {
                return Err(SshError::Local(format!(
                    "bad ssh option `{o}`: write it as Key=Value"
                )));
            }
            common.extend(["-o".to_string(), o.to_string()]);
        }
        // After the operator's options, which win (ssh keeps the first value).
        common.extend([
            "-o".to_string(),
            format!("ConnectTimeout={}", opts.connect_timeout.as_secs().max(1)),
            "-o".to_string(),
            format!("ServerAliveInterval={ALIVE_INTERVAL_SECS}"),
            "-o".to_string(),
            format!("ServerAliveCountMax={ALIVE_COUNT}"),
        ]);
        let dir = private_dir()?;
        let transport = SshTransport {
            target,
            program: opts.program,
            common,
            connect_timeout: opts.connect_timeout,
            socket: dir.join("master"),
            log: dir.join("master.log"),
            dir,
            tether: Tether::new()
                .map_err(|e| SshError::Local(format!("cannot create a pipe: {e}")))?,
            restart: tokio::sync::Mutex::new(()),
            notices: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
        };
        transport.start_master().await?;
        Ok(transport)
    }

    /// The target as given (`root@127.0.0.1:2222`).
    pub fn target(&self) -> &SshTarget {
        &self.target
    }

    /// The control socket (for a bare `ssh -S` floor measurement).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// A multiplexed `ssh` up to and including the destination; append the
    /// remote command line.
    pub fn client(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.arg("-S")
            .arg(&self.socket)
            .args(["-o", "ControlMaster=no", "-o", "BatchMode=yes", "-T"])
            .args(&self.common)
            .arg("--")
            .arg(self.target.destination());
        cmd
    }

    /// True while the master answers on its socket (a connect, no process).
    pub fn master_alive(&self) -> bool {
        std::os::unix::net::UnixStream::connect(&self.socket).is_ok()
    }

    /// The master's pid, as `ssh -O check` reports it.
    pub async fn master_pid(&self) -> Option<u32> {
        let out = self.control("check").output().await.ok()?;
        let text = String::from_utf8_lossy(&out.stderr);
        let (_, rest) = text.split_once("pid=")?;
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    }

    /// Ask the master to exit and forget the connection. Later commands fail.
    pub async fn shutdown(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        if self.master_alive() {
            let _ =
                tokio::time::timeout(Duration::from_secs(5), self.control("exit").status()).await;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// `ssh -S socket -O <op> destination`.
    fn control(&self, op: &str) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.arg("-S")
            .arg(&self.socket)
            .args(["-O", op, "--"])
            .arg(self.target.destination())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// Start the master and wait until its socket answers.
    async fn start_master(&self) -> Result<(), SshError> {
        let label = self.target.to_string();
        let local = |what: &str, e: std::io::Error| SshError::Local(format!("{what}: {e}"));
        // A master killed by a signal leaves its socket behind; a new master
        // would then run without multiplexing. Only called when it is dead.
        match std::fs::remove_file(&self.socket) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(local("cannot remove the stale control socket", e)),
        }
        std::fs::File::create(&self.log).map_err(|e| local("cannot create the master log", e))?;
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.log)
            .map_err(|e| local("cannot open the master log", e))?;
        let mut cmd = Command::new(&self.program);
        cmd.args(["-f", "-N", "-o", "ControlMaster=yes", "-o"])
            .arg(format!("ControlPath={}", self.socket.display()))
            .args(["-o", &format!("ControlPersist={CONTROL_PERSIST}")])
            .args(["-o", "BatchMode=yes", "-E"])
            .arg(&self.log)
            .args(&self.common)
            .arg("--")
            .arg(self.target.destination())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .process_group(0)
            .kill_on_drop(true);
        let limit = self.connect_timeout + Duration::from_secs(15);
        let status = match tokio::time::timeout(limit, cmd.status()).await {
            Ok(Ok(status)) => status,
            Ok(Err(e)) => {
                return Err(SshError::Local(format!(
                    "cannot run {}: {e}",
                    self.program.display()
                )));
            }
            Err(_) => {
                return Err(SshError::Unreachable {
                    target: label,
                    detail: format!("no answer within {}s", limit.as_secs()),
                });
            }
        };
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        if !status.success() {
            return Err(classify(&label, &text).unwrap_or_else(|| SshError::Other {
                target: label,
                detail: text.trim().replace('\n', "; "),
            }));
        }
        for _ in 0..300 {
            if self.master_alive() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err(SshError::Other {
            target: label,
            detail: format!("the master started but its socket never answered; {text}"),
        })
    }

    fn notice(&self, text: String) {
        tracing::warn!(target: "vigil::ssh", "{text}");
        if let Ok(mut n) = self.notices.lock() {
            n.push(text);
        }
    }
}

impl Transport for SshTransport {
    fn label(&self) -> String {
        format!("ssh {}", self.target)
    }

    fn shell(&self, script: &str, stdin: bool) -> Command {
        let mut cmd = self.client();
        if stdin {
            cmd.arg(format!("sh -c {}", sh_quote(script)));
        } else {
            cmd.arg(tether::wrapped_line(script));
            self.tether.attach(&mut cmd);
        }
        cmd
    }

    fn prepare(&self) -> BoxFuture<'_, Result<(), ExecError>> {
        Box::pin(async move {
            if self.closed.load(Ordering::SeqCst) {
                return Err(SshError::Local(format!(
                    "the connection to {} was closed",
                    self.target
                ))
                .into());
            }
            if self.master_alive() {
                return Ok(());
            }
            let _one_at_a_time = self.restart.lock().await;
            if self.master_alive() {
                return Ok(());
            }
            self.start_master().await?;
            self.epoch.fetch_add(1, Ordering::SeqCst);
            self.notice(format!(
                "the ssh connection to {} had gone away; it was re-established",
                self.target
            ));
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.shutdown())
    }

    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    fn take_notices(&self) -> Vec<String> {
        self.notices
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default()
    }

    fn failure(&self, exit_code: Option<i32>, stderr: &[u8]) -> Option<ExecError> {
        if exit_code != Some(255) {
            return None;
        }
        let target = self.target.to_string();
        classify(&target, &String::from_utf8_lossy(stderr))
            .or_else(|| {
                // The master died under a running command: its client exits
                // 255 without a word, and 255 is not the command's own code.
                (!self.master_alive()).then(|| SshError::ConnectionLost {
                    target,
                    detail: "the ssh master exited while the command ran; whether the \
                             command finished is unknown"
                        .into(),
                })
            })
            .map(Into::into)
    }
}

impl Drop for SshTransport {
    fn drop(&mut self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        if self.master_alive() {
            let _ = std::process::Command::new(&self.program)
                .arg("-S")
                .arg(&self.socket)
                .args(["-O", "exit", "--"])
                .arg(self.target.destination())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print_back() {
        let t = SshTarget::parse("root@127.0.0.1:2222").unwrap();
        assert_eq!(t.user.as_deref(), Some("root"));
        assert_eq!(t.host, "127.0.0.1");
        assert_eq!(t.port, Some(2222));
        assert_eq!(t.destination(), "root@127.0.0.1");
        assert_eq!(t.to_string(), "root@127.0.0.1:2222");
        let t = SshTarget::parse("box").unwrap();
        assert_eq!((t.user, t.port), (None, None));
        let t = SshTarget::parse("u@[::1]:22").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", Some(22)));
        assert_eq!(t.to_string(), "u@[::1]:22");
        for bad in [
            "",
            "@h",
            "u@",
            "h:0",
            "h:x",
            "-oProxyCommand=x",
            "a b",
            "u@[::1",
        ] {
            assert!(
                matches!(SshTarget::parse(bad), Err(SshError::BadTarget { .. })),
                "{bad}"
            );
        }
    }

    #[tokio::test]
    async fn bad_options_are_refused_before_connecting() {
        let mut o = SshOptions::new("u@h");
        o.options = vec!["-oProxyCommand=evil".into()];
        let e = SshTransport::connect(o).await.err().unwrap();
        assert!(e.to_string().contains("Key=Value"), "{e}");
    }
}
