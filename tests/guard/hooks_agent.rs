//! `[[hooks.on]]` in the real agent process (`vigil __agent`) after its
//! console left: session start, the approval that waits with nobody
//! attached, the call ended by `vigil stop`, and the session's end each
//! fire exactly once, run by the agent itself.

use super::agent_proc as support;

use std::time::Duration;

use serde_json::Value;
use support::{Agent, Dirs, eventually};
use vigil_protocol::AgentCommand;
use vigil_protocol::wire::{ClientMsg, Role};

fn events(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn count(all: &[Value], event: &str) -> usize {
    all.iter().filter(|v| v["event"] == event).count()
}

#[test]
fn lifecycle_hooks_fire_once_each_with_no_console_attached() {
    let dirs = Dirs::new();
    let log = dirs.tmp.path().join("lifecycle.jsonl");
    let config = dirs.tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[hooks.on]]\nname = \"logger\"\ncommand = [\"sh\", \"-c\", \"cat >> {}\"]\n",
            log.display()
        ),
    )
    .unwrap();
    let mut agent = Agent::start(&dirs, &["--config", config.to_str().unwrap()]);
    let started = eventually(|| (count(&events(&log), "session_start") == 1).then_some(()));
    assert!(
        started.is_some(),
        "session_start; log:\n{}",
        dirs.log_text()
    );

    // A console asks for a gated command and leaves before anyone answers.
    let mut c = agent.connect();
    c.attach(Role::Console, u64::MAX, "leaving");
    c.command(AgentCommand::UserMessage {
        text: "gate-me".into(),
    });
    c.until("the approval", |e| {
        matches!(e, vigil_protocol::AgentEvent::ApprovalRequested { .. })
    });
    c.send(&ClientMsg::Detach);
    assert!(c.next().is_none(), "detached");
    let waiting = eventually(|| {
        let all = events(&log);
        all.iter()
            .find(|v| v["event"] == "approval_waiting")
            .map(|v| v["request"]["gate"]["action"].clone())
    });
    assert_eq!(waiting, Some(Value::from("echo gated-ran")));

    // Stopped with nobody attached: the waiting call ends, then the session.
    let out = dirs.vigil().args(["stop", &agent.id]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(agent.wait_exit(), Some(0));
    std::thread::sleep(Duration::from_millis(100));
    let all = events(&log);
    assert_eq!(count(&all, "session_start"), 1, "{all:#?}");
    assert_eq!(count(&all, "approval_waiting"), 1, "{all:#?}");
    assert_eq!(count(&all, "call_finished"), 1, "{all:#?}");
    assert_eq!(count(&all, "session_end"), 1, "{all:#?}");
    assert_eq!(all.last().unwrap()["event"], "session_end", "{all:#?}");
    assert!(all.iter().all(|v| v["session_id"] == agent.id.as_str()));
}
