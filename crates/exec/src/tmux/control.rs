//! A tmux control-mode client (`tmux -C attach`) over a transport's pipes.
//!
//! It is vigil's fast line to the tmux server: commands are written to its
//! stdin and answered in `%begin`/`%end` blocks (no process per command),
//! and `%output` notifications report every byte a pane writes as it
//! happens, which is how completion markers and mirror updates are noticed
//! without polling. Nothing is written to a client before its attach has
//! run (see [`Control::start`]). It must never block the caller on a dead server: when
//! the client exits, every waiting command fails and subscribers see
//! [`Event::Closed`] (or the end of their channel).
//!
//! Nothing here queues without bound. tmux's flow control for control
//! clients is on (`refresh-client -f pause-after=…`): a pane whose output
//! this client is too slow to read is paused by the server, resumed at once
//! (its backlog skipped) and reported as [`Event::Lagged`], as is output a
//! subscriber's full channel could not take. Consumers catch up from a
//! capture (the mirror) or from files (a command's exit status), never by
//! replaying every byte.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use super::script::decode_output;
use crate::ExecError;

/// A notification from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Bytes a pane wrote (decoded).
    Output { pane: String, data: Vec<u8> },
    /// Windows or panes changed (a pane may have been killed).
    Changed,
    /// Some output was not delivered (a paused pane, a full channel):
    /// markers in it may be lost.
    Lagged,
    /// The client is gone (server killed, session destroyed).
    Closed,
}

type Reply = oneshot::Sender<Result<Vec<String>, String>>;

/// Events a subscriber may have queued; output beyond it is dropped and
/// reported as [`Event::Lagged`].
pub const SUBSCRIBER_CAPACITY: usize = 256;

/// Seconds of unread output after which tmux pauses a pane for this client.
pub const PAUSE_AFTER_SECS: u32 = 2;

/// Longest a new client may take to attach (a loaded remote target).
const ATTACH_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

struct Subscriber {
    tx: mpsc::Sender<Event>,
    /// Events were dropped; `Lagged` is owed before the next one.
    lagged: bool,
}

impl Subscriber {
    /// Deliver `ev` without waiting; `false`: the receiver is gone.
    fn offer(&mut self, ev: &Event) -> bool {
        use mpsc::error::TrySendError;
        if self.lagged {
            match self.tx.try_send(Event::Lagged) {
                Ok(()) => self.lagged = false,
                Err(TrySendError::Full(_)) => return true,
                Err(TrySendError::Closed(_)) => return false,
            }
        }
        match self.tx.try_send(ev.clone()) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.lagged = true;
                true
            }
            Err(TrySendError::Closed(_)) => false,
        }
    }
}

#[derive(Default)]
struct Shared {
    /// Waiting commands in the order they were written; `None`: nobody waits.
    pending: VecDeque<Option<Reply>>,
    subscribers: Vec<Subscriber>,
    closed: bool,
    /// `%pause` notifications seen (panes tmux stopped sending us).
    pauses: u64,
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
        let writer_tx = tx.clone();
        let (attached_tx, mut attached) = watch::channel(false);
        let reader = tokio::spawn(async move {
            let mut child = child;
            read_loop(stdout, &sh, &writer_tx, &changes, &attached_tx).await;
            let _ = child.start_kill();
            let _ = child.wait().await;
            let mut s = lock(&sh);
            s.closed = true;
            for r in s.pending.drain(..).flatten() {
                let _ = r.send(Err("the tmux server or session went away".into()));
            }
            for mut sub in s.subscribers.drain(..) {
                sub.offer(&Event::Closed);
            }
        });

        let control = Arc::new(Control {
            lines: tx,
            shared,
            tasks: vec![writer, reader],
        });
        // Nothing is sent before the attach has run. tmux reads a control
        // client's stdin as soon as the client has identified, so a line
        // written earlier can run before `attach` does; a `save-buffer` run
        // so is written by the client process after the command returned
        // (tmux writes files itself only for attached clients), and a line
        // typed next could source a file still empty.
        match tokio::time::timeout(ATTACH_WAIT, attached.wait_for(|a| *a)).await {
            Ok(Ok(_)) => Ok(control),
            Ok(Err(_)) => Err(ExecError::Failed(
                "the tmux server or session went away".into(),
            )),
            Err(_) => Err(ExecError::Failed(format!(
                "the tmux control client did not attach within {} s",
                ATTACH_WAIT.as_secs()
            ))),
        }
    }

    pub fn is_closed(&self) -> bool {
        lock(&self.shared).closed
    }

    /// How many times tmux paused a pane for this client (each was resumed
    /// at once, its backlog skipped).
    pub fn pauses(&self) -> u64 {
        lock(&self.shared).pauses
    }

    /// Queue one tmux command line; the receiver gets its output lines or
    /// its error text.
    fn queue(
        &self,
        line: &str,
        want: bool,
    ) -> Option<oneshot::Receiver<Result<Vec<String>, String>>> {
        queue(&self.shared, &self.lines, line, want)
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

    /// Receive every event from now on (what does not fit in
    /// [`SUBSCRIBER_CAPACITY`] becomes one [`Event::Lagged`]).
    pub fn subscribe(&self) -> mpsc::Receiver<Event> {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_CAPACITY);
        let mut s = lock(&self.shared);
        if s.closed {
            let _ = tx.try_send(Event::Closed);
        } else {
            s.subscribers.push(Subscriber { tx, lagged: false });
        }
        rx
    }
}

