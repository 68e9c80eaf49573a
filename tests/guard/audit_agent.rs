//! The decision record of the real agent process: an approval answered
//! from an attached console names that console (id and name) in the
//! record, and the stopped agent's record verifies and exports.

use super::agent_proc as support;

use serde_json::Value;
use support::{Agent, Dirs, turn_finished};
use vigil_protocol::wire::Role;
use vigil_protocol::{AgentCommand, AgentEvent};

#[test]
fn the_record_names_the_console_that_answered() {
    let dirs = Dirs::new();
    let mut agent = Agent::start(&dirs, &[]);
    let mut c = agent.connect();
    c.attach(Role::Console, u64::MAX, "pts/9 on laptop");
    c.command(AgentCommand::UserMessage {
        text: "gate-me".into(),
    });
    let seen = c.until("the approval", |e| {
        matches!(e, AgentEvent::ApprovalRequested { .. })
    });
    let (id, token) = match &seen.last().unwrap().1 {
        AgentEvent::ApprovalRequested { request } => (request.id, request.token.clone()),
        _ => unreachable!(),
    };
    c.command(AgentCommand::Approval {
        id,
        decision: vigil_protocol::Answer::ApproveOnce,
        token,
    });
    c.until("the turn's end", turn_finished);

    let stop = dirs.vigil().args(["stop", &agent.id]).output().unwrap();
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    assert_eq!(agent.wait_exit(), Some(0));

    let verify = dirs
        .vigil()
        .args(["audit", "verify", &agent.id])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&verify.stdout);
    assert!(
        verify.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    assert!(said.contains("verifies: 1 entries"), "{said}");
    let export = dirs
        .vigil()
        .args(["audit", "export", &agent.id])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&export.stdout);
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 1, "{text}");
    let entry = &entries[0];
    assert_eq!(entry["action"], "echo gated-ran");
    assert_eq!(entry["decided_by"]["by"], "operator", "{entry}");
    assert_eq!(
        entry["answered_by"]["console"]["name"], "pts/9 on laptop",
        "{entry}"
    );
    assert_eq!(entry["answered_by"]["console"]["id"], 1, "{entry}");
    assert_eq!(entry["policy_mode"]["mode"], "ask", "{entry}");
}
