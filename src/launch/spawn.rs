//! Starting a session's agent process: `vigil __agent [global args]
//! [--resume ID]` in its own session (setsid: a closed terminal or a killed
//! console does not reach it), stdin from /dev/null, stdout a pipe for its
//! one ready line, stderr appended to `<data dir>/agent-<pid>.log`.
//!
//! The global arguments are passed through as given, except the API key,
//! which goes only in the child's environment (`ps` shows argv to every
//! user). It waits for the ready line ([`READY_WAIT`]) and, when the agent
//! cannot start, returns its own words and the log to read. It never talks
//! to the socket (that is [`vigil_client::attach`]) and never kills anything but
//! the process group it started, and only when that never became ready.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::BufReader;

use crate::cli::args::Cli;
use vigil_protocol::lines::read_line;

/// How long an agent may take to say it is ready (connecting to an ssh
/// target and starting MCP servers happen before).
pub const READY_WAIT: Duration = Duration::from_secs(60);

/// Why no agent process could be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot find the vigil executable to start the agent: {0}")]
    Exe(std::io::Error),
    #[error("cannot open the agent's log {path}: {source}")]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the agent process: {0}")]
    Spawn(std::io::Error),
    #[error("the agent could not start: {message} (its log: {log})")]
    Failed { message: String, log: PathBuf },
    #[error("the agent process ended before it was ready{tail} (its log: {log})")]
    Ended { tail: String, log: PathBuf },
    #[error("the agent did not say it was ready within {} s; it was stopped (its log: {log})", READY_WAIT.as_secs())]
    Timeout { log: PathBuf },
    #[error("the agent's ready line is not understood: {line} (its log: {log})")]
    Garbled { line: String, log: PathBuf },
}

/// The agent process, ready for clients.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Ready {
    /// The session id.
    pub id: String,
    pub socket: PathBuf,
    pub pid: u32,
}

/// The one line the agent prints on stdout.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum ReadyLine {
    Ready(Ready),
    Error(String),
}

/// What the agent process is started with, taken from this command line.
#[derive(Debug, Clone, Default)]
pub struct AgentArgs {
    /// The global arguments, API key excluded.
    pub argv: Vec<OsString>,
    /// The API key given on the command line (passed in the environment).
    pub api_key: Option<String>,
}

impl AgentArgs {
    /// The global arguments of `cli` as the agent process takes them.
    pub fn from_cli(cli: &Cli) -> AgentArgs {
        let mut argv: Vec<OsString> = Vec::new();
        let mut pair = |flag: &str, value: Option<OsString>| {
            if let Some(v) = value {
                argv.push(flag.into());
                argv.push(v);
            }
        };
        pair("--config", cli.config.clone().map(Into::into));
        pair("--base-url", cli.base_url.clone().map(Into::into));
        pair("--model", cli.model.clone().map(Into::into));
        pair("--data-dir", cli.data_dir.clone().map(Into::into));
        pair("--tmux-socket", cli.tmux_socket.clone().map(Into::into));
        pair("--ssh", cli.ssh.clone().map(Into::into));
        pair("--container", cli.container.clone().map(Into::into));
        match &cli.tmux {
            Some(Some(session)) => argv.extend([OsString::from("--tmux"), session.into()]),
            Some(None) => argv.push("--tmux".into()),
            None => {}
        }
        let flags = [
            (cli.demo, "--demo"),
            (cli.auto_approve, "--auto-approve"),
            (cli.no_tmux, "--no-tmux"),
        ];
        argv.extend(flags.iter().filter(|f| f.0).map(|f| OsString::from(f.1)));
        if cli.verbose > 0 {
            argv.push(format!("-{}", "v".repeat(usize::from(cli.verbose.min(3)))).into());
        }
        AgentArgs {
            argv,
            api_key: cli.api_key.clone(),
        }
    }
}

