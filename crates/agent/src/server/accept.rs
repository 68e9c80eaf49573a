//! The accept loop: every connection to the agent's socket is checked to
//! come from the agent's own user (`SO_PEERCRED`), then served on its own
//! task. It ends when the hub closes. A failing accept is logged and
//! retried; it never ends the agent.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::task::JoinHandle;

use super::conn;
use super::hub::Hub;
use super::listener::foreign_peer;

/// Accept connections until the hub closes.
pub fn spawn(hub: Arc<Hub>, listener: UnixListener) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut closing = hub.closing();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((mut stream, _)) => match foreign_peer(&stream) {
                        Some(why) => {
                            tokio::spawn(async move { conn::refuse(&mut stream, why).await });
                        }
                        None => {
                            tokio::spawn(conn::serve(hub.clone(), stream));
                        }
                    },
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                _ = async { let _ = closing.wait_for(|c| c.is_some()).await; } => return,
            }
        }
    })
}
