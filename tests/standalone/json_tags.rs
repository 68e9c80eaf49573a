//! The json-tags protocol through the agent loop: the scripted model has no
//! native tool calls and answers in `<json>` blocks (well-formed, malformed,
//! cut off, hopeless); approvals, events and results work as with native
//! calls, and outputs with quotes, newlines and `</json>` come back escaped.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use vigil::agent::approval::Policy;
use vigil::agent::assemble::{Running, start_agent};
use vigil::config::Config;
use vigil_protocol::{AgentCommand, AgentEvent, TurnOutcome};
use vigil_scripted::{Scenario, ScriptedServer};

struct Harness {
    running: Running,
    server: ScriptedServer,
    _dir: tempfile::TempDir,
}

async fn harness(scenario: &str) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Scenario::from_toml_str(scenario).unwrap())
        .await
        .unwrap();
    let text = format!(
        "[model]\nbase_url = {:?}\nmodel = \"m\"\ntool_protocol = \"json-tags\"\n\
         [paths]\ndata_dir = {:?}\n",
        server.base_url(),
        dir.path().display().to_string()
    );
    let mut config = Config::from_toml(&text, Path::new("t.toml")).unwrap();
    config.tmux.mode = vigil::config::TmuxMode::Off;
    let running = start_agent(&config, false, Policy::Ask).await.unwrap();
    Harness {
        running,
        server,
        _dir: dir,
    }
}

/// Send `text`, approve every gated call, return the turn's events.
async fn turn(h: &mut Harness, text: &str) -> Vec<AgentEvent> {
    h.running
        .commands
        .send(AgentCommand::UserMessage { text: text.into() })
        .unwrap();
    let mut seen = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(30), h.running.events.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out; events so far: {seen:#?}"))
            .expect("agent alive");
        if let AgentEvent::ApprovalRequested { request } = &ev {
            h.running
                .commands
                .send(AgentCommand::Approval {
                    id: request.id,
                    decision: vigil_protocol::Answer::ApproveOnce,
                    token: request.token.clone(),
                })
                .unwrap();
        }
        let done = matches!(ev, AgentEvent::TurnFinished { .. });
        seen.push(ev);
        if done {
            return seen;
        }
    }
}

/// The JSON object inside the first `<json>` block of `text`.
fn block(text: &str) -> Value {
    let start = text.find("<json>").expect("a block") + "<json>".len();
    let end = text[start..].find("</json>").expect("closed") + start;
    serde_json::from_str(&text[start..end]).unwrap()
}

fn messages(request: &Value) -> &Vec<Value> {
    request["messages"].as_array().unwrap()
}

const WELL_FORMED: &str = r#"
[[rule]]
when = { role = "user", contains = "tool_output" }
text = "All done."

[[rule]]
when = { role = "user" }
text = '''Let me check.
<json>
{"tool_name": "run_shell", "tool_input": {"command": "printf 'say \"hi\"\\tnow\\nline2 <\/json> end\\n'", "risk": "low", "mutation": false, "privesc": false, "why": "test"}}
</json>'''
"#;

