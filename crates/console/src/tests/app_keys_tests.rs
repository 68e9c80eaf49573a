//! Keys that must never surprise: Esc only goes back, cancelling is its own
//! key pressed twice and marks calls cancelled (not denied), approval keys
//! answer only in the approvals pane the operator moved to, Tab reaches a
//! waiting approval, and decisions leave a mark on the call.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::{Focus, Overlay};
use crate::panes::tools::CallStatus;
use crate::tests::app_tests::{app, key, look_at_approvals, press, request};
use vigil_protocol::{AgentCommand, AgentEvent, ApprovalDecision, DecidedBy, TurnOutcome};

fn waiting(app: &mut crate::app::App, id: u64, call: &str, action: &str) {
    app.on_agent_event(AgentEvent::ToolCallRequested {
        call_id: call.into(),
        name: "run_shell".into(),
        arguments: "{}".into(),
    });
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(id, call, action),
    });
}

/// What answering request `id` sends to the agent.
fn sent(id: u64, decision: vigil_protocol::Answer) -> Vec<AgentCommand> {
    vec![AgentCommand::Approval {
        id,
        decision,
        token: format!("token-{id}"),
    }]
}

/// The agent confirms the operator approved request `id`.
fn approved(app: &mut crate::app::App, id: u64) {
    app.on_agent_event(AgentEvent::ApprovalResolved {
        id,
        decision: ApprovalDecision::ApproveOnce,
        decided_by: DecidedBy::default(),
        previewed: false,
        answered_by: None,
    });
}

#[test]
fn esc_goes_back_and_never_cancels_or_denies() {
    let mut app = app();
    app.on_agent_event(AgentEvent::TurnStarted { user: "go".into() });
    waiting(&mut app, 1, "c1", "rm -rf /tmp/x");
    look_at_approvals(&mut app);
    // Zoomed, in the box, on the approval: Esc only goes back.
    app.on_key(key(KeyCode::Char('z')));
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    assert_eq!(app.zoomed(), None);
    app.on_key(key(KeyCode::Char('i')));
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    assert_eq!(app.focus(), Focus::Conversation);
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    assert_eq!(app.approvals.unanswered(), 1, "the approval still waits");
}

#[test]
fn the_cancel_key_asks_first_and_marks_calls_cancelled() {
    let mut app = app();
    app.on_agent_event(AgentEvent::TurnStarted { user: "go".into() });
    app.on_agent_event(AgentEvent::ToolStarted {
        call_id: "c1".into(),
        name: "run_shell".into(),
        summary: "sleep 100".into(),
    });
    app.set_focus(Focus::Tools);
    assert!(app.on_key(key(KeyCode::Char('x'))).is_empty(), "asks first");
    assert!(app.flash.as_deref().unwrap_or("").contains("again"));
    assert!(app.on_key(key(KeyCode::Char('j'))).is_empty());
    assert!(app.on_key(key(KeyCode::Char('x'))).is_empty(), "asks again");
    assert_eq!(
        app.on_key(key(KeyCode::Char('x'))),
        vec![AgentCommand::Cancel]
    );
    app.on_agent_event(AgentEvent::ToolCancelled {
        call_id: "c1".into(),
        name: "run_shell".into(),
    });
    app.on_agent_event(AgentEvent::TurnFinished {
        outcome: TurnOutcome::Cancelled,
    });
    assert_eq!(
        app.tools.call("c1").map(|c| &c.status),
        Some(&CallStatus::Cancelled)
    );
    let rec = app.history.records().find(|r| r.call_id == "c1");
    assert_eq!(rec.map(|r| &r.status), Some(&CallStatus::Cancelled));
    // A request withdrawn by the cancel is cancelled too, never denied.
    waiting(&mut app, 2, "c2", "rm y");
    app.on_agent_event(AgentEvent::ApprovalResolved {
        id: 2,
        decision: ApprovalDecision::DenyWithReason("cancelled".into()),
        decided_by: DecidedBy::Cancelled,
        previewed: false,
        answered_by: None,
    });
    assert_eq!(
        app.tools.call("c2").map(|c| &c.status),
        Some(&CallStatus::Cancelled)
    );
}

#[test]
fn approval_keys_answer_only_in_the_approvals_pane() {
    let mut app = app();
    app.set_focus(Focus::Tools);
    assert!(app.on_key(key(KeyCode::Char('y'))).is_empty());
    assert_eq!(app.flash.as_deref(), Some("no approval is waiting"));
    waiting(&mut app, 7, "c7", "touch a");
    // Outside the pane (any of them, the mirror too) nothing is answered:
    // the key says where approvals are answered.
    for pane in [Focus::Conversation, Focus::Tools, Focus::Mirror] {
        app.set_focus(pane);
        for c in ['y', 'a', 'n', 'r', 'e', 'v'] {
            assert!(
                press(&mut app, KeyCode::Char(c)).is_empty(),
                "{c} in {pane:?}"
            );
            assert!(app.modal.is_none(), "{c} in {pane:?} opened a modal");
        }
        assert!(app.flash.as_deref().unwrap_or("").contains("their pane"));
    }
    assert_eq!(app.approvals.unanswered(), 1);
    look_at_approvals(&mut app);
    assert_eq!(
        press(&mut app, KeyCode::Char('y')),
        sent(7, vigil_protocol::Answer::ApproveOnce)
    );
}

