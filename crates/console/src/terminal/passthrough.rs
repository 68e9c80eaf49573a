//! Key passthrough: what a key pressed in the focused mirror becomes in the
//! managed tmux pane. Printable characters are literal text; named keys,
//! Ctrl and Alt combinations become tmux key names (`Enter`, `BSpace`,
//! `C-x`, `Up`, `F5`…), Alt-x is `Escape` then `x` as a terminal sends it.
//!
//! Pure data: this module never sends anything. [`is_leave`] names the key
//! that ends passthrough (Ctrl-], which is never forwarded).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use vigil_protocol::PaneKey;

/// What the footer and the mirror's title say while the operator types.
pub const HINT: &str = "typing into the pane · Ctrl-] or Esc Esc leaves";
/// The short form on the mirror's border.
pub const BORDER_HINT: &str = "⌨ TYPING INTO PANE · Ctrl-] leaves";

/// Ctrl-] leaves passthrough. Terminals send it as 0x1d, which crossterm
/// reports as Ctrl-5.
pub fn is_leave(key: &KeyEvent) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL)
        && matches!(key.code, KeyCode::Char(']') | KeyCode::Char('5'))
}

/// The keys to type for one key press (empty: nothing to send).
pub fn pane_keys(key: &KeyEvent) -> Vec<PaneKey> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    let mut out = Vec::with_capacity(2);
    if let KeyCode::Char(c) = key.code {
        if alt {
            out.push(PaneKey::Key("Escape".into()));
        }
        match ctrl_char(c, ctrl) {
            Some(k) => out.push(k),
            None => out.clear(),
        }
        return out;
    }
    let base = match key.code {
        KeyCode::Enter => "Enter".to_string(),
        KeyCode::Backspace => "BSpace".to_string(),
        KeyCode::Tab if shift => "BTab".to_string(),
        KeyCode::Tab => "Tab".to_string(),
        KeyCode::BackTab => "BTab".to_string(),
        KeyCode::Esc => "Escape".to_string(),
        KeyCode::Up => "Up".to_string(),
        KeyCode::Down => "Down".to_string(),
        KeyCode::Left => "Left".to_string(),
        KeyCode::Right => "Right".to_string(),
        KeyCode::Home => "Home".to_string(),
        KeyCode::End => "End".to_string(),
        KeyCode::PageUp => "PPage".to_string(),
        KeyCode::PageDown => "NPage".to_string(),
        KeyCode::Delete => "DC".to_string(),
        KeyCode::Insert => "IC".to_string(),
        KeyCode::F(n) if (1..=12).contains(&n) => format!("F{n}"),
        _ => return out,
    };
    let plain_named = matches!(key.code, KeyCode::Enter | KeyCode::Esc | KeyCode::BackTab)
        || (key.code == KeyCode::Tab && shift);
    let mut name = String::new();
    if !plain_named {
        if ctrl {
            name.push_str("C-");
        }
        if alt {
            name.push_str("M-");
        }
        if shift {
            name.push_str("S-");
        }
    }
    name.push_str(&base);
    out.push(PaneKey::Key(name));
    out
}

