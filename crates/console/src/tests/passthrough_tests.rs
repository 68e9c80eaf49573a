//! Key passthrough driven key by key: with the mirror focused, Enter (only
//! Enter) starts typing into the managed pane, every key then becomes an
//! `AgentCommand::PaneKeys` (Ctrl-C included), and Ctrl-] or Esc Esc hands
//! the keyboard back (the passthrough layer, `panes::mirror::Passthrough`).

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::{App, Focus};
use vigil_protocol::{AgentCommand, AgentEvent, MirrorTarget, PaneKey};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn app(pane: bool) -> App {
    let mut app = App::new(Instant::now());
    app.on_agent_event(AgentEvent::SessionStarted {
        model: "m".into(),
        target: "local".into(),
        demo: false,
        mirror: pane.then(|| MirrorTarget {
            server_args: vec![],
            pane: "%1".into(),
        }),
        tools: vec![],
    });
    app.set_focus(Focus::Mirror);
    app
}

fn typed(cmds: Vec<AgentCommand>) -> Vec<PaneKey> {
    cmds.into_iter()
        .flat_map(|c| match c {
            AgentCommand::PaneKeys { keys } => keys,
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

#[test]
fn enter_starts_typing_and_keys_go_to_the_pane() {
    let mut app = app(true);
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    assert!(app.mirror.typing());
    let mut keys = typed(app.on_key(key(KeyCode::Char('q'))));
    keys.extend(typed(app.on_key(key(KeyCode::Enter))));
    keys.extend(typed(
        app.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
    ));
    assert_eq!(
        keys,
        vec![
            PaneKey::Text("q".into()),
            PaneKey::Key("Enter".into()),
            PaneKey::Key("C-c".into()),
        ]
    );
    assert!(!app.should_quit(), "q and Ctrl-C went to the pane");
    assert_eq!(typed(app.on_paste("ls")), vec![PaneKey::Text("ls".into())]);
}

#[test]
fn ctrl_bracket_and_esc_esc_leave() {
    let mut app = app(true);
    app.on_key(key(KeyCode::Enter));
    assert!(app.mirror.typing());
    let ctrl_bracket = KeyEvent::new(KeyCode::Char(']'), KeyModifiers::CONTROL);
    assert!(app.on_key(ctrl_bracket).is_empty());
    assert!(!app.mirror.typing());

    app.on_key(key(KeyCode::Enter));
    assert_eq!(
        typed(app.on_key(key(KeyCode::Esc))),
        vec![PaneKey::Key("Escape".into())]
    );
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    assert!(!app.mirror.typing());
    assert_eq!(app.focus(), Focus::Mirror);
}

#[test]
fn approvals_do_not_take_the_keyboard_from_the_typing_operator() {
    let mut app = app(true);
    app.on_key(key(KeyCode::Enter));
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: crate::tests::app_tests::request(1, "c1", "rm -rf /tmp/x"),
    });
    assert!(app.mirror.typing());
    assert_eq!(app.focus(), Focus::Mirror);
    app.set_focus(Focus::Approvals);
    assert!(!app.mirror.typing(), "leaving the mirror stops typing");
}

#[test]
fn i_on_the_mirror_always_opens_the_message_box() {
    for pane in [true, false] {
        let mut app = app(pane);
        app.on_key(key(KeyCode::Char('i')));
        assert!(!app.mirror.typing(), "chat text never goes to the pane");
        assert_eq!(app.focus(), Focus::Input);
    }
}
