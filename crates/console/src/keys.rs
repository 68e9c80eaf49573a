//! Key bindings: the console's actions, their default keys, and the
//! `[console.keys]` overrides from the config file (`action = "key"`).
//!
//! Key names are parsed here (`q`, `?`, `ctrl-o`, `shift-tab`, `f2`,
//! `pageup`...); a bad name or two actions fighting over one key is a
//! [`KeyError`] that names the action. Pure data: this module never reads the
//! terminal and never sends anything.

use std::collections::BTreeMap;
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Everything a configurable key can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Quit,
    /// Leave the console; the agent process keeps working.
    Detach,
    NextPane,
    PrevPane,
    Zoom,
    Help,
    CycleTheme,
    Policy,
    History,
    Follow,
    FocusInput,
    Cancel,
    Approve,
    ApproveSession,
    Deny,
    DenyReason,
    Edit,
    Search,
    SearchNext,
    SearchPrev,
    Save,
    /// Re-run the model round that failed (after the last retry).
    Retry,
    /// Compact older context now.
    Compact,
    /// Go back: leave the message box, unzoom, close a view (never
    /// destroys work).
    Back,
    /// The standing-approvals view (session rules, revoke).
    Rules,
    /// Copy the selected command or output through OSC 52.
    Copy,
    /// Mark the first line of a range to copy in the viewer.
    Mark,
    /// Preview the waiting command's effects in a throwaway view.
    Preview,
    /// The running agents overlay: switch to another agent.
    Agents,
}

/// Where an action's key is looked up; keys only clash within one scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Anywhere outside the input box and modals.
    Global,
    /// The approvals pane (on top of the global keys).
    Approvals,
    /// The full-output viewer (on top of the global keys).
    Viewer,
}

impl Action {
    pub const ALL: [Action; 29] = [
        Action::Quit,
        Action::Detach,
        Action::NextPane,
        Action::PrevPane,
        Action::Zoom,
        Action::Help,
        Action::CycleTheme,
        Action::Policy,
        Action::History,
        Action::Follow,
        Action::FocusInput,
        Action::Cancel,
        Action::Approve,
        Action::ApproveSession,
        Action::Deny,
        Action::DenyReason,
        Action::Edit,
        Action::Search,
        Action::SearchNext,
        Action::SearchPrev,
        Action::Save,
        Action::Retry,
        Action::Compact,
        Action::Back,
        Action::Rules,
        Action::Copy,
        Action::Mark,
        Action::Preview,
        Action::Agents,
    ];

