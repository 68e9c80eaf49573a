//! The footer: the keys that work in the focused pane (or the open view or
//! modal), always visible, named as the keymap binds them.
//!
//! It only renders what the App tells it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::keys::{Action, Keymap};
use crate::style::theme::Theme;

/// Which pane has the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Input,
    Conversation,
    Tools,
    Approvals,
    Mirror,
}

impl Focus {
    const ORDER: [Focus; 5] = [
        Focus::Input,
        Focus::Conversation,
        Focus::Tools,
        Focus::Approvals,
        Focus::Mirror,
    ];

    fn index(self) -> usize {
        Self::ORDER.iter().position(|f| *f == self).unwrap_or(0)
    }

    pub fn next(self) -> Focus {
        Self::ORDER[(self.index() + 1) % Self::ORDER.len()]
    }

    pub fn prev(self) -> Focus {
        Self::ORDER[(self.index() + Self::ORDER.len() - 1) % Self::ORDER.len()]
    }
}

/// What is on top of the panes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    Panes,
    History,
    Viewer,
    /// The standing-approvals view.
    Rules,
    /// A modal with its own one-line hint.
    Modal(&'static str),
}

/// What the footer needs to know.
#[derive(Debug, Clone, Copy)]
pub struct FooterView {
    pub focus: Focus,
    pub running: bool,
    pub pending: usize,
    pub layer: Layer,
    /// A client of an agent process (detach works, `q` asks).
    pub attached: bool,
    /// Other agents run beside this console's (the agents key is shown).
    pub others: bool,
}

/// The (key, action) pairs for this state, most important first.
pub fn keys(view: FooterView, map: &Keymap) -> Vec<(String, &'static str)> {
    let k = |a: Action| map.label(a);
    let mut keys: Vec<(String, &'static str)> = Vec::new();
    match view.layer {
        Layer::Modal(hint) => {
            keys.push((String::new(), hint));
            return keys;
        }
        Layer::History => {
            keys.push(("↑↓".into(), "select"));
            keys.push(("Enter".into(), "full output"));
            keys.push((k(Action::Copy), "copy command"));
            keys.push((k(Action::History), "close"));
            keys.push((k(Action::Back), "close"));
            keys.push((k(Action::Help), "help"));
            return keys;
        }
        Layer::Viewer => {
            keys.push((k(Action::Search), "search"));
            keys.push((
                format!("{}/{}", k(Action::SearchNext), k(Action::SearchPrev)),
                "next/prev",
            ));
            keys.push((k(Action::Back), "back"));
            keys.push((k(Action::Save), "save"));
            keys.push((k(Action::Copy), "copy"));
            keys.push((k(Action::Mark), "mark range"));
            keys.push(("PgUp/PgDn".into(), "scroll"));
            return keys;
        }
        Layer::Rules => {
            keys.push(("↑↓".into(), "select"));
            keys.push(("d".into(), "revoke"));
            keys.push((k(Action::Back), "close"));
            return keys;
        }
        Layer::Panes => {}
    }
    match view.focus {
        Focus::Input => {
            keys.push(("Enter".into(), "send"));
            keys.push(("Alt-Enter".into(), "newline"));
            if view.pending > 0 {
                keys.push((k(Action::NextPane), "approvals"));
            } else {
                keys.push((k(Action::NextPane), "next pane"));
            }
            keys.push((k(Action::Back), "leave box"));
            keys.push(("Ctrl-U".into(), "clear line"));
            if view.attached {
                keys.push((k(Action::Detach), "detach"));
            } else {
                keys.push(("Ctrl-C".into(), "quit"));
            }
        }
        Focus::Approvals if view.pending > 0 => {
            keys.push((k(Action::Approve), "once"));
            keys.push((k(Action::ApproveSession), "session"));
            keys.push((k(Action::Deny), "deny"));
            keys.push((k(Action::DenyReason), "deny+why"));
            keys.push((k(Action::Edit), "edit"));
            keys.push(("↑↓".into(), "select"));
            keys.push((k(Action::Policy), "policy"));
        }
        Focus::Approvals => {
            keys.push((String::new(), "no pending approvals"));
            keys.push((k(Action::Policy), "policy"));
            keys.push((k(Action::Rules), "rules"));
            keys.push((k(Action::FocusInput), "message"));
        }
        Focus::Conversation | Focus::Tools => {
            if view.pending > 0 {
                keys.push((k(Action::NextPane), "approvals"));
            }
            keys.push(("PgUp/PgDn".into(), "scroll"));
            keys.push((k(Action::Follow), "follow"));
            keys.push((k(Action::Zoom), "zoom"));
            keys.push((k(Action::History), "history"));
            keys.push((k(Action::Copy), "copy command"));
            keys.push((k(Action::FocusInput), "message"));
            if view.others {
                keys.push((k(Action::Agents), "agents"));
            }
        }
        Focus::Mirror => {
            if view.pending > 0 {
                keys.push((k(Action::NextPane), "approvals"));
            }
            keys.push(("Enter".into(), "type into the pane"));
            keys.push((k(Action::FocusInput), "message"));
            keys.push((k(Action::Zoom), "zoom"));
        }
    }
    if view.focus != Focus::Input {
        if view.running {
            keys.push((k(Action::Cancel), "cancel turn"));
        }
        keys.push((k(Action::Help), "help"));
        if view.attached {
            keys.push((k(Action::Detach), "detach"));
            keys.push((k(Action::Quit), "leave…"));
        } else {
            keys.push((k(Action::Quit), "quit"));
        }
    }
    keys
}

/// Drawn width of one footer item with its separator.
fn item_width(key: &str, action: &str) -> usize {
    let key_w = if key.is_empty() {
        0
    } else {
        key.chars().count() + 1
    };
    3 + key_w + action.chars().count()
}

pub fn render(frame: &mut Frame, area: Rect, view: FooterView, map: &Keymap, theme: &Theme) {
    // Items that do not fit are left out; the help key always stays.
    let mut items = keys(view, map);
    let help = items
        .iter()
        .position(|(_, a)| *a == "help")
        .map(|i| items.remove(i));
    let room = area.width as usize;
    let reserve = help.as_ref().map_or(0, |(k, a)| item_width(k, a));
    let mut used = 0;
    let mut shown = Vec::new();
    for (k, a) in items {
        let w = item_width(&k, a);
        if used + w <= room.saturating_sub(reserve) + 3 {
            used += w;
            shown.push((k, a));
        }
    }
    shown.extend(help);
    let mut spans = Vec::new();
    for (i, (key, action)) in shown.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", theme.dim));
        }
        if !key.is_empty() {
            spans.push(Span::styled(key, theme.footer_key));
            spans.push(Span::raw(" "));
        }
        spans.push(Span::styled(action, theme.footer_text));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn focus_cycles_both_ways() {
        let mut f = Focus::Input;
        for _ in 0..5 {
            f = f.next();
        }
        assert_eq!(f, Focus::Input);
        assert_eq!(Focus::Input.prev(), Focus::Mirror);
    }

    #[test]
    fn approval_keys_show_only_when_something_waits() {
        let view = |pending| FooterView {
            focus: Focus::Approvals,
            running: true,
            pending,
            layer: Layer::Panes,
            attached: false,
            others: false,
        };
        let map = Keymap::default();
        assert!(keys(view(1), &map).contains(&("y".to_string(), "once")));
        assert!(!keys(view(0), &map).contains(&("y".to_string(), "once")));
    }
}