/// A character key, with Ctrl when held.
fn ctrl_char(c: char, ctrl: bool) -> Option<PaneKey> {
    if !ctrl {
        return (!c.is_control()).then(|| PaneKey::Text(c.to_string()));
    }
    match c {
        c if c.is_ascii_alphanumeric() => {
            Some(PaneKey::Key(format!("C-{}", c.to_ascii_lowercase())))
        }
        ' ' | '@' => Some(PaneKey::Key("C-Space".into())),
        // Ctrl-[ \ ^ _ as the control bytes a terminal sends.
        '[' | '\\' | '^' | '_' => {
            let byte = (c as u8) & 0x1f;
            Some(PaneKey::Text(char::from(byte).to_string()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode, mods: KeyModifiers) -> Vec<PaneKey> {
        pane_keys(&KeyEvent::new(code, mods))
    }
    fn key(name: &str) -> Vec<PaneKey> {
        vec![PaneKey::Key(name.into())]
    }
    fn text(t: &str) -> Vec<PaneKey> {
        vec![PaneKey::Text(t.into())]
    }
    const NONE: KeyModifiers = KeyModifiers::NONE;

    #[test]
    fn printable_characters_are_literal_text() {
        assert_eq!(k(KeyCode::Char('a'), NONE), text("a"));
        assert_eq!(k(KeyCode::Char('A'), KeyModifiers::SHIFT), text("A"));
        assert_eq!(k(KeyCode::Char(';'), NONE), text(";"));
        assert_eq!(k(KeyCode::Char('$'), NONE), text("$"));
        assert_eq!(k(KeyCode::Char(' '), NONE), text(" "));
        assert_eq!(k(KeyCode::Char('é'), NONE), text("é"));
    }

    #[test]
    fn named_keys_use_tmux_names() {
        assert_eq!(k(KeyCode::Enter, NONE), key("Enter"));
        assert_eq!(k(KeyCode::Backspace, NONE), key("BSpace"));
        assert_eq!(k(KeyCode::Tab, NONE), key("Tab"));
        assert_eq!(k(KeyCode::BackTab, KeyModifiers::SHIFT), key("BTab"));
        assert_eq!(k(KeyCode::Esc, NONE), key("Escape"));
        assert_eq!(k(KeyCode::Up, NONE), key("Up"));
        assert_eq!(k(KeyCode::Down, NONE), key("Down"));
        assert_eq!(k(KeyCode::Left, NONE), key("Left"));
        assert_eq!(k(KeyCode::Right, NONE), key("Right"));
        assert_eq!(k(KeyCode::Home, NONE), key("Home"));
        assert_eq!(k(KeyCode::End, NONE), key("End"));
        assert_eq!(k(KeyCode::PageUp, NONE), key("PPage"));
        assert_eq!(k(KeyCode::PageDown, NONE), key("NPage"));
        assert_eq!(k(KeyCode::Delete, NONE), key("DC"));
        assert_eq!(k(KeyCode::Insert, NONE), key("IC"));
        assert_eq!(k(KeyCode::F(5), NONE), key("F5"));
    }

    #[test]
    fn modifiers_become_prefixes() {
        let ctrl = KeyModifiers::CONTROL;
        assert_eq!(k(KeyCode::Char('c'), ctrl), key("C-c"));
        assert_eq!(k(KeyCode::Char('D'), ctrl), key("C-d"));
        assert_eq!(k(KeyCode::Char(' '), ctrl), key("C-Space"));
        assert_eq!(k(KeyCode::Char('\\'), ctrl), text("\x1c"));
        assert_eq!(k(KeyCode::Left, ctrl), key("C-Left"));
        assert_eq!(k(KeyCode::Up, KeyModifiers::SHIFT), key("S-Up"));
        assert_eq!(
            k(KeyCode::Char('x'), KeyModifiers::ALT),
            vec![PaneKey::Key("Escape".into()), PaneKey::Text("x".into())]
        );
        assert_eq!(k(KeyCode::Right, KeyModifiers::ALT), key("M-Right"));
    }

    #[test]
    fn every_key_name_is_safe_for_tmux() {
        let mods = [
            KeyModifiers::NONE,
            KeyModifiers::CONTROL,
            KeyModifiers::ALT,
            KeyModifiers::SHIFT,
        ];
        let codes = [
            KeyCode::Char('a'),
            KeyCode::Char('%'),
            KeyCode::Char('"'),
            KeyCode::Enter,
            KeyCode::Up,
            KeyCode::F(12),
            KeyCode::Tab,
        ];
        for m in mods {
            for c in codes {
                for pk in k(c, m) {
                    if let PaneKey::Key(name) = pk {
                        assert!(PaneKey::valid_key_name(&name), "{name}");
                    }
                }
            }
        }
    }

    #[test]
    fn ctrl_bracket_leaves_and_is_never_typed() {
        let ctrl = KeyModifiers::CONTROL;
        assert!(is_leave(&KeyEvent::new(KeyCode::Char(']'), ctrl)));
        assert!(is_leave(&KeyEvent::new(KeyCode::Char('5'), ctrl)));
        assert!(!is_leave(&KeyEvent::new(KeyCode::Char(']'), NONE)));
        assert!(k(KeyCode::Char(']'), ctrl).is_empty());
        assert!(k(KeyCode::Null, NONE).is_empty());
    }

    #[test]
    fn typed_keys_read_plainly() {
        let keys = vec![
            PaneKey::Text("ls -l".into()),
            PaneKey::Key("Enter".into()),
            PaneKey::Key("C-c".into()),
        ];
        assert_eq!(PaneKey::describe(&keys), "ls -l⏎⟨C-c⟩");
    }
}
