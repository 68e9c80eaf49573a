//! The history view: every tool call of the session, one row each (tool,
//! argument summary, status, exit code, duration, truncated or not), with a
//! selection; Enter asks the App to open the call's full output in the
//! [`Viewer`](super::viewer::Viewer).
//!
//! It keeps only small records (never output), only renders the visible
//! rows and moves its selection. It never reads files itself.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::pane::{Command, Ctx, Look, Outcome, OverlayAction, Pane};
use super::tools::{CallStatus, format_duration, status_label};
use super::{Scroll, pane_block};
use crate::keys::Action;
use crate::style::text::{fit_line, truncate_chars};
use crate::style::theme::Theme;

/// Records kept (oldest dropped first).
pub const MAX_RECORDS: usize = 100_000;

#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub call_id: String,
    pub tool: String,
    pub summary: String,
    pub status: CallStatus,
    /// How the call was decided, when it was gated.
    pub decided: Option<String>,
}

#[derive(Debug, Default)]
pub struct HistoryPane {
    records: VecDeque<Record>,
    selected: usize,
    /// Records dropped from the front.
    dropped: usize,
    pub scroll: Scroll,
}

impl HistoryPane {
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.records.iter()
    }

    pub fn selected(&self) -> Option<&Record> {
        self.records.get(self.selected)
    }

    /// Insert or update the record of a call.
    pub fn track(&mut self, call_id: &str, tool: &str, summary: &str, status: &CallStatus) {
        if let Some(r) = self.records.iter_mut().rev().find(|r| r.call_id == call_id) {
            r.tool = tool.to_string();
            r.summary = summary.to_string();
            r.status = status.clone();
            return;
        }
        let follow = self.selected + 1 >= self.records.len();
        self.records.push_back(Record {
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            summary: summary.to_string(),
            status: status.clone(),
            decided: None,
        });
        if self.records.len() > MAX_RECORDS {
            self.records.pop_front();
            self.dropped += 1;
            self.selected = self.selected.saturating_sub(1);
        }
        if follow {
            self.selected = self.records.len() - 1;
        }
    }

    /// Record how a call was decided.
    pub fn set_decided(&mut self, call_id: &str, decided: Option<&str>) {
        if let Some(r) = self.records.iter_mut().rev().find(|r| r.call_id == call_id) {
            r.decided = decided.map(str::to_string);
        }
    }

    pub fn select_prev(&mut self) {
        self.selected = self.selected.saturating_sub(1);
        self.scroll.reveal(self.selected);
    }

    pub fn select_next(&mut self) {
        if self.selected + 1 < self.records.len() {
            self.selected += 1;
        }
        self.scroll.reveal(self.selected);
    }

    pub fn select_page(&mut self, down: bool) {
        let page = self.scroll.page();
        self.selected = if down {
            (self.selected + page).min(self.records.len().saturating_sub(1))
        } else {
            self.selected.saturating_sub(page)
        };
        self.scroll.reveal(self.selected);
    }

    pub fn select_first(&mut self) {
        self.selected = 0;
        self.scroll.home();
    }

    pub fn select_last(&mut self) {
        self.selected = self.records.len().saturating_sub(1);
        self.scroll.end();
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let title = format!("history · {} tool calls", self.records.len() + self.dropped);
        let block = pane_block(title, true, theme);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if self.records.is_empty() {
            frame.render_widget(
                Paragraph::new(Line::styled("no tool calls yet", theme.dim)),
                inner,
            );
            return;
        }
        if inner.height < 2 {
            return;
        }
        // The decision column only where the arguments keep room.
        let decided = inner.width as usize >= WIDE;
        let head = format!(
            "{:<5} {:<11} {:<18} {:>6} {:>8} {:<5} {}{}",
            "#",
            "tool",
            "status",
            "exit",
            "time",
            "cut",
            if decided {
                format!("{:<DECIDED_W$} ", "decided")
            } else {
                String::new()
            },
            "arguments"
        );
        frame.render_widget(
            Paragraph::new(Line::styled(head, theme.heading)),
            Rect { height: 1, ..inner },
        );
        let body = Rect {
            y: inner.y + 1,
            height: inner.height - 1,
            ..inner
        };
        let height = body.height as usize;
        let total = self.records.len();
        // Keep the selection visible.
        let top = {
            let t = self.scroll.first_visible(total, height);
            if self.selected < t {
                self.selected
            } else if self.selected >= t + height {
                self.selected + 1 - height
            } else {
                t
            }
        };
        let mut lines = Vec::with_capacity(height);
        for (i, r) in self.records.iter().enumerate().skip(top).take(height) {
            let line = row(i + 1 + self.dropped, r, i == self.selected, decided, theme);
            lines.push(fit_line(line, body.width as usize));
        }
        frame.render_widget(Paragraph::new(lines), body);
    }
}

