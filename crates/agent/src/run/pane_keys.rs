//! The operator's key passthrough: keystrokes typed into the managed pane
//! go to tmux in order, on their own task, so the agent loop never waits on
//! tmux. It never gates, queues behind a turn or inspects what is typed: the
//! operator is the one typing.

use std::sync::Arc;

use tokio::sync::mpsc;

use vigil_exec::tmux::TmuxManager;
use vigil_protocol::{AgentEvent, PaneKey};

/// Where the loop hands the operator's keys.
pub(crate) type PaneKeys = mpsc::UnboundedSender<Vec<PaneKey>>;

/// The operator's keystrokes go to the pane in order, on their own task (the
/// loop never waits on tmux); bursts are sent as one batch. Each accepted
/// batch is reported as [`AgentEvent::OperatorKeys`]. The task ends with the
/// loop (its sender is dropped).
pub(crate) fn spawn_pane_keys(
    tmux: Arc<TmuxManager>,
    events: mpsc::UnboundedSender<AgentEvent>,
) -> PaneKeys {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<PaneKey>>();
    tokio::spawn(async move {
        while let Some(mut keys) = rx.recv().await {
            while let Ok(more) = rx.try_recv() {
                keys.extend(more);
            }
            let event = match tmux.send_operator_keys(&keys).await {
                Ok(()) => AgentEvent::OperatorKeys { keys },
                Err(e) => AgentEvent::Error {
                    message: format!("could not type into the managed pane: {e}"),
                },
            };
            if events.send(event).is_err() {
                break;
            }
        }
    });
    tx
}
