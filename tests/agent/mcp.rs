//! MCP servers as tools, for real: `@modelcontextprotocol/server-everything`
//! from npm, started by vigil over stdio and driven through the agent loop by
//! the scripted model (list, call, a failing tool, a timeout, a server killed
//! mid-session), plus `vigil tool list|call` on the binary.

use super::mcp_support;

use std::path::Path;
use std::process::Command;

use mcp_support::{everything_js, everything_toml, until};
use serde_json::Value;
use vigil::agent::approval::Policy;
use vigil::agent::assemble::{Running, start_agent};
use vigil::config::Config;
use vigil_protocol::{AgentCommand, AgentEvent, McpState};
use vigil_scripted::{Scenario, ScriptedServer};

const SCENARIO: &str = r#"
[[rule]]
when = { role = "user", contains = "use-mcp" }
text = "Echo first."
[[rule.tool_calls]]
name = "everything__echo"
arguments = { message = "say \"hi\"\nthen bye" }

[[rule]]
when = { role = "tool", contains = "Echo: say" }
text = "Now a sum."
[[rule.tool_calls]]
name = "everything__get-sum"
arguments = { a = 2, b = 3 }

[[rule]]
when = { role = "tool", contains = "is 5" }
text = "Now something that fails."
[[rule.tool_calls]]
name = "everything__gzip-file-as-resource"
arguments = { name = "x.gz", data = "ftp://example.invalid/x", outputType = "resource" }

[[rule]]
when = { role = "user", contains = "echo-again" }
times = 0
text = "Echo."
[[rule.tool_calls]]
name = "everything__echo"
arguments = { message = "again" }

[[rule]]
when = { role = "user", contains = "slow" }
text = "Slow."
[[rule.tool_calls]]
name = "everything__trigger-long-running-operation"
arguments = { duration = 20, steps = 1 }

[[rule]]
when = { role = "user", contains = "reveal-mcp" }
text = "Revealing."
[[rule.tool_calls]]
name = "request_tools"
arguments = { domains = ["mcp:everything"], reason = "need it" }

[[rule]]
when = { role = "tool" }
times = 0
text = "Finished."
"#;

struct Harness {
    running: Running,
    server: ScriptedServer,
    dir: tempfile::TempDir,
}

async fn harness(mcp_toml: &str) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Scenario::from_toml_str(SCENARIO).unwrap())
        .await
        .unwrap();
    let text = format!(
        "[model]\nbase_url = {:?}\nmodel = \"test\"\n[paths]\ndata_dir = {:?}\n{mcp_toml}",
        server.base_url(),
        dir.path().display().to_string()
    );
    let mut config = Config::from_toml(&text, Path::new("test.toml")).unwrap();
    config.tmux.mode = vigil::config::TmuxMode::Off;
    let running = start_agent(&config, false, Policy::Ask).await.unwrap();
    Harness {
        running,
        server,
        dir,
    }
}

/// Send `text` and drive the turn to its end, approving every gated call.
/// Returns the events and the tools that asked for approval.
async fn turn(h: &mut Harness, text: &str) -> (Vec<AgentEvent>, Vec<String>) {
    h.running
        .commands
        .send(AgentCommand::UserMessage { text: text.into() })
        .unwrap();
    let mut all = Vec::new();
    let mut asked = Vec::new();
    loop {
        let events = until(&mut h.running.events, |e| {
            matches!(
                e,
                AgentEvent::ApprovalRequested { .. } | AgentEvent::TurnFinished { .. }
            )
        })
        .await;
        let last = events.last().cloned();
        all.extend(events);
        match last {
            Some(AgentEvent::ApprovalRequested { request }) => {
                asked.push(request.tool.clone());
                h.running
                    .commands
                    .send(AgentCommand::Approval {
                        id: request.id,
                        decision: vigil_protocol::Answer::ApproveOnce,
                        token: request.token.clone(),
                    })
                    .unwrap();
            }
            _ => return (all, asked),
        }
    }
}

fn tool_messages(server: &ScriptedServer) -> Vec<String> {
    let reqs = server.requests();
    let last = reqs.last().expect("a request");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn completed(events: &[AgentEvent]) -> Vec<(String, bool, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCompleted { name, summary, .. } => {
                Some((name.clone(), summary.ok, summary.error.clone()))
            }
            _ => None,
        })
        .collect()
}

