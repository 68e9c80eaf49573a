//! The help overlay: every key binding in force (configured ones included),
//! grouped by where it works. Opened and closed with the help key.
//!
//! It only scrolls and renders.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};

use super::modal::centered;
use super::pane::{Command, Ctx, Look, Outcome, OverlayAction, Pane};
use crate::keys::{Action, Keymap, Scope};
use crate::style::theme::Theme;

/// (section, [(key, what)]) for every binding.
pub fn sections(map: &Keymap) -> Vec<(&'static str, Vec<(String, String)>)> {
    let bound = |scope: Scope| -> Vec<(String, String)> {
        map.all()
            .filter(|(a, _)| a.scope() == scope)
            .map(|(a, k)| (k.to_string(), a.describe().to_string()))
            .collect()
    };
    let fixed = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, w)| (k.to_string(), w.to_string()))
            .collect()
    };
    vec![
        ("anywhere outside the message box", bound(Scope::Global)),
        ("approvals pane", {
            let mut v = bound(Scope::Approvals);
            v.push(("↑↓ j k".into(), "select a request".into()));
            v.push((
                "PgDn PgUp J K Home End".into(),
                "scroll a write's or edit's diff".into(),
            ));
            v
        }),
        (
            "message box",
            fixed(&[
                ("Enter", "send (queued while the agent works)"),
                ("Alt-Enter Ctrl-J", "new line"),
                ("Esc", "leave the box (never cancels anything)"),
                ("Tab", "next pane (a waiting approval first)"),
                ("Ctrl-U", "clear the line"),
                ("Ctrl-C", "leave (detach when attached to an agent process)"),
            ]),
        ),
        (
            "scrolling (conversation, tools, history, output)",
            fixed(&[
                ("PgUp PgDn", "page"),
                ("↑↓ j k", "line"),
                ("Home End", "top / bottom (End follows)"),
                ("mouse", "click focuses a pane, wheel scrolls"),
            ]),
        ),
        (
            "mirror pane (the managed tmux pane)",
            vec![
                (
                    "Enter".into(),
                    "type into the pane (every key goes there, Ctrl-C too)".into(),
                ),
                (
                    map.label(Action::FocusInput),
                    "the message box (never the pane)".into(),
                ),
                (
                    "Ctrl-] / Esc Esc".into(),
                    "stop typing into the pane".into(),
                ),
            ],
        ),
        ("full-output viewer", {
            let mut v = bound(Scope::Viewer);
            v.push(("Esc".into(), "back to the history list".into()));
            v
        }),
        (
            "history list",
            fixed(&[
                ("↑↓ j k", "select a tool call"),
                ("Enter", "open its full output"),
                ("Esc", "close"),
            ]),
        ),
        (
            "standing approvals (session rules)",
            fixed(&[
                ("↑↓ j k", "select a rule"),
                ("d Delete", "revoke it: the next such call asks again"),
                ("Esc", "close"),
            ]),
        ),
    ]
}

/// The width of the key column.
const KEY_COLUMN: usize = 18;

/// Lines of the overlay at this width.
pub fn lines(map: &Keymap, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (title, pairs) in sections(map) {
        if !out.is_empty() {
            out.push(Line::default());
        }
        out.push(Line::styled(
            title.to_string(),
            theme.heading.add_modifier(Modifier::BOLD),
        ));
        for (k, what) in pairs {
            // A long key list keeps a space before its words.
            let w = KEY_COLUMN.max(k.chars().count() + 1);
            out.push(Line::from(vec![
                Span::styled(format!("  {k:<w$}"), theme.footer_key),
                Span::styled(what, theme.text),
            ]));
        }
    }
    out
}

fn draw(frame: &mut Frame, area: Rect, map: &Keymap, theme: &Theme, scroll: u16) {
    let rect = centered(area, 76, area.height.saturating_sub(2).max(3));
    frame.render_widget(Clear, rect);
    let close = map.label(Action::Help);
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(theme.modal)
        .title(" keys ")
        .title_style(theme.modal.add_modifier(Modifier::BOLD))
        .title_bottom(format!(" ↑↓ scroll · {close} or Esc close "));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let all = lines(map, theme);
    let max = all.len().saturating_sub(inner.height as usize) as u16;
    frame.render_widget(Paragraph::new(all).scroll((scroll.min(max), 0)), inner);
}

/// The open help overlay, scrolled this far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HelpOverlay {
    pub scroll: u16,
}

impl Pane for HelpOverlay {
    type Action = OverlayAction;

    /// The arrows and page keys scroll; any other key closes.
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome<OverlayAction> {
        let s = &mut self.scroll;
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => *s = s.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => *s = s.saturating_add(1),
            KeyCode::PageUp => *s = s.saturating_sub(10),
            KeyCode::PageDown => *s = s.saturating_add(10),
            _ => return Outcome::Action(OverlayAction::Close),
        }
        Outcome::Consumed
    }

    fn commands(&self, _ctx: &Ctx) -> Vec<Command> {
        vec![Command::note("↑↓ scroll · any other key closes")]
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        draw(frame, area, look.keys, look.theme, self.scroll);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_is_listed() {
        let map = Keymap::default();
        let text: String = lines(&map, &Theme::default())
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect();
        for a in Action::ALL {
            assert!(text.contains(a.describe()), "{a:?} missing");
        }
    }
}
