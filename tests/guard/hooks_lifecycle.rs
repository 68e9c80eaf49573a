//! `[[hooks.on]]` end to end through the real binary with no console
//! attached (`vigil exec`): session start and end, each call finished
//! (with its outcome), the approval that waited, and a failed turn each
//! fire exactly once; a failing hook is told once.

use super::hooks_common;

use hooks_common::Home;
use serde_json::Value;

/// `[[hooks.on]]` appending every payload to `log`, and one that always
/// fails.
fn config(home: &Home, log: &std::path::Path) -> String {
    let logger = home.file("log.sh");
    std::fs::write(
        &logger,
        format!("#!/bin/sh\ncat >> {:?}\n", log.display().to_string()),
    )
    .unwrap();
    format!(
        "[[approval.rules]]\ncommand = [\"echo\", \"hi\"]\ndecision = \"allow\"\n\n\
         [[hooks.on]]\nname = \"logger\"\ncommand = [\"sh\", {:?}]\n\n\
         [[hooks.on]]\nname = \"broken\"\ncommand = \"echo broken hook >&2; exit 7\"\n",
        logger.display().to_string()
    )
}

fn lines(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn count(all: &[Value], event: &str) -> usize {
    all.iter().filter(|v| v["event"] == event).count()
}

const TWO_CALLS: &str = r#"
[[rule]]
when = { role = "user" }
times = 1
text = "First."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "echo hi"
risk = "low"
mutation = false
privesc = false
why = "a call that runs"

[[rule]]
when = { role = "tool", contains = "hi" }
times = 1
text = "Second."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "touch made.txt"
risk = "medium"
mutation = true
privesc = false
why = "asked"

[[rule]]
when = { role = "tool" }
text = "done"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_lifecycle_event_fires_once_with_no_console() {
    let home = Home::new();
    let log = home.file("events.jsonl");
    let run = home.exec(&config(&home, &log), TWO_CALLS, &[]).await;
    assert_eq!(
        run.code, 3,
        "the second call waited for an operator: {}",
        run.stderr
    );
    let all = lines(&log);
    let session = run.session();
    assert!(
        all.iter()
            .all(|v| v["version"] == 1 && v["session_id"] == session.as_str())
    );
    assert_eq!(count(&all, "session_start"), 1, "{all:#?}");
    assert_eq!(count(&all, "approval_waiting"), 1, "{all:#?}");
    assert_eq!(count(&all, "session_end"), 1, "{all:#?}");
    assert_eq!(count(&all, "turn_failed"), 0, "{all:#?}");
    assert_eq!(
        all.last().unwrap()["event"],
        "session_end",
        "the end comes last"
    );
    let waiting = all
        .iter()
        .find(|v| v["event"] == "approval_waiting")
        .unwrap();
    assert_eq!(waiting["request"]["gate"]["action"], "touch made.txt");
    // Each call finished exactly once: the echo ran, the touch was cancelled.
    let finished: Vec<&Value> = all
        .iter()
        .filter(|v| v["event"] == "call_finished")
        .collect();
    let mut ids: Vec<&str> = finished
        .iter()
        .map(|v| v["call"]["call_id"].as_str().unwrap())
        .collect();
    ids.dedup();
    assert_eq!(finished.len(), 2, "{finished:#?}");
    assert_eq!(ids.len(), 2, "{finished:#?}");
    let echo = finished
        .iter()
        .find(|v| v["call"]["outcome"]["ok"] == true)
        .unwrap_or_else(|| panic!("the echo: {finished:#?}"));
    assert_eq!(echo["call"]["outcome"]["exit_code"], 0);
    assert!(all[0]["agent"]["pid"].as_u64().is_some());
    // The broken hook failed at every event and was told once.
    let told: Vec<&Value> = run
        .of("notice")
        .into_iter()
        .filter(|n| {
            n["text"]
                .as_str()
                .unwrap_or("")
                .contains("lifecycle hook `broken`")
        })
        .collect();
    assert_eq!(told.len(), 1, "{told:#?}");
    assert!(!home.file("made.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_fires_once() {
    let home = Home::new();
    let log = home.file("events.jsonl");
    let scenario = "[[rule]]\nstatus = 400\nerror_message = \"the model refuses\"\n";
    let run = home.exec(&config(&home, &log), scenario, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let all = lines(&log);
    assert_eq!(count(&all, "turn_failed"), 1, "{all:#?}");
    assert_eq!(count(&all, "session_start"), 1, "{all:#?}");
    assert_eq!(count(&all, "session_end"), 1, "{all:#?}");
    let failed = all.iter().find(|v| v["event"] == "turn_failed").unwrap();
    assert_eq!(failed["failure"]["kind"], "model_error", "{failed}");
}
