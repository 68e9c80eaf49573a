//! Lazy tool visibility through the agent loop: hidden domains are not sent
//! until the model calls request_tools, which reports added, already
//! visible, blocked and unknown domains (never schemas); a hidden tool
//! called directly does not run; visibility resets at the next turn.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use vigil::agent::approval::Policy;
use vigil::agent::assemble::{Running, start_agent};
use vigil::config::Config;
use vigil_protocol::{AgentCommand, AgentEvent};
use vigil_scripted::{Scenario, ScriptedServer};

const SCENARIO: &str = r#"
[[rule]]
when = { role = "user", contains = "need-web" }
text = "Asking for the web tools."
[[rule.tool_calls]]
name = "request_tools"
arguments = { domains = ["web", "tmux", "nope"], reason = "look something up" }

[[rule]]
when = { role = "tool", contains = "added" }
text = "Asking again."
[[rule.tool_calls]]
name = "request_tools"
arguments = { domains = ["web"], reason = "again" }

[[rule]]
when = { role = "user", contains = "sneak" }
text = "Trying a hidden tool."
[[rule.tool_calls]]
name = "web_search"
arguments = { query = "x" }

[[rule]]
when = { role = "tool" }
times = 0
text = "Done."

[[rule]]
when = { role = "user" }
times = 0
text = "ok"
"#;

async fn until_finished(rx: &mut UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut seen = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out; events so far: {seen:#?}"))
            .expect("agent alive");
        let done = matches!(ev, AgentEvent::TurnFinished { .. });
        seen.push(ev);
        if done {
            return seen;
        }
    }
}

async fn start(server: &ScriptedServer, dir: &Path) -> Running {
    let text = format!(
        "[model]\nbase_url = {:?}\nmodel = \"m\"\n[paths]\ndata_dir = {:?}\n\
         [tools]\nhidden_domains = [\"web\"]\nblocked_domains = [\"tmux\"]\n",
        server.base_url(),
        dir.display().to_string()
    );
    let mut config = Config::from_toml(&text, Path::new("t.toml")).unwrap();
    config.tmux.mode = vigil::config::TmuxMode::Off;
    start_agent(&config, false, Policy::Ask).await.unwrap()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|d| d["function"]["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn hidden_domains_are_sent_only_after_request_tools() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Scenario::from_toml_str(SCENARIO).unwrap())
        .await
        .unwrap();
    let mut running = start(&server, dir.path()).await;
    let send = |text: &str| {
        running
            .commands
            .send(AgentCommand::UserMessage { text: text.into() })
            .unwrap()
    };
    send("need-web");
    until_finished(&mut running.events).await;

    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{reqs:#?}");
    let first = tool_names(&reqs[0]);
    assert!(first.contains(&"request_tools".to_string()), "{first:?}");
    assert!(
        first.contains(&"run_shell".to_string()),
        "core tools are always sent"
    );
    assert!(!first.contains(&"web_search".to_string()), "{first:?}");
    assert!(!first.contains(&"fetch_url".to_string()), "{first:?}");
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(first, sorted, "definitions are sorted");
    // The request_tools description names the hidden tools, never schemas.
    let rt = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["function"]["name"] == "request_tools")
        .unwrap();
    let desc = rt["function"]["description"].as_str().unwrap();
    assert!(desc.contains("web (fetch_url, web_search)"), "{desc}");
    assert!(
        !desc.contains("tmux"),
        "blocked domains are not offered: {desc}"
    );

    let second = tool_names(&reqs[1]);
    assert!(second.contains(&"web_search".to_string()), "{second:?}");
    assert!(second.contains(&"fetch_url".to_string()), "{second:?}");
    let answer: Value = serde_json::from_str(&tool_results(&reqs[1])[0]).unwrap();
    let r = &answer["result"];
    assert_eq!(
        r["added"]["web"],
        serde_json::json!(["fetch_url", "web_search"])
    );
    assert_eq!(r["blocked"]["tmux"], "blocked by the operator");
    assert_eq!(r["unknown"], serde_json::json!(["nope"]));
    assert!(
        !answer.to_string().contains("properties"),
        "no schemas: {answer}"
    );
    // Asking again within the turn: already visible, still visible.
    let again: Value = serde_json::from_str(&tool_results(&reqs[2])[1]).unwrap();
    assert_eq!(
        again["result"]["already_visible"],
        serde_json::json!(["web"])
    );
    assert!(tool_names(&reqs[2]).contains(&"web_search".to_string()));

    // A new turn starts hidden again, and a hidden tool does not run.
    send("sneak");
    let events = until_finished(&mut running.events).await;
    let reqs = server.requests();
    assert!(!tool_names(&reqs[3]).contains(&"web_search".to_string()));
    let results = tool_results(reqs.last().unwrap());
    let refused = results.last().unwrap();
    assert!(refused.contains("hidden domain `web`"), "{refused}");
    assert!(refused.contains("request_tools"), "{refused}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolStarted { .. })),
        "the hidden tool never started"
    );
}
