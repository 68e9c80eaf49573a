//! The conversation pane: operator and assistant messages, streamed assistant
//! text appended live, agent notices and errors. Wraps text to the pane and
//! follows the tail unless the operator scrolled.
//!
//! It only records and renders; it never sends anything to the agent. Its
//! keys (scrolling, and the bound keys it offers) are in `scrolling`.

use ratatui::Frame;
use ratatui::layout::Rect;
use std::cell::RefCell;

use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::heights::{Heights, estimate};
use super::{Scroll, pane_block};
use crate::style::text::wrap;
use crate::style::theme::Theme;
use crate::views::markdown;
use vigil_protocol::TurnOutcome;
use vigil_protocol::text::sanitize;

/// Keep at most this many entries (oldest dropped first).
pub const MAX_ENTRIES: usize = 20_000;

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
    /// Line heights per entry at one width: exact for entries rendered,
    /// estimated for the rest (render-time cache).
    cache: RefCell<Heights>,
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
            self.cache.borrow_mut().drop_front(excess);
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
                self.invalidate_from(self.entries.len() - 1);
            }
            _ => {
                self.push(EntryKind::Assistant, "");
                if let Some(last) = self.entries.last_mut() {
                    last.text = clean;
                }
                self.invalidate_from(self.entries.len() - 1);
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
            // The replaced entry and the cursor mark change height.
            if let Some(i) = self
                .entries
                .iter()
                .rposition(|e| e.kind == EntryKind::Assistant)
            {
                self.invalidate_from(i);
            }
        } else if !text.trim().is_empty() {
            self.push(EntryKind::Assistant, text);
        }
    }

    /// Close the streaming entry (a tool call follows).
    pub fn end_stream(&mut self) {
        self.streaming = false;
        self.invalidate_from(self.entries.len().saturating_sub(1));
    }

    /// A tool began executing: the model round is over, so a later complete
    /// message belongs to a new round.
    pub fn end_round(&mut self) {
        self.streaming = false;
        self.unconfirmed = false;
        self.invalidate_from(self.entries.len().saturating_sub(1));
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

    /// The rendered lines of entry `i` (a blank separator first, except
    /// for the first entry).
    fn entry_lines(&self, i: usize, text_w: usize, theme: &Theme) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        let Some(entry) = self.entries.get(i) else {
            return out;
        };
        if i > 0 {
            out.push(Line::default());
        }
        let (mark, style) = match entry.kind {
            EntryKind::User => ("> ", theme.user),
            EntryKind::Assistant => ("  ", theme.text),
            EntryKind::Notice => ("- ", theme.notice),
            EntryKind::Error => ("! ", theme.error),
        };
        let body: Vec<Line<'static>> = if entry.kind == EntryKind::Assistant {
            markdown::render(&entry.text, text_w, theme, style)
        } else {
            wrap(&entry.text, text_w)
                .into_iter()
                .map(|t| Line::styled(t, style))
                .collect()
        };
        let streaming = self.streaming && i + 1 == self.entries.len();
        let last = body.len().saturating_sub(1);
        for (j, line) in body.into_iter().enumerate() {
            let gutter = if j == 0 { mark } else { "  " };
            let mut spans = vec![Span::styled(gutter, style)];
            spans.extend(line.spans);
            if streaming && j == last {
                spans.push(Span::styled("▌", theme.dim));
            }
            out.push(Line::from(spans));
        }
        out
    }

    fn queued_lines(&self, text_w: usize, theme: &Theme) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for q in &self.queued {
            out.push(Line::default());
            for (j, text) in wrap(&format!("{q} (queued)"), text_w)
                .into_iter()
                .enumerate()
            {
                let gutter = if j == 0 { "> " } else { "  " };
                out.push(Line::from(vec![
                    Span::styled(gutter, theme.dim),
                    Span::styled(text, theme.dim),
                ]));
            }
        }
        out
    }

    /// Entry `i`'s lines, recording its exact height.
    fn exact_lines(&self, i: usize, text_w: usize, theme: &Theme) -> Vec<Line<'static>> {
        let lines = self.entry_lines(i, text_w, theme);
        self.cache.borrow_mut().set_exact(i, lines.len());
        lines
    }

    fn invalidate_from(&self, i: usize) {
        self.cache.borrow_mut().truncate(i);
    }

    /// Render only the entries that overlap the viewport, and wrap only
    /// those: entries never shown count with an estimated height, so a
    /// frame costs about the same with ten or twenty thousand entries, even
    /// the first one.
    pub(crate) fn draw(&self, frame: &mut Frame, area: Rect, focused: bool, theme: &Theme) {
        let shown = self.entries.iter().map(|e| e.text.as_str());
        crate::terminal::fault::check_render(shown.chain(self.queued.iter().map(String::as_str)));
        let mut block = pane_block("conversation".into(), focused, theme);
        let mut inner = block.inner(area);
        let mut banner = None;
        if self.demo && inner.height > 1 {
            banner = Some(Rect { height: 1, ..inner });
            inner.y += 1;
            inner.height -= 1;
        }
        let text_w = (inner.width as usize).saturating_sub(2).max(1);
        let queued = self.queued_lines(text_w, theme);
        let height = inner.height as usize;
        let n = self.entries.len();
        self.cache.borrow_mut().sync(text_w, n, |i| {
            estimate(&self.entries[i].text, i > 0, text_w)
        });
        if self.scroll.is_following() {
            // The tail must be exact: it decides where the bottom is.
            let mut covered = queued.len();
            for i in (0..n).rev() {
                if covered >= height {
                    break;
                }
                if !self.cache.borrow().is_exact(i) {
                    self.exact_lines(i, text_w, theme);
                }
                covered += self.cache.borrow().get(i);
            }
        }
        let total = self.cache.borrow().total() + queued.len();
        let below = self.scroll.lines_below(total, height);
        if below > 0 {
            block = block.title_bottom(format!(" ↓ {below} more (End/f follows) "));
        }
        let top = self.scroll.first_visible(total, height);
        let end = top + height;
        let mut visible: Vec<Line<'static>> = Vec::with_capacity(height);
        let (mut i, mut start) = self.cache.borrow().locate(top);
        while i < n && start < end {
            let lines = self.exact_lines(i, text_w, theme);
            let h = lines.len();
            if start + h > top {
                let from = top.saturating_sub(start);
                let to = (end - start).min(h);
                visible.extend(lines.into_iter().take(to).skip(from));
            }
            start += h;
            i += 1;
        }
        if i >= n && start < end {
            let from = top.saturating_sub(start);
            let to = (end - start).min(queued.len());
            visible.extend(queued.into_iter().take(to).skip(from));
        }
        frame.render_widget(block, area);
        if let Some(b) = banner {
            frame.render_widget(Paragraph::new(Line::styled(DEMO_BANNER, theme.banner)), b);
        }
        frame.render_widget(Paragraph::new(visible), inner);
    }

    /// How many entries have exact heights (tests).
    #[cfg(test)]
    pub fn exact_heights(&self) -> usize {
        self.cache.borrow().exact_count()
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