#[tokio::test]
async fn a_well_formed_block_runs_through_approval_and_comes_back_escaped() {
    let mut h = harness(WELL_FORMED).await;
    let events = turn(&mut h, "go").await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalRequested { request }
            if request.tool == "run_shell" && request.gate.action.contains("say \"hi\""))),
        "{events:#?}"
    );
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::ToolCompleted { name, summary, .. } if name == "run_shell" && summary.ok)
    ));
    // The console sees the text without the block.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::AssistantMessage { text } if text == "Let me check."))
    );
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AssistantDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        !deltas.contains("<json>") && !deltas.contains("tool_name"),
        "{deltas}"
    );
    assert!(matches!(
        events.last(),
        Some(AgentEvent::TurnFinished {
            outcome: TurnOutcome::Completed
        })
    ));

    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert!(r.get("tools").is_none(), "no native tools are sent");
    }
    let system = messages(&reqs[0])[0]["content"].as_str().unwrap();
    assert!(system.contains("## run_shell"), "{system}");
    assert!(system.contains("\"tool_name\""), "{system}");
    let msgs = messages(&reqs[1]);
    let assistant = &msgs[msgs.len() - 2];
    assert_eq!(assistant["role"], "assistant");
    assert!(assistant.get("tool_calls").is_none());
    assert_eq!(
        block(assistant["content"].as_str().unwrap())["tool_name"],
        "run_shell"
    );
    let result = msgs.last().unwrap();
    assert_eq!(result["role"], "user");
    let raw = result["content"].as_str().unwrap();
    assert_eq!(
        raw.matches("</json>").count(),
        1,
        "only the closing tag: {raw}"
    );
    let echoed = block(raw);
    assert_eq!(echoed["tool_name"], "run_shell");
    assert_eq!(echoed["tool_input"]["risk"], "low");
    let output: Value = serde_json::from_str(echoed["tool_output"].as_str().unwrap()).unwrap();
    let stdout = output["result"]["stdout"].as_str().unwrap_or_default();
    assert_eq!(stdout, "say \"hi\"\tnow\nline2 </json> end\n", "{output:#}");
}

const MALFORMED: &str = r#"
[[rule]]
when = { role = "user", contains = "tool_output" }
text = "All done."

[[rule]]
when = { role = "user", contains = "could not be read" }
text = '''<json>{"tool_name": "time", "tool_input": {}}</json>'''

[[rule]]
when = { role = "user" }
text = '''<json>{"tool": "time", "input": {}}</json>'''
"#;

#[tokio::test]
async fn a_malformed_block_gets_the_accepted_keys_and_an_example() {
    let mut h = harness(MALFORMED).await;
    let events = turn(&mut h, "what time is it").await;
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::ToolCompleted { name, summary, .. } if name == "time" && summary.ok)
    ));
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 3, "malformed, corrected, final");
    let correction = messages(&reqs[1]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        correction.contains("the key `tool_name` is missing"),
        "{correction}"
    );
    assert!(
        correction.contains("- tool_name (string, required)"),
        "{correction}"
    );
    assert!(
        correction.contains("- tool_input (object, required)"),
        "{correction}"
    );
    let example = block(&correction[correction.find("Example:").unwrap()..]);
    assert!(example["tool_name"].is_string() && example["tool_input"].is_object());
    // The failed attempt stays out of the agent's conversation.
    let last = messages(&reqs[2]);
    assert!(!last.iter().any(|m| {
        m["content"]
            .as_str()
            .unwrap_or("")
            .contains("could not be read")
    }));
}

const CUT_OFF: &str = r#"
[[rule]]
when = { role = "user", contains = "tool_output" }
text = "All done."

[[rule]]
when = { role = "user", contains = "cut off" }
text = '''<json>{"tool_name": "time", "tool_input": {}}</json>'''

[[rule]]
when = { role = "user" }
finish_reason = "length"
text = '''Calling.
<json>
{"tool_name": "ti'''
"#;

#[tokio::test]
async fn a_cut_off_block_is_asked_for_again() {
    let mut h = harness(CUT_OFF).await;
    let events = turn(&mut h, "time please").await;
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::ToolCompleted { name, summary, .. } if name == "time" && summary.ok)
    ));
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 3);
    let ask = messages(&reqs[1]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(ask.contains("cut off"), "{ask}");
}

const HOPELESS: &str = r#"
[[rule]]
when = { role = "user" }
times = 0
text = '''<json>not json at all</json>'''
"#;

#[tokio::test]
async fn a_model_that_never_sends_a_usable_block_fails_the_turn() {
    let mut h = harness(HOPELESS).await;
    let events = turn(&mut h, "go").await;
    let Some(AgentEvent::TurnFinished {
        outcome: TurnOutcome::Failed(why),
    }) = events.last()
    else {
        panic!("{events:#?}")
    };
    assert!(why.contains("unusable <json> tool call"), "{why}");
    assert_eq!(h.server.requests().len(), 3);
}
