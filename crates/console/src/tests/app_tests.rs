//! App state transitions: agent events into pane states, keys into commands.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::{App, Focus};
use crate::panes::conversation::EntryKind;
use crate::panes::tools::CallStatus;
use vigil_protocol::GateInfo;
use vigil_protocol::{AgentCommand, AgentEvent, ApprovalDecision, ApprovalRequest, Risk};

pub(crate) fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub(crate) fn request(id: u64, call_id: &str, action: &str) -> ApprovalRequest {
    ApprovalRequest {
        id,
        call_id: call_id.into(),
        tool: "run_shell".into(),
        target: "local".into(),
        gate: GateInfo {
            action: action.into(),
            model_risk: Some(Risk::High),
            mutation: Some(true),
            privesc: Some(false),
            why: Some("free disk space".into()),
            editable_field: Some("command".into()),
        },
        estimate: Risk::Medium,
        estimate_reason: String::new(),
        automatic: false,
        change: None,
        token: format!("token-{id}"),
        facts: Box::new(vigil_protocol::CallFacts {
            cwd: Some("/home/ops".into()),
            // As the agent sends them with every shell command.
            prefix_rules: vigil_policy::prefix_rule::choices(action),
            ..Default::default()
        }),
    }
}

pub(crate) fn app() -> App {
    let mut app = App::new(Instant::now());
    app.on_agent_event(AgentEvent::SessionStarted {
        model: "scripted".into(),
        target: "local".into(),
        demo: true,
        mirror: None,
        tools: vec!["run_shell".into()],
    });
    app
}

/// The operator moves to the approvals pane and the frame shows it.
pub(crate) fn look_at_approvals(app: &mut App) {
    app.set_focus(Focus::Approvals);
    crate::tests::view_tests::screen(app, 100, 30);
}

/// A key pressed after the frame was drawn (as the event loop does).
pub(crate) fn press(app: &mut App, code: KeyCode) -> Vec<AgentCommand> {
    crate::tests::view_tests::screen(app, 100, 30);
    app.on_key(key(code))
}

fn type_str(app: &mut App, s: &str) -> Vec<AgentCommand> {
    s.chars()
        .flat_map(|c| app.on_key(key(KeyCode::Char(c))))
        .collect()
}

#[test]
fn enter_sends_the_typed_message() {
    let mut app = app();
    assert_eq!(app.focus(), Focus::Input);
    assert!(type_str(&mut app, "list files").is_empty());
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![AgentCommand::UserMessage {
            text: "list files".into()
        }]
    );
    assert_eq!(app.conversation.queued(), ["list files"]);
    assert!(
        app.on_key(key(KeyCode::Enter)).is_empty(),
        "empty box sends nothing"
    );
}

#[test]
fn messages_typed_during_a_turn_are_still_sent() {
    let mut app = app();
    app.on_agent_event(AgentEvent::TurnStarted {
        user: "first".into(),
    });
    type_str(&mut app, "second");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![AgentCommand::UserMessage {
            text: "second".into()
        }]
    );
}

#[test]
fn y_and_n_answer_the_selected_approval_with_its_id() {
    let mut app = app();
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(7, "c1", "rm -rf /tmp/cache"),
    });
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(8, "c2", "reboot"),
    });
    assert_eq!(app.focus(), Focus::Input, "a call never moves the focus");
    assert!(app.take_bell());
    assert!(!app.take_bell());
    look_at_approvals(&mut app);
    assert_eq!(
        press(&mut app, KeyCode::Char('y')),
        vec![AgentCommand::Approval {
            id: 7,
            decision: vigil_protocol::Answer::ApproveOnce,
            token: "token-7".into(),
        }]
    );
    assert_eq!(
        press(&mut app, KeyCode::Char('n')),
        vec![AgentCommand::Approval {
            id: 8,
            decision: vigil_protocol::Answer::Deny,
            token: "token-8".into(),
        }]
    );
    assert!(
        app.on_key(key(KeyCode::Char('y'))).is_empty(),
        "no double answers"
    );
}

#[test]
fn typing_y_into_the_input_box_does_not_approve() {
    let mut app = app();
    type_str(&mut app, "wh");
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(1, "c1", "rm x"),
    });
    assert_eq!(
        app.focus(),
        Focus::Input,
        "a half-typed message keeps the focus"
    );
    assert!(type_str(&mut app, "y n").is_empty());
    assert_eq!(app.input.text(), "why n");
    assert_eq!(app.approvals.unanswered(), 1);
    // Tab reaches the approvals pane; then y approves.
    while app.focus() != Focus::Approvals {
        app.on_key(key(KeyCode::Tab));
    }
    assert_eq!(
        press(&mut app, KeyCode::Char('y')),
        vec![AgentCommand::Approval {
            id: 1,
            decision: vigil_protocol::Answer::ApproveOnce,
            token: "token-1".into(),
        }]
    );
}

