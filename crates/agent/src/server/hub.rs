//! What every connection of one agent process shares: the journal and the
//! newest seq (which wakes the writers), the attached clients, who answered
//! which approval, the agent's live state, and the stop and close signals.
//!
//! [`pump`] is the one task that moves the agent's events into the journal,
//! stamping `answered_by` on the way. Nothing here touches a socket.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, watch};

use super::journal::Journal;
use crate::approval::ApprovalBroker;
use crate::record::answers::AnswerBook;
use vigil_protocol::wire::{AgentInfo, AgentState, ConsoleTag, Peer, Role};
use vigil_protocol::{AgentCommand, AgentEvent, Answerer, MirrorTarget, OnExit};

/// What the agent process is, fixed once its session started.
#[derive(Debug, Clone, Default)]
pub struct Identity {
    /// The agent has announced its session (`SessionStarted` journaled).
    pub session_started: bool,
    pub id: String,
    pub model: String,
    pub target: String,
    pub demo: bool,
    pub mirror: Option<MirrorTarget>,
    pub socket: PathBuf,
    pub started_ms: u64,
    /// What stopping leaves behind (remote managed tmux sessions): the
    /// console that stops the agent asks keep or remove first.
    pub leaves_behind: Option<String>,
}

/// Why and how the agent is asked to stop.
#[derive(Debug, Clone, PartialEq)]
pub struct StopRequest {
    pub on_exit: OnExit,
    /// Who asked, in words (for the log and the `Bye`).
    pub by: String,
}

/// The shared state of one agent process's server.
pub struct Hub {
    journal: Mutex<Journal>,
    newest: watch::Sender<u64>,
    identity: Mutex<Identity>,
    clients: Mutex<Vec<(ConsoleTag, Role)>>,
    next_console: AtomicU32,
    answers: Arc<AnswerBook>,
    working: AtomicBool,
    broker: Arc<ApprovalBroker>,
    commands: mpsc::UnboundedSender<AgentCommand>,
    mirror: Option<watch::Receiver<String>>,
    stop: watch::Sender<Option<StopRequest>>,
    closing: watch::Sender<Option<String>>,
    conns: watch::Sender<usize>,
}

