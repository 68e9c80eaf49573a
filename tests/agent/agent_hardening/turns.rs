//! Whole turns against the scripted server: parallel calls with mixed
//! approvals, hundreds of calls at a small context limit, compaction on
//! demand, the Anthropic dialect, and resume of a recorded session.

use super::*;

/// Three calls; the first and the third meet: each marks its arrival in
/// `meet` and waits (at most 30 s) for the other's, so each says its
/// letter only when both ran at once (run one after the other, they say
/// `A-alone`, `C-alone`). No clock decides it, however slow the machine.
fn parallel(meet: &std::path::Path) -> String {
    let (a, c) = (meet.join("a"), meet.join("c"));
    let (a, c) = (a.display(), c.display());
    let wait = |me: &str, mine: &dyn std::fmt::Display, other: &dyn std::fmt::Display| {
        format!(
            "touch {mine}; i=0; while [ ! -e {other} ] && [ $i -lt 600 ]; do sleep 0.05; \
             i=$((i+1)); done; if [ -e {other} ]; then echo {me}; else echo {me}-alone; fi"
        )
    };
    format!(
        r#"
[[rule]]
when = {{ role = "user" }}
text = "Three at once."
[[rule.tool_calls]]
name = "run_shell"
arguments = {{ command = "{first}", risk = "medium", mutation = true, privesc = false, why = "t" }}
[[rule.tool_calls]]
name = "run_shell"
arguments = {{ command = "echo B", risk = "medium", mutation = true, privesc = false, why = "t" }}
[[rule.tool_calls]]
name = "run_shell"
arguments = {{ command = "{third}", risk = "medium", mutation = true, privesc = false, why = "t" }}
[[rule]]
when = {{ role = "tool" }}
text = "Done."
"#,
        first = wait("A", &a, &c),
        third = wait("C", &c, &a),
    )
}

#[tokio::test]
async fn parallel_calls_with_mixed_approvals_keep_the_model_order() {
    let meet = tempfile::tempdir().unwrap();
    let mut h = start(&parallel(meet.path()), Policy::Ask, |_| {}).await;
    h.running
        .commands
        .send(AgentCommand::UserMessage { text: "go".into() })
        .unwrap();
    // All three approvals are pending at once: the calls run concurrently.
    let mut requests = Vec::new();
    while requests.len() < 3 {
        let ev = until(&mut h.running.events, |e| {
            matches!(e, AgentEvent::ApprovalRequested { .. })
        })
        .await;
        if let Some(AgentEvent::ApprovalRequested { request }) = ev.last() {
            requests.push(request.clone());
        }
    }
    for r in &requests {
        let decision = if r.gate.action == "echo B" {
            vigil_protocol::Answer::Deny
        } else {
            vigil_protocol::Answer::ApproveOnce
        };
        h.running
            .commands
            .send(AgentCommand::Approval {
                id: r.id,
                decision,
                token: r.token.clone(),
            })
            .unwrap();
    }
    let ev = until(&mut h.running.events, finished).await;
    assert!(completed(&ev), "{ev:#?}");
    let req = h.server.requests().pop().unwrap();
    let msgs = req["messages"].as_array().unwrap();
    let calls = msgs[2]["tool_calls"].as_array().unwrap();
    let results: Vec<&Value> = msgs[3..].iter().collect();
    assert_eq!(results.len(), 3);
    for (call, result) in calls.iter().zip(&results) {
        assert_eq!(call["id"], result["tool_call_id"], "model order kept");
    }
    let text = |i: usize| results[i]["content"].as_str().unwrap().to_string();
    // Each of the two approved calls saw the other running.
    assert!(text(0).contains("A\\n"), "{}", text(0));
    assert!(text(1).contains("denied"), "{}", text(1));
    assert!(text(2).contains("C\\n"), "{}", text(2));
}

const MANY_TIMES: &str = r#"
[[rule]]
when = { role = "user", contains = "vigil-compaction" }
times = 0
text = "Summary: the operator asked for the time, again and again."
[[rule]]
when = { role = "user", contains = "many times" }
[[rule.tool_calls]]
name = "time"
arguments = { format = "iso" }
[[rule]]
when = { role = "tool" }
times = 299
[[rule.tool_calls]]
name = "time"
arguments = { format = "iso" }
[[rule]]
when = { role = "tool" }
text = "All done."
"#;

