//! `[notify] command`, with the agent in process and the scripted model
//! asking for a gated command: a real script receives the approval request
//! as JSON on stdin (agent, session, request) and none of vigil's secrets in
//! its environment; a failing command and one that outlives its time limit
//! (its process group killed) each become one Notice, and the approval
//! still waits for the operator meanwhile.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::until;
use serde_json::Value;
use vigil::agent::approval::Policy;
use vigil::agent::assemble::{Running, StartOptions, start_agent_with};
use vigil::config::Config;
use vigil_protocol::{AgentCommand, AgentEvent};
use vigil_scripted::{Scenario, ScriptedServer};

const SCENARIO: &str = r#"
[[rule]]
when = { role = "user" }
times = 0
text = "Asking."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "touch /tmp/vigil-notify-never-run"
risk = "medium"
mutation = true
privesc = false
why = "a gated call for the notify test"
"#;

async fn start(server: &ScriptedServer, data: &Path, command: Vec<String>, secs: u64) -> Running {
    let mut c = Config::default();
    c.model.base_url = server.base_url();
    c.model.model = "test-model".into();
    c.paths.data_dir = Some(data.to_path_buf());
    c.tmux.mode = vigil::config::TmuxMode::Off;
    c.agent.name = "notify-test".into();
    c.notify.command = command;
    c.notify.command_timeout_secs = secs;
    start_agent_with(&c, false, Policy::Ask, StartOptions::default())
        .await
        .expect("agent starts")
}

async fn ask(running: &mut Running) -> vigil_protocol::ApprovalRequest {
    running
        .commands
        .send(AgentCommand::UserMessage { text: "go".into() })
        .unwrap();
    let seen = until(&mut running.events, |e| {
        matches!(e, AgentEvent::ApprovalRequested { .. })
    })
    .await;
    match seen.last() {
        Some(AgentEvent::ApprovalRequested { request }) => request.clone(),
        _ => unreachable!(),
    }
}

fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} never appeared", path.display());
}

fn notice(events: &[AgentEvent]) -> Option<String> {
    events.iter().find_map(|e| match e {
        AgentEvent::Notice { text } if text.contains("notify command") => Some(text.clone()),
        _ => None,
    })
}

/// Gone, or a zombie nobody runs any more.
fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

// One test: it sets a secret in this process's environment, which must not
// race with other tests starting processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_notify_command_gets_the_request_and_failures_are_told_once() {
    // SAFETY: the only test of this binary, set before any thread reads
    // the environment.
    unsafe {
        std::env::set_var("VIGIL_API_KEY", "sk-notify-secret-0001");
        std::env::set_var("DEPLOY_TOKEN", "tok-notify-0002");
    }
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Scenario::from_toml_str(SCENARIO).unwrap())
        .await
        .unwrap();

    // 1. A real script: stdin and environment written to files.
    let script = dir.path().join("notify.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat > \"$1.part\" && env > \"$2\" && mv \"$1.part\" \"$1\"\n",
    )
    .unwrap();
    let (got, env) = (dir.path().join("got.json"), dir.path().join("env.txt"));
    let command = vec![
        "sh".to_string(),
        script.display().to_string(),
        got.display().to_string(),
        env.display().to_string(),
    ];
    let mut running = start(&server, dir.path(), command, 10).await;
    let request = ask(&mut running).await;
    let env_text = {
        let payload: Value = serde_json::from_str(&wait_for_file(&got)).expect("JSON on stdin");
        assert_eq!(payload["request"]["id"], request.id);
        assert_eq!(payload["request"]["tool"], "run_shell");
        assert_eq!(
            payload["request"]["gate"]["action"],
            "touch /tmp/vigil-notify-never-run"
        );
        assert_eq!(payload["agent"]["name"], "notify-test");
        assert_eq!(payload["agent"]["model"], "test-model");
        assert_eq!(payload["agent"]["pid"], std::process::id());
        assert_eq!(payload["session"].as_str(), running.session_id.as_deref());
        wait_for_file(&env)
    };
    assert!(env_text.contains("PATH="), "the script got an environment");
    assert!(!env_text.contains("sk-notify-secret-0001"), "{env_text}");
    assert!(!env_text.contains("tok-notify-0002"), "{env_text}");
    // The approval still waits for the operator: the command decides nothing.
    assert!(!Path::new("/tmp/vigil-notify-never-run").exists());
    assert!(
        running.finish(Duration::from_secs(30)).await,
        "the agent stopped"
    );

    // 2. A command that fails: one Notice that says how.
    let failing = vec![
        "sh".to_string(),
        "-c".to_string(),
        "echo no route to phone >&2; exit 3".to_string(),
    ];
    let mut running = start(&server, dir.path(), failing, 10).await;
    ask(&mut running).await;
    let seen = until(&mut running.events, |e| {
        notice(std::slice::from_ref(e)).is_some()
    })
    .await;
    let text = notice(&seen).unwrap();
    assert!(
        text.contains("exited with code 3: no route to phone"),
        "{text}"
    );
    assert!(
        running.finish(Duration::from_secs(30)).await,
        "the agent stopped"
    );

    // 3. A command past its limit: its process group is killed.
    let pid_file = dir.path().join("pid");
    let slow = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("echo $$ > {}; sleep 30 & wait", pid_file.display()),
    ];
    let mut running = start(&server, dir.path(), slow, 1).await;
    let started = Instant::now();
    ask(&mut running).await;
    let seen = until(&mut running.events, |e| {
        notice(std::slice::from_ref(e)).is_some()
    })
    .await;
    let text = notice(&seen).unwrap();
    assert!(text.contains("timed out"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let pid: i32 = wait_for_file(&pid_file).trim().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !is_gone(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(is_gone(pid), "the timed-out command {pid} still runs");
    assert!(
        running.finish(Duration::from_secs(30)).await,
        "the agent stopped"
    );
}
