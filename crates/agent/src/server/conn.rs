//! One client connection: the hello (version and role checked), the
//! `Welcome`, then every line the client sends — commands (only from a
//! console: watchers and control clients are refused here, whatever their
//! front end lets them type), status, detach, stop. The outgoing half runs
//! in [`super::writer`].
//!
//! A bad line (not JSON, not a message, too long, a second hello) gets
//! `Refused{reason}` and this connection is closed; the agent and the
//! other clients carry on. It never panics and never blocks the agent.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWrite, BufReader};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::hub::Hub;
use super::writer::{self, Ctl};
use vigil_protocol::AgentCommand;
use vigil_protocol::lines::{self, LineError};
use vigil_protocol::wire::{ClientMsg, ConsoleTag, PROTOCOL_VERSION, Role, ServerMsg};

/// How long a new connection may take to say hello.
pub const HELLO_WAIT: Duration = Duration::from_secs(10);

/// What a hello asked for.
struct Hello {
    role: Role,
    last_seq: u64,
    name: String,
}

/// Serve one connection until it ends.
pub async fn serve(hub: Arc<Hub>, stream: UnixStream) {
    let _counted = hub.connection();
    // Who is at the other end, as the kernel says: what names this
    // console in the record, beside the name it gives itself.
    let peer = super::listener::peer_of(&stream);
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let hello = match tokio::time::timeout(HELLO_WAIT, lines::read_line(&mut rd)).await {
        Ok(line) => check_hello(line),
        Err(_) => Err(format!("no hello within {} s", HELLO_WAIT.as_secs())),
    };
    let hello = match hello {
        Ok(h) if hub.closing().borrow().is_none() => h,
        Ok(_) => return refuse(&mut wr, "the agent is stopping".into()).await,
        Err(reason) => return refuse(&mut wr, reason).await,
    };
    let tag = hub.join(hello.role, &hello.name, peer);
    let _member = Member {
        hub: hub.clone(),
        tag: tag.clone(),
        role: hello.role,
    };
    let welcome = ServerMsg::Welcome {
        protocol: PROTOCOL_VERSION,
        agent: hub.info(),
        you: tag.clone(),
    };
    if send(&mut wr, &welcome).await.is_err() {
        return;
    }
    tracing::info!(
        "client {} ({}) attached as {:?} from seq {}",
        tag.id,
        tag.name,
        hello.role,
        hello.last_seq
    );
    let (ctl_tx, ctl_rx) = mpsc::channel(32);
    let mut writer = tokio::spawn(writer::run(
        hub.clone(),
        wr,
        ctl_rx,
        hello.role,
        hello.last_seq,
    ));
    let mut stopping = false;
    loop {
        tokio::select! {
            ended = &mut writer => {
                if let Ok(Err(e)) = ended {
                    tracing::info!("client {} ({}): {e}", tag.id, tag.name);
                }
                return;
            }
            line = lines::read_line(&mut rd) => {
                let reply = match line {
                    Ok(Some(text)) => handle(&hub, &tag, hello.role, &text),
                    Ok(None) | Err(LineError::Io(_)) if stopping => {
                        // Half-closed after Stop: the Bye still goes out.
                        let _ = tokio::time::timeout(writer::STALL, &mut writer).await;
                        return;
                    }
                    Ok(None) | Err(LineError::Io(_)) => {
                        writer.abort();
                        return;
                    }
                    Err(e) => Reply::Close(Some(refused(format!("{e}: closing this connection")))),
                };
                match reply {
                    Reply::Nothing => {}
                    Reply::Stopping => stopping = true,
                    Reply::Send(m) => {
                        let _ = ctl_tx.send(Ctl::Send(m)).await;
                    }
                    Reply::Close(m) => {
                        let _ = ctl_tx.send(Ctl::Close(m)).await;
                        let _ = tokio::time::timeout(writer::STALL, &mut writer).await;
                        return;
                    }
                }
            }
        }
    }
}

/// Unregisters a client when its connection ends.
struct Member {
    hub: Arc<Hub>,
    tag: ConsoleTag,
    role: Role,
}

impl Drop for Member {
    fn drop(&mut self) {
        self.hub.leave(&self.tag, self.role);
    }
}

enum Reply {
    Nothing,
    /// The client asked the agent to stop (its Bye comes with the others).
    Stopping,
    Send(ServerMsg),
    Close(Option<ServerMsg>),
}

fn refused(reason: String) -> ServerMsg {
    ServerMsg::Refused { reason }
}