#[tokio::test]
async fn hundreds_of_calls_at_a_small_context_limit_end_cleanly() {
    let mut h = start(MANY_TIMES, Policy::ApproveAll, |c| {
        c.model.context_limit = Some(2000);
        c.agent.max_rounds = 400;
        c.tools.shell_enabled = false;
        c.tools.files_enabled = false;
    })
    .await;
    h.running
        .commands
        .send(AgentCommand::UserMessage {
            text: "ask the time many times".into(),
        })
        .unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(40), async {
        let mut all = Vec::new();
        loop {
            let e = h.running.events.recv().await.unwrap();
            let done = finished(&e);
            all.push(e);
            if done {
                return all;
            }
        }
    })
    .await
    .expect("no hang at the context limit");
    assert!(completed(&ev));
    assert_eq!(last_text(&ev), "All done.");
    let calls = ev
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolCompleted { .. }))
        .count();
    assert_eq!(calls, 300);
    let compactions = ev
        .iter()
        .filter(|e| matches!(e, AgentEvent::ContextCompacted { method, .. } if method == "summary"))
        .count();
    assert!(compactions >= 3, "compacted {compactions} times");
    let max_used = ev
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ContextUsage { used, limit } => {
                assert_eq!(*limit, 2000);
                Some(*used)
            }
            _ => None,
        })
        .max()
        .unwrap();
    assert!(max_used <= 2000, "context kept under the limit: {max_used}");
    // The model never got a request above the limit (chars/4 of the body).
    let biggest = h
        .server
        .requests()
        .iter()
        .map(|r| r.to_string().len() / 4)
        .max()
        .unwrap();
    assert!(biggest < 2400, "largest request ~{biggest} tokens");
    // The session file still holds every call.
    let sessions = h.dir.path().join("sessions");
    let session = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let messages = std::fs::read_to_string(session.path().join("messages.jsonl")).unwrap();
    assert_eq!(messages.matches("\"role\":\"tool\"").count(), 300);
}

#[tokio::test]
async fn compact_command_summarises_on_demand() {
    let mut h = start(
        "[[rule]]\nwhen = { role = \"user\", contains = \"vigil-compaction\" }\ntimes = 0\ntext = \"SUMMARY\"\n[[rule]]\ntimes = 0\ntext = \"ok {last_user}\"\n",
        Policy::Ask,
        |_| {},
    )
    .await;
    for i in 0..4 {
        turn(&mut h, &format!("message {i} {}", "x".repeat(200))).await;
    }
    h.running.commands.send(AgentCommand::Compact).unwrap();
    until(
        &mut h.running.events,
        |e| matches!(e, AgentEvent::ContextCompacted { method, .. } if method == "summary"),
    )
    .await;
    turn(&mut h, "after").await;
    let last = h.server.requests().pop().unwrap();
    let msgs = last["messages"].as_array().unwrap();
    assert!(msgs[1]["content"].as_str().unwrap().contains("SUMMARY"));
    assert!(msgs.len() < 10, "{last:#}");
}

#[tokio::test]
async fn a_summary_bigger_than_what_it_replaces_is_not_applied() {
    let long = "S".repeat(3000);
    let mut h = start(
        &format!("[[rule]]\nwhen = {{ role = \"user\", contains = \"vigil-compaction\" }}\ntimes = 0\ntext = \"{long}\"\n[[rule]]\ntimes = 0\ntext = \"ok {{last_user}}\"\n"),
        Policy::Ask,
        |_| {},
    )
    .await;
    for i in 0..4 {
        turn(&mut h, &format!("message {i}")).await;
    }
    h.running.commands.send(AgentCommand::Compact).unwrap();
    let said = until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::Notice { text } if text.contains("would not make the context smaller"))
            || matches!(e, AgentEvent::ContextCompacted { .. })
    })
    .await;
    assert!(
        !said.iter().any(
            |e| matches!(e, AgentEvent::ContextCompacted { before, after, .. } if after >= before)
        ),
        "{said:#?}"
    );
    turn(&mut h, "after").await;
    let last = h.server.requests().pop().unwrap();
    let text = last.to_string();
    assert!(!text.contains(&long), "the bigger summary was not applied");
    assert!(text.contains("message 0"), "the turns were kept");
}

#[tokio::test]
async fn anthropic_dialect_runs_tools_with_the_same_contract() {
    let mut h = start(
        r#"
        [[rule]]
        when = { role = "user" }
        text = "Checking."
        [[rule.tool_calls]]
        name = "time"
        arguments = { format = "iso" }
        [[rule]]
        when = { role = "tool" }
        text = "The time is known."
        "#,
        Policy::Ask,
        |c| {
            c.model.api = ApiDialect::Anthropic;
            c.model.api_key = Some("sk-ant-test-key".into());
        },
    )
    .await;
    let ev = turn(&mut h, "time please").await;
    assert!(completed(&ev), "{ev:#?}");
    assert_eq!(last_text(&ev), "The time is known.");
    assert!(
        ev.iter()
            .any(|e| matches!(e, AgentEvent::ToolCompleted { summary, .. } if summary.ok))
    );
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0]["system"].is_string());
    let names: Vec<&str> = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"time") && names.is_sorted(), "{names:?}");
    let blocks = reqs[1]["messages"][2]["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "tool_result");
    let headers = &h.server.request_headers()[0];
    let get = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("x-api-key").as_deref(), Some("sk-ant-test-key"));
    assert!(get("anthropic-version").is_some());
    assert!(get("authorization").is_none());
}

