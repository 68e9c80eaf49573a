//! The mirror feed: keeps the latest `capture-pane -e -p` of the shared pane
//! on a `watch` channel for the console's mirror pane.
//!
//! Event-driven: it waits on [`TmuxManager::subscribe_changes`] (bumped by
//! the control clients on `%output` and layout changes), so an idle pane
//! costs nothing. Bursts are coalesced and captures rate-limited to one per
//! [`MIN_INTERVAL`], so a change is shown within about that interval plus one
//! capture. It only captures (through the existing control client) and
//! publishes: it never types into, creates, recreates or kills anything, and holds only a weak reference to the manager so it
//! never keeps the tmux layer alive. It ends when the agent's tmux layer is
//! gone or nobody watches any more.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::manager::lock;
use super::script::tq;
use super::{TmuxError, TmuxManager};

/// At most ~30 captures a second.
pub const MIN_INTERVAL: Duration = Duration::from_millis(33);

/// A capture that failed (the control client not up yet) is taken again
/// after this, not at the pane's next output: a console attaching to an
/// idle pane sees it at once.
const RETRY: Duration = Duration::from_millis(300);

/// A capture with no answer by then counts as failed and is taken again
/// (a reply lost or late on a loaded machine must not leave the mirror
/// empty for good).
const CAPTURE_WAIT: Duration = Duration::from_secs(3);

/// How often the feed checks that the tmux layer still exists while the
/// pane is idle (the only wake-up an idle pane causes).
const LIVENESS: Duration = Duration::from_secs(5);

/// Shown when the shared pane (or the whole server) is gone.
pub const GONE: &str = "(the managed pane is gone: it is recreated on the agent's next command)";

/// [`TmuxManager::capture_mirror`] without its side effects: only through
/// the default session's live control client, never creating or recreating
/// a session or pane (the agent's next command does that, and tells the
/// model its terminal state was lost).
async fn capture(manager: &TmuxManager) -> Result<String, TmuxError> {
    let control = {
        let controls = manager.controls.lock().await;
        controls.get(manager.default_session()).cloned()
    };
    let pane = lock(&manager.shared_pane).clone();
    let (Some(control), false) = (control, pane.is_empty()) else {
        return Ok(GONE.to_string());
    };
    if control.is_closed() {
        return Ok(GONE.to_string());
    }
    let line = format!("capture-pane -e -p -t {}", tq(&pane));
    let asked = control.cmd(&line);
    let Ok(answer) = tokio::time::timeout(CAPTURE_WAIT, asked).await else {
        return Err(TmuxError::Failed(format!(
            "no capture within {} s",
            CAPTURE_WAIT.as_secs()
        )));
    };
    match answer {
        Ok(lines) => Ok(lines.join("\n")),
        Err(e) if e.to_string().contains("can't find") => Ok(GONE.to_string()),
        Err(e) => Err(e.into()),
    }
}

/// Start the feed; the receiver sees the first capture as soon as it is
/// taken, then every change.
pub fn spawn_mirror_feed(tmux: &Arc<TmuxManager>) -> watch::Receiver<String> {
    let (tx, rx) = watch::channel(String::new());
    let changes = tmux.subscribe_changes();
    tokio::spawn(run(Arc::downgrade(tmux), changes, tx));
    rx
}

async fn run(
    tmux: Weak<TmuxManager>,
    mut changes: watch::Receiver<u64>,
    tx: watch::Sender<String>,
) {
    let mut last: Option<Instant> = None;
    loop {
        if let Some(at) = last {
            // Coalesce a burst: wait out the interval, then take one capture
            // of whatever the pane shows by then.
            tokio::time::sleep_until(at + MIN_INTERVAL).await;
        }
        changes.borrow_and_update();
        let Some(manager) = tmux.upgrade() else {
            return;
        };
        last = Some(Instant::now());
        let captured = capture(&manager).await;
        let failed = captured.is_err();
        match captured {
            Ok(text) => {
                // A blank pane is a capture too (one empty line), never
                // the "no capture yet" of an empty text.
                let text = if text.is_empty() {
                    "\n".to_string()
                } else {
                    text
                };
                tx.send_if_modified(|shown| {
                    if *shown == text {
                        false
                    } else {
                        *shown = text;
                        true
                    }
                });
            }
            Err(e) => tracing::debug!("mirror capture failed: {e}"),
        }
        drop(manager);
        loop {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    break;
                }
                () = tx.closed() => return,
                () = tokio::time::sleep(RETRY), if failed => break,
                () = tokio::time::sleep(LIVENESS) => {
                    if tmux.strong_count() == 0 {
                        return;
                    }
                }
            }
        }
    }
}
