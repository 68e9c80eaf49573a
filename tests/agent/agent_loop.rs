//! The whole agent path for real: scripted model server over loopback HTTP,
//! the agent task, the approval broker answered through the command channel,
//! and run_shell on the local backend.

use super::common;

use common::until;
use std::time::Duration;

use serde_json::Value;
use vigil::agent::approval::Policy;
use vigil::agent::assemble::{Running, start_agent};
use vigil::config::Config;
use vigil_protocol::{AgentCommand, AgentEvent, OutputStream, TurnOutcome};
use vigil_scripted::{Scenario, ScriptedServer};

const SCENARIO: &str = r#"
[[rule]]
when = { role = "user", contains = "run-it" }
text = "Running it."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "printf 'one\\ttwo  \\n'; echo oops >&2; exit 3"
risk = "medium"
mutation = true
privesc = false
why = "test"

[[rule]]
when = { role = "user", contains = "hang" }
text = "Sleeping."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "echo $$ > PIDFILE; sleep 100"
risk = "low"
mutation = false
privesc = false
why = "test"

[[rule]]
when = { role = "tool", contains = "denied by user" }
text = "Denied, so I stop."

[[rule]]
when = { role = "tool" }
text = "Finished."

[[rule]]
when = { role = "user" }
times = 0
text = "echo: {last_user}"
"#;

struct Harness {
    running: Running,
    server: ScriptedServer,
    _dir: tempfile::TempDir,
    pidfile: std::path::PathBuf,
}

async fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let scenario =
        Scenario::from_toml_str(&SCENARIO.replace("PIDFILE", &pidfile.display().to_string()))
            .unwrap();
    let server = ScriptedServer::start(scenario).await.unwrap();
    let mut config = Config::default();
    config.model.base_url = server.base_url();
    config.model.model = "test-model".into();
    config.paths.data_dir = Some(dir.path().to_path_buf());
    // These cases exercise plain local processes; tmux has its own tests.
    config.tmux.mode = vigil::config::TmuxMode::Off;
    let running = start_agent(&config, false, Policy::Ask).await.unwrap();
    Harness {
        running,
        server,
        _dir: dir,
        pidfile,
    }
}

fn send(h: &Harness, cmd: AgentCommand) {
    h.running.commands.send(cmd).unwrap();
}

fn last_tool_message(request: &Value) -> Value {
    let msgs = request["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "tool", "{request:#}");
    last.clone()
}

#[tokio::test]
async fn approved_run_shell_streams_and_returns_the_envelope() {
    let mut h = harness().await;
    send(
        &h,
        AgentCommand::UserMessage {
            text: "please run-it".into(),
        },
    );
    let before = until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::ApprovalRequested { .. })
    })
    .await;
    assert!(matches!(before[0], AgentEvent::SessionStarted { .. }));
    assert!(
        !before
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolStarted { .. })),
        "nothing runs before approval"
    );
    let Some(AgentEvent::ApprovalRequested { request }) = before.last() else {
        unreachable!()
    };
    assert_eq!(request.tool, "run_shell");
    assert_eq!(request.target, "local");
    assert!(request.gate.action.contains("printf"));
    assert_eq!(request.gate.mutation, Some(true));

    send(
        &h,
        AgentCommand::Approval {
            id: request.id,
            decision: vigil_protocol::Answer::ApproveOnce,
            token: request.token.clone(),
        },
    );
    let after = until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::TurnFinished { .. })
    })
    .await;
    let stdout: String = after
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolOutput {
                stream: OutputStream::Stdout,
                text,
                ..
            } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(stdout, "one\ttwo  \n");
    let completed = after
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCompleted { summary, .. } => Some(summary.clone()),
            _ => None,
        })
        .expect("tool completed");
    assert!(completed.ok);
    assert_eq!(completed.exit_code, Some(3));
    assert!(matches!(
        after.last(),
        Some(AgentEvent::TurnFinished {
            outcome: TurnOutcome::Completed
        })
    ));
    let texts: Vec<_> = after
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AssistantMessage { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts.last().unwrap(), "Finished.");

    // The model received the tool result wrapped in the envelope.
    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    let tool_msg = last_tool_message(&requests[1]);
    let envelope: Value = serde_json::from_str(tool_msg["content"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["harness_timestamp"]["source"], "harness");
    assert_eq!(envelope["result"]["exit_code"], 3);
    assert_eq!(envelope["result"]["stdout"], "one\ttwo  \n");
    assert_eq!(envelope["result"]["stderr"], "oops\n");
    let call_id = requests[1]["messages"].as_array().unwrap()[2]["tool_calls"][0]["id"].clone();
    assert_eq!(tool_msg["tool_call_id"], call_id);
    // Tools were offered, sorted by name.
    let names: Vec<_> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(names.contains(&"run_shell".to_string()));
}

