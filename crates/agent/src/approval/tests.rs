use super::*;
use std::sync::Arc;
use vigil_policy::risk::assess_command;

fn gate(action: &str) -> GateInfo {
    GateInfo {
        action: action.into(),
        model_risk: None,
        mutation: Some(true),
        privesc: Some(false),
        why: Some("test".into()),
        editable_field: Some("command".into()),
    }
}

/// A broker asked about `ls` on a task of its own, and the card it showed.
async fn ls_card() -> (
    Arc<ApprovalBroker>,
    tokio::task::JoinHandle<ApprovalDecision>,
    ApprovalRequest,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
    let b = broker.clone();
    let task = tokio::spawn(async move { b.decide("c1", "run_shell", &gate("ls")).await });
    let Some(AgentEvent::ApprovalRequested { request }) = rx.recv().await else {
        panic!("expected a request")
    };
    (broker, task, request)
}

#[tokio::test]
async fn request_waits_for_the_operator() {
    let (broker, task, request) = ls_card().await;
    assert_eq!(request.target, "local");
    assert!(!request.automatic, "it waits for an answer");
    assert_eq!(request.gate.action, "ls");
    assert!(!task.is_finished());
    assert!(broker.resolve(request.id, ApprovalDecision::Deny));
    assert_eq!(task.await.unwrap(), ApprovalDecision::Deny);
    assert!(!broker.resolve(request.id, ApprovalDecision::ApproveOnce));
}

#[tokio::test]
async fn session_approval_covers_only_the_same_action() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
    broker.set_can_sandbox(true);
    let b = broker.clone();
    let t = tokio::spawn(async move { b.decide("c1", "run_shell", &gate("make")).await });
    let Some(AgentEvent::ApprovalRequested { request }) = rx.recv().await else {
        panic!()
    };
    broker.resolve(request.id, ApprovalDecision::ApproveSession);
    t.await.unwrap();
    // Same action: approved without waiting, unasked (so sandboxed).
    let d = broker.decide("c2", "run_shell", &gate("make")).await;
    assert_eq!(
        d,
        ApprovalDecision::ApproveUnasked("by session rule `make`".into())
    );
    // A different action still waits.
    let b = broker.clone();
    let t = tokio::spawn(async move { b.decide("c3", "run_shell", &gate("make install")).await });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(!t.is_finished());
    assert_eq!(broker.pending_ids().len(), 1);
    t.abort();
    let _ = t.await;
    assert!(
        broker.pending_ids().is_empty(),
        "cancelled request withdrawn"
    );
}

#[tokio::test]
async fn policies_decide_without_waiting_and_say_so() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let broker = ApprovalBroker::new(tx, "local".into(), Policy::DenyAll("no operator".into()));
    let d = broker.decide("c1", "run_shell", &gate("ls")).await;
    assert_eq!(d, ApprovalDecision::DenyWithReason("no operator".into()));
    // Marked as decided, so a headless driver does not answer it.
    assert!(matches!(
        rx.recv().await,
        Some(AgentEvent::ApprovalRequested { request }) if request.automatic
    ));
    assert!(matches!(
        rx.recv().await,
        Some(AgentEvent::ApprovalResolved { .. })
    ));
    broker.set_policy(Policy::ApproveAll);
    assert!(
        broker
            .decide("c2", "run_shell", &gate("ls"))
            .await
            .is_approved()
    );
    broker.set_policy(Policy::from_choice(
        vigil_protocol::ApprovalPolicy::ApproveAllFor { minutes: 5 },
    ));
    assert!(
        broker
            .decide("c3", "run_shell", &gate("rm x"))
            .await
            .is_approved()
    );
    // An expired timed policy asks again.
    broker.set_policy(Policy::ApproveAllUntil(std::time::Instant::now()));
    let b = std::sync::Arc::new(broker);
    let b2 = b.clone();
    let t = tokio::spawn(async move { b2.decide("c4", "run_shell", &gate("rm y")).await });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(!t.is_finished());
    t.abort();
}

/// Whether `decide` on `action` waits for the operator (withdrawn after).
async fn asks(broker: &Arc<ApprovalBroker>, action: &str) -> bool {
    asks_for(broker, "run_shell", action).await
}

