//! Key passthrough for the [`App`]: with the mirror focused, the operator
//! starts typing into the managed pane with Enter (only Enter), every
//! key then becomes an `AgentCommand::PaneKeys` (Ctrl-C included: it goes to
//! the pane), and Ctrl-] or Esc Esc hands the keyboard back to the console.
//!
//! It only turns keys into commands; it never talks to tmux.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::{App, Focus};
use crate::terminal::passthrough::{is_leave, pane_keys};
use vigil_protocol::{AgentCommand, PaneKey};

impl App {
    /// With the mirror focused: does this key start passthrough? (Only when
    /// there is a managed pane; otherwise the key keeps its usual meaning.)
    pub(crate) fn starts_typing(&mut self, key: &KeyEvent) -> bool {
        if self.focus != Focus::Mirror || self.mirror.target().is_none() {
            return false;
        }
        // Only Enter: the message-box key (`i`) means the message box
        // everywhere, so chat text never lands in the pane by accident.
        let enter = key.code == KeyCode::Enter && key.modifiers == KeyModifiers::NONE;
        if enter {
            self.mirror.set_typing(true);
        }
        enter
    }

    /// A key while passthrough is on.
    pub(crate) fn on_passthrough_key(&mut self, key: KeyEvent) -> Vec<AgentCommand> {
        if is_leave(&key) {
            self.mirror.set_typing(false);
            return Vec::new();
        }
        if key.code == KeyCode::Esc && key.modifiers == KeyModifiers::NONE {
            if self.mirror.esc_pending {
                self.mirror.set_typing(false);
                return Vec::new();
            }
            self.mirror.esc_pending = true;
        } else {
            self.mirror.esc_pending = false;
        }
        let keys = pane_keys(&key);
        if keys.is_empty() {
            return Vec::new();
        }
        vec![AgentCommand::PaneKeys { keys }]
    }

    /// Pasted text while passthrough is on goes to the pane as typed text.
    pub(crate) fn paste_into_pane(&mut self, text: &str) -> Vec<AgentCommand> {
        self.mirror.esc_pending = false;
        if text.is_empty() {
            return Vec::new();
        }
        vec![AgentCommand::PaneKeys {
            keys: vec![PaneKey::Text(text.to_string())],
        }]
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use vigil_protocol::{AgentEvent, MirrorTarget};

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
}
