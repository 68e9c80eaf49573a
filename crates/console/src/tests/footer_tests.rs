//! The footer never lies: in every pane and view, each key the footer names
//! is pressed on a console in that state and must do what the footer says;
//! and the help overlay names every one of those keys. A footer entry this
//! test does not know fails it, so a new entry needs its check here.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::{App, Focus, Overlay};
use crate::keys::{KeyBinding, Keymap};
use crate::panes::help;
use crate::tests::app_tests::{app, key, request};
use crate::tests::view_tests::screen;
use vigil_protocol::{
    AgentCommand, AgentEvent, ApprovalDecision, MirrorTarget, OutputStream, ToolSummary,
};

/// A busy console: a long conversation, two finished calls with long
/// output, a running call, two approvals waiting, two session rules and a
/// mirrored pane.
pub(crate) fn busy() -> App {
    let mut app = app();
    app.on_agent_event(AgentEvent::TurnStarted { user: "go".into() });
    let long: String = (1..=120).map(|i| format!("answer line {i}\n")).collect();
    app.on_agent_event(AgentEvent::AssistantMessage { text: long });
    for call in ["c1", "c2"] {
        app.on_agent_event(AgentEvent::ToolStarted {
            call_id: call.into(),
            name: "run_shell".into(),
            summary: format!("seq 1 100 # {call}"),
        });
        let out: String = (1..=100).map(|i| format!("{call} out {i}\n")).collect();
        app.on_agent_event(AgentEvent::ToolOutput {
            call_id: call.into(),
            stream: OutputStream::Stdout,
            text: out,
        });
        app.on_agent_event(AgentEvent::ToolCompleted {
            call_id: call.into(),
            name: "run_shell".into(),
            summary: ToolSummary {
                ok: true,
                exit_code: Some(0),
                duration_ms: 5,
                truncated: false,
                spill: vec![],
                seen: Vec::new(),
                error: None,
            },
        });
    }
    app.on_agent_event(AgentEvent::ToolStarted {
        call_id: "c3".into(),
        name: "run_shell".into(),
        summary: "sleep 100".into(),
    });
    for (id, call, cmd) in [(1, "c4", "rm -rf /tmp/a"), (2, "c5", "rm -rf /tmp/b")] {
        app.on_agent_event(AgentEvent::ApprovalRequested {
            request: request(id, call, cmd),
        });
    }
    app.on_agent_event(AgentEvent::SessionRules {
        exact: vec![("run_shell".into(), "make test".into())],
        prefixes: vec![("run_shell".into(), "git status".into())],
    });
    app.mirror.set_target(Some(MirrorTarget {
        server_args: vec!["-L".into(), "vigil".into()],
        pane: "%3".into(),
    }));
    app
}

/// The console in one footer state.
#[derive(Debug, Clone, Copy)]
pub(crate) enum State {
    Pane(Focus),
    NoApprovals,
    History,
    Viewer,
    Rules,
}

pub(crate) fn build(state: State) -> App {
    let mut app = if matches!(state, State::NoApprovals) {
        let mut a = busy();
        for id in [1, 2] {
            a.on_agent_event(AgentEvent::ApprovalResolved {
                id,
                decision: ApprovalDecision::Deny,
                decided_by: Default::default(),
                previewed: false,
                answered_by: None,
            });
        }
        a.set_focus(Focus::Approvals);
        a
    } else {
        busy()
    };
    match state {
        State::Pane(f) => app.set_focus(f),
        State::NoApprovals => {}
        State::History | State::Viewer => {
            app.set_focus(Focus::Tools);
            app.overlay = Overlay::History { viewer: None };
            if matches!(state, State::Viewer) {
                // The first call: 100 lines of output.
                app.on_key(key(KeyCode::Home));
                app.on_key(key(KeyCode::Enter));
            }
        }
        State::Rules => app.overlay = Overlay::Rules,
    }
    app
}

