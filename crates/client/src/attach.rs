//! The client end of an agent process's Unix socket: find the socket of a
//! session, connect, say hello, read the welcome, and the one-shot control
//! exchanges (`Status`, `Stop`). Every way this can fail is an
//! [`AttachError`] that tells the operator what to do next (no such agent,
//! an agent that died and left its socket, a refused hello, a connection
//! lost). The console side of a connection is [`super::bridge`].
//!
//! It never starts an agent (that is `vigil::launch::spawn`) and never renders.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use vigil_protocol::OnExit;
use vigil_protocol::lines::{LineError, read_line};
use vigil_protocol::runtime::{self, RuntimeError};
use vigil_protocol::wire::{AgentInfo, ClientMsg, ConsoleTag, PROTOCOL_VERSION, Role, ServerMsg};

/// How long the agent may take to answer a hello or a status request.
pub const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// How long a stopping agent may take to say `Bye` (it may be closing ssh
/// connections and remote sessions first).
pub const STOP_WAIT: Duration = Duration::from_secs(60);

/// Why a client could not talk to an agent.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(
        "no agent is running for session {id} (no socket {socket}); \
         `vigil ps` lists the running agents"
    )]
    NoSuchAgent { id: String, socket: PathBuf },
    #[error(
        "the agent of session {id} is gone: its socket {socket} is left but nobody answers \
         ({source}); `vigil resume {id}` starts it again from its log"
    )]
    Stale {
        id: String,
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot connect to the agent at {socket}: {source}")]
    Connect {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("the agent of session {id} refused this client: {reason}")]
    Refused { id: String, reason: String },
    #[error("the agent at {socket} did not answer within {} s", .waited.as_secs())]
    NoAnswer { socket: PathBuf, waited: Duration },
    #[error("the agent at {socket} closed the connection{}", when_text(.when))]
    Closed { socket: PathBuf, when: String },
    #[error("the agent at {socket} sent a line that is not the protocol: {detail}")]
    Protocol { socket: PathBuf, detail: String },
    #[error("lost the connection to the agent at {socket}: {source}")]
    Lost { socket: PathBuf, source: LineError },
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("no agent is running (`vigil` starts one; `vigil ps` lists them)")]
    NoneRunning,
}

fn when_text(when: &str) -> String {
    if when.is_empty() {
        String::new()
    } else {
        format!(" {when}")
    }
}

/// A connection that has been welcomed.
pub struct Connection {
    /// What the agent said it is in its welcome.
    pub info: AgentInfo,
    /// This client, as the other consoles see it.
    pub you: ConsoleTag,
    pub(crate) link: Link,
}

/// The socket, framed into messages.
pub struct Link {
    pub(crate) socket: PathBuf,
    pub(crate) reader: BufReader<OwnedReadHalf>,
    pub(crate) writer: OwnedWriteHalf,
}

/// The socket of session `id` in the runtime directory.
pub fn socket_of(id: &str) -> Result<PathBuf, AttachError> {
    Ok(runtime::socket_path(&runtime::dir()?, id))
}

/// How other consoles name this one: the terminal and the host
/// (`pts/4 on laptop`), or the process when there is no terminal.
pub fn console_name() -> String {
    let tty = tty_name().unwrap_or_else(|| format!("pid {}", std::process::id()));
    match host_name() {
        Some(host) => format!("{tty} on {host}"),
        None => tty,
    }
}

fn tty_name() -> Option<String> {
    let path = std::fs::read_link("/proc/self/fd/0").ok()?;
    let text = path.to_str()?;
    text.strip_prefix("/dev/")
        .filter(|t| t.starts_with("pts/") || t.starts_with("tty"))
        .map(str::to_string)
}

fn host_name() -> Option<String> {
    let text = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let host = text.trim();
    (!host.is_empty()).then(|| host.to_string())
}

/// Connect to session `id`'s agent at `socket` and say hello as `role`.
pub async fn connect(
    socket: &Path,
    id: &str,
    role: Role,
    name: &str,
) -> Result<Connection, AttachError> {
    let stream = match UnixStream::connect(socket).await {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(AttachError::NoSuchAgent {
                id: id.into(),
                socket: socket.into(),
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Err(AttachError::Stale {
                id: id.into(),
                socket: socket.into(),
                source: e,
            });
        }
        Err(source) => {
            return Err(AttachError::Connect {
                socket: socket.into(),
                source,
            });
        }
    };
    let (read, writer) = stream.into_split();
    let mut link = Link {
        socket: socket.into(),
        reader: BufReader::new(read),
        writer,
    };
    link.send(&ClientMsg::Hello {
        protocol: PROTOCOL_VERSION,
        role,
        last_seq: 0,
        name: name.into(),
    })
    .await?;
    match link.next_within(ANSWER_WAIT, "before its welcome").await? {
        ServerMsg::Welcome { agent, you, .. } => Ok(Connection {
            info: agent,
            you,
            link,
        }),
        ServerMsg::Refused { reason } => Err(AttachError::Refused {
            id: id.into(),
            reason,
        }),
        other => Err(link.protocol(format!("expected a welcome, got {}", kind(&other)))),
    }
}

impl Link {
    /// Send one message as one line.
    pub async fn send(&mut self, msg: &ClientMsg) -> Result<(), AttachError> {
        let mut line = serde_json::to_string(msg).map_err(|e| self.protocol(e.to_string()))?;
        line.push('\n');
        let written = async {
            self.writer.write_all(line.as_bytes()).await?;
            self.writer.flush().await
        };
        written.await.map_err(|e| AttachError::Lost {
            socket: self.socket.clone(),
            source: LineError::Io(e),
        })
    }

    /// The next message (None: the agent closed the connection).
    pub async fn next(&mut self) -> Result<Option<ServerMsg>, AttachError> {
        let line = read_line(&mut self.reader)
            .await
            .map_err(|source| AttachError::Lost {
                socket: self.socket.clone(),
                source,
            })?;
        match line {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| self.protocol(format!("{e}: {}", clip(&text)))),
        }
    }

    /// The next message within `wait`; a closed connection is an error
    /// (`when` says at what point, for the message).
    async fn next_within(&mut self, wait: Duration, when: &str) -> Result<ServerMsg, AttachError> {
        match tokio::time::timeout(wait, self.next()).await {
            Err(_) => Err(AttachError::NoAnswer {
                socket: self.socket.clone(),
                waited: wait,
            }),
            Ok(Ok(Some(msg))) => Ok(msg),
            Ok(Ok(None)) => Err(AttachError::Closed {
                socket: self.socket.clone(),
                when: when.into(),
            }),
            Ok(Err(e)) => Err(e),
        }
    }

    fn protocol(&self, detail: String) -> AttachError {
        AttachError::Protocol {
            socket: self.socket.clone(),
            detail,
        }
    }
}