/// Start `vigil __agent` (resuming `resume` when given) and wait until it
/// is ready; its stderr goes to a log in `data_dir`.
pub async fn spawn_agent(
    args: &AgentArgs,
    resume: Option<&str>,
    data_dir: &Path,
) -> Result<Ready, SpawnError> {
    let exe = std::env::current_exe().map_err(SpawnError::Exe)?;
    let (log_file, starting) = open_log(data_dir)?;
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("__agent").args(&args.argv);
    if let Some(id) = resume {
        cmd.arg("--resume").arg(id);
    }
    if let Some(key) = &args.api_key {
        cmd.env("VIGIL_API_KEY", key);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log_file))
        .kill_on_drop(false);
    // SAFETY: setsid is async-signal-safe and touches no memory.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(SpawnError::Spawn)?;
    let log = name_log(&starting, child.id());
    let stdout = child.stdout.take().map(BufReader::new);
    let line = match stdout {
        Some(mut out) => tokio::time::timeout(READY_WAIT, read_line(&mut out)).await,
        None => Ok(Ok(None)),
    };
    let line = match line {
        Err(_) => {
            if let Some(pid) = child.id() {
                // Its own group (setsid): only what this function started.
                // SAFETY: kill has no memory preconditions.
                unsafe { libc::kill(-(pid as i32), libc::SIGTERM) };
            }
            return Err(SpawnError::Timeout { log });
        }
        Ok(Ok(Some(line))) => line,
        Ok(_) => {
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            return Err(SpawnError::Ended {
                tail: log_tail(&log),
                log,
            });
        }
    };
    match serde_json::from_str::<ReadyLine>(&line) {
        Ok(ReadyLine::Ready(ready)) => Ok(ready),
        Ok(ReadyLine::Error(message)) => Err(SpawnError::Failed { message, log }),
        Err(_) => Err(SpawnError::Garbled {
            line: vigil_client::attach::clip(&line),
            log,
        }),
    }
}

/// Open a fresh log for a starting agent (renamed after its pid once
/// known).
fn open_log(data_dir: &Path) -> Result<(std::fs::File, PathBuf), SpawnError> {
    crate::launch::agentlogs::prune_now(data_dir);
    let path = data_dir.join(format!("agent-starting-{}.log", std::process::id()));
    let opened = std::fs::create_dir_all(data_dir).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
    });
    match opened {
        Ok(file) => Ok((file, path)),
        Err(source) => Err(SpawnError::Log { path, source }),
    }
}

/// `agent-<pid>.log`, renamed from the starting name (kept when renaming
/// fails).
fn name_log(starting: &Path, pid: Option<u32>) -> PathBuf {
    let Some(pid) = pid else {
        return starting.to_path_buf();
    };
    let named = starting.with_file_name(format!("agent-{pid}.log"));
    match std::fs::rename(starting, &named) {
        Ok(()) => named,
        Err(_) => starting.to_path_buf(),
    }
}

/// The last lines of the log, for an error (empty: nothing there).
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
    if tail.is_empty() {
        String::new()
    } else {
        format!(": {}", vigil_client::attach::clip(&tail))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn global_args_pass_through_but_never_the_key() {
        let cli = Cli::parse_from([
            "vigil",
            "--model",
            "m1",
            "--api-key",
            "sk-secret",
            "--tmux",
            "work",
            "-vv",
            "--demo",
            "--ssh",
            "u@h:2222",
        ]);
        let args = AgentArgs::from_cli(&cli);
        let text: Vec<String> = args
            .argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            text,
            [
                "--model", "m1", "--ssh", "u@h:2222", "--tmux", "work", "--demo", "-vv"
            ]
        );
        assert!(!text.iter().any(|a| a.contains("sk-secret")));
        assert_eq!(args.api_key.as_deref(), Some("sk-secret"));
    }

    #[test]
    fn ready_and_error_lines_are_read() {
        let ready: ReadyLine =
            serde_json::from_str(r#"{"ready":{"id":"s1","socket":"/r/s1.sock","pid":42}}"#)
                .unwrap();
        assert!(matches!(ready, ReadyLine::Ready(Ready { pid: 42, .. })));
        let error: ReadyLine = serde_json::from_str(r#"{"error":"no model"}"#).unwrap();
        assert!(matches!(error, ReadyLine::Error(m) if m == "no model"));
    }
}
