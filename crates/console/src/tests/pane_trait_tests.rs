//! The pane trait and the layer stack: every key a layer's footer names is
//! a key that layer answers (never one it ignores), the footer is exactly
//! the top layer's commands, and the layers on top (modals, questions,
//! overlays) take keys before the focused pane. The last test is the grep
//! that no pane routes keys outside the trait.

use crossterm::event::{KeyCode, KeyEvent};

use crate::app::keys::Layer;
use crate::app::{App, Focus, Overlay};
use crate::panes::pane::{Command, Ctx, GlobalKeys, Pane};
use crate::tests::app_tests::{app, key, request};
use crate::tests::footer_tests::{STATES, State, build, busy, events};
use vigil_protocol::{AgentCommand, AgentEvent};

/// Whether the layer `probe` names answered `key` (anything but ignored).
type Probe = fn(&mut App, &KeyEvent, &Ctx) -> bool;

fn focused(app: &mut App, key: &KeyEvent, ctx: &Ctx) -> bool {
    app.focused_pane_mut().handle_key(key, ctx).is_handled()
}

fn global(_app: &mut App, key: &KeyEvent, ctx: &Ctx) -> bool {
    GlobalKeys.handle_key(key, ctx).is_handled()
}

fn overlay(app: &mut App, key: &KeyEvent, ctx: &Ctx) -> bool {
    match &mut app.overlay {
        Overlay::History { viewer: Some(v) } => v.handle_key(key, ctx).is_handled(),
        Overlay::History { viewer: None } => app.history.handle_key(key, ctx).is_handled(),
        Overlay::Rules => app.rules.handle_key(key, ctx).is_handled(),
        Overlay::Help(h) => h.handle_key(key, ctx).is_handled(),
        Overlay::Agents { .. } | Overlay::None => false,
    }
}

/// The (commands, the layer that offers them) of `state`'s footer.
fn tables(state: State) -> Vec<(Vec<Command>, Probe)> {
    let app = build(state);
    let ctx = app.ctx();
    if matches!(app.overlay, Overlay::None) {
        vec![
            (app.focused_pane().commands(&ctx), focused as Probe),
            (GlobalKeys.commands(&ctx), global as Probe),
        ]
    } else {
        vec![(app.footer_commands(), overlay as Probe)]
    }
}

