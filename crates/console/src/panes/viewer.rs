//! The full-output viewer: one tool call's whole output (from its spill
//! files when it was cut for the model, else the output the console kept),
//! scrollable, searchable (`/`, n/N), with a gutter that marks the lines the
//! model saw.
//!
//! Building the content ([`build`]) is pure and runs off the UI task for
//! spill files; the viewer itself only renders, moves its view and answers
//! its keys (saving, copying and searching are asked of the App).

use std::sync::Arc;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::pane::{Command, Ctx, Look, Outcome, OverlayAction, Pane};
use super::{Scroll, pane_block};
use crate::keys::{Action, Scope};
use crate::style::text::truncate_chars;
use crate::style::theme::Theme;
use vigil_protocol::text::sanitize;

/// Which part of a section the model saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelView {
    /// All of it (nothing was cut).
    All,
    /// The first this many chars.
    Head(usize),
    /// The first `head` and the last `tail` chars.
    HeadTail { head: usize, tail: usize },
    /// Not known for this tool.
    Unknown,
}

/// One part of a call's output (stdout, stderr, a file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub label: String,
    pub text: String,
    pub view: ModelView,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Yes,
    Partly,
    No,
    Unknown,
    /// A section header, not output.
    Header,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewLine {
    pub start: usize,
    pub end: usize,
    pub seen: Seen,
}

/// The laid-out text of a viewer.
#[derive(Debug, Clone, Default)]
pub struct Content {
    pub text: Arc<str>,
    pub lines: Vec<ViewLine>,
}

impl Content {
    /// The text to save: the output lines, with the section header lines
    /// only when there are several sections to tell apart.
    pub fn saved_text(&self) -> String {
        let headers = self.lines.iter().filter(|l| l.seen == Seen::Header).count();
        let mut out = String::with_capacity(self.text.len());
        for l in &self.lines {
            if l.seen == Seen::Header && headers <= 1 {
                continue;
            }
            out.push_str(&self.text[l.start..l.end]);
            out.push('\n');
        }
        out
    }
}

/// Most characters kept per displayed line.
const MAX_LINE: usize = 4_000;

/// Lay sections out into lines, each marked with what the model saw.
pub fn build(sections: &[Section]) -> Content {
    let mut text = String::new();
    let mut lines = Vec::new();
    let many = sections.len() > 1;
    for s in sections {
        if many || !s.label.is_empty() {
            let start = text.len();
            text.push_str(&format!("── {} ──", s.label));
            lines.push(ViewLine {
                start,
                end: text.len(),
                seen: Seen::Header,
            });
            text.push('\n');
        }
        let clean = sanitize(&s.text);
        let total = clean.chars().count();
        let mut chars_before = 0usize;
        let body = clean.strip_suffix('\n').unwrap_or(&clean);
        for raw in body.split('\n') {
            let n = raw.chars().count();
            let seen = seen_of(s.view, total, chars_before, chars_before + n);
            chars_before += n + 1;
            let shown = if n > MAX_LINE {
                truncate_chars(raw, MAX_LINE)
            } else {
                raw.to_string()
            };
            let start = text.len();
            text.push_str(&shown);
            lines.push(ViewLine {
                start,
                end: text.len(),
                seen,
            });
            text.push('\n');
        }
    }
    Content {
        text: Arc::from(text),
        lines,
    }
}

fn seen_of(view: ModelView, total: usize, a: usize, b: usize) -> Seen {
    let inside = |lo: usize, hi: usize| a >= lo && b <= hi;
    let overlaps = |lo: usize, hi: usize| a < hi && b > lo || (a == b && a >= lo && a < hi);
    match view {
        ModelView::All => Seen::Yes,
        ModelView::Unknown => Seen::Unknown,
        ModelView::Head(h) => {
            if inside(0, h) {
                Seen::Yes
            } else if overlaps(0, h) {
                Seen::Partly
            } else {
                Seen::No
            }
        }
        ModelView::HeadTail { head, tail } => {
            let tail_start = total.saturating_sub(tail);
            if inside(0, head) || inside(tail_start, total) {
                Seen::Yes
            } else if overlaps(0, head) || overlaps(tail_start, total) {
                Seen::Partly
            } else {
                Seen::No
            }
        }
    }
}

#[derive(Debug)]
pub enum State {
    Loading,
    Failed(String),
    Ready(Content),
}

#[derive(Debug)]
pub struct Viewer {
    pub call_id: String,
    pub title: String,
    pub state: State,
    pub scroll: Scroll,
    query: Option<String>,
    matches: Vec<usize>,
    current: Option<usize>,
    /// The first line of a range to copy (`v`), 0-based.
    pub mark: Option<usize>,
}