#[tokio::test]
async fn resume_restores_conversation_and_standing_approvals() {
    let scenario = r#"
        [[rule]]
        when = { role = "user", contains = "first" }
        [[rule.tool_calls]]
        name = "run_shell"
        arguments = { command = "echo hi", risk = "medium", mutation = true, privesc = false, why = "t" }
        [[rule]]
        when = { role = "tool" }
        times = 0
        text = "ran"
        [[rule]]
        when = { role = "user", contains = "again" }
        [[rule.tool_calls]]
        name = "run_shell"
        arguments = { command = "echo hi", risk = "medium", mutation = true, privesc = false, why = "t" }
        "#;
    let mut h = start(scenario, Policy::Ask, |_| {}).await;
    h.running
        .commands
        .send(AgentCommand::UserMessage {
            text: "first".into(),
        })
        .unwrap();
    let ev = until(&mut h.running.events, |e| {
        matches!(e, AgentEvent::ApprovalRequested { .. })
    })
    .await;
    let Some(AgentEvent::ApprovalRequested { request }) = ev.last() else {
        unreachable!()
    };
    h.running
        .commands
        .send(AgentCommand::Approval {
            id: request.id,
            decision: vigil_protocol::Answer::ApproveSession,
            token: request.token.clone(),
        })
        .unwrap();
    until(&mut h.running.events, finished).await;
    let id = h.running.session_id.clone().unwrap();
    h.running.commands.send(AgentCommand::Quit).unwrap();
    // Stopped, its record closed, before the session is resumed.
    (&mut h.running.task).await.unwrap();

    let c = config(&h.server, h.dir.path());
    // Without the operator's word the log's rules approve nothing.
    let untrusted = start_agent_with(
        &c,
        false,
        Policy::Ask,
        StartOptions {
            resume: Some(id.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(untrusted.broker.standing().is_empty());
    assert_eq!(untrusted.broker.held().standing.len(), 1);
    assert!(untrusted.finish(Duration::from_secs(30)).await);

    let mut resumed = start_agent_with(
        &c,
        false,
        Policy::Ask,
        StartOptions {
            resume: Some(id.clone()),
            trust_session_rules: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let ev = until(&mut resumed.events, |e| {
        matches!(e, AgentEvent::SessionRestored { .. })
    })
    .await;
    let Some(AgentEvent::SessionRestored {
        id: rid,
        history,
        tools,
        standing_approvals,
        standing_prefixes,
        interrupted,
    }) = ev.last()
    else {
        unreachable!()
    };
    assert_eq!(rid, &id);
    assert_eq!(history[0].text, "first");
    assert_eq!(tools.len(), 1);
    assert!(interrupted.is_empty());
    assert_eq!(
        standing_approvals,
        &vec![("run_shell".to_string(), "echo hi".to_string())]
    );
    assert!(
        standing_prefixes.is_empty(),
        "an exact approval is no prefix"
    );
    resumed
        .commands
        .send(AgentCommand::UserMessage {
            text: "again".into(),
        })
        .unwrap();
    // The standing approval covers the same command without the operator:
    // unasked (sandboxed) where the target sandboxes, else it asks and
    // says why.
    let ev = until(&mut resumed.events, |e| {
        matches!(e, AgentEvent::ApprovalRequested { .. })
    })
    .await;
    let Some(AgentEvent::ApprovalRequested { request }) = ev.last() else {
        unreachable!()
    };
    if request.automatic {
        let ev = until(&mut resumed.events, finished).await;
        assert!(ev.iter().any(|e| matches!(
            e,
            AgentEvent::ApprovalResolved {
                decision: ApprovalDecision::ApproveUnasked(_),
                ..
            }
        )));
    } else {
        assert!(ev.iter().any(|e| matches!(
            e,
            AgentEvent::Notice { text } if text == vigil::agent::approval::NO_SANDBOX
        )));
        resumed
            .commands
            .send(AgentCommand::Approval {
                id: request.id,
                decision: vigil_protocol::Answer::ApproveOnce,
                token: request.token.clone(),
            })
            .unwrap();
        until(&mut resumed.events, finished).await;
    }
    let last = h.server.requests().pop().unwrap();
    assert!(last["messages"][1]["content"] == "first", "{last:#}");
}
