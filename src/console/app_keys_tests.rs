//! Keys that must never surprise: Esc only goes back, cancelling is its own
//! key pressed twice and marks calls cancelled (not denied), approval keys
//! work from every pane, Tab from the box reaches a waiting approval, and
//! decisions leave a mark on the call.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{Focus, Overlay};
use super::app_tests::{app, key, request};
use super::panes::tools::CallStatus;
use crate::event::{AgentCommand, AgentEvent, ApprovalDecision, DecidedBy, TurnOutcome};

fn waiting(app: &mut super::app::App, id: u64, call: &str, action: &str) {
    app.on_agent_event(AgentEvent::ToolCallRequested {
        call_id: call.into(),
        name: "run_shell".into(),
        arguments: "{}".into(),
    });
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(id, call, action),
    });
}

#[test]
fn esc_goes_back_and_never_cancels_or_denies() {
    let mut app = app();
    app.on_agent_event(AgentEvent::TurnStarted { user: "go".into() });
    waiting(&mut app, 1, "c1", "rm -rf /tmp/x");
    assert_eq!(app.focus(), Focus::Approvals);
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
fn approval_keys_work_from_every_pane_and_say_when_nothing_waits() {
    let mut app = app();
    app.set_focus(Focus::Tools);
    assert!(app.on_key(key(KeyCode::Char('y'))).is_empty());
    assert_eq!(app.flash.as_deref(), Some("no approval is waiting"));
    waiting(&mut app, 7, "c7", "touch a");
    app.set_focus(Focus::Conversation);
    assert_eq!(
        app.on_key(key(KeyCode::Char('y'))),
        vec![AgentCommand::Approval {
            id: 7,
            decision: ApprovalDecision::ApproveOnce
        }]
    );
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
    app.on_key(key(KeyCode::Char('c')));
    assert_eq!(app.take_clipboard().as_deref(), Some("df -h /"));
}
