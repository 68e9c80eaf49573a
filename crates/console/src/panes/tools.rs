//! The tool events pane: one block per tool call (header, status, duration,
//! "truncated for model" mark) followed by its live stdout/stderr lines.
//! Memory is bounded: at most [`MAX_LINES_PER_CALL`] lines per call, lines cut
//! at [`MAX_LINE_CHARS`], and at most [`MAX_CALLS`] calls.
//!
//! Keys the operator typed into the managed pane are shown in the same
//! stream as their own kind of entry ([`OPERATOR_MARK`]), so operator typing
//! is never mistaken for the agent's `send_keys`/`run_shell`.
//!
//! It only records and renders; it never runs or stops anything. Its keys
//! (scrolling, and the bound keys it offers) are in `scrolling`.

use std::collections::VecDeque;
use std::path::Path;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::tool_lines::LineStore;
pub use super::tool_lines::{LineKind, MAX_LINE_CHARS, MAX_LINES_PER_CALL, OutputLine};
use super::{Scroll, pane_block};
use crate::style::text::{fit_line, one_line};
use crate::style::theme::Theme;
use vigil_protocol::text::sanitize;
use vigil_protocol::{OutputStream, PaneKey, ToolSummary};

pub const MAX_CALLS: usize = 200;
/// How operator typing is marked in the stream (apart from tool calls).
pub const OPERATOR_MARK: &str = "⌨ operator typed: ";
/// Longest operator entry shown (the rest continues in a new entry).
const MAX_TYPED_CHARS: usize = 300;

/// The id prefix of a call shown while its arguments stream, before the
/// server named it.
const STREAMING: &str = "streaming-";

#[derive(Debug, Clone, PartialEq)]
pub enum CallStatus {
    /// The model asked; nothing has happened yet.
    Requested,
    WaitingApproval,
    Running,
    Finished(ToolSummary),
    Denied,
    /// The operator cancelled the turn before the call finished.
    Cancelled,
    /// vigil stopped (crash, kill) before the call finished; its outcome is
    /// unknown (a resumed session shows it so).
    Interrupted,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub call_id: String,
    pub name: String,
    pub summary: String,
    pub status: CallStatus,
    /// The bounded output (split into lines when read).
    pub output: LineStore,
    /// An operator entry still being typed (more typing continues it).
    open: bool,
    /// Not a tool call: keys the operator typed into the pane.
    pub operator: bool,
    /// How the call was decided (`by session rule …`), when it was gated.
    pub decided: Option<String>,
}

impl ToolCall {
    fn new(call_id: &str, name: &str, summary: &str) -> Self {
        ToolCall {
            call_id: call_id.to_string(),
            name: sanitize(name),
            summary: one_line(&sanitize(summary), 300),
            status: CallStatus::Requested,
            output: LineStore::default(),
            open: false,
            operator: false,
            decided: None,
        }
    }

    /// The spill files holding the full output, when it was cut for the model.
    pub fn spill(&self) -> &[std::path::PathBuf] {
        match &self.status {
            CallStatus::Finished(s) if s.truncated => &s.spill,
            _ => &[],
        }
    }

    fn line_count(&self) -> usize {
        let dropped = self.output.dropped();
        2 + self.spill().len() + usize::from(dropped > 0) + self.output.lines().len()
    }

