//! A tmux control-mode client (`tmux -C attach`) over a transport's pipes.
//!
//! It is vigil's fast line to the tmux server: commands are written to its
//! stdin and answered in `%begin`/`%end` blocks (no process per command),
//! and `%output` notifications report every byte a pane writes as it
//! happens, which is how completion markers and mirror updates are noticed
//! without polling. It must never block the caller on a dead server: when
//! the client exits, every waiting command fails and subscribers see
//! [`Event::Closed`].

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use super::script::decode_output;
use crate::exec::ExecError;

/// A notification from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Bytes a pane wrote (decoded).
    Output { pane: String, data: Vec<u8> },
    /// Windows or panes changed (a pane may have been killed).
    Changed,
    /// The client is gone (server killed, session destroyed).
    Closed,
}

type Reply = oneshot::Sender<Result<Vec<String>, String>>;

#[derive(Default)]
struct Shared {
    /// Waiting commands in the order they were written; `None`: nobody waits.
    pending: VecDeque<Option<Reply>>,
    subscribers: Vec<mpsc::UnboundedSender<Event>>,
    closed: bool,
}

/// One control-mode client attached to one session.
pub struct Control {
    lines: mpsc::UnboundedSender<Vec<u8>>,
    shared: Arc<Mutex<Shared>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Control {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Control {
    /// Start `cmd` (which must exec `tmux … -C attach -t …`) and serve it.
    /// `changes` is bumped on every `%output`.
    pub async fn start(
        mut cmd: tokio::process::Command,
        changes: watch::Sender<u64>,
    ) -> Result<Arc<Control>, ExecError> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| ExecError::Spawn {
            program: "tmux -C".into(),
            message: e.to_string(),
        })?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ExecError::Failed("tmux control client has no pipes".into()));
        };
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();

        let writer = tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                if stdin.write_all(&line).await.is_err() {
                    break;
                }
                // Write everything already queued before flushing.
                while let Ok(more) = rx.try_recv() {
                    if stdin.write_all(&more).await.is_err() {
                        return;
                    }
                }
                if stdin.flush().await.is_err() {
                    break;
                }
            }
        });

        let sh = shared.clone();
        let reader = tokio::spawn(async move {
            let mut child = child;
            read_loop(stdout, &sh, &changes).await;
            let _ = child.start_kill();
            let _ = child.wait().await;
            let mut s = lock(&sh);
            s.closed = true;
            for r in s.pending.drain(..).flatten() {
                let _ = r.send(Err("the tmux server or session went away".into()));
            }
            for sub in s.subscribers.drain(..) {
                let _ = sub.send(Event::Closed);
            }
        });

        Ok(Arc::new(Control {
            lines: tx,
            shared,
            tasks: vec![writer, reader],
        }))
    }

    pub fn is_closed(&self) -> bool {
        lock(&self.shared).closed
    }

    /// Queue one tmux command line; the receiver gets its output lines or
    /// its error text.
    fn queue(
        &self,
        line: &str,
        want: bool,
    ) -> Option<oneshot::Receiver<Result<Vec<String>, String>>> {
        let mut s = lock(&self.shared);
        if s.closed {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        if self.lines.send(bytes).is_err() {
            return None;
        }
        s.pending.push_back(if want { Some(tx) } else { None });
        Some(rx)
    }

    /// Run one tmux command (no `;` chains) and return its output lines.
    pub async fn cmd(&self, line: &str) -> Result<Vec<String>, ExecError> {
        let rx = self.queue(line, true).ok_or_else(gone)?;
        match rx.await {
            Ok(Ok(lines)) => Ok(lines),
            Ok(Err(e)) => Err(ExecError::Failed(e)),
            Err(_) => Err(gone()),
        }
    }

    /// Run several commands in one write and collect every answer in order.
    pub async fn batch(&self, lines: &[String]) -> Vec<Result<Vec<String>, ExecError>> {
        let rxs: Vec<_> = lines.iter().map(|l| self.queue(l, true)).collect();
        let mut out = Vec::with_capacity(rxs.len());
        for rx in rxs {
            out.push(match rx {
                None => Err(gone()),
                Some(rx) => match rx.await {
                    Ok(Ok(l)) => Ok(l),
                    Ok(Err(e)) => Err(ExecError::Failed(e)),
                    Err(_) => Err(gone()),
                },
            });
        }
        out
    }

    /// Send a command without waiting (usable from `Drop`).
    pub fn fire(&self, line: &str) {
        let _ = self.queue(line, false);
    }

    /// Receive every event from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut s = lock(&self.shared);
        if s.closed {
            let _ = tx.send(Event::Closed);
        } else {
            s.subscribers.push(tx);
        }
        rx
    }
}

