//! Previews for waiting approvals: on the operator's
//! [`AgentCommand::Preview`](crate::event::AgentCommand::Preview) (or a
//! `preview = true` policy rule) the waiting command runs in a throwaway
//! view ([`crate::exec::preview`]) on a task of its own, and the outcome
//! goes back as [`AgentEvent::PreviewReady`](crate::event::AgentEvent::PreviewReady).
//!
//! Only shell commands on this machine are previewed; anything else is
//! answered "unavailable" with the reason. The console never runs a
//! preview itself, and the approval keeps waiting meanwhile: a preview
//! never decides anything.

use std::path::PathBuf;
use std::sync::Arc;

use super::approval::ApprovalBroker;
use crate::event::{ApprovalRequest, PreviewOutcome};
use crate::exec::preview::{PreviewOptions, preview};

/// What the card says on a target the view cannot reach.
pub const UNAVAILABLE_TARGET: &str =
    "preview unavailable on this target: it needs this machine's kernel (namespaces, overlayfs)";

/// Why `request` cannot be previewed here, if it cannot.
pub fn unavailable(broker: &ApprovalBroker, request: &ApprovalRequest) -> Option<String> {
    if request.gate.editable_field.as_deref() != Some("command") && request.tool != "run_shell" {
        return Some(format!(
            "only shell commands are previewed, not {}",
            request.tool
        ));
    }
    if !broker.can_sandbox() {
        return Some(UNAVAILABLE_TARGET.into());
    }
    None
}

/// Start the preview of waiting request `id`; false when nothing waits
/// under that id.
pub fn start(broker: &Arc<ApprovalBroker>, id: u64) -> bool {
    let Some(request) = broker.waiting(id) else {
        return false;
    };
    if let Some(why) = unavailable(broker, &request) {
        return broker.deliver_preview(id, PreviewOutcome::Unavailable { why });
    }
    let broker = broker.clone();
    tokio::spawn(async move {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let outcome = match preview(&request.gate.action, &cwd, PreviewOptions::default()).await {
            Ok(report) => PreviewOutcome::Report {
                report: Box::new(report),
            },
            Err(e) => PreviewOutcome::Unavailable { why: e.to_string() },
        };
        broker.deliver_preview(id, outcome);
    });
    true
}
