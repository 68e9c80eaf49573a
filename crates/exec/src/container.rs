//! [`ContainerTransport`]: commands inside a running container through
//! `podman exec` or `docker exec`.
//!
//! The engine is chosen or detected (`podman --version`, `docker --version`,
//! then which one knows the container); the container must be running when
//! the transport is made, and an exec that fails because the container went
//! away is reported as a [`ContainerError`], not as the command's exit code;
//! so is a command that ended abnormally (killed, or an engine error code)
//! because the container stopped under it, which only an `inspect` after the
//! fact can tell.
//! Commands without input run under the [`tether`] wrapper
//! with `-i`, because a killed `exec` client leaves its command running in
//! the container otherwise. This module must never start, stop or create
//! containers; it only execs into one the operator named.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::process::Command;

use super::tether::{self, Tether};
use super::transport::Transport;
use super::{ExecError, RunOutcome};

/// A container engine CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Podman,
    Docker,
}

impl Engine {
    pub fn program(self) -> &'static str {
        match self {
            Engine::Podman => "podman",
            Engine::Docker => "docker",
        }
    }
}

/// Which engine to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineChoice {
    /// The first of podman, docker that answers and knows the container.
    #[default]
    Auto,
    Only(Engine),
}

/// Why the container cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContainerError {
    #[error("no container engine: {0}")]
    NoEngine(String),
    #[error("no container named `{name}` ({detail})")]
    Missing { name: String, detail: String },
    #[error("container `{name}` is not running (state: {state}); start it and try again")]
    NotRunning { name: String, state: String },
    #[error(
        "container `{name}` stopped while the command ran (state: {state}); whether the \
         command finished is unknown"
    )]
    StoppedMidCommand { name: String, state: String },
    #[error("{engine} failed: {detail}")]
    Engine {
        engine: &'static str,
        detail: String,
    },
    #[error("bad container name `{0}`")]
    BadName(String),
}

impl From<ContainerError> for ExecError {
    fn from(e: ContainerError) -> Self {
        ExecError::Failed(e.to_string())
    }
}

/// Where and how to exec.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ContainerOptions {
    pub name: String,
    pub engine: EngineChoice,
    /// Global engine arguments before `exec` (e.g. `--root DIR`).
    pub global_args: Vec<String>,
}

/// Commands inside one container.
pub struct ContainerTransport {
    engine: Engine,
    name: String,
    global_args: Vec<String>,
    tether: Arc<Tether>,
}

/// How long an engine may take to answer `--version` or `inspect`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// Run an engine command with a deadline; `(exit success, stdout, stderr)`.
async fn probe(mut cmd: Command) -> Option<(bool, String, String)> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(PROBE_TIMEOUT, cmd.output())
        .await
        .ok()?
        .ok()?;
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    ))
}

/// True when `stderr` says the engine does not know the container.
fn says_missing(stderr: &str) -> bool {
    let l = stderr.to_ascii_lowercase();
    l.contains("no such container") || l.contains("no such object") || l.contains("not found")
}

/// True when `stderr` says the container is not running.
fn says_stopped(stderr: &str) -> bool {
    let l = stderr.to_ascii_lowercase();
    l.contains("is not running")
        || l.contains("container state improper")
        || l.contains("can only create exec sessions on running containers")
}

/// True when an exec ended the way it does when the container stops under
/// it: killed (no code, or 128 + SIGKILL/SIGTERM) or one of the engine's own
/// codes (125 engine error, 126/127 cannot run, 255 podman's exec failure).
/// Only these outcomes are worth an `inspect`.
fn abnormal(exit_code: Option<i32>) -> bool {
    matches!(
        exit_code,
        None | Some(125) | Some(126) | Some(127) | Some(137) | Some(143) | Some(255)
    )
}

