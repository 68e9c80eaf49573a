//! One client's outgoing half: the replay from its `last_seq` up to the
//! newest event at attach, `Live`, then the live stream read from the same
//! journal with the client's own cursor, the mirror (the newest capture
//! only), the answers its connection asks for, and `Bye` when the agent
//! goes.
//!
//! A client that falls behind simply reads further back in the journal:
//! lossless events wait for it, output it was too slow for is replaced by
//! the journal's "not shown" marker. A client that takes nothing for
//! [`STALL`] is disconnected. It never reads the socket.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::hub::Hub;
use vigil_protocol::lines::message_line;
use vigil_protocol::wire::{Role, ServerMsg};

/// How long one write may wait for a client that reads nothing.
pub const STALL: Duration = Duration::from_secs(30);
/// Most journal entries sent in one write.
const BATCH_LINES: usize = 512;
/// About the most bytes sent in one write.
const BATCH_BYTES: usize = 256 << 10;

/// What the reading half asks the writer.
#[derive(Debug)]
pub enum Ctl {
    /// Send this answer.
    Send(ServerMsg),
    /// Send this (if any), then close the connection.
    Close(Option<ServerMsg>),
}

/// Why the writer stopped early.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("the client took nothing for {} s: disconnected", STALL.as_secs())]
    Stalled,
    #[error("the client went away: {0}")]
    Gone(#[from] std::io::Error),
}

/// Where a writer sends.
struct Out<W> {
    w: W,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    async fn bytes(&mut self, data: &[u8]) -> Result<(), WriteError> {
        let write = async {
            self.w.write_all(data).await?;
            self.w.flush().await
        };
        match tokio::time::timeout(STALL, write).await {
            Ok(r) => r.map_err(WriteError::Gone),
            Err(_) => Err(WriteError::Stalled),
        }
    }

    async fn msg(&mut self, msg: &ServerMsg) -> Result<(), WriteError> {
        self.bytes(message_line(msg).as_bytes()).await
    }

    /// Send the journal after `cursor` (one batch); returns the new cursor.
    async fn batch(&mut self, hub: &Hub, cursor: u64) -> Result<u64, WriteError> {
        let batch = hub.journal().read_after(cursor, BATCH_LINES, BATCH_BYTES);
        let mut buf = String::new();
        for line in &batch.lines {
            buf.push_str(line.as_str());
        }
        if !buf.is_empty() {
            self.bytes(buf.as_bytes()).await?;
        }
        Ok(batch.upto)
    }
}

/// Run one client's writer until the connection ends.
pub async fn run<W: AsyncWrite + Unpin>(
    hub: Arc<Hub>,
    w: W,
    mut ctl: mpsc::Receiver<Ctl>,
    role: Role,
    last_seq: u64,
) -> Result<(), WriteError> {
    let mut out = Out { w };
    let mut closing = hub.closing();
    if role == Role::Control {
        return control(&mut out, &mut ctl, &mut closing).await;
    }
    let mut newest = hub.newest();
    let target = *newest.borrow_and_update();
    // A cursor from another agent process (newer than anything here):
    // everything is new to it.
    let mut cursor = if last_seq > target { 0 } else { last_seq };
    while cursor < target {
        cursor = out.batch(&hub, cursor).await?;
    }
    out.msg(&ServerMsg::Live { seq: cursor }).await?;
    let mut mirror = hub.mirror();
    if let Some(m) = &mut mirror {
        let text = m.borrow_and_update().clone();
        if !text.is_empty() {
            out.msg(&ServerMsg::Mirror { text }).await?;
        }
    }
    loop {
        if cursor < *newest.borrow_and_update() {
            while let Ok(c) = ctl.try_recv() {
                if !answer(&mut out, c).await? {
                    return Ok(());
                }
            }
            cursor = out.batch(&hub, cursor).await?;
            continue;
        }
        let bye = closing.borrow_and_update().clone();
        if let Some(reason) = bye {
            return out.msg(&ServerMsg::Bye { reason }).await;
        }
        tokio::select! {
            c = ctl.recv() => match c {
                Some(c) => if !answer(&mut out, c).await? { return Ok(()) },
                None => return Ok(()),
            },
            _ = newest.changed() => {}
            _ = closing.changed() => {}
            text = mirror_changed(&mut mirror) => {
                out.msg(&ServerMsg::Mirror { text }).await?;
            }
        }
    }
}

/// A control client's writer: answers and the final `Bye`.
async fn control<W: AsyncWrite + Unpin>(
    out: &mut Out<W>,
    ctl: &mut mpsc::Receiver<Ctl>,
    closing: &mut watch::Receiver<Option<String>>,
) -> Result<(), WriteError> {
    loop {
        let bye = closing.borrow_and_update().clone();
        if let Some(reason) = bye {
            return out.msg(&ServerMsg::Bye { reason }).await;
        }
        tokio::select! {
            c = ctl.recv() => match c {
                Some(c) => if !answer(out, c).await? { return Ok(()) },
                None => return Ok(()),
            },
            _ = closing.changed() => {}
        }
    }
}

/// Carry out one request of the reading half; false: close now.
async fn answer<W: AsyncWrite + Unpin>(out: &mut Out<W>, c: Ctl) -> Result<bool, WriteError> {
    match c {
        Ctl::Send(m) => out.msg(&m).await.map(|()| true),
        Ctl::Close(Some(m)) => out.msg(&m).await.map(|()| false),
        Ctl::Close(None) => Ok(false),
    }
}

/// The mirror's next capture (never, when there is no mirror or it ended).
async fn mirror_changed(mirror: &mut Option<watch::Receiver<String>>) -> String {
    if let Some(m) = mirror {
        if m.changed().await.is_ok() {
            return m.borrow_and_update().clone();
        }
        *mirror = None;
    }
    std::future::pending().await
}

#[cfg(test)]
mod tests;
