//! The tmux mirror pane: shows the managed pane the agent's commands run in,
//! or says plainly that there is none. Captured pane text keeps its ANSI
//! colours (converted with ansi-to-tui), unlike every other pane.
//!
//! Enter starts typing into the pane; while the operator types (key
//! passthrough: the [`Passthrough`] layer, translated by
//! [`crate::terminal::passthrough`]) its border and title say so.
//!
//! It never captures, types into or otherwise touches tmux itself; whoever
//! captures the pane hands the text to [`MirrorPane::set_content`], and the
//! keys typed travel as `AgentCommand::PaneKeys` from the App.

use ansi_to_tui::IntoText;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Text};
use ratatui::widgets::{Paragraph, Wrap};

use super::pane::{Command, Ctx, Look, Outcome, Pane, PaneAction, bound, chorded};
use super::pane_block;
use crate::keys::{Action, Scope};
use crate::style::text::truncate_chars;
use crate::style::theme::Theme;
use crate::terminal::passthrough;
use vigil_protocol::text::sanitize;
use vigil_protocol::{MirrorTarget, PaneKey};

pub const NO_PANE: &str = "no managed tmux pane: commands run as local processes";

#[derive(Debug, Default)]
pub struct MirrorPane {
    /// `None` until the session started; then the pane, if any.
    target: Option<Option<MirrorTarget>>,
    content: Option<Text<'static>>,
    /// The keyboard while the operator types into the pane.
    pub(crate) passthrough: Passthrough,
    /// The agent's shell command running now, named in the title.
    running: Option<String>,
}

impl MirrorPane {
    /// The pane to mirror. A capture that came before the session said
    /// which pane (the feed and the events travel apart: a console that
    /// attaches gets the newest capture at once) is kept; another pane's
    /// capture is dropped.
    pub fn set_target(&mut self, target: Option<MirrorTarget>) {
        if self.target.as_ref().is_some_and(|t| *t != target) {
            self.content = None;
        }
        self.target = Some(target);
    }

    pub fn target(&self) -> Option<&MirrorTarget> {
        self.target.as_ref().and_then(Option::as_ref)
    }

    /// Replace the shown text with a fresh capture (`capture-pane -e -p`).
    /// The blank rows below the cursor are dropped, so the bottom of the
    /// mirror shows the pane's latest line.
    pub fn set_content(&mut self, ansi: &str) {
        let mut text = ansi
            .into_text()
            .unwrap_or_else(|_| Text::raw(sanitize(ansi)));
        while text
            .lines
            .last()
            .is_some_and(|l| l.spans.iter().all(|s| s.content.trim().is_empty()))
        {
            text.lines.pop();
        }
        self.content = Some(text);
    }

    /// Whether keys go to the pane.
    pub fn typing(&self) -> bool {
        self.passthrough.on
    }

    pub fn set_typing(&mut self, on: bool) {
        self.passthrough.on = on;
        self.passthrough.esc_pending = false;
    }

    pub fn content(&self) -> Option<&Text<'static>> {
        self.content.as_ref()
    }

    /// The agent's command running in the pane now (None: idle).
    pub fn set_running(&mut self, command: Option<String>) {
        self.running = command;
    }

    fn draw(&self, frame: &mut Frame, area: Rect, focused: bool, theme: &Theme) {
        let mut title = match self.target() {
            Some(t) => format!("mirror {}", sanitize(&t.pane)),
            None => "mirror".to_string(),
        };
        // The pane shows the script vigil sourced (`. /tmp/…/3.sh`); the
        // title names the command being run instead, cut with a mark.
        if let Some(cmd) = &self.running {
            let room = (area.width as usize)
                .saturating_sub(title.len() + 16)
                .max(8);
            title.push_str(&format!(" · running: {}", truncate_chars(cmd, room)));
        }
        let mut block = pane_block(title, focused, theme);
        if self.typing() {
            let style = theme.warn.add_modifier(Modifier::BOLD);
            block = block.border_style(style).title_bottom(Line::styled(
                format!(" {} ", passthrough::BORDER_HINT),
                style,
            ));
        }
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let dim = theme.dim;
        let body: Paragraph<'_> = match (&self.target, &self.content) {
            (None, _) => Paragraph::new(Line::styled("waiting for the session…", dim)),
            (Some(None), _) => Paragraph::new(Line::styled(NO_PANE, dim)).wrap(Wrap { trim: true }),
            (Some(Some(_)), Some(text)) => {
                let skip = text.lines.len().saturating_sub(inner.height as usize);
                Paragraph::new(Text::from(text.lines[skip..].to_vec()))
            }
            (Some(Some(t)), None) => Paragraph::new(vec![
                Line::raw(format!("mirror: {}", sanitize(&t.pane))),
                Line::styled("waiting for the first capture of the pane…", dim),
            ])
            .wrap(Wrap { trim: true }),
        };
        frame.render_widget(body, inner);
    }
}

