//! The console's side of a welcomed connection: the agent's lines become
//! what `console::run` reads (events on an unbounded channel, the managed
//! pane's captures on a watch channel), and the console's commands become
//! `Command` lines. When the operator leaves, [`BridgeHandle::leave`] says
//! `Detach` or `Stop` and waits for the agent's `Bye`.
//!
//! A connection lost mid-session is told to the console as one error event
//! (what happened and how to come back); then the event channel closes and
//! the console stays readable. A line the client cannot read is told the
//! same way and skipped. The console never touches the socket, and this
//! module never renders and never panics on what the agent sends.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::Leaving;
use super::attach::{Connection, Link, STOP_WAIT, clip};
use vigil_protocol::lines::read_line;
use vigil_protocol::wire::{ClientMsg, ServerMsg};
use vigil_protocol::{AgentCommand, AgentEvent};

/// How long the last line (`Detach`, `Stop`) may take to go out.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

/// What the console needs, and the handle to leave with.
pub struct Bridge {
    pub events: UnboundedReceiver<AgentEvent>,
    pub commands: UnboundedSender<AgentCommand>,
    /// The managed pane's captures (None: the agent has no managed pane).
    pub mirror: Option<watch::Receiver<String>>,
    pub handle: BridgeHandle,
}

/// The running bridge's tasks.
pub struct BridgeHandle {
    out: UnboundedSender<ClientMsg>,
    forward: JoinHandle<()>,
    writer: JoinHandle<()>,
    reader: JoinHandle<End>,
}

/// How the agent's side of the connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The agent said goodbye, with its reason.
    Bye(String),
    /// The connection broke (or closed without a goodbye): why.
    Lost(String),
}

/// Start pumping `conn` for a console.
pub fn start(conn: Connection) -> Bridge {
    let Connection { info, link, .. } = conn;
    let Link {
        socket: _,
        reader,
        writer,
    } = link;
    let (event_tx, events) = mpsc::unbounded_channel();
    let (commands, command_rx) = mpsc::unbounded_channel();
    let (out, out_rx) = mpsc::unbounded_channel();
    let (mirror_tx, mirror_rx) = watch::channel(String::new());
    let mirror = info.mirror.is_some().then_some(mirror_rx);
    let id = info.id.clone();
    let reader = tokio::spawn(read_loop(reader, event_tx, mirror_tx, id));
    let writer = tokio::spawn(write_loop(writer, out_rx));
    let forward = tokio::spawn(forward(command_rx, out.clone()));
    Bridge {
        events,
        commands,
        mirror,
        handle: BridgeHandle {
            out,
            forward,
            writer,
            reader,
        },
    }
}

impl BridgeHandle {
    /// Leave as the operator chose: detach (the agent keeps working), or
    /// stop it and wait for its goodbye. Returns what to tell the operator.
    pub async fn leave(self, how: Leaving) -> Option<String> {
        self.forward.abort();
        let last = match how {
            Leaving::Detach | Leaving::Switch(_) | Leaving::AgentGone => ClientMsg::Detach,
            Leaving::Stop(on_exit) => ClientMsg::Stop { on_exit },
        };
        let _ = self.out.send(last);
        let _ = tokio::time::timeout(FLUSH_WAIT, self.writer).await;
        if !matches!(how, Leaving::Stop(_)) {
            self.reader.abort();
            return None;
        }
        match tokio::time::timeout(STOP_WAIT, self.reader).await {
            Ok(Ok(End::Bye(reason))) => Some(format!("agent stopped: {reason}")),
            Ok(Ok(End::Lost(why))) => Some(format!("the agent's connection ended: {why}")),
            Ok(Err(_)) => None,
            Err(_) => Some(format!(
                "the agent did not confirm it stopped within {} s (`vigil ps` shows whether it runs)",
                STOP_WAIT.as_secs()
            )),
        }
    }
}

/// The console's commands as `Command` lines. `Quit` is not forwarded:
/// leaving is said by [`BridgeHandle::leave`].
async fn forward(mut commands: UnboundedReceiver<AgentCommand>, out: UnboundedSender<ClientMsg>) {
    while let Some(command) = commands.recv().await {
        if command != AgentCommand::Quit && out.send(ClientMsg::Command { command }).is_err() {
            return;
        }
    }
}