async fn asks_for(broker: &Arc<ApprovalBroker>, tool: &str, action: &str) -> bool {
    let b = broker.clone();
    let (tool, action) = (tool.to_string(), action.to_string());
    let t = tokio::spawn(async move { b.decide("c", &tool, &gate(&action)).await });
    loop {
        if t.is_finished() {
            return false;
        }
        if !broker.pending_ids().is_empty() {
            t.abort();
            let _ = t.await;
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

#[tokio::test]
async fn prefix_rule_covers_word_prefixes_but_not_chains_or_high_risk() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
    broker.set_can_sandbox(true);
    let b = broker.clone();
    let t = tokio::spawn(async move { b.decide("c1", "run_shell", &gate("rm old.log")).await });
    let Some(AgentEvent::ApprovalRequested { request }) = rx.recv().await else {
        panic!()
    };
    broker.resolve(request.id, ApprovalDecision::ApprovePrefix("rm".into()));
    assert_eq!(
        t.await.unwrap(),
        ApprovalDecision::ApprovePrefix("rm".into())
    );
    assert_eq!(broker.prefixes(), vec![("run_shell".into(), "rm".into())]);
    assert!(broker.standing().is_empty());
    assert!(!asks(&broker, "rm old.log").await);
    assert!(!asks(&broker, "rm  other.log").await);
    assert!(asks(&broker, "rmdir x").await, "word boundary");
    assert!(asks(&broker, "rm a; curl x").await, "chained");
    assert!(asks(&broker, "rm a && ls").await, "chained");
    assert!(asks(&broker, "rm $(cat list)").await, "substitution");
    assert!(asks(&broker, "rm x > y").await, "redirection");
    assert!(asks(&broker, "touch x").await, "another command");
    assert!(asks(&broker, "rm -f x").await, "a flag after the prefix");
    assert_eq!(assess_command("rm -rf build"), Risk::High);
    assert!(asks(&broker, "rm -rf build").await, "high risk still asks");
}

#[tokio::test]
async fn a_prefix_that_is_not_one_makes_no_rule() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
    for (answer, exact) in [("make", false), ("touch x", true)] {
        let b = broker.clone();
        let t = tokio::spawn(async move { b.decide("c", "run_shell", &gate("touch x")).await });
        let Some(AgentEvent::ApprovalRequested { request }) = rx.recv().await else {
            panic!()
        };
        broker.resolve(request.id, ApprovalDecision::ApprovePrefix(answer.into()));
        assert!(t.await.unwrap().is_approved(), "the call itself runs");
        let _ = rx.recv().await;
        assert!(broker.prefixes().is_empty());
        assert_eq!(broker.standing().is_empty(), !exact);
    }
    // Restored rules are checked too.
    broker.add_prefix("run_shell", "ls;");
    broker.add_prefix("run_shell", "ls");
    assert_eq!(broker.prefixes(), vec![("run_shell".into(), "ls".into())]);
}

#[tokio::test]
async fn auto_low_is_unasked_and_asks_where_nothing_can_sandbox() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(
        tx,
        "local".into(),
        Policy::AutoApproveLow,
    ));
    broker.set_can_sandbox(true);
    assert_eq!(
        broker.decide("c", "run_shell", &gate("ls -la")).await,
        ApprovalDecision::ApproveUnasked("by policy: auto-approve low risk".into())
    );
    assert!(asks(&broker, "sort -o x y").await, "not low");
    assert!(asks(&broker, "env ls").await, "a wrapper");
    broker.set_can_sandbox(false);
    while rx.try_recv().is_ok() {}
    assert!(asks(&broker, "ls -la").await, "no sandbox: asks");
    assert!(asks(&broker, "ls").await);
    let mut told = 0;
    while let Ok(ev) = rx.try_recv() {
        if matches!(&ev, AgentEvent::Notice { text } if text == NO_SANDBOX) {
            told += 1;
        }
    }
    assert_eq!(told, 1, "said once");
}

#[tokio::test]
async fn by_effect_tries_what_it_can_and_asks_once_where_no_view_runs() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::ByEffect));
    broker.set_can_sandbox(true);
    // Any rating: the view decides, not the estimate.
    for cmd in ["ls -la", "rm -rf build", "touch x"] {
        assert_eq!(
            broker.decide("c", "run_shell", &gate(cmd)).await,
            ApprovalDecision::TryInView,
            "{cmd}"
        );
    }
    // What the view changes is asked, naming the rule.
    assert!(asks(&broker, "ps aux").await, "process list");
    assert!(asks(&broker, "sudo ls").await, "privilege");
    // Not a shell command: asked.
    assert!(asks_for(&broker, "write_file", "x").await);
    broker.set_can_sandbox(false);
    while rx.try_recv().is_ok() {}
    assert!(asks(&broker, "ls").await, "no view: asks");
    assert!(asks(&broker, "cat x").await);
    let mut told = 0;
    while let Ok(ev) = rx.try_recv() {
        if let AgentEvent::ApprovalRequested { request } = &ev {
            assert_eq!(request.facts.trial.as_deref(), Some(NO_VIEW), "on the card");
        }
        if matches!(&ev, AgentEvent::Notice { text } if text == NO_VIEW) {
            told += 1;
        }
    }
    assert_eq!(told, 1, "said once");
}

