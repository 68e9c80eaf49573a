//! A console attached to an agent process: leaving (detach, the `q`
//! question, stop with the keep/remove question), a read-only watcher, and
//! who answered an approval — state checks and snapshots at 80×24.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::{App, Focus};
use crate::tests::app_tests::key;
use crate::tests::snapshot_tests::waiting_for_approval;
use crate::tests::view_tests::screen;
use vigil_client::Leaving;
use vigil_protocol::{
    AgentCommand, AgentEvent, Answerer, ApprovalDecision, DecidedBy, OnExit, wire::ConsoleTag,
};

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

/// Waiting for an approval, with a command running, attached.
fn attached() -> App {
    let mut app = waiting_for_approval();
    app.on_agent_event(AgentEvent::ToolStarted {
        call_id: "c9".into(),
        name: "run_shell".into(),
        summary: "sleep 60".into(),
    });
    app.set_attached(true);
    app.set_focus(Focus::Tools);
    app
}

#[test]
fn q_asks_and_says_what_runs_and_waits_80x24() {
    let mut app = attached();
    assert!(app.on_key(key(KeyCode::Char('q'))).is_empty());
    assert!(!app.should_quit());
    let shown = screen(&app, 80, 24);
    assert!(
        shown.contains("1 command running (`sleep 60`), 1 approval waiting"),
        "{shown}"
    );
    insta::assert_snapshot!(shown);
}

#[test]
fn the_question_detaches_stops_or_cancels() {
    let mut app = attached();
    app.on_key(key(KeyCode::Char('q')));
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    assert!(!app.should_quit() && app.quit_ask.is_none());

    app.on_key(key(KeyCode::Char('q')));
    assert!(
        app.on_key(key(KeyCode::Enter)).is_empty(),
        "detach sends nothing"
    );
    assert!(app.should_quit());
    assert_eq!(app.leaving(), Leaving::Detach);

    let mut app = attached();
    app.on_key(key(KeyCode::Char('q')));
    assert_eq!(
        app.on_key(key(KeyCode::Char('s'))),
        vec![AgentCommand::Quit]
    );
    assert_eq!(app.leaving(), Leaving::Stop(OnExit::Unsaid));
}

#[test]
fn stop_asks_about_remote_sessions_first() {
    let mut app = attached();
    app.set_ask_on_exit(Some("2 managed tmux sessions on ssh u@h".into()));
    app.on_key(key(KeyCode::Char('q')));
    app.on_key(key(KeyCode::Char('s')));
    assert!(!app.should_quit(), "the keep/remove question comes first");
    assert!(screen(&app, 80, 24).contains("2 managed tmux sessions"));
    app.on_key(key(KeyCode::Char('r')));
    assert_eq!(app.leaving(), Leaving::Stop(OnExit::Remove));
}

#[test]
fn the_detach_key_and_ctrl_c_detach_from_anywhere() {
    let mut app = attached();
    app.set_focus(Focus::Input);
    assert!(app.on_key(ctrl('d')).is_empty());
    assert_eq!((app.should_quit(), app.leaving()), (true, Leaving::Detach));

    let mut app = attached();
    assert!(app.on_key(ctrl('c')).is_empty());
    assert_eq!((app.should_quit(), app.leaving()), (true, Leaving::Detach));

    // In-process: Ctrl-D does nothing but say so; Ctrl-C stops.
    let mut app = waiting_for_approval();
    assert!(app.on_key(ctrl('d')).is_empty());
    assert!(!app.should_quit());
    assert_eq!(app.on_key(ctrl('c')), vec![AgentCommand::Quit]);
    assert_eq!(app.leaving(), Leaving::Stop(OnExit::Unsaid));
}

#[test]
fn q_leaves_at_once_when_the_agent_is_gone() {
    let mut app = attached();
    app.agent_gone();
    assert!(app.on_key(key(KeyCode::Char('q'))).is_empty());
    assert_eq!(
        (app.should_quit(), app.leaving()),
        (true, Leaving::AgentGone)
    );
    let mut app = attached();
    app.agent_gone();
    assert!(app.on_key(ctrl('c')).is_empty());
    assert_eq!(app.leaving(), Leaving::AgentGone);
}

#[test]
fn a_watcher_cannot_approve_type_or_paste_and_is_told_80x24() {
    let mut app = waiting_for_approval();
    app.set_attached(true);
    app.set_read_only(true);
    for k in ['y', 'a', 'n', 'r', 'e'] {
        assert!(app.on_key(key(KeyCode::Char(k))).is_empty(), "{k} acted");
        assert!(app.modal.is_none(), "{k} opened a modal");
    }
    assert_eq!(app.approvals.unanswered(), 1);
    app.on_key(key(KeyCode::Char('i')));
    assert_eq!(app.focus(), Focus::Input);
    for c in "hello".chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    assert!(app.input.text().is_empty(), "typed into a watcher's box");
    assert!(app.on_paste("rm -rf /").is_empty());
    app.set_focus(Focus::Approvals);
    app.on_key(key(KeyCode::Char('y')));
    let shown = screen(&app, 80, 24);
    assert!(shown.contains("watching: read-only"), "{shown}");
    insta::assert_snapshot!(shown);
    // Leaving still works.
    app.on_key(ctrl('d'));
    assert_eq!(app.leaving(), Leaving::Detach);
}

#[test]
fn the_tools_pane_says_who_answered_100x24() {
    let mut app = waiting_for_approval();
    app.on_agent_event(AgentEvent::ApprovalResolved {
        id: 1,
        decision: ApprovalDecision::ApproveOnce,
        decided_by: DecidedBy::Operator,
        previewed: false,
        answered_by: Some(Answerer {
            console: ConsoleTag {
                id: 2,
                name: "pts/4 on laptop".into(),
                peer: None,
            },
            // 2026-11-23 14:03:12 UTC
            at_ms: 1_795_442_592_000,
        }),
    });
    app.set_focus(Focus::Tools);
    app.zoom = Some(Focus::Tools);
    let shown = screen(&app, 100, 24);
    assert!(
        shown.contains("approved by operator at console 2 (pts/4 on laptop) 14:03:12 UTC"),
        "{shown}"
    );
    insta::assert_snapshot!(shown);
}

#[test]
fn the_footer_names_the_detach_key_when_attached() {
    let mut app = attached();
    app.set_focus(Focus::Conversation);
    let shown = screen(&app, 160, 30);
    let footer = shown.lines().last().unwrap_or_default();
    assert!(footer.contains("Ctrl-d detach"), "{footer}");
    assert!(footer.contains("q leave…"), "{footer}");
    app.set_focus(Focus::Input);
    let shown = screen(&app, 160, 30);
    let footer = shown.lines().last().unwrap_or_default();
    assert!(footer.contains("Ctrl-d detach"), "{footer}");
    assert!(!footer.contains("quit"), "{footer}");
}

#[test]
fn the_tools_pane_says_which_hook_decided() {
    let mut app = waiting_for_approval();
    app.on_agent_event(AgentEvent::ApprovalResolved {
        id: 1,
        decision: ApprovalDecision::DenyWithReason("denied by hook".into()),
        decided_by: DecidedBy::Hook {
            hook: "`no-rm` (vigil.toml:12)".into(),
            reason: "rm is not for agents".into(),
        },
        previewed: false,
        answered_by: None,
    });
    app.set_focus(Focus::Tools);
    app.zoom = Some(Focus::Tools);
    let shown = screen(&app, 120, 24);
    assert!(
        shown.contains("denied by hook `no-rm` (vigil.toml:12): rm is not for agents"),
        "{shown}"
    );
}
