//! Snapshots of the views and overlays at 80×24: help, policy menu, deny
//! reason, edit command, approve for the session (exact, then a prefix),
//! zoom, the history list and the full-output viewer.

use crossterm::event::KeyCode;

use crate::app::{App, Focus};
use crate::tests::app_tests::{key, look_at_approvals};
use crate::tests::snapshot_tests::waiting_for_approval;
use crate::tests::view_tests::screen;

fn press(app: &mut App, keys: &str) {
    for c in keys.chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
}

#[test]
fn help_overlay_80x24() {
    let mut app = waiting_for_approval();
    app.set_focus(Focus::Tools);
    press(&mut app, "?");
    insta::assert_snapshot!(screen(&app, 80, 24));
}

#[test]
fn policy_menu_80x24() {
    let mut app = waiting_for_approval();
    look_at_approvals(&mut app);
    press(&mut app, "p");
    insta::assert_snapshot!(screen(&app, 80, 24));
}

#[test]
fn deny_reason_80x24() {
    let mut app = waiting_for_approval();
    look_at_approvals(&mut app);
    press(&mut app, "r");
    press(&mut app, "use the trash instead");
    insta::assert_snapshot!(screen(&app, 80, 24));
}

#[test]
fn edit_command_80x24() {
    let mut app = waiting_for_approval();
    look_at_approvals(&mut app);
    press(&mut app, "e");
    insta::assert_snapshot!(screen(&app, 80, 24));
}

#[test]
fn approve_session_prefix_80x24() {
    let mut app = waiting_for_approval();
    look_at_approvals(&mut app);
    press(&mut app, "a");
    let exact = screen(&app, 80, 24);
    app.on_key(key(KeyCode::Tab));
    let prefix = screen(&app, 80, 24);
    insta::assert_snapshot!(format!("{exact}\n{prefix}"));
}

#[test]
fn zoomed_tools_80x24() {
    let mut app = waiting_for_approval();
    app.set_focus(Focus::Tools);
    press(&mut app, "z");
    insta::assert_snapshot!(screen(&app, 80, 24));
}

#[test]
fn history_and_viewer_80x24() {
    let mut app = waiting_for_approval();
    app.set_focus(Focus::Tools);
    press(&mut app, "h");
    let list = screen(&app, 80, 24);
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Enter));
    let viewer = screen(&app, 80, 24);
    insta::assert_snapshot!(format!("{list}\n{viewer}"));
}

/// One standing approval is `1 rule`; the help's long key list keeps a
/// space before its words (`Home End scroll…`).
#[test]
fn one_rule_and_the_help_key_column_80x24() {
    let mut app = waiting_for_approval();
    app.on_agent_event(vigil_protocol::AgentEvent::SessionRules {
        exact: vec![("run_shell".into(), "make".into())],
        prefixes: vec![],
    });
    app.set_focus(Focus::Tools);
    press(&mut app, "A");
    let rules = screen(&app, 80, 24);
    assert!(
        rules.contains("standing approvals · 1 rule this session"),
        "{rules}"
    );
    app.on_key(key(KeyCode::Esc));
    press(&mut app, "?");
    for _ in 0..18 {
        app.on_key(key(KeyCode::Down));
    }
    let help = screen(&app, 80, 24);
    assert!(help.contains("Home End scroll a write's"), "{help}");
    insta::assert_snapshot!(format!("{rules}\n{help}"));
}