/// Lock a mutex, recovering the data if a holder panicked.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Unix milliseconds now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Hub {
    pub fn new(
        identity: Identity,
        journal: Journal,
        broker: Arc<ApprovalBroker>,
        commands: mpsc::UnboundedSender<AgentCommand>,
        mirror: Option<watch::Receiver<String>>,
        answers: Arc<AnswerBook>,
    ) -> Arc<Hub> {
        Arc::new(Hub {
            newest: watch::Sender::new(journal.newest()),
            journal: Mutex::new(journal),
            identity: Mutex::new(identity),
            clients: Mutex::new(Vec::new()),
            next_console: AtomicU32::new(1),
            answers,
            working: AtomicBool::new(false),
            broker,
            commands,
            mirror,
            stop: watch::Sender::new(None),
            closing: watch::Sender::new(None),
            conns: watch::Sender::new(0),
        })
    }

    pub fn journal(&self) -> MutexGuard<'_, Journal> {
        lock(&self.journal)
    }

    /// Wakes when the journal grows.
    pub fn newest(&self) -> watch::Receiver<u64> {
        self.newest.subscribe()
    }

    pub fn mirror(&self) -> Option<watch::Receiver<String>> {
        self.mirror.clone()
    }

    pub fn set_identity(&self, f: impl FnOnce(&mut Identity)) {
        f(&mut lock(&self.identity));
    }

    pub fn identity(&self) -> Identity {
        lock(&self.identity).clone()
    }

    /// The agent as `vigil ps` and a `Welcome` show it.
    pub fn info(&self) -> AgentInfo {
        let id = self.identity();
        let pending = self.broker.pending_ids().len();
        let state = if pending > 0 {
            AgentState::Waiting
        } else if self.working.load(Ordering::SeqCst) {
            AgentState::Working
        } else {
            AgentState::Idle
        };
        let consoles = lock(&self.clients)
            .iter()
            .filter(|(_, r)| matches!(r, Role::Console | Role::Watch))
            .count();
        AgentInfo {
            id: id.id,
            pid: std::process::id(),
            model: id.model,
            target: id.target,
            demo: id.demo,
            state,
            pending_approvals: pending,
            consoles,
            started_ms: id.started_ms,
            socket: id.socket,
            mirror: id.mirror,
            policy: Some(self.broker.policy_choice()),
            leaves_behind: id.leaves_behind,
        }
    }

    /// Register a client; consoles and watchers are numbered 1, 2, 3…,
    /// control clients are 0. `peer` is who the kernel says connected;
    /// `name` only what the client says it is.
    pub fn join(&self, role: Role, name: &str, peer: Option<Peer>) -> ConsoleTag {
        let id = match role {
            Role::Control => 0,
            _ => self.next_console.fetch_add(1, Ordering::SeqCst),
        };
        let tag = ConsoleTag {
            id,
            name: name.chars().take(200).collect(),
            peer,
        };
        lock(&self.clients).push((tag.clone(), role));
        tag
    }

    pub fn leave(&self, tag: &ConsoleTag, role: Role) {
        let mut clients = lock(&self.clients);
        if let Some(i) = clients.iter().position(|(t, r)| t == tag && *r == role) {
            clients.remove(i);
        }
    }

    /// Hand a console's command to the agent. An approval must carry its
    /// card's token (else it is refused and nothing is noted: the call
    /// keeps waiting for a console that saw the card); the first answer is
    /// remembered with who gave it, a later one refused with who it was
    /// (Err: why, for the client).
    pub fn command(&self, from: &ConsoleTag, command: AgentCommand) -> Result<(), String> {
        match &command {
            AgentCommand::Quit => {
                self.request_stop(OnExit::Unsaid, format!("console {} quit", from.id));
                return Ok(());
            }
            AgentCommand::Approval { id, token, .. } => {
                let id = *id;
                if let Some(first) = self.answers.first(id) {
                    return Err(format!(
                        "approval #{id} was already answered by {}",
                        first.console.describe()
                    ));
                }
                self.broker
                    .check_token(id, token)
                    .map_err(|refused| refused.to_string())?;
                let who = Answerer {
                    console: from.clone(),
                    at_ms: now_ms(),
                };
                if let Err(first) = self.answers.note(id, who) {
                    return Err(format!(
                        "approval #{id} was already answered by {}",
                        first.console.describe()
                    ));
                }
            }
            _ => {}
        }
        self.commands
            .send(command)
            .map_err(|_| "the agent has ended: nothing takes commands".to_string())
    }

    /// Ask the agent to stop (the first request wins).
    pub fn request_stop(&self, on_exit: OnExit, by: String) {
        self.stop.send_if_modified(|s| {
            if s.is_none() {
                *s = Some(StopRequest { on_exit, by });
                true
            } else {
                false
            }
        });
    }

    pub fn stop_requested(&self) -> watch::Receiver<Option<StopRequest>> {
        self.stop.subscribe()
    }

    /// Tell every connection to send what is left, then `Bye{reason}`.
    pub fn close(&self, reason: String) {
        self.closing.send_replace(Some(reason));
    }

    pub fn closing(&self) -> watch::Receiver<Option<String>> {
        self.closing.subscribe()
    }

    /// Count a connection while the guard lives.
    pub fn connection(self: &Arc<Hub>) -> ConnGuard {
        self.conns.send_modify(|n| *n += 1);
        ConnGuard { hub: self.clone() }
    }

    /// Wait until no connection is left, at most `limit`.
    pub async fn connections_gone(&self, limit: std::time::Duration) {
        let mut rx = self.conns.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|n| *n == 0)).await;
    }

    /// Journal one event (answered_by stamped, state tracked).
    pub fn record(&self, mut event: AgentEvent) {
        self.track(&mut event);
        let seq = self.journal().append(event);
        self.newest.send_replace(seq);
    }

    fn track(&self, event: &mut AgentEvent) {
        match event {
            AgentEvent::TurnStarted { .. } | AgentEvent::TurnContinued { .. } => {
                self.working.store(true, Ordering::SeqCst)
            }
            AgentEvent::TurnFinished { .. } => self.working.store(false, Ordering::SeqCst),
            AgentEvent::SessionStarted {
                model,
                target,
                demo,
                mirror,
                ..
            } => self.set_identity(|i| {
                i.model = model.clone();
                i.target = target.clone();
                i.demo = *demo;
                i.mirror = mirror.clone();
                i.session_started = true;
            }),
            AgentEvent::ApprovalResolved { .. } => self.answers.stamp(event),
            _ => {}
        }
    }
}