impl MirrorPane {
    /// Enter without Ctrl or Alt: the key that starts typing into the pane
    /// (or opens the message box when there is none).
    pub fn is_enter(key: &KeyEvent) -> bool {
        key.code == KeyCode::Enter && !chorded(key)
    }
}

/// The global keys the mirror offers.
const OFFERS: [Action; 3] = [Action::NextPane, Action::FocusInput, Action::Zoom];

impl Pane for MirrorPane {
    type Action = PaneAction;

    /// Enter starts typing into the managed pane (only Enter: the
    /// message-box key means the message box everywhere, so chat text never
    /// lands in the pane by accident); without a pane it opens the box.
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome<PaneAction> {
        match bound(key, ctx) {
            Some(a) if a.scope() != Scope::Approvals && OFFERS.contains(&a) => {
                return Outcome::Action(PaneAction::Bound(a));
            }
            Some(_) => return Outcome::Ignored,
            None => {}
        }
        let plain_enter = key.code == KeyCode::Enter && key.modifiers == KeyModifiers::NONE;
        if plain_enter && self.target().is_some() {
            self.set_typing(true);
            return Outcome::Consumed;
        }
        if Self::is_enter(key) {
            return Outcome::Action(PaneAction::Bound(Action::FocusInput));
        }
        Outcome::Ignored
    }

    fn commands(&self, ctx: &Ctx) -> Vec<Command> {
        let mut c = Vec::new();
        if ctx.pending > 0 {
            c.push(Command::bound(ctx, Action::NextPane, "approvals"));
        }
        c.push(Command::new("Enter", "type into the pane"));
        c.push(Command::bound(ctx, Action::FocusInput, "message"));
        c.push(Command::bound(ctx, Action::Zoom, "zoom"));
        c
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        self.draw(frame, area, look.focused, look.theme);
    }
}

/// Key passthrough: while on, every key becomes keys typed into the
/// managed pane (Ctrl-C included); Ctrl-] or Esc Esc hands the keyboard
/// back. It only translates ([`passthrough::pane_keys`]); the App sends.
#[derive(Debug, Default)]
pub struct Passthrough {
    /// Keys go to the pane.
    on: bool,
    /// The last key typed was a lone Esc (a second one leaves).
    esc_pending: bool,
}

impl Passthrough {
    /// Pasted text goes to the pane as typed text.
    pub fn paste(&mut self, text: &str) -> Vec<PaneKey> {
        self.esc_pending = false;
        if text.is_empty() {
            return Vec::new();
        }
        vec![PaneKey::Text(text.to_string())]
    }

    fn leave(&mut self) -> Outcome<Vec<PaneKey>> {
        self.on = false;
        self.esc_pending = false;
        Outcome::Consumed
    }
}

impl Pane for Passthrough {
    type Action = Vec<PaneKey>;

    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome<Vec<PaneKey>> {
        if passthrough::is_leave(key) {
            return self.leave();
        }
        if key.code == KeyCode::Esc && key.modifiers == KeyModifiers::NONE {
            if self.esc_pending {
                return self.leave();
            }
            self.esc_pending = true;
        } else {
            self.esc_pending = false;
        }
        let keys = passthrough::pane_keys(key);
        if keys.is_empty() {
            return Outcome::Consumed;
        }
        Outcome::Action(keys)
    }

    fn commands(&self, _ctx: &Ctx) -> Vec<Command> {
        vec![Command::note(passthrough::HINT)]
    }

    /// The mirror pane draws the typing state on its border.
    fn render(&self, _frame: &mut Frame, _area: Rect, _look: &Look) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_text_keeps_colours() {
        let mut m = MirrorPane::default();
        m.set_target(Some(MirrorTarget {
            server_args: vec!["-L".into(), "vigil".into()],
            pane: "%3".into(),
        }));
        m.set_content("\x1b[31mred\x1b[0m plain\nnext");
        let text = m.content().expect("content set");
        assert_eq!(text.lines.len(), 2);
        assert_eq!(text.lines[0].spans[0].content, "red");
        assert_eq!(
            text.lines[0].spans[0].style.fg,
            Some(ratatui::style::Color::Red)
        );
    }

    #[test]
    fn a_capture_before_the_target_is_kept_and_another_panes_is_dropped() {
        let target = |pane: &str| {
            Some(MirrorTarget {
                server_args: vec!["-L".into(), "vigil".into()],
                pane: pane.into(),
            })
        };
        let mut m = MirrorPane::default();
        m.set_content("$ first capture");
        m.set_target(target("%0"));
        assert!(m.content().is_some(), "the attach-time capture stays");
        m.set_target(target("%0"));
        assert!(m.content().is_some(), "the same pane again keeps it");
        m.set_target(target("%1"));
        assert!(m.content().is_none(), "another pane's capture goes");
    }

    #[test]
    fn blank_rows_below_the_cursor_are_dropped() {
        let mut m = MirrorPane::default();
        m.set_content("$ ls\na b\n$ \n\n   \n\x1b[0m\n");
        let text = m.content().expect("content set");
        assert_eq!(text.lines.len(), 3);
    }
}