impl Viewer {
    pub fn loading(call_id: &str, title: &str) -> Viewer {
        Viewer {
            call_id: call_id.to_string(),
            title: title.to_string(),
            state: State::Loading,
            scroll: Scroll::default(),
            query: None,
            matches: Vec::new(),
            current: None,
            mark: None,
        }
    }

    pub fn set_content(&mut self, content: Content) {
        self.state = State::Ready(content);
        self.scroll.home();
    }

    pub fn content(&self) -> Option<&Content> {
        match &self.state {
            State::Ready(c) => Some(c),
            _ => None,
        }
    }

    fn line_text<'a>(c: &'a Content, l: &ViewLine) -> &'a str {
        c.text.get(l.start..l.end).unwrap_or("")
    }

    /// The output without section headers, lines `from..=to` (0-based,
    /// clamped); None while loading.
    pub fn output_text(&self, from: usize, to: usize) -> Option<String> {
        let c = self.content()?;
        let mut out = String::new();
        for l in c.lines.iter().take(to.saturating_add(1)).skip(from) {
            if l.seen != Seen::Header {
                out.push_str(Self::line_text(c, l));
                out.push('\n');
            }
        }
        Some(out)
    }

    /// The whole output without section headers.
    pub fn whole_output(&self) -> Option<String> {
        self.output_text(0, usize::MAX)
    }

    /// Search for `query` (case-insensitive unless it has capitals) and jump
    /// to the first match; returns the number of matching lines.
    pub fn search(&mut self, query: &str) -> usize {
        self.matches.clear();
        self.current = None;
        self.query = (!query.is_empty()).then(|| query.to_string());
        let Some(q) = &self.query else {
            return 0;
        };
        let State::Ready(c) = &self.state else {
            return 0;
        };
        let fold = !q.chars().any(char::is_uppercase);
        let needle = if fold { q.to_lowercase() } else { q.clone() };
        for (i, l) in c.lines.iter().enumerate() {
            let t = Self::line_text(c, l);
            let hit = if fold {
                t.to_lowercase().contains(&needle)
            } else {
                t.contains(&needle)
            };
            if hit {
                self.matches.push(i);
            }
        }
        if !self.matches.is_empty() {
            self.current = Some(0);
            self.scroll.reveal(self.matches[0]);
        }
        self.matches.len()
    }

    /// Move to the next (or previous) match.
    pub fn next_match(&mut self, forward: bool) {
        let n = self.matches.len();
        if n == 0 {
            return;
        }
        let i = match self.current {
            Some(i) if forward => (i + 1) % n,
            Some(i) => (i + n - 1) % n,
            None => 0,
        };
        self.current = Some(i);
        self.scroll.reveal(self.matches[i]);
    }

    /// The line of the current match.
    pub fn current_match(&self) -> Option<usize> {
        self.current.and_then(|i| self.matches.get(i).copied())
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let mut title = format!("output · {}", self.title);
        if let Some(m) = self.mark {
            title.push_str(&format!(" · copy from line {}", m + 1));
        }
        if let Some(q) = &self.query {
            let pos = self.current.map_or(0, |i| i + 1);
            title.push_str(&format!(" · /{q} {pos}/{}", self.matches.len()));
        }
        let block = pane_block(title, true, theme);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let c = match &self.state {
            State::Loading => {
                frame.render_widget(
                    Paragraph::new(Line::styled("reading the full output…", theme.dim)),
                    inner,
                );
                return;
            }
            State::Failed(why) => {
                frame.render_widget(
                    Paragraph::new(Line::styled(format!("cannot show it: {why}"), theme.error)),
                    inner,
                );
                return;
            }
            State::Ready(c) => c,
        };
        if inner.height < 2 {
            return;
        }
        let legend = Line::from(vec![
            Span::styled("M│", theme.seen),
            Span::styled(" the model saw this line · ", theme.dim),
            Span::styled("m│", theme.seen),
            Span::styled(" partly · dim lines were cut from what it saw", theme.dim),
        ]);
        frame.render_widget(Paragraph::new(legend), Rect { height: 1, ..inner });
        let body = Rect {
            y: inner.y + 1,
            height: inner.height - 1,
            ..inner
        };
        let height = body.height as usize;
        let top = self.scroll.first_visible(c.lines.len(), height);
        let current = self.current_match();
        let mut out = Vec::with_capacity(height);
        for (i, l) in c.lines.iter().enumerate().skip(top).take(height) {
            let text = Self::line_text(c, l);
            let (gutter, gstyle, tstyle) = match l.seen {
                Seen::Yes => ("M│", theme.seen, theme.stdout),
                Seen::Partly => ("m│", theme.seen, theme.stdout),
                Seen::No => (" │", theme.unseen, theme.unseen),
                Seen::Unknown => (" │", theme.dim, theme.stdout),
                Seen::Header => ("  ", theme.dim, theme.heading),
            };
            let mut spans = vec![
                Span::styled(format!("{:>6} ", i + 1), theme.dim),
                Span::styled(gutter, gstyle),
            ];
            let tstyle = if current == Some(i) {
                tstyle.patch(theme.selected)
            } else {
                tstyle
            };
            spans.extend(highlight(text, self.query.as_deref(), tstyle, theme));
            out.push(Line::from(spans));
        }
        frame.render_widget(Paragraph::new(out), body);
    }
}

