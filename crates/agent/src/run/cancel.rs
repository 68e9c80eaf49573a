//! What a cancel leaves behind, made whole: every tool call the model made
//! in the last round gets an answer (its real result when it finished, a
//! "cancelled" one otherwise), or the next request would be refused by the
//! server. It never stops anything itself (dropping the turn does that) and
//! never talks to the model.

use vigil_protocol::AgentEvent;

use crate::model::types::{ChatMessage, Role};
use crate::run::shared::{Shared, lock};

/// After a cancel, every tool call the model made must still get an answer,
/// or the next request would be refused by the server.
pub(crate) fn close_dangling_calls(shared: &Shared) {
    let mut convo = lock(&shared.conversation);
    let mut finished = lock(&shared.finished);
    let Some(pos) = convo
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        finished.clear();
        return;
    };
    let answered: Vec<String> = convo[pos + 1..]
        .iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    let missing: Vec<String> = convo[pos]
        .tool_calls
        .iter()
        .map(|c| c.id.clone())
        .filter(|id| !answered.contains(id))
        .collect();
    for id in missing {
        // A call that finished before the cancel keeps its real result (it
        // is already in the session file).
        match finished.remove(&id) {
            Some(text) => convo.push(ChatMessage::tool(id, text)),
            None => {
                let name = convo[pos]
                    .tool_calls
                    .iter()
                    .find(|c| c.id == id)
                    .map(|c| c.function.name.clone())
                    .unwrap_or_default();
                let msg = ChatMessage::tool(
                    id.clone(),
                    "Tool error: the operator cancelled this call before it finished.",
                );
                shared.record(&msg);
                convo.push(msg);
                shared.emit(AgentEvent::ToolCancelled { call_id: id, name });
            }
        }
    }
    finished.clear();
}
