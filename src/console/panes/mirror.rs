//! The tmux mirror pane: shows the managed pane the agent's commands run in,
//! or says plainly that there is none. Captured pane text keeps its ANSI
//! colours (converted with ansi-to-tui), unlike every other pane.
//!
//! It never captures, types into or otherwise touches tmux itself; whoever
//! captures the pane hands the text to [`MirrorPane::set_content`].

use ansi_to_tui::IntoText;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Text};
use ratatui::widgets::{Paragraph, Wrap};

use super::pane_block;
use crate::console::text::sanitize;
use crate::console::theme::Theme;
use crate::event::MirrorTarget;

pub const NO_PANE: &str = "no managed tmux pane: commands run as local processes";

#[derive(Debug, Default)]
pub struct MirrorPane {
    /// `None` until the session started; then the pane, if any.
    target: Option<Option<MirrorTarget>>,
    content: Option<Text<'static>>,
}

impl MirrorPane {
    pub fn set_target(&mut self, target: Option<MirrorTarget>) {
        self.target = Some(target);
        self.content = None;
    }

    pub fn target(&self) -> Option<&MirrorTarget> {
        self.target.as_ref().and_then(Option::as_ref)
    }

    /// Replace the shown text with a fresh capture (`capture-pane -e -p`).
    pub fn set_content(&mut self, ansi: &str) {
        let text = ansi
            .into_text()
            .unwrap_or_else(|_| Text::raw(sanitize(ansi)));
        self.content = Some(text);
    }

    pub fn content(&self) -> Option<&Text<'static>> {
        self.content.as_ref()
    }

    pub fn render(&self, frame: &mut Frame, area: Rect, focused: bool, theme: &Theme) {
        let title = match self.target() {
            Some(t) => format!("mirror {}", sanitize(&t.pane)),
            None => "mirror".to_string(),
        };
        let block = pane_block(title, focused, theme);
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
                Line::styled("live mirroring is not available yet", dim),
            ])
            .wrap(Wrap { trim: true }),
        };
        frame.render_widget(body, inner);
    }
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
}
