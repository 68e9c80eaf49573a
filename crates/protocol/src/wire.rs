//! The wire protocol: how a console (or any other front end) talks to an
//! agent process over the agent's Unix socket.
//!
//! Each message is one line of JSON (UTF-8, `\n`-terminated, no line longer
//! than [`MAX_LINE`]). The client speaks first with [`ClientMsg::Hello`]; the
//! agent answers [`ServerMsg::Welcome`] (or [`ServerMsg::Refused`] and
//! closes), then replays the events the client has not seen
//! ([`ServerMsg::Event`], numbered by `seq`), marks the end of the replay
//! with [`ServerMsg::Live`], and streams from then on. Events are the
//! [`AgentEvent`] serde forms unchanged; commands are the [`AgentCommand`]
//! forms unchanged. `docs/protocol.md` is the prose version of this file.
//!
//! Data only: nothing here opens a socket, renders or executes.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{AgentCommand, AgentEvent, MirrorTarget, OnExit};

/// The protocol version this build speaks. A peer with another version is
/// refused with a message naming both.
/// Version 2: an `approval` command carries its card's `token`, and a
/// console's tag carries the `peer` the agent found on the socket.
pub const PROTOCOL_VERSION: u32 = 2;

/// The longest line either side accepts (a longer one is a protocol error:
/// the connection is closed with a reason, the agent carries on).
pub const MAX_LINE: usize = 8 * 1024 * 1024;

/// What a client is attached for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A console: sees everything, may send every command.
    Console,
    /// A read-only console (`vigil attach --watch`): sees everything; the
    /// agent refuses every command it sends (approvals, messages, keys).
    Watch,
    /// A one-shot control client (`vigil ps`, `vigil stop`): no event
    /// stream; may ask [`ClientMsg::Status`] and [`ClientMsg::Stop`].
    Control,
    /// Another agent's console watching this agent's queue (the fleet
    /// view): sees everything, may answer approvals and nothing else, and
    /// is not one of this agent's consoles.
    Fleet,
}

/// Client → agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMsg {
    /// The first line a client sends.
    Hello {
        protocol: u32,
        role: Role,
        /// The newest event `seq` the client already has (0: none; the
        /// agent replays everything after it).
        last_seq: u64,
        /// How the other consoles name this one (e.g. `pts/3 on laptop`).
        name: String,
    },
    /// A command for the agent (refused for [`Role::Watch`] and
    /// [`Role::Control`] clients).
    Command { command: AgentCommand },
    /// Ask for the agent's [`AgentInfo`]; answered by [`ServerMsg::Status`].
    Status,
    /// The client leaves; the agent keeps working.
    Detach,
    /// Stop the agent (a console or a control client): what to do with
    /// remote managed sessions, then the agent ends its turn and exits.
    Stop { on_exit: OnExit },
}

/// Agent → client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    /// The answer to a good hello.
    Welcome {
        protocol: u32,
        agent: AgentInfo,
        /// This client's number and name, as the others will see it.
        you: ConsoleTag,
    },
    /// The agent will not talk to this client (version mismatch, a second
    /// hello, a command from a watcher…): why, in words. For a refused
    /// command the connection stays open; for a bad hello it is closed.
    Refused { reason: String },
    /// One event, in order. `seq` starts at 1 and grows by one per event
    /// the agent journals; a replay may skip numbers the journal dropped
    /// (coalesced output), never reorder them.
    Event { seq: u64, event: AgentEvent },
    /// The replay is complete: what follows is live. `seq` is the newest
    /// event replayed (the client's `last_seq` for its next attach).
    Live { seq: u64 },
    /// The managed pane's latest capture (with its colours), sent on
    /// attach and whenever it changes; a slow client gets the newest only.
    Mirror { text: String },
    /// The answer to [`ClientMsg::Status`].
    Status { agent: AgentInfo },
    /// The agent is going away (stopped, or its session ended); the
    /// connection closes after this line.
    Bye { reason: String },
}

