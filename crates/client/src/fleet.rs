//! The other agents, for a console: watches the runtime directory, keeps a
//! connection to every live agent and folds what they say into one
//! [`FleetView`] (each agent's status, and the calls the *other* agents
//! wait on) that the console reads from a watch channel. The console's
//! answers to another agent's call ([`FleetAnswer`]) go out as `Command`
//! lines on that agent's connection, so its server stamps who answered.
//!
//! This console's own agent is asked only for its status (a control
//! connection); another agent's connection is a console one, of which only
//! `ApprovalRequested`, `ApprovalResolved` and `Status` are read. It never
//! starts, stops or removes anything, and never renders.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::AsyncWriteExt;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::FleetFeed;
use super::attach::{self, Link};
use vigil_protocol::fleet::{FleetAgent, FleetAnswer, FleetPending, FleetView, label};
use vigil_protocol::lines::read_line;
use vigil_protocol::runtime;
use vigil_protocol::wire::{AgentInfo, ClientMsg, Role, ServerMsg};
use vigil_protocol::{AgentCommand, AgentEvent, ApprovalRequest};

/// How often the runtime directory is looked at for new agents.
const SCAN_EVERY: Duration = Duration::from_secs(1);
/// How often each agent is asked for its status (state, counts).
const STATUS_EVERY: Duration = Duration::from_secs(2);

