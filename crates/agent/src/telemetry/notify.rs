//! The agent's side of "an approval waits": the operator's `[notify]
//! command`, run for each approval that waits for the operator with the
//! request as JSON on stdin, so a phone, ntfy or Slack hears about it even
//! when no console is attached.
//!
//! A relay sits between the agent loop and the session recorder and only
//! looks at events passing by. It must never hold an event back waiting for
//! the command: each command runs on its own task, in its own process group
//! (killed at the time limit), with the filtered tool environment (no API
//! key, no secrets: [`vigil_exec::env`]). A failure is logged, and the first
//! one is told to the operator as a Notice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use vigil_protocol::{AgentEvent, ApprovalRequest};

/// Who is asking, as the command's JSON says it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AgentLabel {
    /// `[agent] name`.
    pub name: String,
    pub model: String,
    pub target: String,
    pub pid: u32,
}

/// What the command reads on stdin (one JSON object, then EOF).
#[derive(Debug, Serialize)]
pub struct Payload<'a> {
    pub agent: &'a AgentLabel,
    /// The session id (None: the session is not recorded).
    pub session: Option<&'a str>,
    pub request: &'a ApprovalRequest,
}

/// The configured command and what it is told.
#[derive(Debug)]
pub struct Notifier {
    command: Vec<String>,
    timeout: Duration,
    agent: AgentLabel,
    session: Option<String>,
    /// A failure was already told to the operator.
    told: AtomicBool,
}

/// Why one run of the command failed.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("cannot encode the request: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("notify command `{program}` failed: {source}")]
    Run {
        program: String,
        source: vigil_exec::ExecError,
    },
    #[error("notify command `{program}` exited with {code}: {stderr}")]
    Exit {
        program: String,
        code: String,
        stderr: String,
    },
}

impl Notifier {
    /// None when no command is configured.
    pub fn new(
        command: &[String],
        timeout: Duration,
        agent: AgentLabel,
        session: Option<String>,
    ) -> Option<Arc<Notifier>> {
        (!command.is_empty()).then(|| {
            Arc::new(Notifier {
                command: command.to_vec(),
                timeout,
                agent,
                session,
                told: AtomicBool::new(false),
            })
        })
    }

    /// Forward every event from `rx` unchanged (and in order), starting the
    /// command for each approval that waits for the operator.
    pub fn relay(
        self: Arc<Self>,
        mut rx: UnboundedReceiver<AgentEvent>,
    ) -> UnboundedReceiver<AgentEvent> {
        let (tx, out) = unbounded_channel();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if let AgentEvent::ApprovalRequested { request } = &event
                    && !request.automatic
                {
                    let me = self.clone();
                    let request = request.clone();
                    let tx = tx.clone();
                    tokio::spawn(async move { me.notify(&request, &tx).await });
                }
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        out
    }

    async fn notify(&self, request: &ApprovalRequest, tx: &UnboundedSender<AgentEvent>) {
        let Err(e) = self.run(request).await else {
            return;
        };
        tracing::warn!("approval {}: {e}", request.id);
        if !self.told.swap(true, Ordering::SeqCst) {
            let _ = tx.send(AgentEvent::Notice {
                text: format!("{e} (later failures only go to the log)"),
            });
        }
    }

    /// Run the command once for `request`.
    pub async fn run(&self, request: &ApprovalRequest) -> Result<(), NotifyError> {
        let payload = Payload {
            agent: &self.agent,
            session: self.session.as_deref(),
            request,
        };
        let mut json = serde_json::to_vec(&payload)?;
        json.push(b'\n');
        let program = self.command[0].clone();
        let mut cmd = std::process::Command::new(&program);
        cmd.args(&self.command[1..]);
        vigil_exec::env::apply_tool_env(&mut cmd);
        let outcome = vigil_exec::process::run(cmd.into(), Some(json), Some(self.timeout), None)
            .await
            .map_err(|source| NotifyError::Run {
                program: program.clone(),
                source,
            })?;
        if outcome.exit_code == Some(0) {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&outcome.stderr);
        Err(NotifyError::Exit {
            program,
            code: outcome
                .exit_code
                .map_or_else(|| "a signal".to_string(), |c| format!("code {c}")),
            stderr: stderr.trim().chars().take(200).collect(),
        })
    }
}
