//! The message input box (ratatui-textarea). Enter hands back the message to
//! send; Alt-Enter, Shift-Enter and Ctrl-J insert a newline; every other key
//! is text but the few that move away ([`InputPane::passes`]).
//!
//! It never sends anything itself; the App turns the returned text into an
//! `AgentCommand::UserMessage`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui_textarea::TextArea;

use super::pane::{Command, Ctx, Look, Outcome, Pane, PaneAction, chorded};
use super::pane_block;
use crate::keys::Action;
use crate::style::theme::Theme;

const PLACEHOLDER: &str = "type a message · Enter sends";

pub struct InputPane {
    area: TextArea<'static>,
    focused: bool,
}

impl std::fmt::Debug for InputPane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputPane")
            .field("lines", &self.area.lines())
            .field("focused", &self.focused)
            .finish()
    }
}

impl Default for InputPane {
    fn default() -> Self {
        let mut pane = InputPane {
            area: TextArea::default(),
            focused: false,
        };
        pane.area.set_placeholder_text(PLACEHOLDER);
        pane.area.set_cursor_line_style(Style::new());
        pane.set_focused(true);
        pane
    }
}

impl InputPane {
    pub fn is_empty(&self) -> bool {
        self.area.is_empty()
    }

    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn set_focused(&mut self, focused: bool) {
        self.focused = focused;
        let cursor = if focused {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
        };
        self.area.set_cursor_style(cursor);
        self.area
            .set_placeholder_style(Style::new().add_modifier(Modifier::DIM));
    }

    /// Insert pasted text as is (newlines included).
    pub fn paste(&mut self, text: &str) {
        self.area.insert_str(text);
    }

    /// Edit the text with a key; returns the message when the key sends it.
    fn edit(&mut self, key: KeyEvent) -> Option<String> {
        let alt_or_shift = key
            .modifiers
            .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Enter if alt_or_shift => {
                self.area.insert_newline();
                None
            }
            KeyCode::Char('j') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.area.insert_newline();
                None
            }
            // Readline's Ctrl-U: delete from the cursor to the line start
            // (the textarea's own Ctrl-U is undo-like and surprises).
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.area.delete_line_by_head();
                None
            }
            KeyCode::Enter => self.take(),
            _ => {
                self.area.input(key);
                None
            }
        }
    }

    /// The current text, when not blank, clearing the box.
    fn take(&mut self) -> Option<String> {
        let text = self.text();
        if text.trim().is_empty() {
            return None;
        }
        self.area.clear();
        Some(text)
    }

    /// Rows this box would like: 3 to 6 with borders.
    pub fn desired_height(&self) -> u16 {
        (self.area.lines().len() as u16)
            .saturating_add(2)
            .clamp(3, 6)
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let block = pane_block("message".into(), self.focused, theme);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        frame.render_widget(&self.area, inner);
    }
}

impl InputPane {
    /// The keys the box leaves to the global keys: moving between panes,
    /// back, cancel and detach, unless typed as a character (typed
    /// characters are text, whatever they are bound to).
    pub fn passes(key: &KeyEvent, ctx: &Ctx) -> Option<Action> {
        if matches!(key.code, KeyCode::Char(_)) && !chorded(key) {
            return None;
        }
        ctx.global(key).filter(|a| {
            matches!(
                a,
                Action::NextPane
                    | Action::PrevPane
                    | Action::Back
                    | Action::Cancel
                    | Action::Detach
            )
        })
    }
}

impl Pane for InputPane {
    type Action = PaneAction;

    /// Every key is text but the few [`InputPane::passes`] names, so
    /// approval keys never act while the operator types.
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome<PaneAction> {
        if let Some(a) = Self::passes(key, ctx) {
            return Outcome::Action(PaneAction::Bound(a));
        }
        match self.edit(*key) {
            Some(text) => Outcome::Action(PaneAction::Send(text)),
            None => Outcome::Consumed,
        }
    }

    fn commands(&self, ctx: &Ctx) -> Vec<Command> {
        let next = if ctx.pending > 0 {
            "approvals"
        } else {
            "next pane"
        };
        let leave = if ctx.attached {
            Command::bound(ctx, Action::Detach, "detach")
        } else {
            Command::new("Ctrl-C", "quit")
        };
        vec![
            Command::new("Enter", "send"),
            Command::new("Alt-Enter", "newline"),
            Command::bound(ctx, Action::NextPane, next),
            Command::bound(ctx, Action::Back, "leave box"),
            Command::new("Ctrl-U", "clear line"),
            leave,
        ]
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        self.draw(frame, area, look.theme);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn enter_sends_and_alt_enter_adds_a_line() {
        let mut p = InputPane::default();
        for c in "hi".chars() {
            p.edit(key(KeyCode::Char(c), KeyModifiers::NONE));
        }
        assert_eq!(p.edit(key(KeyCode::Enter, KeyModifiers::ALT)), None);
        p.edit(key(KeyCode::Char('x'), KeyModifiers::NONE));
        assert_eq!(p.desired_height(), 4);
        assert_eq!(
            p.edit(key(KeyCode::Enter, KeyModifiers::NONE)),
            Some("hi\nx".to_string())
        );
        assert!(p.is_empty());
        assert_eq!(p.edit(key(KeyCode::Enter, KeyModifiers::NONE)), None);
    }
}