/// The running fleet client; dropping it closes every connection.
pub struct Fleet {
    pub feed: FleetFeed,
    task: JoinHandle<()>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Start watching the fleet for a console attached to agent `this`.
pub fn start(this: String) -> Fleet {
    let (view_tx, view) = watch::channel(FleetView::default());
    let (answers, answers_rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(manage(this, view_tx, answers_rx));
    Fleet {
        feed: FleetFeed { view, answers },
        task,
    }
}

/// What a watcher reports about its agent.
#[derive(Debug)]
enum Update {
    Joined {
        id: String,
        info: AgentInfo,
        out: UnboundedSender<ClientMsg>,
    },
    Info(String, AgentInfo),
    Asked(String, ApprovalRequest),
    Resolved(String, u64),
    Gone(String),
}

/// One agent as known here.
struct Watched {
    info: AgentInfo,
    pending: Vec<FleetPending>,
    out: UnboundedSender<ClientMsg>,
}

/// Everything known about the fleet; owned by the manager task.
#[derive(Default)]
struct State {
    this: String,
    agents: BTreeMap<String, Watched>,
    /// Ids with a watcher running (connected or connecting).
    watching: BTreeSet<String>,
}

async fn manage(
    this: String,
    view: watch::Sender<FleetView>,
    mut answers: UnboundedReceiver<FleetAnswer>,
) {
    let mut state = State {
        this,
        ..State::default()
    };
    // Aborted with this task: dropping the set ends every watcher.
    let mut watchers = JoinSet::new();
    let (up_tx, mut up) = mpsc::unbounded_channel();
    let mut scan = tokio::time::interval(SCAN_EVERY);
    loop {
        tokio::select! {
            _ = scan.tick() => {
                for (id, socket) in state.new_sockets() {
                    let is_this = id == state.this;
                    watchers.spawn(watch_agent(socket, id, is_this, up_tx.clone()));
                }
            }
            Some(update) = up.recv() => {
                state.apply(update);
                view.send_replace(state.view());
            }
            Some(answer) = answers.recv() => state.route(answer),
            Some(_) = watchers.join_next() => {}
        }
    }
}

impl State {
    /// Sockets in the runtime directory nobody watches yet (marked watched).
    fn new_sockets(&mut self) -> Vec<(String, PathBuf)> {
        let Ok(dir) = runtime::dir() else {
            return Vec::new();
        };
        let ids = runtime::socket_ids(&dir).unwrap_or_default();
        let mut out = Vec::new();
        for id in ids {
            if self.watching.insert(id.clone()) {
                out.push((id.clone(), runtime::socket_path(&dir, &id)));
            }
        }
        out
    }

    fn apply(&mut self, update: Update) {
        match update {
            Update::Joined { id, info, out } => {
                self.agents.insert(
                    id,
                    Watched {
                        info,
                        pending: Vec::new(),
                        out,
                    },
                );
            }
            Update::Info(id, info) => {
                if let Some(a) = self.agents.get_mut(&id) {
                    a.info = info;
                }
            }
            Update::Asked(id, request) => {
                if let Some(a) = self.agents.get_mut(&id) {
                    a.pending.push(FleetPending {
                        agent: id.clone(),
                        label: label(&a.info),
                        asked_ms: now_ms(),
                        request,
                    });
                }
            }
            Update::Resolved(id, call) => {
                if let Some(a) = self.agents.get_mut(&id) {
                    a.pending.retain(|p| p.request.id != call);
                }
            }
            Update::Gone(id) => {
                self.agents.remove(&id);
                self.watching.remove(&id);
            }
        }
    }

    fn view(&self) -> FleetView {
        let mut agents: Vec<FleetAgent> = self
            .agents
            .iter()
            .map(|(id, a)| FleetAgent {
                info: a.info.clone(),
                this: *id == self.this,
            })
            .collect();
        agents.sort_by_key(|a| a.info.started_ms);
        let mut pending: Vec<FleetPending> = self
            .agents
            .values()
            .flat_map(|a| a.pending.iter().cloned())
            .collect();
        pending.sort_by_key(|p| p.asked_ms);
        FleetView { agents, pending }
    }

    /// Send the console's answer on the agent's connection, with the
    /// token of the card it answers (the agent refuses an answer without).
    fn route(&self, answer: FleetAnswer) {
        if let Some(a) = self.agents.get(&answer.agent) {
            let token = a
                .pending
                .iter()
                .find(|p| p.request.id == answer.id)
                .map(|p| p.request.token.clone())
                .unwrap_or_default();
            let command = AgentCommand::Approval {
                id: answer.id,
                decision: answer.decision,
                token,
            };
            let _ = a.out.send(ClientMsg::Command { command });
        }
    }
}

/// Keep one agent's connection until it goes; report what matters.
async fn watch_agent(socket: PathBuf, id: String, this: bool, up: UnboundedSender<Update>) {
    let role = if this { Role::Control } else { Role::Fleet };
    // What another agent records as who answered: "fleet view: pts/3 on h".
    let name = format!("fleet view: {}", attach::console_name());
    let conn = match attach::connect(&socket, &id, role, &name).await {
        Ok(c) => c,
        Err(_) => {
            // Stale, or gone already: looked at again on the next scan.
            tokio::time::sleep(SCAN_EVERY).await;
            let _ = up.send(Update::Gone(id));
            return;
        }
    };
    let (out, out_rx) = mpsc::unbounded_channel();
    let _ = up.send(Update::Joined {
        id: id.clone(),
        info: conn.info.clone(),
        out,
    });
    let Link { reader, writer, .. } = conn.link;
    tokio::select! {
        () = read_agent(reader, &id, this, &up) => {}
        () = write_agent(writer, out_rx) => {}
    }
    let _ = up.send(Update::Gone(id));
}

/// The agent's lines until it goes: approvals (of another agent) and status.
async fn read_agent<R: tokio::io::AsyncBufRead + Unpin>(
    mut reader: R,
    id: &str,
    this: bool,
    up: &UnboundedSender<Update>,
) {
    while let Ok(Some(text)) = read_line(&mut reader).await {
        let Ok(msg) = serde_json::from_str::<ServerMsg>(&text) else {
            continue;
        };
        let update = match msg {
            ServerMsg::Status { agent } => Update::Info(id.into(), agent),
            ServerMsg::Event { event, .. } if !this => match event {
                AgentEvent::ApprovalRequested { request } if !request.automatic => {
                    Update::Asked(id.into(), request)
                }
                AgentEvent::ApprovalResolved { id: call, .. } => Update::Resolved(id.into(), call),
                _ => continue,
            },
            ServerMsg::Bye { .. } => return,
            _ => continue,
        };
        if up.send(update).is_err() {
            return;
        }
    }
}

/// The answers routed here, and a status request every [`STATUS_EVERY`].
async fn write_agent(mut writer: OwnedWriteHalf, mut out: UnboundedReceiver<ClientMsg>) {
    let mut tick = tokio::time::interval(STATUS_EVERY);
    loop {
        let msg = tokio::select! {
            Some(msg) = out.recv() => msg,
            _ = tick.tick() => ClientMsg::Status,
        };
        let Ok(mut line) = serde_json::to_string(&msg) else {
            continue;
        };
        line.push('\n');
        if writer.write_all(line.as_bytes()).await.is_err() || writer.flush().await.is_err() {
            return;
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_protocol::Risk;
    use vigil_protocol::wire::AgentState;

    fn info(id: &str, started_ms: u64) -> AgentInfo {
        AgentInfo {
            id: id.into(),
            pid: 1,
            model: "m".into(),
            target: "local".into(),
            demo: false,
            state: AgentState::Idle,
            pending_approvals: 0,
            consoles: 0,
            started_ms,
            socket: PathBuf::from(format!("/tmp/{id}.sock")),
            mirror: None,
            leaves_behind: None,
            policy: None,
        }
    }

    fn request(id: u64) -> ApprovalRequest {
        ApprovalRequest {
            id,
            call_id: format!("c{id}"),
            tool: "run_shell".into(),
            target: "local".into(),
            gate: vigil_protocol::GateInfo::shell("touch x"),
            estimate: Risk::Medium,
            estimate_reason: String::new(),
            automatic: false,
            change: None,
            facts: Default::default(),
            token: format!("token-{id}"),
        }
    }

    fn join(state: &mut State, id: &str, started_ms: u64) -> UnboundedReceiver<ClientMsg> {
        let (out, rx) = mpsc::unbounded_channel();
        state.watching.insert(id.into());
        state.apply(Update::Joined {
            id: id.into(),
            info: info(id, started_ms),
            out,
        });
        rx
    }

    #[test]
    fn the_view_marks_this_agent_and_keeps_the_others_calls_oldest_first() {
        let mut state = State {
            this: "a".into(),
            ..State::default()
        };
        let _a = join(&mut state, "a", 20);
        let _b = join(&mut state, "b-123456789", 10);
        state.apply(Update::Asked("b-123456789".into(), request(2)));
        std::thread::sleep(Duration::from_millis(2));
        state.apply(Update::Asked("b-123456789".into(), request(1)));
        let view = state.view();
        let ids: Vec<(&str, bool)> = view
            .agents
            .iter()
            .map(|a| (a.info.id.as_str(), a.this))
            .collect();
        assert_eq!(
            ids,
            [("b-123456789", false), ("a", true)],
            "oldest agent first"
        );
        let calls: Vec<u64> = view.pending.iter().map(|p| p.request.id).collect();
        assert_eq!(calls, [2, 1], "oldest call first, whatever its id");
        assert_eq!(view.pending[0].label, "456789 m");

        state.apply(Update::Resolved("b-123456789".into(), 2));
        assert_eq!(state.view().pending.len(), 1);
        state.apply(Update::Gone("b-123456789".into()));
        let view = state.view();
        assert!(view.pending.is_empty(), "a gone agent's calls go with it");
        assert_eq!(view.agents.len(), 1);
        assert!(!state.watching.contains("b-123456789"), "looked for again");
    }

    #[test]
    fn an_answer_goes_out_on_its_agents_connection_only() {
        let mut state = State {
            this: "a".into(),
            ..State::default()
        };
        let mut a = join(&mut state, "a", 1);
        let mut b = join(&mut state, "b", 2);
        state.apply(Update::Asked("b".into(), request(7)));
        state.route(FleetAnswer {
            agent: "b".into(),
            id: 7,
            decision: vigil_protocol::Answer::Deny,
        });
        assert_eq!(
            b.try_recv().ok(),
            Some(ClientMsg::Command {
                command: AgentCommand::Approval {
                    id: 7,
                    decision: vigil_protocol::Answer::Deny,
                    token: "token-7".into(),
                }
            }),
            "the answer carries the card's token"
        );
        assert!(a.try_recv().is_err());
        // An answer for an agent that went is dropped, not misdelivered.
        state.route(FleetAnswer {
            agent: "gone".into(),
            id: 7,
            decision: vigil_protocol::Answer::ApproveOnce,
        });
        assert!(a.try_recv().is_err() && b.try_recv().is_err());
    }

    fn line(msg: &ServerMsg) -> String {
        serde_json::to_string(msg).unwrap() + "\n"
    }

    async fn read(lines: &[ServerMsg], this: bool) -> Vec<Update> {
        let text: String = lines.iter().map(line).collect();
        let reader = tokio::io::BufReader::new(std::io::Cursor::new(text.into_bytes()));
        let (up, mut rx) = mpsc::unbounded_channel();
        read_agent(reader, "b", this, &up).await;
        let mut out = Vec::new();
        while let Ok(u) = rx.try_recv() {
            out.push(u);
        }
        out
    }

    #[tokio::test]
    async fn only_operator_calls_their_ends_and_status_are_read_until_bye() {
        let mut automatic = request(1);
        automatic.automatic = true;
        let ev = |seq, event| ServerMsg::Event { seq, event };
        let lines = [
            ev(1, AgentEvent::Notice { text: "hi".into() }),
            ev(2, AgentEvent::ApprovalRequested { request: automatic }),
            ev(
                3,
                AgentEvent::ApprovalRequested {
                    request: request(2),
                },
            ),
            ServerMsg::Status {
                agent: info("b", 1),
            },
            ev(
                4,
                AgentEvent::ApprovalResolved {
                    id: 2,
                    decision: vigil_protocol::ApprovalDecision::Deny,
                    decided_by: vigil_protocol::DecidedBy::Operator,
                    previewed: false,
                    answered_by: None,
                },
            ),
            ServerMsg::Bye {
                reason: "stopped".into(),
            },
            ev(
                5,
                AgentEvent::ApprovalRequested {
                    request: request(3),
                },
            ),
        ];
        let got: Vec<(&str, u64)> = read(&lines, false)
            .await
            .iter()
            .map(|u| match u {
                Update::Asked(_, r) => ("asked", r.id),
                Update::Resolved(_, id) => ("resolved", *id),
                Update::Info(..) => ("info", 0),
                _ => ("other", 0),
            })
            .collect();
        assert_eq!(got, [("asked", 2), ("info", 0), ("resolved", 2)]);
        // This console's own agent: status only (its calls are in the
        // console's own queue already).
        let got = read(&lines, true).await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(matches!(got[0], Update::Info(..)));
    }
}