fn gone() -> ExecError {
    ExecError::Failed("the tmux server or session went away".into())
}

fn broadcast(shared: &Mutex<Shared>, ev: Event) {
    let mut s = lock(shared);
    s.subscribers.retain(|sub| sub.send(ev.clone()).is_ok());
}

async fn read_loop(
    stdout: tokio::process::ChildStdout,
    shared: &Mutex<Shared>,
    changes: &watch::Sender<u64>,
) {
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    let mut line = Vec::new();
    // The block being read: (tag "time number", from us, lines).
    let mut block: Option<(Vec<u8>, bool, Vec<String>)> = None;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        while line.last() == Some(&b'\n') || line.last() == Some(&b'\r') {
            line.pop();
        }
        if let Some((tag, ours, lines)) = &mut block {
            let end = line.strip_prefix(b"%end ").map(|r| (r, true));
            let err = line.strip_prefix(b"%error ").map(|r| (r, false));
            if let Some((rest, ok)) = end.or(err) {
                if rest.starts_with(tag.as_slice()) {
                    let ours = *ours;
                    let lines = std::mem::take(lines);
                    block = None;
                    if ours {
                        let reply = lock(shared).pending.pop_front().flatten();
                        if let Some(r) = reply {
                            let _ = r.send(if ok { Ok(lines) } else { Err(lines.join("\n")) });
                        }
                    }
                    continue;
                }
            }
            lines.push(String::from_utf8_lossy(&line).into_owned());
            continue;
        }
        if let Some(rest) = line.strip_prefix(b"%begin ") {
            // "%begin TIME NUMBER FLAGS": flags bit 0 = sent by this client.
            let parts: Vec<&[u8]> = rest.split(|&b| b == b' ').collect();
            let ours = parts
                .get(2)
                .and_then(|f| std::str::from_utf8(f).ok())
                .and_then(|f| f.parse::<u32>().ok())
                .is_some_and(|f| f & 1 == 1);
            let tag_len = parts.iter().take(2).map(|p| p.len()).sum::<usize>() + 2;
            let tag = rest[..tag_len.min(rest.len())].to_vec();
            block = Some((tag, ours, Vec::new()));
        } else if let Some(rest) = line.strip_prefix(b"%output ") {
            let (pane, data) = match rest.iter().position(|&b| b == b' ') {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &b""[..]),
            };
            let ev = Event::Output {
                pane: String::from_utf8_lossy(pane).into_owned(),
                data: decode_output(data),
            };
            broadcast(shared, ev);
            changes.send_modify(|n| *n = n.wrapping_add(1));
        } else if line.starts_with(b"%window-close")
            || line.starts_with(b"%unlinked-window-close")
            || line.starts_with(b"%layout-change")
            || line.starts_with(b"%window-pane-changed")
            || line.starts_with(b"%session-window-changed")
            || line.starts_with(b"%sessions-changed")
        {
            broadcast(shared, Event::Changed);
            changes.send_modify(|n| *n = n.wrapping_add(1));
        } else if line.starts_with(b"%exit") {
            return;
        }
    }
}