/// The footer's (key, what) pairs, as the App writes them.
fn footer_keys(app: &App) -> Vec<(String, &'static str)> {
    app.footer_commands()
        .into_iter()
        .map(|c| (c.key, c.label))
        .collect()
}

/// The key events a footer label names (`PgUp/PgDn` is two, `↑↓` two).
pub(crate) fn events(label: &str) -> Vec<KeyEvent> {
    let named = |part: &str| -> KeyEvent {
        let code = match part {
            "↑" => KeyCode::Up,
            "↓" => KeyCode::Down,
            "PgUp" => KeyCode::PageUp,
            "PgDn" => KeyCode::PageDown,
            _ => {
                let k = KeyBinding::parse(part).unwrap_or_else(|e| panic!("`{part}`: {e}"));
                let mut m = KeyModifiers::NONE;
                if k.ctrl {
                    m |= KeyModifiers::CONTROL;
                }
                if k.alt {
                    m |= KeyModifiers::ALT;
                }
                return KeyEvent::new(k.code, m);
            }
        };
        key(code)
    };
    if label == "↑↓" {
        return vec![named("↑"), named("↓")];
    }
    parts(label).into_iter().map(named).collect()
}

/// `PgUp/PgDn` → both; `/` (the search key) and `↑↓` stay whole.
fn parts(label: &str) -> Vec<&str> {
    if label == "/" || label == "↑↓" {
        return vec![label];
    }
    label.split('/').filter(|p| !p.is_empty()).collect()
}

fn press(app: &mut App, k: KeyEvent) -> Vec<AgentCommand> {
    app.on_key(k)
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
}

fn approval(cmds: &[AgentCommand], want: &vigil_protocol::Answer) -> bool {
    cmds.iter()
        .any(|c| matches!(c, AgentCommand::Approval { decision, .. } if decision == want))
}