/// Keeps a connection counted.
pub struct ConnGuard {
    hub: Arc<Hub>,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.hub.conns.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Move the agent's events into the journal until the agent ends.
pub async fn pump(hub: Arc<Hub>, mut events: mpsc::UnboundedReceiver<AgentEvent>) {
    while let Some(event) = events.recv().await {
        hub.record(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Policy;
    use crate::server::journal::Journal;
    use vigil_protocol::wire::ServerMsg;
    use vigil_protocol::{ApprovalDecision, DecidedBy};

    fn resolved(id: u64, decided_by: DecidedBy) -> AgentEvent {
        AgentEvent::ApprovalResolved {
            id,
            decision: ApprovalDecision::ApproveOnce,
            decided_by,
            previewed: false,
            answered_by: None,
        }
    }

    #[test]
    fn the_first_answer_is_stamped_a_later_one_refused_and_a_policy_decision_left_alone() {
        let (tx, _) = mpsc::unbounded_channel();
        let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
        let (cmd_tx, mut commands) = mpsc::unbounded_channel();
        let hub = Hub::new(
            Identity::default(),
            Journal::default(),
            broker.clone(),
            cmd_tx,
            None,
            Default::default(),
        );
        let peer = Peer {
            uid: 1000,
            pid: 4242,
            tty: Some("pts/3".into()),
        };
        let one = hub.join(Role::Console, "one", None);
        let two = hub.join(Role::Console, "two", Some(peer));
        let watch = hub.join(Role::Watch, "w", None);
        let _control = hub.join(Role::Control, "ps", None);
        let _fleet = hub.join(Role::Fleet, "fleet view: pts/9", None);
        assert_eq!((one.id, two.id, watch.id), (1, 2, 3));
        assert_eq!(
            hub.info().consoles,
            3,
            "control clients and fleet views are not consoles"
        );
        let approve = |id, token: &str| AgentCommand::Approval {
            id,
            decision: vigil_protocol::Answer::ApproveOnce,
            token: token.into(),
        };
        broker.desk().wait(vigil_protocol::ApprovalRequest {
            id: 7,
            call_id: "c7".into(),
            tool: "run_shell".into(),
            target: "local".into(),
            gate: vigil_protocol::GateInfo::shell("touch x"),
            estimate: vigil_protocol::Risk::Medium,
            estimate_reason: String::new(),
            automatic: false,
            change: None,
            facts: Default::default(),
            token: "card-token-7".into(),
        });
        // Without the card's token, or with another, nothing is noted and
        // nothing reaches the agent.
        for token in ["", "card-token-8", "card-token-"] {
            let why = hub.command(&one, approve(7, token)).unwrap_err();
            assert!(why.contains("token"), "{why}");
            assert!(commands.try_recv().is_err(), "{token:?} reached the agent");
        }
        let why = hub.command(&one, approve(9, "card-token-7")).unwrap_err();
        assert!(why.contains("not waiting"), "{why}");
        hub.command(&two, approve(7, "card-token-7")).unwrap();
        assert_eq!(commands.try_recv().unwrap(), approve(7, "card-token-7"));
        let why = hub.command(&one, approve(7, "card-token-7")).unwrap_err();
        assert_eq!(
            why,
            "approval #7 was already answered by console 2: uid 1000 pid 4242 on pts/3 (says \"two\")"
        );
        assert!(
            commands.try_recv().is_err(),
            "the late answer never reaches the agent"
        );
        hub.record(resolved(7, DecidedBy::Operator));
        hub.record(resolved(
            8,
            DecidedBy::Policy {
                name: "auto".into(),
            },
        ));
        let lines = hub.journal().read_after(0, 10, usize::MAX).lines;
        let stamped: Vec<Option<Answerer>> = lines
            .iter()
            .map(|l| match serde_json::from_str(l.as_str()).unwrap() {
                ServerMsg::Event {
                    event: AgentEvent::ApprovalResolved { answered_by, .. },
                    ..
                } => answered_by,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(stamped[0].as_ref().map(|a| a.console.id), Some(2));
        assert_eq!(stamped[1], None, "a policy decision names no console");
        // Quit from a console is a stop that keeps remote sessions.
        hub.command(&one, AgentCommand::Quit).unwrap();
        let stop = hub.stop_requested().borrow().clone().unwrap();
        assert_eq!(stop.on_exit, OnExit::Unsaid);
    }
}