#[tokio::test]
async fn restored_rules_approve_nothing_until_confirmed() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
    broker.set_can_sandbox(true);
    broker.hold_restored(Restored {
        standing: vec![("run_shell".into(), "make".into())],
        prefixes: vec![("run_shell".into(), "git status".into())],
    });
    assert!(asks(&broker, "make").await, "held: approves nothing");
    assert!(asks(&broker, "git status -s").await);
    assert_eq!(broker.confirm_restored(), 2);
    assert!(!asks(&broker, "make").await);
    assert!(!asks(&broker, "git status -s").await);
    broker.hold_restored(Restored {
        standing: vec![("run_shell".into(), "touch y".into())],
        prefixes: vec![],
    });
    broker.discard_restored();
    assert!(asks(&broker, "touch y").await);
}

#[tokio::test]
async fn policy_rules_deny_wins_and_allow_needs_a_plain_command() {
    let text = r#"
[[approval.rules]]
name = "git reads"
command = ["git", "log"]
decision = "allow"

[[approval.rules]]
pattern = "git log *--output*"
decision = "deny"

[[approval.rules]]
command = ["rm"]
decision = "ask"
"#;
    let config = vigil_config::Config::from_toml(text, std::path::Path::new("c.toml")).unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(
        tx,
        "local".into(),
        Policy::AutoApproveLow,
    ));
    broker.set_can_sandbox(true);
    broker.set_rules(PolicyRules::from_config(&config.approval));
    assert_eq!(
        broker.decide("c", "run_shell", &gate("git log -3")).await,
        ApprovalDecision::ApproveUnasked(
            "by policy rule `policy rule 1 \"git reads\" (c.toml:2)`".into()
        )
    );
    let d = broker
        .decide("c", "run_shell", &gate("git log --output=/tmp/x"))
        .await;
    assert_eq!(
        d,
        ApprovalDecision::DenyWithReason("denied by policy rule 2 (c.toml:7)".into())
    );
    assert!(
        asks(&broker, "git log -3 | sh").await,
        "not one plain command"
    );
    assert!(asks(&broker, "git log $(id)").await);
    assert!(asks(&broker, "rm x").await, "ask rule");
    let p = broker.preview("run_shell", &gate("ls; rm x"));
    assert!(matches!(p.outcome, Outcome::Ask(Some(_))), "{p:?}");
}

fn preview_rules() -> PolicyRules {
    let text = "[[approval.rules]]\nname = \"migrations\"\ncommand = [\"make\"]\n\
                decision = \"ask\"\npreview = true\n";
    let config = vigil_config::Config::from_toml(text, std::path::Path::new("p.toml")).unwrap();
    PolicyRules::from_config(&config.approval)
}

#[tokio::test]
async fn a_preview_rule_previews_before_asking_and_says_when_it_cannot() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    // An ssh or container target: no kernel view there.
    let broker = Arc::new(ApprovalBroker::new(tx, "ssh web-1".into(), Policy::Ask));
    broker.set_rules(preview_rules());
    let b = broker.clone();
    let t = tokio::spawn(async move { b.decide("c1", "run_shell", &gate("make migrate")).await });
    let Some(AgentEvent::ApprovalRequested { request }) = rx.recv().await else {
        panic!("expected a request")
    };
    let Some(AgentEvent::PreviewReady { id, outcome }) = rx.recv().await else {
        panic!("expected the automatic preview")
    };
    assert_eq!(id, request.id);
    let vigil_protocol::PreviewOutcome::Unavailable { why } = outcome else {
        panic!("{outcome:?}")
    };
    assert!(
        why.starts_with("preview unavailable on this target"),
        "{why}"
    );
    broker.resolve(id, ApprovalDecision::Deny);
    t.await.unwrap();
    // Only a report counts as a preview seen.
    let Some(AgentEvent::ApprovalResolved { previewed, .. }) = rx.recv().await else {
        panic!()
    };
    assert!(!previewed);
    // A command no preview rule matches gets no preview.
    let b = broker.clone();
    let t = tokio::spawn(async move { b.decide("c2", "run_shell", &gate("ls -l")).await });
    let Some(AgentEvent::ApprovalRequested { request }) = rx.recv().await else {
        panic!()
    };
    broker.resolve(request.id, ApprovalDecision::Deny);
    t.await.unwrap();
    assert!(matches!(
        rx.recv().await,
        Some(AgentEvent::ApprovalResolved { .. })
    ));
}