/// Write each message as a line; the last is `Detach` or `Stop`.
async fn write_loop(mut writer: OwnedWriteHalf, mut out: UnboundedReceiver<ClientMsg>) {
    while let Some(msg) = out.recv().await {
        let last = matches!(msg, ClientMsg::Detach | ClientMsg::Stop { .. });
        let Ok(mut line) = serde_json::to_string(&msg) else {
            continue;
        };
        line.push('\n');
        if writer.write_all(line.as_bytes()).await.is_err() || writer.flush().await.is_err() {
            return;
        }
        if last {
            return;
        }
    }
}

/// The agent's lines, until it says goodbye or the connection ends.
async fn read_loop<R: tokio::io::AsyncBufRead + Unpin>(
    mut reader: R,
    events: UnboundedSender<AgentEvent>,
    mirror: watch::Sender<String>,
    id: String,
) -> End {
    let end = loop {
        let text = match read_line(&mut reader).await {
            Ok(Some(text)) => text,
            Ok(None) => break End::Lost("the agent closed the connection".into()),
            Err(e) => break End::Lost(e.to_string()),
        };
        let msg = match serde_json::from_str::<ServerMsg>(&text) {
            Ok(msg) => msg,
            Err(e) => {
                let message = format!(
                    "skipped a line from the agent that is not the protocol ({e}): {}",
                    clip(&text)
                );
                let _ = events.send(AgentEvent::Error { message });
                continue;
            }
        };
        match msg {
            ServerMsg::Event { event, .. } => {
                let _ = events.send(event);
            }
            ServerMsg::Mirror { text } => {
                mirror.send_replace(text);
            }
            ServerMsg::Refused { reason } => {
                let message = format!("the agent refused: {reason}");
                let _ = events.send(AgentEvent::Error { message });
            }
            ServerMsg::Bye { reason } => break End::Bye(reason),
            ServerMsg::Welcome { .. } | ServerMsg::Live { .. } | ServerMsg::Status { .. } => {}
        }
    };
    let message = match &end {
        End::Bye(reason) => format!("the agent is gone: {reason}"),
        End::Lost(why) => format!(
            "agent connection lost ({why}). What is shown stays as it was; \
             `vigil attach {id}` reconnects if the agent still runs (`vigil ps`)"
        ),
    };
    let _ = events.send(AgentEvent::Error { message });
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    fn line(msg: &ServerMsg) -> String {
        serde_json::to_string(msg).unwrap() + "\n"
    }

    async fn pump(input: String) -> (End, Vec<AgentEvent>, String) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (mtx, mrx) = watch::channel(String::new());
        let reader = BufReader::new(std::io::Cursor::new(input.into_bytes()));
        let end = read_loop(reader, tx, mtx, "s1".into()).await;
        let mut events = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            events.push(ev);
        }
        let shown = mrx.borrow().clone();
        (end, events, shown)
    }

    #[tokio::test]
    async fn events_and_mirror_pass_and_bye_ends() {
        let input = [
            line(&ServerMsg::Event {
                seq: 1,
                event: AgentEvent::Notice { text: "one".into() },
            }),
            line(&ServerMsg::Live { seq: 1 }),
            line(&ServerMsg::Mirror {
                text: "$ ls".into(),
            }),
            line(&ServerMsg::Bye {
                reason: "stopped by console 2".into(),
            }),
            line(&ServerMsg::Event {
                seq: 2,
                event: AgentEvent::Notice {
                    text: "after bye".into(),
                },
            }),
        ]
        .concat();
        let (end, events, mirror) = pump(input).await;
        assert_eq!(end, End::Bye("stopped by console 2".into()));
        assert_eq!(mirror, "$ ls");
        assert_eq!(events[0], AgentEvent::Notice { text: "one".into() });
        assert_eq!(events.len(), 2, "{events:?}");
    }

    #[tokio::test]
    async fn garbage_is_told_and_skipped_and_a_lost_connection_says_how_to_return() {
        let input = [
            "this is not json\n".to_string(),
            line(&ServerMsg::Event {
                seq: 1,
                event: AgentEvent::Notice {
                    text: "kept".into(),
                },
            }),
        ]
        .concat();
        let (end, events, _) = pump(input).await;
        assert!(matches!(end, End::Lost(_)));
        let texts: Vec<String> = events.iter().map(|e| format!("{e:?}")).collect();
        assert!(texts[0].contains("not the protocol"), "{texts:?}");
        assert_eq!(
            events[1],
            AgentEvent::Notice {
                text: "kept".into()
            }
        );
        assert!(texts[2].contains("agent connection lost"), "{texts:?}");
        assert!(texts[2].contains("vigil attach s1"), "{texts:?}");
    }
}
