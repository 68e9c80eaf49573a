//! `[[hooks.on]]`: programs told about the session's life — it started,
//! a call finished (with its outcome), an approval waits for the operator,
//! a turn failed, it ended — with one JSON object on stdin (docs/hooks.md).
//!
//! Run by the agent (so they fire with no console attached): a relay looks
//! at events on their way to the session record and never holds one back;
//! each hook runs on its own task, in its own process group (killed at its
//! time limit), with the filtered tool environment, as the `[notify]
//! command` does. A hook's first failure is logged as a warning and told to
//! the operator once; later ones only go to the log at debug level. A
//! lifecycle hook decides nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::agent::notify::AgentLabel;
use crate::config::hooks::{HookCommand, HooksConfig};
use crate::event::AgentEvent;

/// One `[[hooks.on]]` entry.
#[derive(Debug)]
struct OnHook {
    name: String,
    events: Vec<String>,
    command: HookCommand,
    timeout: Duration,
    /// A failure was already logged as a warning.
    told: AtomicBool,
}

/// The lifecycle hooks of a session.
#[derive(Debug)]
pub struct Lifecycle {
    hooks: Vec<OnHook>,
    agent: AgentLabel,
    session: Option<String>,
    /// Hooks still running (`session_end` waits for them first).
    running: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Lifecycle {
    /// None when no `[[hooks.on]]` is configured.
    pub fn new(
        config: &HooksConfig,
        agent: AgentLabel,
        session: Option<String>,
    ) -> Option<Arc<Lifecycle>> {
        let hooks: Vec<OnHook> = config
            .on
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let h = h.get_ref();
                OnHook {
                    name: h
                        .name
                        .clone()
                        .unwrap_or_else(|| format!("hooks.on[{}]", i + 1)),
                    events: h.events.clone(),
                    command: h.command.clone(),
                    timeout: Duration::from_secs(h.timeout_secs),
                    told: AtomicBool::new(false),
                }
            })
            .collect();
        (!hooks.is_empty()).then(|| {
            Arc::new(Lifecycle {
                hooks,
                agent,
                session,
                running: std::sync::Mutex::new(Vec::new()),
            })
        })
    }

    /// Forward every event from `rx` unchanged and in order, starting the
    /// hooks an event concerns.
    pub fn relay(
        self: Arc<Self>,
        mut rx: UnboundedReceiver<AgentEvent>,
    ) -> UnboundedReceiver<AgentEvent> {
        let (tx, out) = unbounded_channel();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if let Some((name, detail)) = lifecycle_event(&event) {
                    let me = self.clone();
                    let tx = tx.clone();
                    let run = tokio::spawn(async move { me.fire(name, detail, Some(&tx)).await });
                    let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
                    running.retain(|h| !h.is_finished());
                    running.push(run);
                }
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        out
    }

    /// Wait for the hooks still running, then run the `session_end` hooks
    /// and wait for them (each within its limit).
    pub async fn session_end(&self) {
        let running: Vec<_> =
            std::mem::take(&mut *self.running.lock().unwrap_or_else(|e| e.into_inner()));
        futures::future::join_all(running).await;
        self.fire("session_end", json!({}), None).await;
    }

    async fn fire(&self, event: &str, detail: Value, tx: Option<&UnboundedSender<AgentEvent>>) {
        let mut payload = json!({
            "version": super::decide::VERSION,
            "event": event,
            "session_id": self.session,
            "agent": self.agent,
            "at_ms": crate::tools::envelope::unix_millis() as u64,
        });
        if let (Some(obj), Value::Object(more)) = (payload.as_object_mut(), detail) {
            obj.extend(more);
        }
        let mut input = serde_json::to_vec(&payload).unwrap_or_default();
        input.push(b'\n');
        let runs = self
            .hooks
            .iter()
            .filter(|h| h.events.is_empty() || h.events.iter().any(|e| e == event))
            .map(|h| self.run_one(h, event, input.clone(), tx));
        futures::future::join_all(runs).await;
    }

    async fn run_one(
        &self,
        hook: &OnHook,
        event: &str,
        input: Vec<u8>,
        tx: Option<&UnboundedSender<AgentEvent>>,
    ) {
        let why = match super::run::command(&hook.command, input, hook.timeout).await {
            Ok(out) if out.code == Some(0) => return,
            Ok(out) => format!(
                "exited with {}: {}",
                out.code.map_or("a signal".into(), |c| format!("code {c}")),
                super::decide::clip(&out.stderr)
            ),
            Err(e) => e,
        };
        let text = format!("lifecycle hook `{}` ({event}) failed: {why}", hook.name);
        if hook.told.swap(true, Ordering::SeqCst) {
            tracing::debug!("{text}");
            return;
        }
        tracing::warn!("{text}");
        if let Some(tx) = tx {
            let _ = tx.send(AgentEvent::Notice {
                text: format!("{text} (later failures only go to the log)"),
            });
        }
    }
}

/// The lifecycle event an agent event is, with what the hook is told.
fn lifecycle_event(event: &AgentEvent) -> Option<(&'static str, Value)> {
    match event {
        AgentEvent::SessionStarted { model, target, .. } => {
            Some(("session_start", json!({"model": model, "target": target})))
        }
        AgentEvent::ToolCompleted {
            call_id,
            name,
            summary,
        } => Some((
            "call_finished",
            json!({"call": {"call_id": call_id, "tool": name, "outcome": summary}}),
        )),
        AgentEvent::ToolCancelled { call_id, name } => Some((
            "call_finished",
            json!({"call": {"call_id": call_id, "tool": name, "outcome": {"ok": false, "cancelled": true}}}),
        )),
        AgentEvent::ApprovalRequested { request } if !request.automatic => {
            Some(("approval_waiting", json!({"request": request})))
        }
        AgentEvent::TurnFailed { kind, message } => Some((
            "turn_failed",
            json!({"failure": {"kind": kind, "message": message}}),
        )),
        _ => None,
    }
}