fn states(events: &[AgentEvent]) -> Vec<(String, McpState, usize)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::McpServerState { name, state, tools } => {
                Some((name.clone(), state.clone(), *tools))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn mcp_tools_run_through_the_agent_loop() {
    let mut h = harness(&everything_toml("trusted_tools = [\"echo\"]")).await;
    let start = until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::SessionStarted { .. })
    })
    .await;
    let st = states(&start);
    assert_eq!(st[0].1, McpState::Starting, "{st:?}");
    let (name, state, count) = st.last().unwrap();
    assert_eq!((name.as_str(), state), ("everything", &McpState::Running));
    assert!(*count >= 5, "{st:?}");
    let Some(AgentEvent::SessionStarted { tools, .. }) = start.last() else {
        unreachable!()
    };
    assert!(tools.contains(&"everything__echo".to_string()), "{tools:?}");

    let (events, asked) = turn(&mut h, "please use-mcp").await;
    // echo is trusted; the others are gated by default.
    assert_eq!(
        asked,
        ["everything__get-sum", "everything__gzip-file-as-resource"]
    );
    let done = completed(&events);
    assert_eq!(done.len(), 3, "{done:?}");
    assert!(done[0].1 && done[1].1, "{done:?}");
    assert!(!done[2].1, "{done:?}");

    let tools = tool_messages(&h.server);
    let echo: Value = serde_json::from_str(&tools[0]).unwrap();
    assert_eq!(echo["result"], "Echo: say \"hi\"\nthen bye");
    let sum: Value = serde_json::from_str(&tools[1]).unwrap();
    assert_eq!(sum["result"], "The sum of 2 and 3 is 5.");
    assert!(tools[2].starts_with("Tool error: "), "{}", tools[2]);
    assert!(
        tools[2].contains("[class: execution_failed]"),
        "{}",
        tools[2]
    );
    assert!(
        tools[2].contains("Unsupported URL protocol"),
        "{}",
        tools[2]
    );

    // The model saw the server's schema under the namespaced name.
    let first = &h.server.requests()[0];
    let echo_def = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "everything__echo")
        .expect("echo is offered");
    assert_eq!(
        echo_def["function"]["parameters"]["properties"]["message"]["type"],
        "string"
    );
    assert!(h.dir.path().exists());
}

#[tokio::test]
async fn a_killed_server_is_reported_and_restarted_on_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!(
        "echo $$ > {}; exec node {} stdio",
        pidfile.display(),
        everything_js().display()
    );
    let toml = format!(
        "[mcp.servers.everything]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n\
         trusted = true\n"
    );
    let mut h = harness(&toml).await;
    let (events, _) = turn(&mut h, "echo-again").await;
    assert!(completed(&events)[0].1, "{events:#?}");

    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    let crashed = until(&mut h.running.events, |e| {
        matches!(
            e,
            AgentEvent::McpServerState {
                state: McpState::Crashed(_),
                ..
            }
        )
    })
    .await;
    assert!(!crashed.is_empty());

    let (events, _) = turn(&mut h, "echo-again").await;
    let st: Vec<McpState> = states(&events).into_iter().map(|s| s.1).collect();
    assert_eq!(st, [McpState::Starting, McpState::Running], "{events:#?}");
    assert!(completed(&events)[0].1, "{events:#?}");
    let tools = tool_messages(&h.server);
    assert!(tools.last().unwrap().contains("Echo: again"), "{tools:?}");
}

#[tokio::test]
async fn a_slow_call_times_out_and_the_server_is_restarted() {
    let mut h = harness(&everything_toml("trusted = true\ntimeout_secs = 2")).await;
    let started = std::time::Instant::now();
    let (events, _) = turn(&mut h, "slow").await;
    assert!(started.elapsed().as_secs() < 15, "never hangs");
    let done = completed(&events);
    assert!(!done[0].1, "{done:?}");
    assert!(
        states(&events)
            .iter()
            .any(|s| matches!(s.1, McpState::TimedOut(_))),
        "{events:#?}"
    );
    let tools = tool_messages(&h.server);
    assert!(tools[0].contains("[class: timeout]"), "{}", tools[0]);

    let (events, _) = turn(&mut h, "echo-again").await;
    assert!(completed(&events)[0].1, "{events:#?}");
}

#[tokio::test]
async fn a_server_that_cannot_start_is_an_event_not_a_hang() {
    let mut h = harness("[mcp.servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n").await;
    let start = until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::SessionStarted { .. })
    })
    .await;
    let st = states(&start);
    let Some((name, McpState::Failed(why), 0)) = st.last() else {
        panic!("{st:?}")
    };
    assert_eq!(name, "broken");
    assert!(why.contains("/nonexistent/mcp-server"), "{why}");
}

#[test]
fn tool_list_and_call_work_on_mcp_tools() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, everything_toml("")).unwrap();
    let vigil = env!("CARGO_BIN_EXE_vigil");
    let run = |args: &[&str]| {
        Command::new(vigil)
            .arg("--no-tmux")
            .arg("--config")
            .arg(&config)
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["tool", "list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let defs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = defs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["function"]["name"].as_str())
        .collect();
    assert!(names.contains(&"everything__get-sum"), "{names:?}");

    let out = run(&[
        "tool",
        "call",
        "everything__get-sum",
        r#"{"a": 20, "b": 22}"#,
        "--auto-approve",
    ]);
    assert!(out.status.success(), "{out:?}");
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["result"], "The sum of 20 and 22 is 42.");
    // Gated without a terminal to ask on: fails closed.
    let out = run(&["tool", "call", "everything__get-sum", r#"{"a": 1, "b": 2}"#]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("denied"),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_hidden_server_is_sent_after_request_tools() {
    let mut h = harness(&everything_toml("trusted = true\nhidden = true")).await;
    let (_, _) = turn(&mut h, "reveal-mcp").await;
    let reqs = h.server.requests();
    let names = |r: &Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["function"]["name"].as_str().map(String::from))
            .collect()
    };
    assert!(
        !names(&reqs[0])
            .iter()
            .any(|n| n.starts_with("everything__"))
    );
    assert!(names(&reqs[1]).contains(&"everything__echo".to_string()));
    let added = &tool_messages(&h.server)[0];
    assert!(added.contains("everything__get-sum"), "{added}");
}