    /// The name used in `[console.keys]`.
    pub fn name(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::Detach => "detach",
            Action::NextPane => "next_pane",
            Action::PrevPane => "prev_pane",
            Action::Zoom => "zoom",
            Action::Help => "help",
            Action::CycleTheme => "theme",
            Action::Policy => "policy",
            Action::History => "history",
            Action::Follow => "follow",
            Action::FocusInput => "focus_input",
            Action::Cancel => "cancel",
            Action::Approve => "approve",
            Action::ApproveSession => "approve_session",
            Action::Deny => "deny",
            Action::DenyReason => "deny_reason",
            Action::Edit => "edit",
            Action::Search => "search",
            Action::SearchNext => "search_next",
            Action::SearchPrev => "search_prev",
            Action::Save => "save",
            Action::Retry => "retry",
            Action::Compact => "compact",
            Action::Back => "back",
            Action::Rules => "rules",
            Action::Copy => "copy",
            Action::Mark => "mark",
            Action::Preview => "preview",
            Action::Agents => "agents",
        }
    }

    /// What the action does, for the help overlay.
    pub fn describe(self) -> &'static str {
        match self {
            Action::Quit => "quit: detach or stop the agent (asks)",
            Action::Detach => "detach: leave the agent working (`vigil attach` returns)",
            Action::NextPane => "focus the next pane",
            Action::PrevPane => "focus the previous pane",
            Action::Zoom => "zoom the focused pane / back",
            Action::Help => "this help",
            Action::CycleTheme => "next colour theme",
            Action::Policy => "approval policy menu",
            Action::History => "tool call history",
            Action::Follow => "follow the tail again",
            Action::FocusInput => "type a message",
            Action::Cancel => "cancel the running turn (press twice)",
            Action::Approve => "approve once",
            Action::ApproveSession => "approve this action (or a prefix) for the session",
            Action::Deny => "deny",
            Action::DenyReason => "deny with a reason for the model",
            Action::Edit => "edit the command, then run it",
            Action::Search => "search the output",
            Action::SearchNext => "next match",
            Action::SearchPrev => "previous match",
            Action::Save => "save the output to a file",
            Action::Retry => "retry the model round that failed",
            Action::Compact => "compact the conversation now",
            Action::Back => "back: leave the box, unzoom, close the view",
            Action::Rules => "standing approvals (session rules), revoke one",
            Action::Copy => "copy the selected command or output (OSC 52)",
            Action::Mark => "mark a line range to copy",
            Action::Preview => "preview the command's effects in a throwaway view",
            Action::Agents => "the running agents: state, approvals; enter switches to one",
        }
    }

    pub fn scope(self) -> Scope {
        match self {
            Action::Approve
            | Action::ApproveSession
            | Action::Deny
            | Action::DenyReason
            | Action::Edit
            | Action::Preview => Scope::Approvals,
            Action::Search
            | Action::SearchNext
            | Action::SearchPrev
            | Action::Save
            | Action::Mark => Scope::Viewer,
            _ => Scope::Global,
        }
    }

    fn default_key(self) -> &'static str {
        match self {
            Action::Quit => "q",
            Action::Detach => "ctrl-d",
            Action::NextPane => "tab",
            Action::PrevPane => "shift-tab",
            Action::Zoom => "z",
            Action::Help => "?",
            Action::CycleTheme => "t",
            Action::Policy => "p",
            Action::History => "h",
            Action::Follow => "f",
            Action::FocusInput => "i",
            Action::Cancel => "x",
            Action::Approve => "y",
            Action::ApproveSession => "a",
            Action::Deny => "n",
            Action::DenyReason => "r",
            Action::Edit => "e",
            Action::Search => "/",
            Action::SearchNext => "n",
            Action::SearchPrev => "N",
            Action::Save => "s",
            Action::Retry => "R",
            Action::Compact => "C",
            Action::Back => "esc",
            Action::Rules => "A",
            Action::Copy => "c",
            Action::Mark => "v",
            Action::Preview => "v",
            Action::Agents => "g",
        }
    }

    fn from_name(name: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// Ctrl-C: the one key no binding changes. It always leaves (an attached
/// console detaches), except while the operator types into the mirrored
/// pane, where it goes to the pane.
pub fn is_interrupt(key: &KeyEvent) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c')
}

