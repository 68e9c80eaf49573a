//! The conversation pane: operator and assistant messages, streamed assistant
//! text appended live, agent notices and errors. Wraps text to the pane and
//! follows the tail unless the operator scrolled.
//!
//! It only records and renders; it never sends anything to the agent.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{Scroll, pane_block};
use crate::console::text::{sanitize, wrap};
use crate::event::TurnOutcome;

/// Keep at most this many entries (oldest dropped first).
const MAX_ENTRIES: usize = 2_000;

/// The one-line banner shown for the scripted demo model.
pub const DEMO_BANNER: &str = "demo model — answers are scripted";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    User,
    Assistant,
    Notice,
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// Sanitized text.
    pub text: String,
}

#[derive(Debug, Default)]
pub struct ConversationPane {
    entries: Vec<Entry>,
    /// The last entry is an assistant message still receiving deltas.
    streaming: bool,
    /// The last assistant entry was streamed and its complete text has not
    /// arrived yet (a tool call may come first).
    unconfirmed: bool,
    /// Messages sent by the operator that no turn has taken up yet.
    queued: Vec<String>,
    demo: bool,
    pub scroll: Scroll,
}

impl ConversationPane {
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn queued(&self) -> &[String] {
        &self.queued
    }

    pub fn is_streaming(&self) -> bool {
        self.streaming
    }

    pub fn set_demo(&mut self, demo: bool) {
        self.demo = demo;
    }

    pub fn demo(&self) -> bool {
        self.demo
    }

    fn push(&mut self, kind: EntryKind, text: &str) {
        self.streaming = false;
        self.entries.push(Entry {
            kind,
            text: sanitize(text),
        });
        if self.entries.len() > MAX_ENTRIES {
            let excess = self.entries.len() - MAX_ENTRIES;
            self.entries.drain(..excess);
        }
    }

    /// The operator sent a message; it shows as queued until a turn takes it.
    pub fn queue_user(&mut self, text: &str) {
        self.queued.push(sanitize(text));
    }

    /// A turn began with this user message.
    pub fn turn_started(&mut self, user: &str) {
        self.unconfirmed = false;
        let clean = sanitize(user);
        if let Some(i) = self.queued.iter().position(|q| *q == clean) {
            self.queued.remove(i);
        }
        self.push(EntryKind::User, user);
    }

    pub fn delta(&mut self, text: &str) {
        let clean = sanitize(text);
        match self.entries.last_mut() {
            Some(last) if self.streaming && last.kind == EntryKind::Assistant => {
                last.text.push_str(&clean);
            }
            _ => {
                self.push(EntryKind::Assistant, "");
                if let Some(last) = self.entries.last_mut() {
                    last.text = clean;
                }
                self.streaming = true;
                self.unconfirmed = true;
            }
        }
    }

    /// The complete text of one model round replaces what was streamed.
    pub fn message(&mut self, text: &str) {
        if std::mem::take(&mut self.unconfirmed) {
            let streamed = self
                .entries
                .iter_mut()
                .rev()
                .find(|e| e.kind == EntryKind::Assistant);
            if let Some(entry) = streamed {
                if !text.is_empty() {
                    entry.text = sanitize(text);
                }
            }
            self.streaming = false;
        } else if !text.trim().is_empty() {
            self.push(EntryKind::Assistant, text);
        }
    }

    /// Close the streaming entry (a tool call follows).
    pub fn end_stream(&mut self) {
        self.streaming = false;
    }

    /// A tool began executing: the model round is over, so a later complete
    /// message belongs to a new round.
    pub fn end_round(&mut self) {
        self.streaming = false;
        self.unconfirmed = false;
    }

    pub fn notice(&mut self, text: &str) {
        self.push(EntryKind::Notice, text);
    }

    pub fn error(&mut self, text: &str) {
        self.push(EntryKind::Error, text);
    }

    pub fn turn_finished(&mut self, outcome: &TurnOutcome) {
        self.streaming = false;
        self.unconfirmed = false;
        match outcome {
            TurnOutcome::Completed => {}
            TurnOutcome::Cancelled => self.notice("turn cancelled"),
            TurnOutcome::Failed(why) => self.error(&format!("turn failed: {why}")),
        }
    }