fn row(n: usize, r: &Record, selected: bool, decided: bool, theme: &Theme) -> Line<'static> {
    let (status, style) = status_label(&r.status, theme);
    let (exit, time, cut) = match &r.status {
        CallStatus::Finished(s) => (
            s.exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into()),
            format_duration(s.duration_ms),
            if s.truncated { "yes" } else { "no" },
        ),
        _ => ("-".into(), "-".into(), "-"),
    };
    let base = if selected { theme.selected } else { theme.text };
    let mark = if selected { "›" } else { " " };
    let mut spans = vec![
        Span::styled(
            format!("{mark}{n:<4} {:<11} ", truncate_chars(&r.tool, 10)),
            base,
        ),
        Span::styled(format!("{:<18} ", truncate_chars(&status, 17)), style),
        Span::styled(format!("{exit:>6} {time:>8} "), base),
        Span::styled(
            format!("{cut:<5} "),
            if cut == "yes" { theme.truncated } else { base },
        ),
    ];
    if decided {
        let text = truncate_chars(r.decided.as_deref().unwrap_or("-"), DECIDED_W - 2);
        spans.push(Span::styled(format!("{text:<DECIDED_W$} "), theme.info));
    }
    spans.push(Span::styled(r.summary.clone(), base));
    Line::from(spans)
}

/// Width of the "decided" column.
const DECIDED_W: usize = 28;
/// Inner width from which the "decided" column is shown.
const WIDE: usize = 110;

impl Pane for HistoryPane {
    type Action = OverlayAction;

    /// The list takes every key while it is open.
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome<OverlayAction> {
        match ctx.global(key) {
            Some(Action::Back | Action::History | Action::Quit) => {
                return Outcome::Action(OverlayAction::Close);
            }
            Some(a @ (Action::Copy | Action::Help)) => {
                return Outcome::Action(OverlayAction::Bound(a));
            }
            _ => {}
        }
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.select_prev(),
            KeyCode::Down | KeyCode::Char('j') => self.select_next(),
            KeyCode::PageUp => self.select_page(false),
            KeyCode::PageDown => self.select_page(true),
            KeyCode::Home => self.select_first(),
            KeyCode::End => self.select_last(),
            KeyCode::Enter => return Outcome::Action(OverlayAction::Open),
            _ => {}
        }
        Outcome::Consumed
    }

    fn commands(&self, ctx: &Ctx) -> Vec<Command> {
        vec![
            Command::new("↑↓", "select"),
            Command::new("Enter", "full output"),
            Command::bound(ctx, Action::Copy, "copy command"),
            Command::bound(ctx, Action::History, "close"),
            Command::bound(ctx, Action::Back, "close"),
            Command::bound(ctx, Action::Help, "help"),
        ]
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        self.draw(frame, area, look.theme);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_each_call_once_and_follows_the_newest() {
        let mut h = HistoryPane::default();
        h.track("c1", "run_shell", "ls", &CallStatus::Running);
        h.track("c2", "read_file", "/etc/hosts", &CallStatus::Requested);
        h.track("c1", "run_shell", "ls", &CallStatus::Denied);
        assert_eq!(h.len(), 2);
        assert_eq!(h.selected().map(|r| r.call_id.as_str()), Some("c2"));
        h.select_prev();
        assert_eq!(h.selected().map(|r| &r.status), Some(&CallStatus::Denied));
    }
}
