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

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;

use crate::telemetry::notify::AgentLabel;
use vigil_config::hooks::{HookCommand, HooksConfig};
use vigil_protocol::{AgentEvent, DecidedBy};

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
    running: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Asks the relay to finish the events it holds, then end the session.
    end: Mutex<Option<UnboundedSender<oneshot::Sender<()>>>>,
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
                running: Mutex::new(Vec::new()),
                end: Mutex::new(None),
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
        let (end_tx, mut end_rx) = unbounded_channel::<oneshot::Sender<()>>();
        *lock(&self.end) = Some(end_tx);
        tokio::spawn(async move {
            let mut seen = Seen::default();
            loop {
                tokio::select! {
                    biased;
                    event = rx.recv() => {
                        let Some(event) = event else { break };
                        if !self.pass(&mut seen, event, &tx) {
                            break;
                        }
                    }
                    Some(done) = end_rx.recv() => {
                        // Every event sent before the agent ended first.
                        while let Ok(event) = rx.try_recv() {
                            self.pass(&mut seen, event, &tx);
                        }
                        self.ended().await;
                        let _ = done.send(());
                    }
                }
            }
        });
        out
    }

    /// Start the hooks `event` concerns and pass it on; false: nobody reads.
    fn pass(
        self: &Arc<Self>,
        seen: &mut Seen,
        event: AgentEvent,
        tx: &UnboundedSender<AgentEvent>,
    ) -> bool {
        if let Some((name, detail)) = seen.lifecycle_event(&event) {
            let me = self.clone();
            let tx = tx.clone();
            let run = tokio::spawn(async move { me.fire(name, detail, Some(&tx)).await });
            let mut running = lock(&self.running);
            running.retain(|h| !h.is_finished());
            running.push(run);
        }
        tx.send(event).is_ok()
    }

    /// The agent ended: tell the events it sent last, wait for the hooks
    /// still running, then run the `session_end` hooks and wait for them
    /// (each within its limit).
    pub async fn session_end(&self) {
        let end = lock(&self.end).clone();
        let (done_tx, done_rx) = oneshot::channel();
        match end {
            Some(end) if end.send(done_tx).is_ok() => {
                let _ = done_rx.await;
            }
            _ => self.ended().await,
        }
    }

    async fn ended(&self) {
        let running: Vec<_> = std::mem::take(&mut *lock(&self.running));
        futures::future::join_all(running).await;
        self.fire("session_end", json!({}), None).await;
    }

    async fn fire(&self, event: &str, detail: Value, tx: Option<&UnboundedSender<AgentEvent>>) {
        let mut payload = json!({
            "version": super::decide::VERSION,
            "event": event,
            "session_id": self.session,
            "agent": self.agent,
            "at_ms": vigil_tools::envelope::unix_millis() as u64,
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

/// What the relay remembers to tell each call's end once: approvals
/// waiting by id, calls already told.
#[derive(Default)]
struct Seen {
    waiting: HashMap<u64, (String, String)>,
    finished: HashSet<String>,
}

impl Seen {
    /// The lifecycle event an agent event is, with what the hook is told.
    /// A call withdrawn while it waited (the turn cancelled, the agent
    /// stopped) finishes as cancelled, once.
    fn lifecycle_event(&mut self, event: &AgentEvent) -> Option<(&'static str, Value)> {
        let cancelled = json!({"ok": false, "cancelled": true});
        match event {
            AgentEvent::SessionStarted { model, target, .. } => {
                Some(("session_start", json!({"model": model, "target": target})))
            }
            AgentEvent::ToolCompleted {
                call_id,
                name,
                summary,
            } => self.finish(call_id, name, json!(summary)),
            AgentEvent::ToolCancelled { call_id, name } => self.finish(call_id, name, cancelled),
            AgentEvent::ApprovalRequested { request } => {
                let call = (request.call_id.clone(), request.tool.clone());
                self.waiting.insert(request.id, call);
                (!request.automatic).then(|| ("approval_waiting", json!({"request": request})))
            }
            AgentEvent::ApprovalResolved { id, decided_by, .. } => {
                let (call_id, tool) = self.waiting.remove(id)?;
                (*decided_by == DecidedBy::Cancelled)
                    .then(|| self.finish(&call_id, &tool, cancelled))
                    .flatten()
            }
            AgentEvent::TurnFailed { kind, message } => Some((
                "turn_failed",
                json!({"failure": {"kind": kind, "message": message}}),
            )),
            _ => None,
        }
    }

    fn finish(
        &mut self,
        call_id: &str,
        tool: &str,
        outcome: Value,
    ) -> Option<(&'static str, Value)> {
        self.finished.insert(call_id.to_string()).then(|| {
            (
                "call_finished",
                json!({"call": {"call_id": call_id, "tool": tool, "outcome": outcome}}),
            )
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