    fn status_line(&self, theme: &Theme) -> Line<'static> {
        let dim = theme.dim;
        let (label, style) = status_label(&self.status, theme);
        let mut spans = vec![Span::raw("  "), Span::styled(label.clone(), style)];
        if let CallStatus::Finished(s) = &self.status {
            if s.truncated {
                spans.push(Span::styled(" · truncated for model", theme.truncated));
            }
            spans.push(Span::styled(
                format!(" · {}", format_duration(s.duration_ms)),
                dim,
            ));
        }
        if let Some(d) = self.decided.as_ref().filter(|d| **d != label) {
            spans.push(Span::styled(format!(" · {d}"), theme.info));
        }
        Line::from(spans)
    }

    /// Lines `from..to` of this call's block.
    fn render_lines(
        &self,
        from: usize,
        to: usize,
        width: usize,
        theme: &Theme,
        out: &mut Vec<Line<'static>>,
    ) {
        if self.operator {
            let style = theme.warn.add_modifier(Modifier::BOLD);
            for i in from..to.min(2) {
                out.push(match i {
                    0 => Line::from(vec![
                        Span::styled(OPERATOR_MARK, style),
                        Span::raw(self.summary.clone()),
                    ]),
                    _ => Line::styled("  by the operator, not the agent", theme.dim),
                });
            }
            return;
        }
        let header = Line::from(vec![
            Span::styled("▶ ", theme.running),
            Span::styled(self.name.clone(), theme.text.add_modifier(Modifier::BOLD)),
            Span::raw("  "),
            Span::raw(self.summary.clone()),
        ]);
        let spill = self.spill();
        let fixed = 2 + spill.len();
        let dropped = self.output.dropped();
        let marker = usize::from(dropped > 0);
        let output = self.output.lines();
        for i in from..to {
            let line = fit_line(
                match i {
                    0 => header.clone(),
                    1 => self.status_line(theme),
                    n if n < fixed => match spill.get(n - 2) {
                        Some(path) => spill_line(path, width, theme),
                        None => continue,
                    },
                    n if n == fixed && marker == 1 => Line::styled(
                        format!("  … {dropped} earlier lines dropped (history view: h)"),
                        theme.dim,
                    ),
                    n => match output.get(n - fixed - marker) {
                        Some(l) => output_line(l, theme),
                        None => continue,
                    },
                },
                width,
            );
            out.push(line);
        }
    }
}

/// The status word(s) of a call and their style.
pub fn status_label(status: &CallStatus, theme: &Theme) -> (String, Style) {
    match status {
        CallStatus::Requested => ("requested".to_string(), theme.dim),
        CallStatus::WaitingApproval => (
            "waiting approval".to_string(),
            theme.warn.add_modifier(Modifier::BOLD),
        ),
        CallStatus::Running => ("running".to_string(), theme.running),
        CallStatus::Denied => ("denied".to_string(), theme.bad),
        CallStatus::Cancelled => ("cancelled".to_string(), theme.warn),
        CallStatus::Interrupted => (
            "interrupted".to_string(),
            theme.warn.add_modifier(Modifier::BOLD),
        ),
        CallStatus::Finished(s) => finished_label(s, theme),
    }
}

fn finished_label(s: &ToolSummary, theme: &Theme) -> (String, Style) {
    let green = theme.ok;
    let red = theme.bad;
    match (s.ok, s.exit_code) {
        (true, Some(0)) => ("ok exit 0".to_string(), green),
        (true, Some(code)) => (format!("exit {code}"), theme.warn),
        (true, None) => ("ok".to_string(), green),
        (false, _) => {
            let why = s
                .error
                .as_deref()
                .map(|e| format!("failed: {}", one_line(&sanitize(e), 200)))
                .unwrap_or_else(|| "failed".to_string());
            (why, red)
        }
    }
}

/// The spill file's path, cut from the left so its name stays visible.
fn spill_line(path: &Path, width: usize, theme: &Theme) -> Line<'static> {
    const LABEL: &str = "  full output: ";
    let full = sanitize(&path.display().to_string());
    let room = width.saturating_sub(LABEL.len() + 1).max(8);
    let count = full.chars().count();
    let shown = if count > room {
        let tail: String = full.chars().skip(count - room).collect();
        format!("…{tail}")
    } else {
        full
    };
    Line::from(vec![Span::styled(LABEL, theme.dim), Span::raw(shown)])
}

fn output_line(l: &OutputLine, theme: &Theme) -> Line<'static> {
    let style = match l.kind {
        LineKind::Stdout => theme.stdout,
        LineKind::Stderr => theme.stderr,
        LineKind::Info => theme.info,
    };
    let gutter = match l.kind {
        LineKind::Stderr => "! ",
        LineKind::Info => "· ",
        LineKind::Stdout => "  ",
    };
    Line::from(vec![
        Span::styled(gutter, theme.dim),
        Span::styled(l.text.clone(), style),
    ])
}