/// Press `k` (named `what` by the footer) in `state` and check it did it.
fn check(state: State, label: &str, what: &str, k: KeyEvent) {
    let mut app = build(state);
    let focus = app.focus();
    let before = screen(&app, 100, 30);
    let ctx = format!("{state:?}: footer `{label} {what}`");
    let changed = |app: &App| screen(app, 100, 30) != before;
    let ok = match what {
        "send" => {
            type_text(&mut app, "hello");
            let cmds = press(&mut app, k);
            cmds.contains(&AgentCommand::UserMessage {
                text: "hello".into(),
            })
        }
        "newline" => {
            type_text(&mut app, "a");
            press(&mut app, k);
            app.input.text().contains('\n')
        }
        "clear line" => {
            type_text(&mut app, "abc def");
            press(&mut app, k);
            app.input.text().is_empty()
        }
        "approvals" => {
            press(&mut app, k);
            app.focus() == Focus::Approvals
        }
        "next pane" => {
            press(&mut app, k);
            app.focus() == focus.next()
        }
        "leave box" => {
            press(&mut app, k);
            app.focus() != Focus::Input
        }
        "quit" => {
            let cmds = press(&mut app, k);
            app.should_quit() && cmds.contains(&AgentCommand::Quit)
        }
        "once" | "approve" => approval(&press(&mut app, k), &vigil_protocol::Answer::ApproveOnce),
        "deny" => approval(&press(&mut app, k), &vigil_protocol::Answer::Deny),
        "session" | "deny+why" | "edit" | "policy" | "search" | "save" => {
            press(&mut app, k);
            app.modal.is_some()
        }
        "rules" => {
            press(&mut app, k);
            matches!(app.overlay, Overlay::Rules)
        }
        "message" => {
            press(&mut app, k);
            app.focus() == Focus::Input
        }
        "select" => {
            press(&mut app, k);
            let moved = changed(&app);
            // At one end of the list: step the other way first.
            moved || {
                let other = if k.code == KeyCode::Down {
                    KeyCode::Up
                } else {
                    KeyCode::Down
                };
                press(&mut app, key(other));
                let s = screen(&app, 100, 30);
                press(&mut app, k);
                screen(&app, 100, 30) != s
            }
        }
        "scroll" => {
            press(&mut app, k);
            changed(&app) || {
                let other = if k.code == KeyCode::PageUp {
                    KeyCode::PageDown
                } else {
                    KeyCode::PageUp
                };
                press(&mut app, key(other));
                let s = screen(&app, 100, 30);
                press(&mut app, k);
                screen(&app, 100, 30) != s
            }
        }
        "follow" => {
            press(&mut app, key(KeyCode::PageUp));
            let up = screen(&app, 100, 30);
            press(&mut app, k);
            up != before && screen(&app, 100, 30) == before
        }
        "zoom" => {
            press(&mut app, k);
            app.zoomed() == Some(focus)
        }
        "history" => {
            press(&mut app, k);
            matches!(app.overlay, Overlay::History { viewer: None })
        }
        "copy command" | "copy" => {
            press(&mut app, k);
            app.clipboard.as_deref().is_some_and(|t| !t.is_empty())
        }
        "type into the pane" => {
            press(&mut app, k);
            app.mirror.typing()
        }
        "cancel turn" => {
            press(&mut app, k);
            let asked = app.flash.as_deref().unwrap_or("").contains("again");
            asked && press(&mut app, k) == vec![AgentCommand::Cancel]
        }
        "help" => {
            press(&mut app, k);
            matches!(app.overlay, Overlay::Help { .. })
        }
        "full output" => {
            press(&mut app, k);
            matches!(app.overlay, Overlay::History { viewer: Some(_) })
        }
        "close" => {
            press(&mut app, k);
            matches!(app.overlay, Overlay::None)
        }
        "back" => {
            press(&mut app, k);
            matches!(app.overlay, Overlay::History { viewer: None })
        }
        "next/prev" => {
            // After a search with several matches, n and N move between them.
            press(&mut app, key(KeyCode::Char('/')));
            type_text(&mut app, "out 5");
            press(&mut app, key(KeyCode::Enter));
            press(&mut app, key(KeyCode::Char('n')));
            let s = screen(&app, 100, 30);
            press(&mut app, k);
            screen(&app, 100, 30) != s
        }
        "mark range" => {
            press(&mut app, k);
            matches!(&app.overlay, Overlay::History { viewer: Some(v) } if v.mark.is_some())
        }
        "revoke" => press(&mut app, k)
            .iter()
            .any(|c| matches!(c, AgentCommand::RevokeRule { .. })),
        other => panic!("{ctx}: this test does not know what `{other}` should do"),
    };
    assert!(
        ok,
        "{ctx}: the key did not do it\n{}",
        screen(&app, 100, 30)
    );
}

pub(crate) const STATES: [State; 9] = [
    State::Pane(Focus::Input),
    State::Pane(Focus::Conversation),
    State::Pane(Focus::Tools),
    State::Pane(Focus::Approvals),
    State::NoApprovals,
    State::Pane(Focus::Mirror),
    State::History,
    State::Viewer,
    State::Rules,
];

#[test]
fn every_key_the_footer_names_does_what_it_says() {
    let mut checked = 0;
    for state in STATES {
        let app = build(state);
        for (label, what) in footer_keys(&app) {
            if label.is_empty() {
                continue; // a note such as "no pending approvals"
            }
            for k in events(&label) {
                check(state, &label, what, k);
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "only {checked} footer keys checked");
}

#[test]
fn the_help_overlay_names_every_key_the_footer_names() {
    let map = Keymap::default();
    let help_keys: Vec<String> = help::sections(&map)
        .into_iter()
        .flat_map(|(_, pairs)| pairs.into_iter().map(|(k, _)| k))
        .flat_map(|k| {
            k.split(' ')
                .flat_map(parts)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    for state in STATES {
        let app = build(state);
        for (label, what) in footer_keys(&app) {
            for part in parts(&label) {
                assert!(
                    help_keys.iter().any(|h| h == part),
                    "{state:?}: footer `{label} {what}`: `{part}` is not in the help overlay ({help_keys:?})"
                );
            }
        }
    }
}