/// One attached console, as the others see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleTag {
    /// 1, 2, 3… in the order consoles attached to this agent.
    pub id: u32,
    /// What the client called itself in its hello: a label, never proof.
    pub name: String,
    /// Who the agent found at the other end of the socket (None: a tag
    /// made without a socket, or a peer the kernel would not name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<Peer>,
}

/// The process at the other end of the agent's socket, as the kernel
/// reports it (`SO_PEERCRED`) when it connected: known, not claimed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    pub uid: u32,
    pub pid: u32,
    /// The controlling terminal of that process (`pts/3`, `tty1`), read
    /// from `/proc/PID/stat` when it connected; None: it has none, or it
    /// could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
}

impl ConsoleTag {
    /// How the record and the panes name this console: what the kernel
    /// said first, the client's own name after it as a label —
    /// `console 2: uid 1000 pid 4242 on pts/3 (says "laptop")`.
    pub fn describe(&self) -> String {
        let label = crate::text::sanitize(&self.name);
        match &self.peer {
            Some(p) => format!("console {}: {} (says \"{label}\")", self.id, p.describe()),
            None => format!("console {} (says \"{label}\")", self.id),
        }
    }
}

impl Peer {
    /// `uid 1000 pid 4242 on pts/3`.
    pub fn describe(&self) -> String {
        let tty = self
            .tty
            .as_deref()
            .map(|t| format!(" on {}", crate::text::sanitize(t)))
            .unwrap_or_default();
        format!("uid {} pid {}{tty}", self.uid, self.pid)
    }
}

/// What an agent process is, for `vigil ps`, the fleet view and attach.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// The session id (also the socket's file name).
    pub id: String,
    pub pid: u32,
    pub model: String,
    /// Where its commands run (`local`, `ssh user@host`, `container X`).
    pub target: String,
    pub demo: bool,
    pub state: AgentState,
    /// Calls waiting for an operator's answer.
    pub pending_approvals: usize,
    /// Consoles attached now (watchers included).
    pub consoles: usize,
    /// When the agent process started (Unix milliseconds).
    pub started_ms: u64,
    /// The socket it listens on.
    pub socket: PathBuf,
    /// The managed pane consoles may mirror (None: no managed pane).
    #[serde(default)]
    pub mirror: Option<MirrorTarget>,
    /// What stopping the agent leaves behind (remote managed tmux
    /// sessions), in the operator's words: a console that stops the agent
    /// asks keep or remove first. None: nothing to ask.
    #[serde(default)]
    pub leaves_behind: Option<String>,
    /// The approval policy in force (a console shows it from the start).
    #[serde(default)]
    pub policy: Option<super::ApprovalPolicy>,
}

/// What an agent is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// No turn running.
    Idle,
    /// A turn is running (model or tool).
    Working,
    /// A turn is blocked on at least one approval.
    Waiting,
}

impl AgentState {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Idle => "idle",
            AgentState::Working => "working",
            AgentState::Waiting => "waiting",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_tagged_json_with_events_and_commands_unchanged() {
        let hello = ClientMsg::Hello {
            protocol: PROTOCOL_VERSION,
            role: Role::Watch,
            last_seq: 7,
            name: "pts/3".into(),
        };
        let text = serde_json::to_string(&hello).unwrap();
        assert_eq!(
            text,
            r#"{"type":"hello","protocol":2,"role":"watch","last_seq":7,"name":"pts/3"}"#
        );
        let cmd = ClientMsg::Command {
            command: AgentCommand::Cancel,
        };
        let text = serde_json::to_string(&cmd).unwrap();
        assert_eq!(text, r#"{"type":"command","command":{"type":"cancel"}}"#);
        let ev = ServerMsg::Event {
            seq: 3,
            event: AgentEvent::Notice { text: "hi".into() },
        };
        let text = serde_json::to_string(&ev).unwrap();
        assert_eq!(
            text,
            r#"{"type":"event","seq":3,"event":{"type":"notice","text":"hi"}}"#
        );
        let back: ServerMsg = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ev);
    }
}