    fn lines(&self, width: usize) -> Vec<Line<'static>> {
        let text_w = width.saturating_sub(2).max(1);
        let mut out: Vec<Line<'static>> = Vec::new();
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push(Line::default());
            }
            let (mark, style) = match entry.kind {
                EntryKind::User => (
                    "> ",
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                ),
                EntryKind::Assistant => ("  ", Style::new()),
                EntryKind::Notice => ("- ", Style::new().fg(Color::Yellow)),
                EntryKind::Error => ("! ", Style::new().fg(Color::Red)),
            };
            let streaming = self.streaming && i + 1 == self.entries.len();
            let wrapped = wrap(&entry.text, text_w);
            let last = wrapped.len().saturating_sub(1);
            for (j, text) in wrapped.into_iter().enumerate() {
                let gutter = if j == 0 { mark } else { "  " };
                let mut spans = vec![Span::styled(gutter, style), Span::styled(text, style)];
                if streaming && j == last {
                    spans.push(Span::styled("▌", Style::new().fg(Color::DarkGray)));
                }
                out.push(Line::from(spans));
            }
        }
        let dim = Style::new().fg(Color::DarkGray);
        for q in &self.queued {
            out.push(Line::default());
            for (j, text) in wrap(&format!("{q} (queued)"), text_w)
                .into_iter()
                .enumerate()
            {
                let gutter = if j == 0 { "> " } else { "  " };
                out.push(Line::from(vec![
                    Span::styled(gutter, dim),
                    Span::styled(text, dim),
                ]));
            }
        }
        out
    }

    pub fn render(&self, frame: &mut Frame, area: Rect, focused: bool) {
        let mut block = pane_block("conversation".into(), focused);
        let mut inner = block.inner(area);
        let mut banner = None;
        if self.demo && inner.height > 1 {
            banner = Some(Rect { height: 1, ..inner });
            inner.y += 1;
            inner.height -= 1;
        }
        let lines = self.lines(inner.width as usize);
        let height = inner.height as usize;
        let below = self.scroll.lines_below(lines.len(), height);
        if below > 0 {
            block = block.title_bottom(format!(" ↓ {below} more (End) "));
        }
        let top = self.scroll.first_visible(lines.len(), height);
        let visible: Vec<Line<'static>> = lines.into_iter().skip(top).take(height).collect();
        frame.render_widget(block, area);
        if let Some(b) = banner {
            let style = Style::new().fg(Color::Black).bg(Color::Yellow);
            frame.render_widget(Paragraph::new(Line::styled(DEMO_BANNER, style)), b);
        }
        frame.render_widget(Paragraph::new(visible), inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_stream_into_one_entry_and_the_message_replaces_them() {
        let mut c = ConversationPane::default();
        c.delta("Hel");
        c.delta("lo\x1b[2J");
        assert!(c.is_streaming());
        assert_eq!(c.entries().len(), 1);
        assert_eq!(c.entries()[0].text, "Hello");
        c.message("Hello there");
        assert!(!c.is_streaming());
        assert_eq!(c.entries()[0].text, "Hello there");
        c.message("");
        assert_eq!(c.entries().len(), 1);
    }

    #[test]
    fn queued_messages_leave_the_queue_when_their_turn_starts() {
        let mut c = ConversationPane::default();
        c.queue_user("first");
        c.queue_user("second");
        c.turn_started("first");
        assert_eq!(c.queued(), ["second"]);
        assert_eq!(c.entries()[0].kind, EntryKind::User);
    }

    #[test]
    fn a_tool_call_closes_the_stream() {
        let mut c = ConversationPane::default();
        c.delta("before");
        c.end_stream();
        // The round's complete text may arrive after the tool call.
        c.message("before.");
        assert_eq!(c.entries().len(), 1);
        assert_eq!(c.entries()[0].text, "before.");
        c.delta("after");
        assert_eq!(c.entries().len(), 2);
    }
}