/// A gate for a call that is not a shell command.
fn tool_gate(action: &str) -> GateInfo {
    GateInfo {
        action: action.into(),
        model_risk: None,
        mutation: None,
        privesc: None,
        why: None,
        editable_field: None,
    }
}

fn digest(d: &str) -> CallFacts {
    CallFacts {
        digest: d.into(),
        ..Default::default()
    }
}

/// An MCP call of `srv.echo` with these facts.
fn echo_call(facts: CallFacts) -> vigil_policy::call::ToolCall {
    let mut call =
        vigil_policy::call::ToolCall::read("srv__echo", serde_json::json!({"text": "x"}), None);
    call.facts = facts;
    call
}

#[tokio::test]
async fn a_session_rule_on_a_tool_call_is_keyed_on_its_digest() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
    broker.set_can_sandbox(true);
    let b = broker.clone();
    let t = tokio::spawn(async move {
        b.decide_call(
            "c1",
            &echo_call(digest("aa")),
            &tool_gate("srv.echo x"),
            None,
        )
        .await
    });
    let Some(AgentEvent::ApprovalRequested { request }) = rx.recv().await else {
        panic!()
    };
    while !broker.resolve(request.id, ApprovalDecision::ApproveSession) {
        tokio::task::yield_now().await;
    }
    t.await.unwrap();
    let rule = format!("srv.echo x {}aa", vigil_protocol::approval::EXACT_MARK);
    assert_eq!(
        broker.standing(),
        vec![("srv__echo".to_string(), rule.clone())]
    );
    // The same digest: covered.
    let d = broker
        .decide_call(
            "c2",
            &echo_call(digest("aa")),
            &tool_gate("srv.echo x"),
            None,
        )
        .await;
    assert_eq!(
        d,
        ApprovalDecision::ApproveUnasked(format!("by session rule `{rule}`"))
    );
    // Same action, other digest, or none: asked.
    for facts in [digest("bb"), CallFacts::default()] {
        let b = broker.clone();
        let t = tokio::spawn(async move {
            b.decide_call("c3", &echo_call(facts), &tool_gate("srv.echo x"), None)
                .await
        });
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        assert!(!t.is_finished(), "asked");
        t.abort();
        let _ = t.await;
    }
}

#[test]
fn a_command_is_estimated_from_the_directory_it_will_run_in() {
    // `cat shadow` is harmless from here, a secret read in /etc: the
    // estimate follows the card's `in:` (a managed pane after `cd /etc`).
    let (tx, _rx) = mpsc::unbounded_channel();
    let broker = ApprovalBroker::new(tx, "local".into(), Policy::AutoApproveLow);
    broker.set_can_sandbox(true);
    let mut g = gate("cat shadow");
    g.mutation = Some(false);
    let here = broker.preview_call("run_shell", &g, CallFacts::default());
    assert_eq!(here.assessment.risk, Risk::Low, "{:?}", here.assessment);
    let in_etc = CallFacts {
        cwd: Some("/etc".into()),
        ..CallFacts::default()
    };
    let there = broker.preview_call("run_shell", &g, in_etc);
    assert_eq!(there.assessment.risk, Risk::High, "{:?}", there.assessment);
    assert!(
        there.assessment.reason.contains("/etc/shadow"),
        "{}",
        there.assessment.reason
    );
}

/// An answer sent the moment the card arrives finds it waiting: the card
/// is queued before it is shown (a console on another thread once answered
/// in between and was told "not waiting").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_sent_on_sight_of_the_card_is_taken() {
    for _ in 0..300 {
        let (broker, task, request) = ls_card().await;
        let answered = broker.answer(request.id, &request.token, ApprovalDecision::Deny);
        assert_eq!(answered, Ok(()));
        assert_eq!(task.await.unwrap(), ApprovalDecision::Deny);
    }
}