#[tokio::test]
async fn denied_run_shell_never_runs_and_the_model_is_told() {
    let mut h = harness().await;
    send(
        &h,
        AgentCommand::UserMessage {
            text: "run-it".into(),
        },
    );
    let before = until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::ApprovalRequested { .. })
    })
    .await;
    let Some(AgentEvent::ApprovalRequested { request }) = before.last() else {
        unreachable!()
    };
    send(
        &h,
        AgentCommand::Approval {
            id: request.id,
            decision: vigil_protocol::Answer::Deny,
            token: request.token.clone(),
        },
    );
    let after = until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::TurnFinished { .. })
    })
    .await;
    assert!(!after.iter().any(|e| matches!(
        e,
        AgentEvent::ToolStarted { .. } | AgentEvent::ToolOutput { .. }
    )));
    let summary = after
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCompleted { summary, .. } => Some(summary.clone()),
            _ => None,
        })
        .unwrap();
    assert!(!summary.ok);
    let requests = h.server.requests();
    let tool_msg = last_tool_message(&requests[1]);
    let envelope: Value = serde_json::from_str(tool_msg["content"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["result"], "Command execution denied by user.");
    assert!(after.iter().any(
        |e| matches!(e, AgentEvent::AssistantMessage { text } if text == "Denied, so I stop.")
    ));
}

#[tokio::test]
async fn cancel_kills_the_running_command_and_the_session_goes_on() {
    let mut h = harness().await;
    send(
        &h,
        AgentCommand::UserMessage {
            text: "hang".into(),
        },
    );
    let ev = until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::ApprovalRequested { .. })
    })
    .await;
    let Some(AgentEvent::ApprovalRequested { request }) = ev.last() else {
        unreachable!()
    };
    send(
        &h,
        AgentCommand::Approval {
            id: request.id,
            decision: vigil_protocol::Answer::ApproveOnce,
            token: request.token.clone(),
        },
    );
    until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::ToolStarted { .. })
    })
    .await;
    // Wait for the shell to record its pid.
    let pid: i32 = loop {
        if let Ok(text) = std::fs::read_to_string(&h.pidfile)
            && let Ok(pid) = text.trim().parse()
        {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    send(&h, AgentCommand::Cancel);
    until(&mut h.running.events, |e| {
        matches!(
            e,
            AgentEvent::TurnFinished {
                outcome: TurnOutcome::Cancelled
            }
        )
    })
    .await;
    let mut gone = false;
    for _ in 0..100 {
        // SAFETY: kill with signal 0 only checks for existence.
        if unsafe { libc::kill(pid, 0) } != 0 {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        gone,
        "the cancelled command's shell (pid {pid}) is still alive"
    );

    // The next message works and the cancelled call was answered.
    send(
        &h,
        AgentCommand::UserMessage {
            text: "still there?".into(),
        },
    );
    let ev = until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::TurnFinished { .. })
    })
    .await;
    assert!(ev.iter().any(
        |e| matches!(e, AgentEvent::AssistantMessage { text } if text == "echo: still there?")
    ));
    let last = h.server.requests().pop().unwrap();
    let msgs = last["messages"].as_array().unwrap();
    assert!(
        msgs.iter()
            .any(|m| m["role"] == "tool" && m["content"].as_str().unwrap().contains("cancelled")),
        "{last:#}"
    );
}

#[tokio::test]
async fn unreachable_model_is_a_clear_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut config = Config::default();
    config.model.base_url = format!("http://127.0.0.1:{port}/v1");
    config.model.retry_base_ms = 10;
    config.paths.data_dir = Some(dir.path().to_path_buf());
    config.tmux.mode = vigil::config::TmuxMode::Off;
    let mut running = start_agent(&config, false, Policy::Ask).await.unwrap();
    running
        .commands
        .send(AgentCommand::UserMessage { text: "hi".into() })
        .unwrap();
    let ev = until(&mut running.events, |e| {
        matches!(e, AgentEvent::TurnFinished { .. })
    })
    .await;
    let Some(AgentEvent::TurnFinished {
        outcome: TurnOutcome::Failed(msg),
    }) = ev.last()
    else {
        panic!("{ev:#?}")
    };
    assert!(msg.contains(&port.to_string()), "{msg}");
}