/// One key with its modifiers. Character keys ignore Shift (the character
/// already says it: `N`, `?`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyBinding {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl KeyBinding {
    pub fn matches(&self, key: &KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if ctrl != self.ctrl || alt != self.alt {
            return false;
        }
        match (self.code, key.code) {
            (KeyCode::Char(a), KeyCode::Char(b)) => a == b,
            (KeyCode::BackTab, KeyCode::Tab) => key.modifiers.contains(KeyModifiers::SHIFT),
            (a, b) => a == b,
        }
    }

    /// Parse a key name: `q`, `?`, `N`, `ctrl-o`, `alt-x`, `shift-tab`, `f2`,
    /// `esc`, `enter`, `space`, `pageup`, `end`...
    pub fn parse(name: &str) -> Result<KeyBinding, String> {
        let original = name;
        let mut rest = name.trim();
        let (mut ctrl, mut alt, mut shift) = (false, false, false);
        loop {
            let lower = rest.to_ascii_lowercase();
            let Some((prefix, tail)) = lower.split_once(['-', '+']) else {
                break;
            };
            if tail.is_empty() {
                break;
            }
            match prefix {
                "ctrl" | "c" => ctrl = true,
                "alt" | "m" => alt = true,
                "shift" | "s" => shift = true,
                _ => break,
            }
            rest = &rest[prefix.len() + 1..];
        }
        let lower = rest.to_ascii_lowercase();
        let code = match lower.as_str() {
            "tab" if shift => KeyCode::BackTab,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "esc" | "escape" => KeyCode::Esc,
            "enter" | "return" => KeyCode::Enter,
            "space" => KeyCode::Char(' '),
            "backspace" => KeyCode::Backspace,
            "delete" | "del" => KeyCode::Delete,
            "insert" | "ins" => KeyCode::Insert,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" | "pgup" => KeyCode::PageUp,
            "pagedown" | "pgdn" => KeyCode::PageDown,
            f if f.len() >= 2 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => {
                let n: u8 = f[1..].parse().unwrap_or(0);
                if !(1..=12).contains(&n) {
                    return Err(format!("`{original}`: function keys go from f1 to f12"));
                }
                KeyCode::F(n)
            }
            _ => {
                let mut chars = rest.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) if !c.is_control() => {
                        let c = if shift { c.to_ascii_uppercase() } else { c };
                        KeyCode::Char(if ctrl { c.to_ascii_lowercase() } else { c })
                    }
                    _ => {
                        return Err(format!(
                            "`{original}` is not a key name; use a single character (`q`, `?`), \
                             a named key (tab, esc, enter, space, up, pageup, f1…) or a \
                             modifier prefix (ctrl-o, alt-x, shift-tab)"
                        ));
                    }
                }
            }
        };
        Ok(KeyBinding { code, ctrl, alt })
    }
}