impl Connection {
    /// Ask the agent what it is now (`vigil ps`).
    pub async fn status(&mut self) -> Result<AgentInfo, AttachError> {
        self.link.send(&ClientMsg::Status).await?;
        loop {
            match self
                .link
                .next_within(ANSWER_WAIT, "before its status")
                .await?
            {
                ServerMsg::Status { agent } => return Ok(agent),
                ServerMsg::Refused { reason } => {
                    return Err(AttachError::Refused {
                        id: self.info.id.clone(),
                        reason,
                    });
                }
                _ => {}
            }
        }
    }

    /// Stop the agent and wait for its `Bye`: its reason, or what is known
    /// when it closed without one.
    pub async fn stop(&mut self, on_exit: OnExit) -> Result<String, AttachError> {
        self.link.send(&ClientMsg::Stop { on_exit }).await?;
        loop {
            match self.link.next_within(STOP_WAIT, "").await {
                Ok(ServerMsg::Bye { reason }) => return Ok(reason),
                Ok(ServerMsg::Refused { reason }) => {
                    return Err(AttachError::Refused {
                        id: self.info.id.clone(),
                        reason,
                    });
                }
                Ok(_) => {}
                Err(AttachError::Closed { .. }) => return Ok("the agent stopped".into()),
                Err(e) => return Err(e),
            }
        }
    }
}

/// The message's type, for an error.
fn kind(msg: &ServerMsg) -> &'static str {
    match msg {
        ServerMsg::Welcome { .. } => "welcome",
        ServerMsg::Refused { .. } => "refused",
        ServerMsg::Event { .. } => "event",
        ServerMsg::Live { .. } => "live",
        ServerMsg::Mirror { .. } => "mirror",
        ServerMsg::Status { .. } => "status",
        ServerMsg::Bye { .. } => "bye",
    }
}

/// A foreign line, cut for an error message.
pub fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncBufReadExt;
    use tokio::net::UnixListener;

    /// A one-connection server: reads the hello, answers `reply` lines.
    fn serve(listener: UnixListener, reply: Vec<String>) -> tokio::task::JoinHandle<String> {
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (read, mut write) = stream.into_split();
            let mut hello = String::new();
            BufReader::new(read).read_line(&mut hello).await.unwrap();
            for line in reply {
                write.write_all(line.as_bytes()).await.unwrap();
            }
            hello
        })
    }

    fn line(msg: &ServerMsg) -> String {
        serde_json::to_string(msg).unwrap() + "\n"
    }

    #[tokio::test]
    async fn a_refused_hello_says_the_agents_reason() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("s1.sock");
        let reason = "protocol 2 is not spoken here (this agent speaks 1)";
        let server = serve(
            UnixListener::bind(&socket).unwrap(),
            vec![line(&ServerMsg::Refused {
                reason: reason.into(),
            })],
        );
        let err = connect(&socket, "s1", Role::Console, "pts/1 on h")
            .await
            .err()
            .unwrap();
        assert!(matches!(err, AttachError::Refused { .. }), "{err}");
        assert!(err.to_string().contains(reason), "{err}");
        let hello: ClientMsg = serde_json::from_str(&server.await.unwrap()).unwrap();
        assert!(matches!(
            hello,
            ClientMsg::Hello { protocol: PROTOCOL_VERSION, role: Role::Console, last_seq: 0, ref name } if name == "pts/1 on h"
        ));
    }

    #[tokio::test]
    async fn no_socket_a_stale_socket_and_garbage_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("s2.sock");
        let err = connect(&socket, "s2", Role::Console, "t")
            .await
            .err()
            .unwrap();
        assert!(matches!(err, AttachError::NoSuchAgent { .. }), "{err}");
        assert!(err.to_string().contains("vigil ps"), "{err}");

        // A socket file nobody listens on: its agent died.
        drop(UnixListener::bind(&socket).unwrap());
        let err = connect(&socket, "s2", Role::Console, "t")
            .await
            .err()
            .unwrap();
        assert!(matches!(err, AttachError::Stale { .. }), "{err}");
        assert!(err.to_string().contains("`vigil resume s2`"), "{err}");
        std::fs::remove_file(&socket).unwrap();

        let server = serve(
            UnixListener::bind(&socket).unwrap(),
            vec!["HTTP/1.1 400 Bad Request\n".into()],
        );
        let err = connect(&socket, "s2", Role::Console, "t")
            .await
            .err()
            .unwrap();
        assert!(matches!(err, AttachError::Protocol { .. }), "{err}");
        assert!(err.to_string().contains("HTTP/1.1 400"), "{err}");
        server.await.unwrap();
    }
}