#[test]
fn a_call_arriving_never_moves_the_focus_and_an_unseen_card_is_not_answered() {
    for start in [
        Focus::Input,
        Focus::Conversation,
        Focus::Tools,
        Focus::Mirror,
    ] {
        let mut app = app();
        app.set_focus(start);
        waiting(&mut app, 1, "c1", "rm -rf /srv");
        assert_eq!(app.focus(), start, "the focus stays where it was");
    }
    // In the pane, a card that arrived after the last frame is not answered.
    let mut app = app();
    waiting(&mut app, 1, "c1", "touch a");
    look_at_approvals(&mut app);
    assert!(!press(&mut app, KeyCode::Char('y')).is_empty());
    waiting(&mut app, 2, "c2", "rm -rf /srv");
    approved(&mut app, 1);
    assert!(
        app.on_key(key(KeyCode::Char('y'))).is_empty(),
        "not drawn yet"
    );
    assert!(app.flash.as_deref().unwrap_or("").contains("not on screen"));
    assert_eq!(
        press(&mut app, KeyCode::Char('n')),
        sent(2, vigil_protocol::Answer::Deny)
    );
}

#[test]
fn after_the_last_answer_the_focus_leaves_the_queue_but_not_for_the_box() {
    let mut app = app();
    app.on_agent_event(AgentEvent::TurnStarted { user: "go".into() });
    waiting(&mut app, 1, "c1", "touch a");
    look_at_approvals(&mut app);
    press(&mut app, KeyCode::Char('y'));
    approved(&mut app, 1);
    assert_eq!(app.focus(), Focus::Conversation);
    // The footer's cancel key cancels; it never becomes text.
    press(&mut app, KeyCode::Char('x'));
    assert_eq!(
        press(&mut app, KeyCode::Char('x')),
        vec![AgentCommand::Cancel]
    );
    assert_eq!(app.input.text(), "");
}

#[test]
fn tab_from_any_pane_goes_to_a_waiting_approval_unzoomed() {
    for start in [Focus::Conversation, Focus::Tools, Focus::Mirror] {
        let mut app = app();
        waiting(&mut app, 1, "c1", "touch a");
        app.set_focus(start);
        app.on_key(key(KeyCode::Char('z')));
        app.on_key(key(KeyCode::Tab));
        assert_eq!(app.focus(), Focus::Approvals);
        assert_eq!(app.zoomed(), None);
    }
}

#[test]
fn tab_from_the_box_goes_to_a_waiting_approval() {
    let mut app = app();
    waiting(&mut app, 1, "c1", "touch a");
    app.set_focus(Focus::Input);
    app.on_key(key(KeyCode::Tab));
    assert_eq!(app.focus(), Focus::Approvals);
}

#[test]
fn ctrl_u_clears_the_line_in_the_box() {
    let mut app = app();
    for c in "hello world".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    app.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    assert_eq!(app.input.text(), "");
}

#[test]
fn decisions_are_marked_on_the_call_and_in_history() {
    let mut app = app();
    for (id, by, decision, mark) in [
        (
            1,
            DecidedBy::SessionRule {
                rule: "ls …".into(),
            },
            ApprovalDecision::ApproveOnce,
            "by session rule `ls …`",
        ),
        (
            2,
            DecidedBy::OperatorEdited {
                from: "rm -rf /".into(),
            },
            ApprovalDecision::ApproveEdited("rm -rf /tmp/x".into()),
            "edited by operator from `rm -rf /`",
        ),
        (
            3,
            DecidedBy::Denied {
                reason: "too broad".into(),
            },
            ApprovalDecision::DenyWithReason("too broad".into()),
            "denied: too broad",
        ),
        (
            4,
            DecidedBy::Policy {
                name: "auto-approve low risk".into(),
            },
            ApprovalDecision::ApproveOnce,
            "by policy: auto-approve low risk",
        ),
    ] {
        let call = format!("c{id}");
        waiting(&mut app, id, &call, "cmd");
        app.on_agent_event(AgentEvent::ApprovalResolved {
            id,
            decision,
            decided_by: by,
            previewed: false,
            answered_by: None,
        });
        let shown = app.tools.call(&call).and_then(|c| c.decided.clone());
        assert_eq!(shown.as_deref(), Some(mark));
        let rec = app.history.records().find(|r| r.call_id == call);
        assert_eq!(rec.and_then(|r| r.decided.as_deref()), Some(mark));
    }
}

#[test]
fn the_rules_view_lists_and_revokes() {
    let mut app = app();
    app.on_agent_event(AgentEvent::SessionRules {
        exact: vec![("run_shell".into(), "make".into())],
        prefixes: vec![("run_shell".into(), "git status".into())],
    });
    app.set_focus(Focus::Tools);
    app.on_key(key(KeyCode::Char('A')));
    assert!(matches!(app.overlay, Overlay::Rules));
    app.on_key(key(KeyCode::Down));
    assert_eq!(
        app.on_key(key(KeyCode::Char('d'))),
        vec![AgentCommand::RevokeRule {
            tool: "run_shell".into(),
            rule: "make".into(),
            prefix: false
        }]
    );
    app.on_key(key(KeyCode::Esc));
    assert!(matches!(app.overlay, Overlay::None));
}

#[test]
fn copy_puts_the_selected_command_on_the_clipboard() {
    let mut app = app();
    waiting(&mut app, 1, "c1", "df -h /");
    look_at_approvals(&mut app);
    app.on_key(key(KeyCode::Char('c')));
    assert_eq!(app.take_clipboard().as_deref(), Some("df -h /"));
}
