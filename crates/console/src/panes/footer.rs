//! The footer: the keys that work in the focused pane (or the open view or
//! modal), always visible, named as the keymap binds them. The App hands it
//! the top layer's [`Command`]s (the same table the layer answers keys
//! from); it never makes up an entry of its own.
//!
//! It only renders what the App tells it. [`Focus`] (which pane has the
//! keyboard) lives here too.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::panes::pane::Command;
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

/// Drawn width of one footer item with its separator.
fn item_width(key: &str, action: &str) -> usize {
    let key_w = if key.is_empty() {
        0
    } else {
        key.chars().count() + 1
    };
    3 + key_w + action.chars().count()
}

/// Draw `commands` (the top layer's, see `App::footer_commands`) on one
/// line; items that do not fit are left out, the help key always stays.
pub fn render(frame: &mut Frame, area: Rect, commands: &[Command], theme: &Theme) {
    let mut items: Vec<(String, &'static str)> =
        commands.iter().map(|c| (c.key.clone(), c.label)).collect();
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
    use crate::keys::Keymap;

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
        use crate::panes::approvals::ApprovalsPane;
        use crate::panes::pane::{Ctx, Pane};
        let ctx = |pending| Ctx {
            keys: Keymap::default(),
            focus: Focus::Approvals,
            running: true,
            pending,
            attached: false,
            agents: 0,
        };
        let once = |pending| {
            ApprovalsPane::default()
                .commands(&ctx(pending))
                .iter()
                .any(|c| c.key == "y" && c.label == "once")
        };
        assert!(once(1));
        assert!(!once(0));
    }
}
