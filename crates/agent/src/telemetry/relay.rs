//! A tap on the agent's event stream: every event passes on unchanged and
//! in order, after a look at it (the `[notify] command`, the decision
//! record, OpenTelemetry). A look must not wait: anything slow is spawned.
//! It never drops, reorders or holds back an event.

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use vigil_protocol::AgentEvent;

/// Pass every event of `rx` on after `look` saw it (and may have stamped
/// it); stops when nobody reads the output.
pub fn tap<F>(mut rx: UnboundedReceiver<AgentEvent>, mut look: F) -> UnboundedReceiver<AgentEvent>
where
    F: FnMut(&mut AgentEvent) + Send + 'static,
{
    let (tx, out) = unbounded_channel();
    tokio::spawn(async move {
        while let Some(mut event) = rx.recv().await {
            look(&mut event);
            if tx.send(event).is_err() {
                break;
            }
        }
    });
    out
}