#[test]
fn resolution_updates_tools_and_returns_focus_to_input() {
    let mut app = app();
    app.on_agent_event(AgentEvent::ToolCallRequested {
        call_id: "c1".into(),
        name: "run_shell".into(),
        arguments: r#"{"command":"rm x"}"#.into(),
    });
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(3, "c1", "rm x"),
    });
    assert_eq!(
        app.tools.call("c1").map(|c| &c.status),
        Some(&CallStatus::WaitingApproval)
    );
    app.on_agent_event(AgentEvent::ApprovalResolved {
        id: 3,
        decision: ApprovalDecision::Deny,
        decided_by: Default::default(),
        previewed: false,
        answered_by: None,
    });
    assert_eq!(
        app.tools.call("c1").map(|c| &c.status),
        Some(&CallStatus::Denied)
    );
    assert!(app.approvals.is_empty());
    assert_eq!(app.focus(), Focus::Input);
}

#[test]
fn a_request_the_agent_decides_itself_never_queues_rings_or_takes_focus() {
    let mut app = app();
    app.on_agent_event(AgentEvent::ToolCallRequested {
        call_id: "c1".into(),
        name: "run_shell".into(),
        arguments: "{}".into(),
    });
    let mut auto = request(4, "c1", "touch a");
    auto.automatic = true;
    app.on_agent_event(AgentEvent::ApprovalRequested { request: auto });
    assert!(
        app.approvals.is_empty(),
        "a rule decided it: nothing to answer"
    );
    assert!(!app.take_bell());
    assert_eq!(app.focus(), Focus::Input);
    assert_eq!(
        app.tools.call("c1").map(|c| &c.status),
        Some(&CallStatus::Requested)
    );
    // A policy denial still marks the call.
    app.on_agent_event(AgentEvent::ApprovalResolved {
        id: 4,
        decision: ApprovalDecision::Deny,
        decided_by: Default::default(),
        previewed: false,
        answered_by: None,
    });
    assert_eq!(
        app.tools.call("c1").map(|c| &c.status),
        Some(&CallStatus::Denied)
    );
}

#[test]
fn q_quits_only_outside_the_input_box_and_ctrl_c_always() {
    let mut app = app();
    assert!(type_str(&mut app, "q").is_empty());
    assert!(!app.should_quit());
    app.on_key(key(KeyCode::Tab));
    assert_eq!(
        app.on_key(key(KeyCode::Char('q'))),
        vec![AgentCommand::Quit]
    );
    assert!(app.should_quit());

    let mut app = self::app();
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.on_key(ctrl_c), vec![AgentCommand::Quit]);
    assert!(app.should_quit());
}

#[test]
fn errors_and_notices_land_in_the_conversation() {
    let mut app = app();
    app.on_agent_event(AgentEvent::Error {
        message: "model unreachable\x1b[2J".into(),
    });
    app.on_agent_event(AgentEvent::Notice {
        text: "retrying".into(),
    });
    let entries = app.conversation.entries();
    assert_eq!(entries[0].kind, EntryKind::Error);
    assert_eq!(entries[0].text, "model unreachable");
    assert_eq!(entries[1].kind, EntryKind::Notice);
}

#[test]
fn session_started_sets_demo_and_mirror() {
    let app = app();
    assert!(app.conversation.demo());
    assert!(app.mirror.target().is_none());
    assert_eq!(app.status.model.as_deref(), Some("scripted"));
}

#[test]
fn paste_goes_to_the_input_box() {
    let mut app = app();
    app.set_focus(Focus::Tools);
    app.on_paste("line one\nline two");
    assert_eq!(app.focus(), Focus::Input);
    assert_eq!(app.input.text(), "line one\nline two");
}

#[test]
fn elapsed_seconds_tick_while_running() {
    let start = Instant::now();
    let mut app = App::new(start);
    app.on_agent_event(AgentEvent::TurnStarted { user: "go".into() });
    assert!(!app.tick(start + std::time::Duration::from_millis(300)));
    assert!(app.tick(start + std::time::Duration::from_millis(1100)));
}

#[test]
fn the_console_future_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    let (_events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    let (commands, _commands_rx) = tokio::sync::mpsc::unbounded_channel();
    let fut = crate::run(events, commands, crate::ConsoleOptions::default());
    assert_send(&fut);
}

#[test]
fn retry_and_compact_keys_reach_the_agent_outside_the_input_box() {
    let mut app = app();
    // In the input box they are just letters.
    assert!(type_str(&mut app, "RC").is_empty());
    app.on_key(key(KeyCode::Esc));
    assert_ne!(app.focus(), Focus::Input);
    assert_eq!(
        app.on_key(KeyEvent::new(KeyCode::Char('R'), KeyModifiers::SHIFT)),
        vec![AgentCommand::Retry]
    );
    assert_eq!(
        app.on_key(KeyEvent::new(KeyCode::Char('C'), KeyModifiers::SHIFT)),
        vec![AgentCommand::Compact]
    );
}
