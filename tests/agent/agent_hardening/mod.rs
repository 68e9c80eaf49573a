//! The hardened agent against a misbehaving scripted server, in process:
//! retries (429 + Retry-After, 500, cut stream, empty body), null-content
//! rejection, slow chunks, the manual Retry command, parallel calls with
//! mixed approvals, a long context-limited run, on-demand compaction, the
//! Anthropic dialect, and resume of a recorded session.
//!
//! This file: the harness and the model server's failures; `turns`: whole
//! turns (parallel calls, long runs, compaction, the Anthropic dialect,
//! resume).

mod turns;

use super::common;

use common::until;
use std::time::{Duration, Instant};

use serde_json::Value;
use vigil::agent::approval::Policy;
use vigil::agent::assemble::{Running, StartOptions, start_agent_with};
use vigil::config::{ApiDialect, Config};
use vigil_protocol::{AgentCommand, AgentEvent, ApprovalDecision, FailureKind, TurnOutcome};
use vigil_scripted::{Scenario, ScriptedServer};

struct H {
    running: Running,
    server: ScriptedServer,
    dir: tempfile::TempDir,
}

fn config(server: &ScriptedServer, dir: &std::path::Path) -> Config {
    let mut c = Config::default();
    c.model.base_url = server.base_url();
    c.model.model = "test-model".into();
    c.model.retry_base_ms = 10;
    c.paths.data_dir = Some(dir.to_path_buf());
    // Agent behaviour is under test here, not the managed pane.
    c.tmux.mode = vigil::config::TmuxMode::Off;
    c
}

async fn start(scenario: &str, policy: Policy, tweak: impl FnOnce(&mut Config)) -> H {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Scenario::from_toml_str(scenario).unwrap())
        .await
        .unwrap();
    let mut c = config(&server, dir.path());
    tweak(&mut c);
    let running = start_agent_with(&c, false, policy, StartOptions::default())
        .await
        .unwrap();
    H {
        running,
        server,
        dir,
    }
}

fn finished(e: &AgentEvent) -> bool {
    matches!(e, AgentEvent::TurnFinished { .. })
}

async fn turn(h: &mut H, text: &str) -> Vec<AgentEvent> {
    h.running
        .commands
        .send(AgentCommand::UserMessage { text: text.into() })
        .unwrap();
    until(&mut h.running.events, finished).await
}

fn completed(ev: &[AgentEvent]) -> bool {
    matches!(
        ev.last(),
        Some(AgentEvent::TurnFinished {
            outcome: TurnOutcome::Completed
        })
    )
}

fn last_text(ev: &[AgentEvent]) -> String {
    ev.iter()
        .rev()
        .find_map(|e| match e {
            AgentEvent::AssistantMessage { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn status_429_with_retry_after_then_success() {
    let mut h = start(
        "[[rule]]\nstatus = 429\nretry_after = 1\n[[rule]]\ntext = \"fine now\"\n",
        Policy::Ask,
        |_| {},
    )
    .await;
    let t0 = Instant::now();
    let ev = turn(&mut h, "hi").await;
    assert!(completed(&ev), "{ev:#?}");
    assert!(
        t0.elapsed() >= Duration::from_millis(950),
        "Retry-After honoured"
    );
    assert!(ev.iter().any(|e| matches!(
        e,
        AgentEvent::RetryScheduled {
            attempt: 1,
            delay_ms: 1000,
            ..
        }
    )));
    assert_eq!(last_text(&ev), "fine now");
}

#[tokio::test]
async fn status_500_then_success_and_empty_body_fallback() {
    let mut h = start(
        "[[rule]]\nstatus = 500\n[[rule]]\nempty_body = true\n[[rule]]\ntext = \"recovered\"\n",
        Policy::Ask,
        |_| {},
    )
    .await;
    let ev = turn(&mut h, "hi").await;
    assert!(completed(&ev), "{ev:#?}");
    let retries = ev
        .iter()
        .filter(|e| matches!(e, AgentEvent::RetryScheduled { .. }))
        .count();
    assert_eq!(retries, 1, "{ev:#?}");
    // The empty 200 was answered by the non-streaming fallback, and said so.
    assert!(
        ev.iter().any(
            |e| matches!(e, AgentEvent::Notice { text } if text.contains("without streaming"))
        )
    );
    assert_eq!(last_text(&ev), "recovered");
}

#[tokio::test]
async fn cut_stream_is_discarded_and_asked_again() {
    let mut h = start(
        r#"
        [[rule]]
        text = "one two three four five six seven eight"
        cut_after_chunks = 3
        [[rule]]
        text = "complete answer"
        "#,
        Policy::Ask,
        |_| {},
    )
    .await;
    let ev = turn(&mut h, "hi").await;
    assert!(completed(&ev), "{ev:#?}");
    let discard = ev
        .iter()
        .position(|e| matches!(e, AgentEvent::AssistantDiscarded { chars } if *chars > 0))
        .expect("discard event");
    let retry = ev
        .iter()
        .position(|e| matches!(e, AgentEvent::RetryScheduled { .. }))
        .unwrap();
    assert!(discard < retry);
    let after: String = ev[retry..]
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AssistantDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(after, "complete answer");
    let messages: Vec<_> = ev
        .iter()
        .filter(|e| matches!(e, AgentEvent::AssistantMessage { .. }))
        .collect();
    assert_eq!(messages.len(), 1, "the cut attempt is no message");
}

#[tokio::test]
async fn null_content_rejecting_server_gets_empty_strings_and_slow_chunks_stream() {
    let mut h = start(
        r#"
        reject_null_content = true
        chunk_delay_ms = 60
        [[rule]]
        when = { role = "user" }
        [[rule.tool_calls]]
        name = "time"
        arguments = { format = "iso" }
        [[rule]]
        when = { role = "tool" }
        text = "It is {last_tool}, give or take a few slow words."
        "#,
        Policy::Ask,
        |c| c.model.idle_timeout_secs = 2,
    )
    .await;
    let ev = turn(&mut h, "what time is it").await;
    assert!(completed(&ev), "{ev:#?}");
    let deltas = ev
        .iter()
        .filter(|e| matches!(e, AgentEvent::AssistantDelta { .. }))
        .count();
    assert!(deltas >= 3, "slow text arrives in pieces");
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    let assistant = &reqs[1]["messages"][2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], "");
}

#[tokio::test]
async fn exhausted_retries_fail_the_turn_and_retry_command_reruns_the_round() {
    let mut h = start(
        "[[rule]]\nstatus = 503\ntimes = 2\n[[rule]]\ntext = \"back\"\n",
        Policy::Ask,
        |c| c.model.retry_attempts = 2,
    )
    .await;
    let ev = turn(&mut h, "hi").await;
    assert!(ev.iter().any(|e| matches!(
        e,
        AgentEvent::TurnFailed {
            kind: FailureKind::ModelUnreachable,
            ..
        }
    )));
    assert!(matches!(
        ev.last(),
        Some(AgentEvent::TurnFinished {
            outcome: TurnOutcome::Failed(m)
        }) if m.contains("503")
    ));
    h.running.commands.send(AgentCommand::Retry).unwrap();
    let ev = until(&mut h.running.events, finished).await;
    assert!(matches!(ev[0], AgentEvent::TurnContinued { .. }), "{ev:#?}");
    assert!(completed(&ev));
    assert_eq!(last_text(&ev), "back");
    // The retried request carried the same single user message.
    let last = h.server.requests().pop().unwrap();
    let users = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, 1);
}
