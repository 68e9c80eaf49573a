//! A realistic journal for the attach benchmark: turns with streamed text,
//! gated `run_shell` calls with their approval and output, context usage.

use vigil_protocol::{AgentEvent, OutputStream, ToolSummary};

fn approval(id: u64, call: &str, command: &str) -> AgentEvent {
    let request = serde_json::json!({
        "id": id, "call_id": call, "tool": "run_shell", "target": "local",
        "gate": {"action": command, "model_risk": "medium", "mutation": true,
                 "privesc": false, "why": "bench", "editable_field": "command"},
        "estimate": "medium", "estimate_reason": "writes files"
    });
    AgentEvent::ApprovalRequested {
        request: serde_json::from_value(request).expect("an approval request"),
    }
}

fn resolved(id: u64) -> AgentEvent {
    serde_json::from_value(serde_json::json!({
        "type": "approval_resolved", "id": id,
        "decision": {"decision": "approve_once"}, "decided_by": {"by": "operator"}
    }))
    .expect("a resolution")
}

/// One turn's events (about 40).
fn turn(i: usize, out: &mut Vec<AgentEvent>) {
    let call = format!("call_{i}");
    let command = format!("ls -l /var/log/app-{i} && tail -n 20 /var/log/app-{i}/current");
    out.push(AgentEvent::TurnStarted {
        user: format!("look at the logs of app {i} and tell me what failed"),
    });
    let answer = format!(
        "Looking at app {i}: I will list its log directory and read the last lines of \
         the current log. **Nothing is changed**; the command only reads. `ls -l` shows \
         sizes and dates, `tail` the newest entries."
    );
    for piece in answer.as_bytes().chunks(16) {
        out.push(AgentEvent::AssistantDelta {
            text: String::from_utf8_lossy(piece).into_owned(),
        });
    }
    out.push(AgentEvent::AssistantMessage { text: answer });
    out.push(AgentEvent::ToolCallRequested {
        call_id: call.clone(),
        name: "run_shell".into(),
        arguments: format!("{{\"command\":\"{command}\",\"risk\":\"medium\"}}"),
    });
    out.push(approval(i as u64 + 1, &call, &command));
    out.push(resolved(i as u64 + 1));
    out.push(AgentEvent::ToolStarted {
        call_id: call.clone(),
        name: "run_shell".into(),
        summary: command,
    });
    for k in 0..8 {
        out.push(AgentEvent::ToolOutput {
            call_id: call.clone(),
            stream: OutputStream::Stdout,
            text: format!(
                "2026-11-23T10:{k:02}:00Z app-{i} worker {k}: request served in {k}3 ms\n\
                 2026-11-23T10:{k:02}:01Z app-{i} worker {k}: cache miss for key user/{i}/{k}\n"
            ),
        });
        if k == 4 {
            // Another event between the deltas, as info lines arrive.
            out.push(AgentEvent::ContextUsage {
                used: 1000 + i as u64,
                limit: 32_768,
            });
        }
    }
    out.push(AgentEvent::ToolCompleted {
        call_id: call,
        name: "run_shell".into(),
        summary: ToolSummary {
            ok: true,
            exit_code: Some(0),
            duration_ms: 12,
            truncated: false,
            spill: Vec::new(),
            seen: Vec::new(),
            error: None,
        },
    });
    out.push(AgentEvent::AssistantMessage {
        text: format!("App {i} served its requests; the cache missed for a few users."),
    });
    out.push(AgentEvent::TurnFinished {
        outcome: vigil_protocol::TurnOutcome::Completed,
    });
}

/// `n` events: a session start, then whole turns (the last one cut).
pub fn events(n: usize) -> Vec<AgentEvent> {
    let mut out = vec![AgentEvent::SessionStarted {
        model: "bench".into(),
        target: "local".into(),
        demo: false,
        mirror: None,
        tools: vec!["run_shell".into(), "read_file".into()],
    }];
    let mut i = 0;
    while out.len() < n {
        turn(i, &mut out);
        i += 1;
    }
    out.truncate(n);
    out
}
