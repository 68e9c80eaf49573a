//! The footer: the keys that work in the focused pane, always visible.
//!
//! It only renders what the App tells it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// Which pane has the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Input,
    Conversation,
    Tools,
    Approvals,
}

impl Focus {
    const ORDER: [Focus; 4] = [
        Focus::Input,
        Focus::Conversation,
        Focus::Tools,
        Focus::Approvals,
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

/// What the footer needs to know.
#[derive(Debug, Clone, Copy)]
pub struct FooterView {
    pub focus: Focus,
    pub running: bool,
    pub pending: usize,
}

/// The (key, action) pairs for this state, most important first.
pub fn keys(view: FooterView) -> Vec<(&'static str, &'static str)> {
    let mut keys = Vec::new();
    match view.focus {
        Focus::Input => {
            keys.push(("Enter", "send"));
            keys.push(("Alt-Enter", "newline"));
            if view.pending > 0 {
                keys.push(("Tab", "approvals"));
            } else {
                keys.push(("Tab", "next pane"));
            }
            keys.push(if view.running {
                ("Esc", "cancel turn")
            } else {
                ("Esc", "leave box")
            });
            keys.push(("Ctrl-C", "quit"));
        }
        Focus::Approvals if view.pending > 0 => {
            keys.push(("y", "approve once"));
            keys.push(("a", "for session"));
            keys.push(("n", "deny"));
            keys.push(("↑↓", "select"));
        }
        Focus::Approvals => {
            keys.push(("", "no pending approvals"));
            keys.push(("i", "type"));
            keys.push(("Tab", "next pane"));
        }
        Focus::Conversation | Focus::Tools => {
            keys.push(("PgUp/PgDn", "scroll"));
            keys.push(("Home/End", "top/follow"));
            keys.push(("i", "type"));
            keys.push(("Tab", "next pane"));
        }
    }
    if view.focus != Focus::Input {
        if view.running {
            keys.push(("Esc", "cancel turn"));
        }
        keys.push(("q", "quit"));
    }
    keys
}

pub fn render(frame: &mut Frame, area: Rect, view: FooterView) {
    let key_style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let text_style = Style::new().fg(Color::Gray);
    let mut spans = Vec::new();
    for (i, (key, action)) in keys(view).into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", Style::new().fg(Color::DarkGray)));
        }
        if !key.is_empty() {
            spans.push(Span::styled(key, key_style));
            spans.push(Span::raw(" "));
        }
        spans.push(Span::styled(action, text_style));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn focus_cycles_both_ways() {
        let mut f = Focus::Input;
        for _ in 0..4 {
            f = f.next();
        }
        assert_eq!(f, Focus::Input);
        assert_eq!(Focus::Input.prev(), Focus::Approvals);
    }

    #[test]
    fn approval_keys_show_only_when_something_waits() {
        let view = |pending| FooterView {
            focus: Focus::Approvals,
            running: true,
            pending,
        };
        assert!(keys(view(1)).contains(&("y", "approve once")));
        assert!(!keys(view(0)).contains(&("y", "approve once")));
    }
}