/// The first line: a hello in this protocol version.
fn check_hello(line: Result<Option<String>, LineError>) -> Result<Hello, String> {
    let text = match line {
        Ok(Some(t)) => t,
        Ok(None) => return Err("the connection closed before a hello".into()),
        Err(e) => return Err(format!("{e} instead of a hello")),
    };
    match serde_json::from_str::<ClientMsg>(&text) {
        Ok(ClientMsg::Hello {
            protocol,
            role,
            last_seq,
            name,
        }) => {
            if protocol != PROTOCOL_VERSION {
                return Err(format!(
                    "protocol version mismatch: this agent speaks version {PROTOCOL_VERSION}, \
                     the client version {protocol} (use the same vigil for both)"
                ));
            }
            Ok(Hello {
                role,
                last_seq,
                name,
            })
        }
        Ok(_) => Err("the first line must be a hello".into()),
        Err(e) => Err(format!("the first line is not a hello: {e}")),
    }
}

/// What one client line asks for.
fn handle(hub: &Hub, tag: &ConsoleTag, role: Role, text: &str) -> Reply {
    let msg = match serde_json::from_str::<ClientMsg>(text) {
        Ok(m) => m,
        Err(e) => return not_understood(text, &e),
    };
    match (msg, role) {
        (ClientMsg::Hello { .. }, _) => Reply::Close(Some(refused(
            "a second hello: a connection says hello once; closing it".into(),
        ))),
        (ClientMsg::Command { command }, Role::Console) => match hub.command(tag, command) {
            Ok(()) => Reply::Nothing,
            Err(reason) => Reply::Send(refused(reason)),
        },
        (ClientMsg::Command { .. }, Role::Watch) => Reply::Send(refused(
            "this console is attached read-only (--watch): the agent refuses its commands".into(),
        )),
        (ClientMsg::Command { command }, Role::Fleet) => match command {
            AgentCommand::Approval { .. } => match hub.command(tag, command) {
                Ok(()) => Reply::Nothing,
                Err(reason) => Reply::Send(refused(reason)),
            },
            _ => Reply::Send(refused(
                "a fleet view only answers approvals: attach to this agent for the rest".into(),
            )),
        },
        (ClientMsg::Command { .. }, Role::Control) => Reply::Send(refused(
            "a control client sends no commands: attach as a console".into(),
        )),
        (ClientMsg::Status, _) => Reply::Send(ServerMsg::Status { agent: hub.info() }),
        (ClientMsg::Detach, _) => Reply::Close(None),
        (ClientMsg::Stop { .. }, Role::Watch) => Reply::Send(refused(
            "this console is attached read-only (--watch): it cannot stop the agent".into(),
        )),
        (ClientMsg::Stop { .. }, Role::Fleet) => Reply::Send(refused(
            "a fleet view cannot stop another agent: attach to it, or `vigil stop ID`".into(),
        )),
        (ClientMsg::Stop { on_exit }, _) => {
            let who = match role {
                Role::Control => "a control client".to_string(),
                _ => tag.describe(),
            };
            hub.request_stop(on_exit, who);
            Reply::Stopping
        }
    }
}

async fn send<W: AsyncWrite + Unpin>(w: &mut W, msg: &ServerMsg) -> std::io::Result<()> {
    match tokio::time::timeout(writer::STALL, lines::write_message(w, msg)).await {
        Ok(r) => r,
        Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
    }
}

/// A line that is not a message this agent reads. A JSON object is a
/// message of this protocol version the agent does not know (a newer
/// client's type, command or field value): it is answered and the
/// connection stays open. Anything else is not the protocol: closed.
fn not_understood(text: &str, error: &serde_json::Error) -> Reply {
    let Ok(serde_json::Value::Object(object)) = serde_json::from_str(text) else {
        return Reply::Close(Some(refused(format!(
            "not a protocol message ({error}): closing this connection"
        ))));
    };
    let kind = object.get("type").and_then(|t| t.as_str()).unwrap_or("");
    let what = if KNOWN_TYPES.contains(&kind) {
        format!("a `{kind}` this agent cannot read ({error})")
    } else {
        format!(
            "an unknown message type `{kind}` (protocol {PROTOCOL_VERSION} knows {})",
            KNOWN_TYPES.join(", ")
        )
    };
    Reply::Send(refused(format!(
        "{what}: ignored; the connection stays open"
    )))
}

/// The client message types of this protocol version.
const KNOWN_TYPES: &[&str] = &["hello", "command", "status", "detach", "stop"];

/// Say why, and close.
pub async fn refuse<W: AsyncWrite + Unpin>(w: &mut W, reason: String) {
    tracing::warn!("connection refused: {reason}");
    let _ = send(w, &refused(reason)).await;
}