impl ContainerTransport {
    /// Find the engine and check that the container is running.
    pub async fn connect(opts: ContainerOptions) -> Result<ContainerTransport, ContainerError> {
        let name = opts.name.trim().to_string();
        if name.is_empty() || name.starts_with('-') || name.chars().any(char::is_whitespace) {
            return Err(ContainerError::BadName(opts.name));
        }
        let candidates: Vec<Engine> = match opts.engine {
            EngineChoice::Only(e) => vec![e],
            EngineChoice::Auto => vec![Engine::Podman, Engine::Docker],
        };
        let tether = Tether::new().map_err(|e| ContainerError::Engine {
            engine: "vigil",
            detail: format!("cannot create a pipe: {e}"),
        })?;
        let mut tried = Vec::new();
        let mut first_missing = None;
        for engine in candidates {
            let mut version = Command::new(engine.program());
            version.arg("--version");
            if !matches!(probe(version).await, Some((true, _, _))) {
                tried.push(format!(
                    "{} is not installed or does not answer",
                    engine.program()
                ));
                continue;
            }
            let t = ContainerTransport {
                engine,
                name: name.clone(),
                global_args: opts.global_args.clone(),
                tether: tether.clone(),
            };
            match t.check_running().await {
                Err(e @ ContainerError::Missing { .. }) if opts.engine == EngineChoice::Auto => {
                    tried.push(e.to_string());
                    first_missing.get_or_insert(e);
                }
                Err(ContainerError::Engine { detail, .. }) if opts.engine == EngineChoice::Auto => {
                    tried.push(format!("{}: {detail}", engine.program()));
                }
                other => return other.map(|()| t),
            }
        }
        Err(match first_missing {
            Some(ContainerError::Missing { name, .. }) => ContainerError::Missing {
                name,
                detail: tried.join("; "),
            },
            _ => ContainerError::NoEngine(tried.join("; ")),
        })
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `<engine> <global args>`; append a subcommand.
    pub fn engine_command(&self) -> Command {
        let mut cmd = Command::new(self.engine.program());
        cmd.args(&self.global_args);
        cmd
    }

    /// Ask the engine whether the container is running.
    pub async fn check_running(&self) -> Result<(), ContainerError> {
        let program = self.engine.program();
        let mut cmd = self.engine_command();
        cmd.args([
            "inspect",
            "--type",
            "container",
            "-f",
            "{{.State.Running}} {{.State.Status}}",
            "--",
            &self.name,
        ]);
        let (ok, stdout, stderr) = probe(cmd).await.ok_or_else(|| ContainerError::Engine {
            engine: program,
            detail: format!("`{program} inspect` did not answer"),
        })?;
        if !ok {
            return Err(if says_missing(&stderr) {
                ContainerError::Missing {
                    name: self.name.clone(),
                    detail: format!("{program}: {stderr}"),
                }
            } else {
                ContainerError::Engine {
                    engine: program,
                    detail: stderr,
                }
            });
        }
        let mut words = stdout.split_whitespace();
        match (words.next(), words.next()) {
            (Some("true"), _) => Ok(()),
            (_, state) => Err(ContainerError::NotRunning {
                name: self.name.clone(),
                state: state.unwrap_or("unknown").to_string(),
            }),
        }
    }
}

impl Transport for ContainerTransport {
    fn label(&self) -> String {
        format!("{}:{}", self.engine.program(), self.name)
    }

    fn shell(&self, script: &str, stdin: bool) -> Command {
        let mut cmd = self.engine_command();
        cmd.args(["exec", "-i", "--", &self.name]);
        if stdin {
            cmd.args(["sh", "-c", script]);
        } else {
            cmd.args(tether::wrapped_argv(script));
            self.tether.attach(&mut cmd);
        }
        cmd
    }

    fn failure(&self, exit_code: Option<i32>, stderr: &[u8]) -> Option<ExecError> {
        // podman: 125 (255 for exec on a stopped container); docker: 1 with
        // a daemon message. The text must also be the engine's own.
        if !matches!(exit_code, Some(1) | Some(125) | Some(126) | Some(255)) {
            return None;
        }
        let text = String::from_utf8_lossy(stderr);
        let first = text.lines().next().unwrap_or("");
        let from_engine = first.starts_with("Error") || first.starts_with("error");
        if !from_engine {
            return None;
        }
        if says_stopped(first) {
            return Some(
                ContainerError::NotRunning {
                    name: self.name.clone(),
                    state: "stopped".into(),
                }
                .into(),
            );
        }
        if says_missing(first) {
            return Some(
                ContainerError::Missing {
                    name: self.name.clone(),
                    detail: first.trim().to_string(),
                }
                .into(),
            );
        }
        None
    }

    fn diagnose<'a>(&'a self, outcome: &'a RunOutcome) -> BoxFuture<'a, Option<ExecError>> {
        Box::pin(async move {
            if !abnormal(outcome.exit_code) {
                return None;
            }
            // An engine that cannot answer says nothing either way: the
            // command's own outcome stands.
            let state = match self.check_running().await {
                Ok(()) | Err(ContainerError::Engine { .. }) => return None,
                Err(ContainerError::NotRunning { state, .. }) => state,
                Err(ContainerError::Missing { .. }) => "removed".to_string(),
                Err(_) => "unknown".to_string(),
            };
            Some(
                ContainerError::StoppedMidCommand {
                    name: self.name.clone(),
                    state,
                }
                .into(),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_messages_become_typed_errors() {
        let t = ContainerTransport {
            engine: Engine::Podman,
            name: "box".into(),
            global_args: vec![],
            tether: Tether::new().unwrap(),
        };
        let e = t
            .failure(
                Some(125),
                b"Error: can only create exec sessions on running containers: container state improper\n",
            )
            .unwrap();
        assert!(e.to_string().contains("not running"), "{e}");
        let e = t
            .failure(
                Some(125),
                b"Error: no container with name or ID \"box\" found: no such container\n",
            )
            .unwrap();
        assert!(e.to_string().contains("no container named `box`"), "{e}");
        // A command of the user's that exits 1 is its own business.
        assert_eq!(t.failure(Some(1), b"grep: no such container\n"), None);
        assert_eq!(t.failure(Some(0), b"Error: is not running"), None);
        assert_eq!(t.label(), "podman:box");
    }

    #[test]
    fn only_abnormal_ends_are_worth_an_inspect() {
        for code in [None, Some(125), Some(126), Some(127), Some(137), Some(143)] {
            assert!(abnormal(code), "{code:?}");
        }
        for code in [Some(0), Some(1), Some(2), Some(130)] {
            assert!(!abnormal(code), "{code:?}");
        }
    }

    #[tokio::test]
    async fn bad_names_are_refused() {
        let e = ContainerTransport::connect(ContainerOptions {
            name: "-x".into(),
            ..Default::default()
        })
        .await
        .err()
        .unwrap();
        assert!(matches!(e, ContainerError::BadName(_)));
    }
}