/// Write one command line in order with its (possible) waiter.
fn queue(
    shared: &Mutex<Shared>,
    lines: &mpsc::UnboundedSender<Vec<u8>>,
    line: &str,
    want: bool,
) -> Option<oneshot::Receiver<Result<Vec<String>, String>>> {
    let mut s = lock(shared);
    if s.closed {
        return None;
    }
    let (tx, rx) = oneshot::channel();
    let mut bytes = line.as_bytes().to_vec();
    bytes.push(b'\n');
    if lines.send(bytes).is_err() {
        return None;
    }
    s.pending.push_back(if want { Some(tx) } else { None });
    Some(rx)
}

fn gone() -> ExecError {
    ExecError::Failed("the tmux server or session went away".into())
}

fn broadcast(shared: &Mutex<Shared>, ev: Event) {
    let mut s = lock(shared);
    s.subscribers.retain_mut(|sub| sub.offer(&ev));
}

/// The pane and the payload of `%output %ID DATA` or
/// `%extended-output %ID AGE … : DATA` (the form flow control uses).
fn output_line(line: &[u8]) -> Option<(&[u8], &[u8])> {
    if let Some(rest) = line.strip_prefix(b"%output ") {
        return Some(match rest.iter().position(|&b| b == b' ') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &b""[..]),
        });
    }
    let rest = line.strip_prefix(b"%extended-output ")?;
    let i = rest.iter().position(|&b| b == b' ')?;
    let (pane, after) = (&rest[..i], &rest[i..]);
    let data = match after.windows(3).position(|w| w == b" : ") {
        Some(j) => &after[j + 3..],
        // An empty payload ends in " :".
        None => &b""[..],
    };
    Some((pane, data))
}

async fn read_loop(
    stdout: tokio::process::ChildStdout,
    shared: &Mutex<Shared>,
    lines_tx: &mpsc::UnboundedSender<Vec<u8>>,
    changes: &watch::Sender<u64>,
    attached: &watch::Sender<bool>,
) {
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    let mut line = Vec::new();
    // The block being read: (tag "time number", from us, lines).
    let mut block: Option<(Vec<u8>, bool, Vec<String>)> = None;
    let mut flow_control = false;
    loop {
        line.clear();
        if line.capacity() > 1 << 20 {
            // One huge line must not stay resident.
            line = Vec::new();
        }
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
                    if !ours && !flow_control {
                        // The attach's own block: the client exists now, so
                        // flow control can be asked for (tmux ≥ 3.2; older
                        // servers answer with an error nobody waits for).
                        flow_control = true;
                        if ok {
                            let _ = attached.send(true);
                        }
                        let flags = format!("refresh-client -f pause-after={PAUSE_AFTER_SECS}");
                        queue(shared, lines_tx, &flags, false);
                    }
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
        } else if let Some(pane) = line.strip_prefix(b"%pause ") {
            // Skip the backlog: resume at once; consumers catch up from a
            // capture or from files.
            let pane = String::from_utf8_lossy(pane).into_owned();
            lock(shared).pauses += 1;
            queue(
                shared,
                lines_tx,
                &format!("refresh-client -A '{pane}:continue'"),
                false,
            );
            broadcast(shared, Event::Lagged);
            changes.send_modify(|n| *n = n.wrapping_add(1));
        } else if let Some((pane, data)) = output_line(&line) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `tmux -C attach` that takes a second to attach: it
    /// notes whether a line had reached its stdin before its attach block,
    /// then answers every line with a block of its own holding that line.
    fn slow_attach(verdict: &std::path::Path) -> tokio::process::Command {
        let script = format!(
            "sleep 1; if read -t 0; then echo early; else echo after; fi >{v}; \
             printf '%%begin 1 1 0\\n%%end 1 1 0\\n'; n=1; \
             while IFS= read -r l; do n=$((n + 1)); \
             printf '%%begin %s %s 1\\n%s\\n%%end %s %s 1\\n' $n $n \"$l\" $n $n; done",
            v = verdict.display()
        );
        let mut c = tokio::process::Command::new("bash");
        c.arg("-c").arg(script);
        c
    }

    #[tokio::test]
    async fn nothing_is_sent_before_the_attach_has_run() {
        let dir = tempfile::tempdir().unwrap();
        let verdict = dir.path().join("verdict");
        let (changes, _) = watch::channel(0);
        let control = Control::start(slow_attach(&verdict), changes)
            .await
            .expect("attaches");
        let answer = control.cmd("display -p ok").await.unwrap();
        assert_eq!(answer, ["display -p ok"]);
        let said = std::fs::read_to_string(&verdict).unwrap();
        assert_eq!(said.trim(), "after", "a line arrived before the attach");
    }

    #[tokio::test]
    async fn a_client_that_ends_before_attaching_is_an_error() {
        let (changes, _) = watch::channel(0);
        let c = crate::test_support::sh("printf '%%begin 1 1 0\\n%%error 1 1 0\\n'");
        let err = Control::start(c, changes).await.err().expect("an error");
        assert!(err.to_string().contains("went away"), "{err}");
    }
}