/// Split `text` into spans with every occurrence of `query` highlighted.
fn highlight(
    text: &str,
    query: Option<&str>,
    style: ratatui::style::Style,
    theme: &Theme,
) -> Vec<Span<'static>> {
    let Some(q) = query.filter(|q| !q.is_empty()) else {
        return vec![Span::styled(text.to_string(), style)];
    };
    let fold = !q.chars().any(char::is_uppercase);
    let (hay, needle) = if fold && text.is_ascii() && q.is_ascii() {
        (text.to_ascii_lowercase(), q.to_ascii_lowercase())
    } else if fold {
        return vec![Span::styled(text.to_string(), style)];
    } else {
        (text.to_string(), q.to_string())
    };
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(pos) = hay[at..].find(&needle) {
        let s = at + pos;
        if s > at {
            spans.push(Span::styled(text[at..s].to_string(), style));
        }
        let e = s + needle.len();
        spans.push(Span::styled(text[s..e].to_string(), theme.search_match));
        at = e;
    }
    if at < text.len() {
        spans.push(Span::styled(text[at..].to_string(), style));
    }
    spans
}

impl Pane for Viewer {
    type Action = OverlayAction;

    /// The viewer takes every key while it is open; what is not one of its
    /// own scrolls.
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome<OverlayAction> {
        let act = |a| Outcome::Action(a);
        match ctx.keys.action(key, Scope::Viewer) {
            Some(Action::Search) => return act(OverlayAction::Search),
            Some(Action::SearchNext) => self.next_match(true),
            Some(Action::SearchPrev) => self.next_match(false),
            Some(Action::Save) if self.content().is_some() => return act(OverlayAction::SaveAs),
            Some(Action::Save) => {}
            Some(Action::Mark) => return act(OverlayAction::Mark),
            Some(Action::Copy) => return act(OverlayAction::CopyOutput),
            Some(Action::Back) if self.mark.is_some() => self.mark = None,
            Some(Action::Back | Action::Quit | Action::History) => {
                return act(OverlayAction::Close);
            }
            Some(Action::Follow) => self.scroll.end(),
            _ => {
                self.scroll.apply_key(key.code);
            }
        }
        Outcome::Consumed
    }

    fn commands(&self, ctx: &Ctx) -> Vec<Command> {
        let k = |a| ctx.keys.label(a);
        vec![
            Command::bound(ctx, Action::Search, "search"),
            Command::new(
                format!("{}/{}", k(Action::SearchNext), k(Action::SearchPrev)),
                "next/prev",
            ),
            Command::bound(ctx, Action::Back, "back"),
            Command::bound(ctx, Action::Save, "save"),
            Command::bound(ctx, Action::Copy, "copy"),
            Command::bound(ctx, Action::Mark, "mark range"),
            Command::new("PgUp/PgDn", "scroll"),
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
    fn head_tail_marks_the_middle_unseen() {
        let text: String = (0..10).map(|i| format!("line{i}\n")).collect();
        // 6 chars per line: the model saw 14 head chars and 12 tail chars.
        let c = build(&[Section {
            label: String::new(),
            text,
            view: ModelView::HeadTail { head: 14, tail: 12 },
        }]);
        let seen: Vec<Seen> = c.lines.iter().map(|l| l.seen).collect();
        assert_eq!(seen[0], Seen::Yes);
        assert_eq!(seen[1], Seen::Yes);
        assert_eq!(seen[2], Seen::Partly);
        assert_eq!(seen[5], Seen::No);
        assert_eq!(seen[9], Seen::Yes);
        assert_eq!(c.lines.len(), 10);
    }

    #[test]
    fn search_finds_lines_and_cycles() {
        let mut v = Viewer::loading("c1", "t");
        v.set_content(build(&[Section {
            label: "stdout".into(),
            text: "alpha\nbeta\nAlphabet\n".into(),
            view: ModelView::All,
        }]));
        assert_eq!(v.search("alpha"), 2);
        assert_eq!(v.current_match(), Some(1));
        v.next_match(true);
        assert_eq!(v.current_match(), Some(3));
        v.next_match(true);
        assert_eq!(v.current_match(), Some(1));
        v.next_match(false);
        assert_eq!(v.current_match(), Some(3));
        assert_eq!(v.search("Alpha"), 1, "capitals make it case-sensitive");
    }
}