#[test]
fn every_footer_command_is_a_key_its_layer_answers() {
    let mut checked = 0;
    for state in STATES {
        for (commands, probe) in tables(state) {
            for c in commands.iter().filter(|c| !c.key.is_empty()) {
                for k in events(&c.key) {
                    // A fresh console each time: answering may change it.
                    let mut app = build(state);
                    let ctx = app.ctx();
                    assert!(
                        probe(&mut app, &k, &ctx),
                        "{state:?}: `{} {}` is offered but {k:?} is ignored",
                        c.key,
                        c.label
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} commands checked");
}

#[test]
fn the_footer_is_the_top_layers_commands() {
    for state in STATES {
        let app = build(state);
        let ctx = app.ctx();
        let from_layers: Vec<Command> = tables(state).into_iter().flat_map(|(c, _)| c).collect();
        assert_eq!(app.footer_commands(), from_layers, "{state:?}");
        if !matches!(app.overlay, Overlay::None) {
            continue;
        }
        // The focused pane's own part comes from its trait, not from a list
        // kept elsewhere.
        let own = app.focused_pane().commands(&ctx);
        assert_eq!(app.footer_commands()[..own.len()], own[..], "{state:?}");
    }
}

/// Every key a pane (other than the message box, where keys are text)
/// answers is one its footer or the help overlay names: no hidden keys.
#[test]
fn every_key_a_pane_answers_is_named() {
    let map = crate::keys::Keymap::default();
    let named: Vec<String> = crate::panes::help::sections(&map)
        .into_iter()
        .flat_map(|(_, pairs)| pairs.into_iter().map(|(k, _)| k))
        .flat_map(|k| k.split([' ', '/']).map(str::to_string).collect::<Vec<_>>())
        .collect();
    let mut candidates: Vec<KeyCode> = (' '..='~').map(KeyCode::Char).collect();
    candidates.extend([
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::Enter,
        KeyCode::Tab,
        KeyCode::Esc,
        KeyCode::Delete,
        KeyCode::Backspace,
    ]);
    for state in STATES {
        let probe = build(state);
        if !matches!(probe.overlay, Overlay::None) || probe.focus() == Focus::Input {
            continue;
        }
        let offered: Vec<String> = probe.footer_commands().into_iter().map(|c| c.key).collect();
        for code in candidates.iter().copied() {
            let mut app = build(state);
            let ctx = app.ctx();
            if !app
                .focused_pane_mut()
                .handle_key(&key(code), &ctx)
                .is_handled()
            {
                continue;
            }
            let label = crate::keys::KeyBinding {
                code,
                ctrl: false,
                alt: false,
            }
            .to_string();
            let known =
                |k: &String| k == &label || (!label.is_ascii() && k.contains(label.as_str()));
            assert!(
                named.iter().any(known) || offered.iter().any(known),
                "{state:?}: the pane answers `{label}`, which neither its footer nor the help names"
            );
        }
    }
}

#[test]
fn a_modal_takes_keys_before_the_focused_pane() {
    let mut app = busy();
    app.set_focus(Focus::Approvals);
    // The policy menu over the approvals pane: the approval key is the
    // menu's (it ignores it), never an answer to the card behind.
    assert!(app.on_key(key(KeyCode::Char('p'))).is_empty());
    assert!(app.modal.is_some());
    let layers = app.layers();
    let at = |l| layers.iter().position(|x| *x == l);
    assert!(at(Layer::Modal) < at(Layer::Focused), "{layers:?}");
    for c in ['y', 'n', 'a', 'j'] {
        let out = app.on_key(key(KeyCode::Char(c)));
        assert!(
            !out.iter()
                .any(|c| matches!(c, AgentCommand::Approval { .. })),
            "{c} answered through the modal: {out:?}"
        );
        assert!(app.modal.is_some(), "{c} closed the menu");
    }
    // Esc closes the modal; now the same key answers the card on screen.
    app.on_key(key(KeyCode::Esc));
    assert!(app.modal.is_none());
    crate::tests::view_tests::screen(&app, 100, 30);
    let out = app.on_key(key(KeyCode::Char('y')));
    assert!(
        out.iter()
            .any(|c| matches!(c, AgentCommand::Approval { .. })),
        "{out:?}"
    );
}

#[test]
fn the_deny_reason_box_takes_the_typed_letters() {
    let mut app = app();
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(1, "c1", "rm -rf /tmp/x"),
    });
    app.set_focus(Focus::Approvals);
    crate::tests::view_tests::screen(&app, 100, 30);
    assert!(app.on_key(key(KeyCode::Char('r'))).is_empty());
    // `y` and `n` are text in the box, not answers.
    for c in "yn".chars() {
        assert!(app.on_key(key(KeyCode::Char(c))).is_empty());
    }
    let out = app.on_key(key(KeyCode::Enter));
    let reason = out.iter().find_map(|c| match c {
        AgentCommand::Approval { decision, .. } => Some(decision.clone()),
        _ => None,
    });
    assert_eq!(
        reason,
        Some(vigil_protocol::Answer::DenyWithReason("yn".into()))
    );
}

#[test]
fn layers_stack_in_one_order() {
    let mut app = busy();
    assert_eq!(
        app.layers(),
        [Layer::Interrupt, Layer::Focused, Layer::Global]
    );
    app.on_key(key(KeyCode::Char('?')));
    app.set_read_only(true);
    app.on_key(key(KeyCode::Esc));
    app.on_key(key(KeyCode::Char('p')));
    let layers = app.layers();
    let mut sorted = layers.clone();
    sorted.sort();
    assert_eq!(layers, sorted, "the stack is listed top first");
    assert!(layers.contains(&Layer::ReadOnly), "{layers:?}");
}

/// The grep: the App never reads a key itself (no `KeyCode` under `app/`),
/// a key reaches a layer only through `Pane::handle_key`, called only by
/// the stack in `app/keys.rs`, and no pane has a key entry point of its own.
#[test]
fn no_pane_routes_keys_outside_the_trait() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&src, &mut files);
    assert!(files.len() > 30, "{} files", files.len());
    for (path, text) in files {
        let rel = path
            .strip_prefix(&src)
            .unwrap_or(&path)
            .display()
            .to_string();
        if rel.starts_with("tests/") {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let at = format!("{rel}:{}: {line}", n + 1);
            if rel.starts_with("app/") {
                assert!(!line.contains("KeyCode"), "the App reads a key: {at}");
            }
            if line.contains("handle_key(") && !line.contains("fn handle_key") {
                assert!(rel == "app/keys.rs", "a key routed outside the stack: {at}");
            }
            let entry = line.contains("fn on_") && line.contains("key");
            assert!(
                !entry || rel == "app/keys.rs",
                "a key entry point outside the trait: {at}"
            );
        }
    }
}

fn collect(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            out.push((p, text));
        }
    }
}
