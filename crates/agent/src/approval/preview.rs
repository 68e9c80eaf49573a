//! Previews for waiting approvals: on the operator's
//! [`AgentCommand::Preview`](vigil_protocol::AgentCommand::Preview), or at
//! once for a call a `preview = true` policy rule matches, the waiting
//! command runs in a throwaway view ([`vigil_exec::preview`]) on a task
//! of its own, and the outcome goes back as
//! [`vigil_protocol::AgentEvent::PreviewReady`].
//!
//! The [`PreviewDesk`] holds the requests that wait and which of them the
//! operator saw a preview of (the decision record says so). Only shell
//! commands on this machine are previewed; anything else is answered
//! "unavailable" with the reason. A preview runs in the directory the
//! approved command will run in (the request's `in:` directory), so the
//! preview and `y` act on the same files. A preview never decides
//! anything: the approval keeps waiting meanwhile.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use vigil_exec::preview::{PreviewOptions, preview};
use vigil_protocol::{AgentEvent, ApprovalRequest, PreviewOutcome};

/// What the card says on a target the view cannot reach.
pub const UNAVAILABLE_TARGET: &str =
    "preview unavailable on this target: it needs this machine's kernel (namespaces, overlayfs)";

/// The waiting requests and the previews delivered for them.
pub struct PreviewDesk {
    events: mpsc::UnboundedSender<AgentEvent>,
    waiting: Mutex<HashMap<u64, ApprovalRequest>>,
    previewed: Mutex<HashSet<u64>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PreviewDesk {
    pub fn new(events: mpsc::UnboundedSender<AgentEvent>) -> Self {
        PreviewDesk {
            events,
            waiting: Mutex::default(),
            previewed: Mutex::default(),
        }
    }

    /// `request` waits for the operator.
    pub fn wait(&self, request: ApprovalRequest) {
        lock(&self.waiting).insert(request.id, request);
    }

    /// The request `id` while it waits.
    pub fn waiting(&self, id: u64) -> Option<ApprovalRequest> {
        lock(&self.waiting).get(&id).cloned()
    }

    /// Request `id` was decided; returns whether a preview reached the
    /// operator before.
    pub fn forget(&self, id: u64) -> bool {
        lock(&self.waiting).remove(&id);
        lock(&self.previewed).remove(&id)
    }

    /// Send a preview's outcome to the operator (a report is remembered
    /// for the decision record); false when the request no longer waits.
    pub fn deliver(&self, id: u64, outcome: PreviewOutcome) -> bool {
        if !lock(&self.waiting).contains_key(&id) {
            return false;
        }
        if matches!(outcome, PreviewOutcome::Report { .. }) {
            lock(&self.previewed).insert(id);
        }
        self.events
            .send(AgentEvent::PreviewReady { id, outcome })
            .is_ok()
    }
}

/// Why `request` cannot be previewed here, if it cannot (`local`: the
/// target is this machine with the kernel features).
pub fn unavailable(request: &ApprovalRequest, local: bool) -> Option<String> {
    if request.gate.editable_field.as_deref() != Some("command") && request.tool != "run_shell" {
        return Some(format!(
            "only shell commands are previewed, not {}",
            request.tool
        ));
    }
    if !local {
        return Some(UNAVAILABLE_TARGET.into());
    }
    None
}

/// Where a preview of `request` runs: where the approved command will run
/// (the managed pane's current directory, the card's `in:` line), else
/// vigil's own directory (plain runs inherit it).
pub fn preview_dir(request: &ApprovalRequest) -> PathBuf {
    match &request.facts.cwd {
        Some(dir) => PathBuf::from(dir),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
    }
}

/// Start the preview of waiting request `id`; false when nothing waits
/// under that id. Needs a tokio runtime.
pub fn start(desk: &Arc<PreviewDesk>, local: bool, id: u64) -> bool {
    let Some(request) = desk.waiting(id) else {
        return false;
    };
    if let Some(why) = unavailable(&request, local) {
        return desk.deliver(id, PreviewOutcome::Unavailable { why });
    }
    let desk = desk.clone();
    tokio::spawn(async move {
        let cwd = preview_dir(&request);
        let action = &request.gate.action;
        let outcome = match preview(action, &cwd, PreviewOptions::default()).await {
            Ok(report) => PreviewOutcome::Report {
                report: Box::new(report),
            },
            Err(e) => PreviewOutcome::Unavailable { why: e.to_string() },
        };
        desk.deliver(id, outcome);
    });
    true
}
