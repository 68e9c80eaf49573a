//! An answer names what it answers, and who answered is known, not
//! claimed — through the real `vigil __agent` process and raw clients on
//! its socket: a second client that never took the card's token answers
//! call ids 1–5 without it, with a wrong one and with the token of another
//! card, and is refused each time while the call keeps waiting; the
//! console that saw the card answers with its token, and the record names
//! that console by the peer the kernel reported (uid, pid, terminal), its
//! own name only as a label.

use super::agent_proc as support;

use serde_json::Value;
use support::{Agent, Dirs, turn_finished};
use vigil_protocol::wire::{AgentState, ClientMsg, Role, ServerMsg};
use vigil_protocol::{AgentCommand, AgentEvent, Answer};

fn approve(id: u64, token: &str) -> AgentCommand {
    AgentCommand::Approval {
        id,
        decision: Answer::ApproveOnce,
        token: token.into(),
    }
}

/// The next refusal, skipping the stream (this client reads no card).
fn refused(c: &mut support::Client) -> String {
    loop {
        match c.expect() {
            ServerMsg::Refused { reason } => return reason,
            ServerMsg::Event { .. } | ServerMsg::Live { .. } | ServerMsg::Mirror { .. } => {}
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn an_answer_without_the_cards_token_is_refused_and_the_record_names_the_real_peer() {
    let dirs = Dirs::new();
    let mut agent = Agent::start(&dirs, &[]);
    let mut c = agent.connect();
    c.attach(Role::Console, u64::MAX, "pts/0 on ops-laptop");
    c.command(AgentCommand::UserMessage {
        text: "gate-me".into(),
    });
    let seen = c.until("the card", |e| {
        matches!(e, AgentEvent::ApprovalRequested { .. })
    });
    let (id, token) = match &seen.last().unwrap().1 {
        AgentEvent::ApprovalRequested { request } => (request.id, request.token.clone()),
        _ => unreachable!(),
    };
    assert_eq!(token.len(), 32, "a 128-bit token on the card: {token:?}");

    // A second console that reads nothing and claims a name.
    let mut other = agent.connect();
    let welcome = other.hello(Role::Console, u64::MAX, "pts/0 on ops-laptop");
    assert!(matches!(welcome, ServerMsg::Welcome { .. }), "{welcome:?}");
    let mut wrong = token.clone();
    wrong.replace_range(..1, if token.starts_with('0') { "1" } else { "0" });
    for guess in 1..=5u64 {
        for attempt in ["", "0123456789abcdef0123456789abcdef", wrong.as_str()] {
            other.command(approve(guess, attempt));
            let why = refused(&mut other);
            let expected = if guess == id { "token" } else { "not waiting" };
            assert!(why.contains(expected), "#{guess} with {attempt:?}: {why}");
        }
    }
    // The call still waits.
    other.send(&ClientMsg::Status);
    let info = loop {
        match other.expect() {
            ServerMsg::Status { agent } => break agent,
            ServerMsg::Event { .. } | ServerMsg::Live { .. } => {}
            m => panic!("{m:?}"),
        }
    };
    assert_eq!(info.state, AgentState::Waiting);
    assert_eq!(info.pending_approvals, 1);

    // The console that saw the card answers it.
    c.command(approve(id, &token));
    let after = c.until("the turn's end", turn_finished);
    let by = after
        .iter()
        .find_map(|(_, e)| match e {
            AgentEvent::ApprovalResolved { answered_by, .. } => answered_by.clone(),
            _ => None,
        })
        .expect("answered_by");
    assert_eq!(by.console.id, 1, "the first console answered: {by:?}");
    let peer = by.console.peer.clone().expect("the kernel's peer");
    assert_eq!(peer.pid, std::process::id());
    assert_eq!(peer.uid, unsafe { libc::getuid() });
    // A late token-bearing answer from the other client is refused too.
    other.command(approve(id, &token));
    assert!(refused(&mut other).contains("already answered by console 1: uid"));

    let stop = dirs.vigil().args(["stop", &agent.id]).output().unwrap();
    assert!(stop.status.success());
    assert_eq!(agent.wait_exit(), Some(0));
    let export = dirs
        .vigil()
        .args(["audit", "export", &agent.id])
        .output()
        .unwrap();
    assert!(export.status.success(), "{export:?}");
    let text = String::from_utf8_lossy(&export.stdout);
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 1, "one decision, the real one: {text}");
    let console = &entries[0]["answered_by"]["console"];
    assert_eq!(console["id"], 1, "{console}");
    assert_eq!(console["peer"]["pid"], std::process::id(), "{console}");
    assert_eq!(
        console["peer"]["uid"],
        unsafe { libc::getuid() },
        "{console}"
    );
    assert_eq!(console["name"], "pts/0 on ops-laptop", "a label: {console}");
    let tty = vigil::agent::server::listener::controlling_tty(std::process::id());
    assert_eq!(console["peer"]["tty"].as_str(), tty.as_deref(), "{console}");
}
