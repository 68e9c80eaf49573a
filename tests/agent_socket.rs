//! End-to-end: the real `vigil __agent` process and raw clients on its Unix
//! socket — hello, replay, live, commands, several consoles sharing one
//! approval, read-only watchers, bad input, a second agent, a stale socket,
//! stop, a client killed mid-stream, and another user kept out.

#[path = "support/agent_proc.rs"]
mod support;

use support::{Agent, Dirs, turn_finished};
use vigil::event::AgentCommand;
use vigil::event::AgentEvent;
use vigil::event::wire::{AgentState, ClientMsg, Role, ServerMsg};

fn say(text: &str) -> AgentCommand {
    AgentCommand::UserMessage { text: text.into() }
}

fn assistant_text(events: &[(u64, AgentEvent)]) -> String {
    events
        .iter()
        .filter_map(|(_, e)| match e {
            AgentEvent::AssistantMessage { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("|")
}

#[test]
fn hello_welcome_replay_live_and_a_reattach_gets_only_newer_events() {
    let dirs = Dirs::new();
    let agent = Agent::start(&dirs, &[]);
    assert!(agent.socket.starts_with(dirs.runtime()));
    let mode = std::fs::metadata(&agent.socket).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );

    let mut c = agent.connect();
    let first = c.attach(Role::Console, 0, "first");
    assert_eq!(first.you, 1);
    assert_eq!(first.agent.id, agent.id);
    assert_eq!(first.agent.pid, agent.pid);
    assert_eq!(first.agent.model, "e2e");
    assert_eq!(first.agent.state, AgentState::Idle);
    assert!(
        first
            .replay
            .iter()
            .any(|(_, e)| matches!(e, AgentEvent::SessionStarted { .. })),
        "the replay starts with the session: {:?}",
        first.replay
    );
    assert_eq!(first.replay.last().map(|(s, _)| *s), Some(first.live));

    c.command(say("one"));
    let turn = c.until("the first turn", turn_finished);
    assert_eq!(assistant_text(&turn), "echo: one");
    assert!(turn.windows(2).all(|w| w[0].0 < w[1].0), "seqs grow");
    let seen = turn.last().unwrap().0;
    c.send(&ClientMsg::Status);
    match c.expect() {
        ServerMsg::Status { agent: info } => {
            assert_eq!(info.consoles, 1);
            assert_eq!(info.state, AgentState::Idle);
        }
        other => panic!("no status: {other:?}"),
    }
    c.send(&ClientMsg::Detach);
    assert!(c.next().is_none(), "detach closes the connection");

    // While nobody is attached the agent keeps working.
    let mut other = agent.connect();
    other.attach(Role::Console, u64::MAX, "other");
    other.command(say("two"));
    other.until("the second turn", turn_finished);
    other.send(&ClientMsg::Detach);

    // Back with the last seq seen: only what came after it.
    let mut back = agent.connect();
    let again = back.attach(Role::Console, seen, "first again");
    assert_eq!(again.you, 3, "consoles are numbered in attach order");
    assert!(again.replay.iter().all(|(s, _)| *s > seen));
    assert_eq!(assistant_text(&again.replay), "echo: two");
    // From zero: everything, both turns.
    let mut full = agent.connect();
    let all = full.attach(Role::Watch, 0, "full");
    assert_eq!(assistant_text(&all.replay), "echo: one|echo: two");
    assert_eq!(all.live, again.live);
}
