//! What the decision record says about each gated call: the call (tool,
//! action, target, directory, vigil's estimate), the decision, who or what
//! made it (the operator and the console that answered, the policy rule
//! and its `file:line`, a hook and its answer, the approval mode, the
//! view's verdict under `by_effect`), every decide hook's answer, and
//! whether the operator had a preview.
//!
//! A relay between the agent and the session recorder builds one entry per
//! `ApprovalResolved` and appends it to the chain ([`super::chain`]); it
//! passes every event on unchanged and in order, and never decides.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::chain::Chain;
use crate::approval::ApprovalBroker;
use crate::record::answers::AnswerBook;
use vigil_protocol::{AgentEvent, ApprovalRequest, PreviewOutcome};

/// Builds and appends the entries of one session.
pub struct Recorder {
    chain: Mutex<Chain>,
    broker: Arc<ApprovalBroker>,
    answers: Arc<AnswerBook>,
    /// Requests announced and not yet resolved, by id.
    pending: Mutex<HashMap<u64, ApprovalRequest>>,
    /// The view's verdict on a request, when a preview or trial came back.
    views: Mutex<HashMap<u64, String>>,
}

impl Recorder {
    pub fn new(chain: Chain, broker: Arc<ApprovalBroker>, answers: Arc<AnswerBook>) -> Arc<Self> {
        Arc::new(Recorder {
            chain: Mutex::new(chain),
            broker,
            answers,
            pending: Mutex::new(HashMap::new()),
            views: Mutex::new(HashMap::new()),
        })
    }

    /// Forward every event from `rx` unchanged, recording each decision.
    pub fn relay(
        self: Arc<Self>,
        rx: UnboundedReceiver<AgentEvent>,
    ) -> UnboundedReceiver<AgentEvent> {
        crate::telemetry::relay::tap(rx, move |event| {
            // The console that answered, as the session record names it.
            self.answers.stamp(event);
            self.observe(event);
        })
    }

    fn observe(&self, event: &AgentEvent) {
        match event {
            AgentEvent::ApprovalRequested { request } => {
                lock(&self.pending).insert(request.id, request.clone());
            }
            AgentEvent::PreviewReady { id, outcome } => {
                let verdict = match outcome {
                    PreviewOutcome::Report { report } => report.headline(),
                    PreviewOutcome::Unavailable { why } => format!("no preview: {why}"),
                };
                lock(&self.views).insert(*id, verdict);
            }
            AgentEvent::ApprovalResolved { id, .. } => {
                let request = lock(&self.pending).remove(id);
                let view = lock(&self.views).remove(id);
                let entry = self.entry(event, request, view);
                if let Err(e) = lock(&self.chain).append(entry) {
                    tracing::warn!("cannot append to the decision record: {e}");
                }
            }
            _ => {}
        }
    }

    fn entry(
        &self,
        event: &AgentEvent,
        request: Option<ApprovalRequest>,
        view: Option<String>,
    ) -> Value {
        let AgentEvent::ApprovalResolved {
            id,
            decision,
            decided_by,
            previewed,
            answered_by,
        } = event
        else {
            return json!({});
        };
        let mode = serde_json::to_value(self.broker.policy_choice()).unwrap_or(Value::Null);
        let mut entry = json!({
            "at_ms": vigil_tools::envelope::unix_millis() as u64,
            "approval_id": id,
            "approved": decision.is_approved(),
            "decision": decision,
            "decided_by": decided_by,
            "how": decided_by.record(decision, *previewed),
            "answered_by": answered_by,
            "policy_mode": mode,
            "view": view,
        });
        if let (Some(r), Some(obj)) = (request, entry.as_object_mut()) {
            obj.extend([
                ("call_id".to_string(), json!(r.call_id)),
                ("tool".to_string(), json!(r.tool)),
                ("action".to_string(), json!(r.gate.action)),
                ("target".to_string(), json!(r.target)),
                ("cwd".to_string(), json!(r.facts.cwd)),
                ("estimate".to_string(), json!(r.estimate)),
                ("hooks".to_string(), json!(r.facts.hooks)),
                ("trial".to_string(), json!(r.facts.trial)),
            ]);
        }
        entry
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