/// `850ms`, `1.2s`, `2m03s`.
pub fn format_duration(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// " at console 2 (uid 1000 pid 4242 on pts/4, says "laptop") 14:03:12
/// UTC": who answered an approval, for the record on the call's status
/// line — the peer the agent found on its socket first, the name the
/// console gave itself only as a label after it.
pub fn answered_by_text(who: &vigil_protocol::Answerer) -> String {
    let secs = who.at_ms / 1000 % 86_400;
    let label = one_line(&sanitize(&who.console.name), 40);
    let console = match &who.console.peer {
        Some(peer) => format!("{}, says \"{label}\"", peer.describe()),
        None => label,
    };
    format!(
        " at console {} ({console}) {:02}:{:02}:{:02} UTC",
        who.console.id,
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[derive(Debug, Default)]
pub struct ToolsPane {
    calls: VecDeque<ToolCall>,
    /// Operator entries so far (for their ids).
    operators: usize,
    pub scroll: Scroll,
}

impl ToolsPane {
    pub fn calls(&self) -> impl DoubleEndedIterator<Item = &ToolCall> {
        self.calls.iter()
    }

    pub fn call(&self, call_id: &str) -> Option<&ToolCall> {
        self.calls.iter().rev().find(|c| c.call_id == call_id)
    }

    fn call_mut(&mut self, call_id: &str) -> Option<&mut ToolCall> {
        self.calls.iter_mut().rev().find(|c| c.call_id == call_id)
    }

    /// The call with this id, created if the request was never seen.
    fn ensure(&mut self, call_id: &str, name: &str, summary: &str) -> &mut ToolCall {
        if self.call(call_id).is_none() {
            self.calls.push_back(ToolCall::new(call_id, name, summary));
            if self.calls.len() > MAX_CALLS {
                self.calls.pop_front();
            }
        }
        let idx = self
            .calls
            .iter()
            .rposition(|c| c.call_id == call_id)
            .unwrap_or(self.calls.len().saturating_sub(1));
        &mut self.calls[idx]
    }

    pub fn requested(&mut self, call_id: &str, name: &str, arguments: &str) {
        self.drop_streaming();
        self.ensure(call_id, name, arguments);
    }

    /// A piece of a call's arguments as the model writes them: the call is
    /// shown at once, its arguments growing. A call the server has not named
    /// yet is shown under a placeholder id until it is requested whole.
    pub fn streaming(&mut self, index: usize, call_id: &str, name: &str, piece: &str) {
        let id = if call_id.is_empty() {
            format!("{STREAMING}{index}")
        } else {
            call_id.to_string()
        };
        let call = self.ensure(&id, name, "");
        if call.name != name && !name.is_empty() {
            call.name = name.to_string();
        }
        if call.summary.chars().count() < 300 {
            call.summary.push_str(&one_line(&sanitize(piece), 300));
        }
    }

    /// Forget the calls shown while streaming under a placeholder id (the
    /// round ended, or was discarded).
    pub fn drop_streaming(&mut self) {
        self.calls.retain(|c| !c.call_id.starts_with(STREAMING));
    }

    pub fn waiting_approval(&mut self, call_id: &str, tool: &str, action: &str) {
        let call = self.ensure(call_id, tool, action);
        call.summary = one_line(&sanitize(action), 300);
        call.status = CallStatus::WaitingApproval;
    }

    pub fn started(&mut self, call_id: &str, name: &str, summary: &str) {
        let call = self.ensure(call_id, name, summary);
        call.summary = one_line(&sanitize(summary), 300);
        call.status = CallStatus::Running;
    }

    pub fn output(&mut self, call_id: &str, stream: OutputStream, text: &str) {
        let kind = match stream {
            OutputStream::Stdout => LineKind::Stdout,
            OutputStream::Stderr => LineKind::Stderr,
        };
        self.ensure(call_id, "?", "").output.append(kind, text);
    }

    pub fn info(&mut self, call_id: &str, text: &str) {
        let call = self.ensure(call_id, "?", "");
        call.output.close_line();
        call.output.append(LineKind::Info, text);
        call.output.close_line();
    }

    /// The operator typed into the pane: continue the newest operator entry
    /// until Enter, else start a new one.
    pub fn operator_typed(&mut self, keys: &[PaneKey]) {
        let typed = sanitize(&PaneKey::describe(keys));
        if typed.is_empty() {
            return;
        }
        let ended = typed.ends_with('⏎');
        if let Some(last) = self.calls.back_mut()
            && last.operator
            && last.open
            && last.summary.chars().count() < MAX_TYPED_CHARS
        {
            last.summary.push_str(&typed);
            last.open = !ended;
            return;
        }
        self.operators += 1;
        let id = format!("operator-{}", self.operators);
        let call = self.ensure(&id, "operator", "");
        call.summary = typed;
        call.operator = true;
        call.open = !ended;
        call.status = CallStatus::Finished(ToolSummary {
            ok: true,
            exit_code: None,
            duration_ms: 0,
            truncated: false,
            spill: Vec::new(),
            seen: Vec::new(),
            error: None,
        });
    }

    /// A call of a resumed session, as it was when the session was last
    /// written: its status and the output the model was given.
    pub fn restored(&mut self, call_id: &str, name: &str, summary: &str, status: CallStatus) {
        let call = self.ensure(call_id, name, summary);
        call.summary = one_line(&sanitize(summary), 300);
        call.status = status;
    }

    pub fn denied(&mut self, call_id: &str) {
        if let Some(call) = self.call_mut(call_id) {
            call.status = CallStatus::Denied;
        }
    }

    /// Record how a gated call was decided (shown on its status line).
    pub fn decided(&mut self, call_id: &str, how: &str) {
        if let Some(call) = self.call_mut(call_id) {
            call.decided = Some(sanitize(how));
        }
    }

    /// The turn was cancelled before this call finished.
    pub fn cancelled(&mut self, call_id: &str, name: &str) {
        let call = self.ensure(call_id, name, "");
        if !matches!(call.status, CallStatus::Finished(_)) {
            call.status = CallStatus::Cancelled;
        }
    }

    pub fn completed(&mut self, call_id: &str, name: &str, summary: &ToolSummary) {
        let call = self.ensure(call_id, name, "");
        let ended = matches!(call.status, CallStatus::Denied | CallStatus::Cancelled);
        if ended && !summary.ok {
            return;
        }
        call.status = CallStatus::Finished(summary.clone());
    }

    pub(crate) fn draw(&self, frame: &mut Frame, area: Rect, focused: bool, theme: &Theme) {
        let mut block = pane_block("tools".into(), focused, theme);
        let inner = block.inner(area);
        let height = inner.height as usize;
        let total: usize = self.calls.iter().map(ToolCall::line_count).sum();
        let below = self.scroll.lines_below(total, height);
        if below > 0 {
            block = block.title_bottom(format!(" ↓ {below} more (End/f follows) "));
        }
        frame.render_widget(block, area);
        if self.calls.is_empty() {
            let hint = Line::styled("no tool calls yet", theme.dim);
            frame.render_widget(Paragraph::new(hint), inner);
            return;
        }
        let top = self.scroll.first_visible(total, height);
        let end = top + height;
        let mut lines = Vec::with_capacity(height);
        let mut start = 0usize;
        let width = inner.width as usize;
        for call in &self.calls {
            let n = call.line_count();
            if start + n > top && start < end {
                let from = top.saturating_sub(start);
                let to = (end - start).min(n);
                call.render_lines(from, to, width, theme, &mut lines);
                // Sticky header: a call scrolled past its name and status
                // (a long output being followed) keeps them on top.
                if from >= 2 && height >= 6 && lines.len() >= 2 {
                    let mut head = Vec::with_capacity(2);
                    call.render_lines(0, 2, width, theme, &mut head);
                    lines.splice(0..2, head);
                }
            }
            start += n;
            if start >= end {
                break;
            }
        }
        frame.render_widget(Paragraph::new(lines), inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(p: &ToolsPane, id: &str) -> Vec<(LineKind, String)> {
        p.call(id)
            .map(|c| {
                c.output
                    .lines()
                    .iter()
                    .map(|l| (l.kind, l.text.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn streamed_arguments_show_as_they_arrive_and_placeholders_go() {
        let mut p = ToolsPane::default();
        p.streaming(0, "c1", "read_file", "");
        p.streaming(0, "c1", "read_file", "{\"path\": \"/et");
        p.streaming(0, "c1", "read_file", "c/hosts\"}");
        let call = p.call("c1").unwrap();
        assert_eq!(call.summary, "{\"path\": \"/etc/hosts\"}");
        assert_eq!(call.status, CallStatus::Requested);
        p.streaming(1, "", "time", "{}");
        assert!(p.call("streaming-1").is_some());
        p.requested("c2", "time", "{}");
        assert!(p.call("streaming-1").is_none() && p.call("c1").is_some());
    }

    #[test]
    fn output_chunks_join_into_lines_per_stream() {
        let mut p = ToolsPane::default();
        p.started("c1", "run_shell", "ls");
        p.output("c1", OutputStream::Stdout, "a");
        p.output("c1", OutputStream::Stdout, "b\nc\n");
        p.output("c1", OutputStream::Stderr, "oops\n");
        p.output("c1", OutputStream::Stdout, "\x1b[31md\te");
        assert_eq!(
            texts(&p, "c1"),
            vec![
                (LineKind::Stdout, "ab".to_string()),
                (LineKind::Stdout, "c".to_string()),
                (LineKind::Stderr, "oops".to_string()),
                (LineKind::Stdout, "d   e".to_string()),
            ]
        );
    }

    #[test]
    fn operator_typing_is_its_own_entry_until_enter() {
        let mut p = ToolsPane::default();
        p.started("c1", "run_shell", "ls");
        let text = |t: &str| PaneKey::Text(t.into());
        p.operator_typed(&[text("ec")]);
        p.operator_typed(&[text("ho hi"), PaneKey::Key("Enter".into())]);
        p.operator_typed(&[PaneKey::Key("C-c".into())]);
        let ops: Vec<_> = p.calls().filter(|c| c.operator).collect();
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[0].summary, "echo hi⏎");
        assert_eq!(ops[1].summary, "⟨C-c⟩");
        assert!(!p.call("c1").is_some_and(|c| c.operator));
    }

    #[test]
    fn lines_per_call_are_bounded() {
        let mut p = ToolsPane::default();
        let chunk: String = (0..MAX_LINES_PER_CALL + 20)
            .map(|i| format!("{i}\n"))
            .collect();
        p.output("c1", OutputStream::Stdout, &chunk);
        let call = p.call("c1").expect("call exists");
        assert_eq!(call.output.lines().len(), MAX_LINES_PER_CALL);
        assert_eq!(call.output.dropped(), 20);
        assert_eq!(
            call.output.lines().front().map(|l| l.text.as_str()),
            Some("20")
        );
        p.output("c1", OutputStream::Stdout, &"x".repeat(MAX_LINE_CHARS * 2));
        let call = p.call("c1").expect("call exists");
        assert!(
            call.output
                .lines()
                .back()
                .is_some_and(|l| l.text.chars().count() <= MAX_LINE_CHARS + 1)
        );
    }

    #[test]
    fn denial_is_not_overwritten_by_the_failed_completion() {
        let mut p = ToolsPane::default();
        p.requested("c1", "run_shell", "{}");
        p.waiting_approval("c1", "run_shell", "rm -rf /tmp/x");
        p.denied("c1");
        let summary = ToolSummary {
            ok: false,
            exit_code: None,
            duration_ms: 0,
            truncated: false,
            spill: vec![],
            seen: Vec::new(),
            error: Some("denied".into()),
        };
        p.completed("c1", "run_shell", &summary);
        assert_eq!(p.call("c1").map(|c| &c.status), Some(&CallStatus::Denied));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(850), "850ms");
        assert_eq!(format_duration(1_240), "1.2s");
        assert_eq!(format_duration(123_000), "2m03s");
    }
}
