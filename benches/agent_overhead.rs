//! Agent overhead per tool call: N sequential `time` calls through the
//! scripted server, headless and in process (`app::start_agent`, approve
//! all, session recording on), against the bare HTTP round trip to the same
//! server measured in the same run with requests of the same shape and size
//! (the same history the agent re-sends). Prints per-call figures and ratios
//! for N = 200 and N = 2000.
//!
//! Run: `cargo bench --bench agent_overhead`

use std::time::{Duration, Instant};

use vigil::agent::approval::Policy;
use vigil::agent::assemble::start_agent;
use vigil::agent::model::types::{ChatMessage, ChatRequest, FunctionCall, ToolCall};
use vigil::config::Config;
use vigil::tools::ToolRegistry;
use vigil::tools::time::TimeTool;
use vigil_protocol::{AgentCommand, AgentEvent};
use vigil_scripted::{Scenario, ScriptedServer};

fn scenario(n: usize) -> String {
    format!(
        r#"
record_requests = false
[[rule]]
when = {{ role = "user", contains = "bench-floor" }}
times = 0
text = "ok"
[[rule]]
when = {{ role = "user" }}
[[rule.tool_calls]]
name = "time"
[[rule]]
when = {{ role = "tool" }}
times = {}
[[rule.tool_calls]]
name = "time"
[[rule]]
when = {{ role = "tool" }}
text = "done"
"#,
        n - 1
    )
}

/// The conversation the agent sends after `k` calls (same shapes and sizes).
fn history(k: usize, tool_text: &str, tools: &[vigil::tools::ToolDefinition]) -> String {
    let mut msgs = vec![
        ChatMessage::system(vigil::agent::run::runner::DEFAULT_SYSTEM_PROMPT),
        ChatMessage::user("run the time tool please bench-floor"),
    ];
    for i in 0..k {
        let id = format!("call_{i}");
        msgs.push(ChatMessage::assistant(
            "",
            vec![ToolCall {
                id: id.clone(),
                kind: "function".into(),
                function: FunctionCall {
                    name: "time".into(),
                    arguments: "{}".into(),
                },
            }],
        ));
        msgs.push(ChatMessage::tool(id, tool_text));
    }
    // The floor rule matches the last user message only: end with one.
    msgs.push(ChatMessage::user("bench-floor"));
    serde_json::to_string(&ChatRequest {
        model: "bench",
        messages: &msgs,
        tools,
        stream: true,
    })
    .unwrap()
}

async fn round_trip(http: &reqwest::Client, url: &str, body: &str) -> Duration {
    let t = Instant::now();
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let _ = resp.bytes().await.unwrap();
    t.elapsed()
}

async fn run(n: usize) -> (f64, f64, f64) {
    let server = ScriptedServer::start(Scenario::from_toml_str(&scenario(n)).unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.model.base_url = server.base_url();
    config.model.model = "bench".into();
    config.model.context_limit = Some(100_000_000);
    config.agent.max_rounds = n as u32 + 5;
    config.tools.shell_enabled = false;
    config.tools.files_enabled = false;
    config.paths.data_dir = Some(dir.path().to_path_buf());
    config.tmux.mode = vigil::config::TmuxMode::Off;

    let mut running = start_agent(&config, false, Policy::ApproveAll)
        .await
        .unwrap();
    let t = Instant::now();
    running
        .commands
        .send(AgentCommand::UserMessage {
            text: "run the time tool please".into(),
        })
        .unwrap();
    let mut calls = 0;
    while let Some(ev) = running.events.recv().await {
        match ev {
            AgentEvent::ToolCompleted { .. } => calls += 1,
            AgentEvent::TurnFinished { .. } => break,
            _ => {}
        }
    }
    let wall = t.elapsed();
    assert_eq!(calls, n, "every call ran");
    let _ = running.commands.send(AgentCommand::Quit);
    let agent_per_round = wall.as_secs_f64() * 1000.0 / (n + 1) as f64;

    // Floors, same server, same run.
    let mut registry = ToolRegistry::new();
    registry.register(TimeTool);
    let tool_text = registry.execute("time", "{}").await.model_text;
    let tools = registry.definitions();
    let http = reqwest::Client::new();
    let url = format!("{}/chat/completions", server.base_url());
    let small = history(0, &tool_text, &tools);
    for _ in 0..20 {
        round_trip(&http, &url, &small).await;
    }
    let reps = 200;
    let mut bare = Duration::ZERO;
    for _ in 0..reps {
        bare += round_trip(&http, &url, &small).await;
    }
    let bare_ms = bare.as_secs_f64() * 1000.0 / reps as f64;
    // The same history sizes the agent sent: sample 11 points, 10 reps each.
    let mut hist = Duration::ZERO;
    let samples = 11;
    for s in 0..samples {
        let body = history(n * s / (samples - 1), &tool_text, &tools);
        for _ in 0..10 {
            hist += round_trip(&http, &url, &body).await;
        }
    }
    let hist_ms = hist.as_secs_f64() * 1000.0 / (samples * 10) as f64;
    (agent_per_round, bare_ms, hist_ms)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("agent overhead: sequential `time` calls through the scripted server, headless");
    println!(
        "{:>6} {:>14} {:>14} {:>16} {:>16} {:>10}",
        "calls", "agent ms/call", "bare RTT ms", "same-history ms", "overhead ms", "ratio"
    );
    for n in [200usize, 2000] {
        let (agent, bare, hist) = rt.block_on(run(n));
        println!(
            "{n:>6} {agent:>14.3} {bare:>14.3} {hist:>16.3} {:>16.3} {:>10.2}",
            agent - hist,
            agent / hist
        );
    }
}