impl fmt::Display for KeyBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            f.write_str("Ctrl-")?;
        }
        if self.alt {
            f.write_str("Alt-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("Space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Tab => f.write_str("Tab"),
            KeyCode::BackTab => f.write_str("Shift-Tab"),
            KeyCode::Esc => f.write_str("Esc"),
            KeyCode::Enter => f.write_str("Enter"),
            KeyCode::Backspace => f.write_str("Backspace"),
            KeyCode::Delete => f.write_str("Del"),
            KeyCode::Insert => f.write_str("Ins"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Home => f.write_str("Home"),
            KeyCode::End => f.write_str("End"),
            KeyCode::PageUp => f.write_str("PgUp"),
            KeyCode::PageDown => f.write_str("PgDn"),
            KeyCode::F(n) => write!(f, "F{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// A bad `[console.keys]` entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("console.keys.{action}: {message}")]
pub struct KeyError {
    pub action: String,
    pub message: String,
}

/// The bindings in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keymap {
    bindings: BTreeMap<Action, KeyBinding>,
}

impl Default for Keymap {
    fn default() -> Self {
        let bindings = Action::ALL
            .into_iter()
            .filter_map(|a| KeyBinding::parse(a.default_key()).ok().map(|k| (a, k)))
            .collect();
        Keymap { bindings }
    }
}

impl Keymap {
    /// Defaults with the config's overrides (`action name → key name`).
    pub fn from_config(overrides: &BTreeMap<String, String>) -> Result<Keymap, KeyError> {
        let mut map = Keymap::default();
        for (name, key) in overrides {
            let Some(action) = Action::from_name(name) else {
                let names: Vec<&str> = Action::ALL.iter().map(|a| a.name()).collect();
                return Err(KeyError {
                    action: name.clone(),
                    message: format!("unknown action; known: {}", names.join(", ")),
                });
            };
            let binding = KeyBinding::parse(key).map_err(|message| KeyError {
                action: name.clone(),
                message,
            })?;
            map.bindings.insert(action, binding);
        }
        map.check_clashes()?;
        Ok(map)
    }

    fn check_clashes(&self) -> Result<(), KeyError> {
        for (a, ka) in &self.bindings {
            for (b, kb) in &self.bindings {
                let same_scope = a.scope() == b.scope()
                    || a.scope() == Scope::Global
                    || b.scope() == Scope::Global;
                if a < b && ka == kb && same_scope {
                    return Err(KeyError {
                        action: b.name().to_string(),
                        message: format!("`{kb}` is already bound to {}", a.name()),
                    });
                }
            }
        }
        Ok(())
    }

    pub fn key(&self, action: Action) -> Option<KeyBinding> {
        self.bindings.get(&action).copied()
    }

    /// The key's label for the footer and help (empty when unbound).
    pub fn label(&self, action: Action) -> String {
        self.key(action).map(|k| k.to_string()).unwrap_or_default()
    }

    /// The action this key triggers in this scope (scope-specific first).
    pub fn action(&self, key: &KeyEvent, scope: Scope) -> Option<Action> {
        let hit = |want: Scope| {
            self.bindings
                .iter()
                .find(|(a, k)| a.scope() == want && k.matches(key))
                .map(|(a, _)| *a)
        };
        if scope != Scope::Global
            && let Some(a) = hit(scope)
        {
            return Some(a);
        }
        hit(Scope::Global)
    }

    /// Every binding, for the help overlay.
    pub fn all(&self) -> impl Iterator<Item = (Action, KeyBinding)> + '_ {
        self.bindings.iter().map(|(a, k)| (*a, *k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn names_parse() {
        let k = |s| KeyBinding::parse(s).unwrap();
        assert_eq!(k("q").code, KeyCode::Char('q'));
        assert_eq!(k("shift-tab").code, KeyCode::BackTab);
        assert_eq!(k("N").code, KeyCode::Char('N'));
        assert_eq!(k("shift-n").code, KeyCode::Char('N'));
        assert!(k("ctrl-o").ctrl);
        assert_eq!(k("F2").code, KeyCode::F(2));
        assert_eq!(k("-").code, KeyCode::Char('-'));
        assert_eq!(k("ctrl--").code, KeyCode::Char('-'));
        assert_eq!(k("pageup").code, KeyCode::PageUp);
        assert!(KeyBinding::parse("banana").is_err());
        assert!(KeyBinding::parse("f13").is_err());
        assert!(KeyBinding::parse("").is_err());
    }

    #[test]
    fn matching_ignores_shift_on_characters() {
        let k = KeyBinding::parse("N").unwrap();
        assert!(k.matches(&ev(KeyCode::Char('N'), KeyModifiers::SHIFT)));
        assert!(!k.matches(&ev(KeyCode::Char('n'), KeyModifiers::NONE)));
        let bt = KeyBinding::parse("shift-tab").unwrap();
        assert!(bt.matches(&ev(KeyCode::BackTab, KeyModifiers::SHIFT)));
    }

    #[test]
    fn config_overrides_and_errors_name_the_action() {
        let mut o = BTreeMap::new();
        o.insert("zoom".to_string(), "ctrl-z".to_string());
        let map = Keymap::from_config(&o).unwrap();
        assert_eq!(
            map.action(
                &ev(KeyCode::Char('z'), KeyModifiers::CONTROL),
                Scope::Global
            ),
            Some(Action::Zoom)
        );
        o.insert("zoom".to_string(), "banana".to_string());
        let err = Keymap::from_config(&o).unwrap_err().to_string();
        assert!(err.contains("console.keys.zoom"), "{err}");
        assert!(err.contains("banana"), "{err}");
        let mut o = BTreeMap::new();
        o.insert("zooom".to_string(), "x".to_string());
        let err = Keymap::from_config(&o).unwrap_err().to_string();
        assert!(err.contains("unknown action"), "{err}");
        let mut o = BTreeMap::new();
        o.insert("help".to_string(), "q".to_string());
        let err = Keymap::from_config(&o).unwrap_err().to_string();
        assert!(err.contains("already bound to quit"), "{err}");
    }

    #[test]
    fn scopes_share_letters_without_clashing() {
        let map = Keymap::default();
        let n = ev(KeyCode::Char('n'), KeyModifiers::NONE);
        assert_eq!(map.action(&n, Scope::Approvals), Some(Action::Deny));
        assert_eq!(map.action(&n, Scope::Viewer), Some(Action::SearchNext));
        assert_eq!(map.action(&n, Scope::Global), None);
    }
}
