//! The approvals pane: gated tool calls waiting for the operator, oldest
//! first, with what the call wants to do and what the model claims about it.
//!
//! It never decides anything by itself: its keys (`approvals_keys`) only
//! ask the App to answer the selected request, and the App sends the
//! [`Answer`].

use std::cell::RefCell;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{card_facts, diff_card, pane_block};
use crate::style::text::{one_line, wrap};
use crate::style::theme::Theme;
use crate::views::diff::DiffCard;
use crate::views::preview_card;
use vigil_protocol::fleet::FleetPending;
use vigil_protocol::text::sanitize;
use vigil_protocol::{Answer, ApprovalRequest, PreviewOutcome, PreviewReport, Risk};

/// Lines of action text shown for the selected request.
const ACTION_LINES: usize = 3;
/// Lines of the model's reason shown for the selected request.
const WHY_LINES: usize = 2;

#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub request: ApprovalRequest,
    /// The operator answered; waiting for the agent to confirm.
    pub answered: Option<Answer>,
    /// What a file-changing call would do, laid out once; for a command,
    /// its preview card once the operator asked for one.
    pub diff: Option<DiffCard>,
    /// The preview's report, when one arrived (a deny can quote it).
    pub preview: Option<Box<PreviewReport>>,
    /// Another agent's call (None: this console's agent).
    pub agent: Option<Foreign>,
    /// When it was asked, as seen here (Unix milliseconds): the queue is
    /// oldest first across agents.
    pub asked_ms: u64,
}

/// The agent another agent's call belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// Its session id.
    pub id: String,
    /// Short id and model, shown on the call.
    pub label: String,
}

/// A request answered from the queue: whose, and which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// None: this console's agent.
    pub agent: Option<String>,
    pub id: u64,
    /// The card's token, which the answer carries back to the agent.
    pub token: String,
}

#[derive(Debug, Default)]
pub struct ApprovalsPane {
    queue: Vec<Pending>,
    selected: usize,
    /// Requests a session rule or the policy decided by itself: never shown,
    /// kept only until their resolution names the call (a denial marks it).
    automatic: Vec<ApprovalRequest>,
    /// The request whose diff is scrolled, and its first row shown.
    diff_scroll: (u64, usize),
    /// The request whose card (header and action) the last draw showed as
    /// selected: approval keys act only on it.
    shown: RefCell<Option<CardKey>>,
}

/// Whose call and which: one queued request.
pub type CardKey = (Option<String>, u64);

impl ApprovalsPane {
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Requests nobody has answered yet.
    pub fn unanswered(&self) -> usize {
        self.queue.iter().filter(|p| p.answered.is_none()).count()
    }

    /// The oldest request nobody has answered yet (the queue's order).
    pub fn oldest_open(&self) -> Option<&ApprovalRequest> {
        self.queue
            .iter()
            .find(|p| p.answered.is_none())
            .map(|p| &p.request)
    }

    /// The most recent request nobody has answered yet.
    pub fn newest_open(&self) -> Option<&ApprovalRequest> {
        self.queue
            .iter()
            .rev()
            .find(|p| p.answered.is_none())
            .map(|p| &p.request)
    }

    pub fn selected(&self) -> Option<&Pending> {
        self.queue.get(self.selected)
    }

    pub fn push(&mut self, request: ApprovalRequest) {
        let was_all_answered = self.unanswered() == 0;
        self.queue.push(request_pending(request, None, wall_ms()));
        if was_all_answered {
            self.selected = self.queue.len() - 1;
        }
    }

    /// A request the agent decides itself: it never enters the queue, so it
    /// neither rings, nor takes focus, nor flickers in the pane.
    pub fn note_automatic(&mut self, request: ApprovalRequest) {
        self.automatic.push(request);
    }

    /// The agent resolved a request; returns it when it was queued (or noted)
    /// here.
    pub fn resolve(&mut self, id: u64) -> Option<ApprovalRequest> {
        if let Some(i) = self.automatic.iter().position(|r| r.id == id) {
            return Some(self.automatic.swap_remove(i));
        }
        let idx = self.local_index(id)?;
        let pending = self.queue.remove(idx);
        if idx < self.selected {
            self.selected -= 1;
        }
        self.selected = self.selected.min(self.queue.len().saturating_sub(1));
        Some(pending.request)
    }

    /// Show that the selected request's preview runs; its id, or `None`
    /// when nothing open is selected or a preview is already there.
    pub fn start_preview(&mut self) -> Option<u64> {
        let p = self.queue.get_mut(self.selected)?;
        if p.answered.is_some() || p.diff.is_some() || p.agent.is_some() {
            return None;
        }
        p.diff = Some(preview_card::running());
        Some(p.request.id)
    }

    /// A preview arrived for request `id`: it becomes the request's card.
    pub fn set_preview(&mut self, id: u64, outcome: &PreviewOutcome) {
        let Some(p) = self.local_index(id).map(|i| &mut self.queue[i]) else {
            return;
        };
        p.diff = Some(preview_card::card(outcome));
        if let PreviewOutcome::Report { report } = outcome {
            p.preview = Some(report.clone());
        }
        if self.diff_scroll.0 == id {
            self.diff_scroll = (id, 0);
        }
    }

    pub fn select_next(&mut self) {
        if self.selected + 1 < self.queue.len() {
            self.selected += 1;
        }
    }

    pub fn select_prev(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    /// Scroll the selected request's diff by `delta` rows (clamped when
    /// drawn); false when it has no diff.
    pub fn scroll_diff(&mut self, delta: isize) -> bool {
        let Some((id, card)) = self
            .selected()
            .and_then(|p| Some((p.request.id, p.diff.as_ref()?)))
        else {
            return false;
        };
        let last = card.lines.len().saturating_sub(1);
        let row = self.diff_row().saturating_add_signed(delta).min(last);
        self.diff_scroll = (id, row);
        true
    }

    /// The first diff row shown for the selected request (0 until the
    /// operator scrolls it).
    fn diff_row(&self) -> usize {
        match self.selected() {
            Some(p) if p.request.id == self.diff_scroll.0 => self.diff_scroll.1,
            _ => 0,
        }
    }

    /// Answer the selected request; returns its id when there was one to
    /// answer. Moves the selection to the next unanswered request.
    pub fn answer(&mut self, decision: Answer) -> Option<Answered> {
        let pending = self.queue.get_mut(self.selected)?;
        if pending.answered.is_some() {
            return None;
        }
        pending.answered = Some(decision);
        let answered = Answered {
            agent: pending.agent.as_ref().map(|a| a.id.clone()),
            id: pending.request.id,
            token: pending.request.token.clone(),
        };
        if let Some(next) = self.queue.iter().position(|p| p.answered.is_none()) {
            self.selected = next;
        }
        Some(answered)
    }

    /// Select this agent's request `id`; false when it is not queued.
    pub fn select_local(&mut self, id: u64) -> bool {
        match self.local_index(id) {
            Some(i) => {
                self.selected = i;
                true
            }
            None => false,
        }
    }

    fn local_index(&self, id: u64) -> Option<usize> {
        self.queue
            .iter()
            .position(|p| p.agent.is_none() && p.request.id == id)
    }

    /// The other agents' calls are now `pending` (oldest first): drop the
    /// ones resolved, insert the new ones by age. The selection stays on
    /// the request it was on. Returns how many are new.
    pub fn sync_foreign(&mut self, pending: &[FleetPending]) -> usize {
        let key = |p: &Pending| (p.agent.as_ref().map(|a| a.id.clone()), p.request.id);
        let was = self.selected().map(key);
        self.queue.retain(|p| match &p.agent {
            None => true,
            Some(a) => pending
                .iter()
                .any(|f| f.agent == a.id && f.request.id == p.request.id),
        });
        let mut new = 0;
        for f in pending {
            let known = self.queue.iter().any(|p| {
                p.agent.as_ref().is_some_and(|a| a.id == f.agent) && p.request.id == f.request.id
            });
            if known {
                continue;
            }
            let agent = Foreign {
                id: f.agent.clone(),
                label: f.label.clone(),
            };
            let at = self
                .queue
                .iter()
                .position(|p| p.asked_ms > f.asked_ms)
                .unwrap_or(self.queue.len());
            self.queue.insert(
                at,
                request_pending(f.request.clone(), Some(agent), f.asked_ms),
            );
            new += 1;
        }
        self.selected = match was {
            Some(k) => self.queue.iter().position(|p| key(p) == k).unwrap_or(0),
            None => 0,
        };
        if self.selected_open().is_none() {
            self.select_oldest_open();
        }
        new
    }

    /// Select the oldest request nobody answered yet (if any).
    pub fn select_oldest_open(&mut self) {
        if let Some(i) = self.queue.iter().position(|p| p.answered.is_none()) {
            self.selected = i;
        }
    }

    /// The selected request when nobody answered it yet and the last draw
    /// showed its card (the operator could read what they answer).
    pub fn selected_seen(&self) -> Option<&ApprovalRequest> {
        let p = self.selected().filter(|p| p.answered.is_none())?;
        (self.shown.borrow().as_ref() == Some(&card_key(p))).then_some(&p.request)
    }

    /// Forget what the last draw showed (the pane is not drawn now).
    pub fn hide(&self) {
        self.shown.replace(None);
    }

    /// The selected request when nobody answered it yet.
    pub fn selected_open(&self) -> Option<&ApprovalRequest> {
        self.selected()
            .filter(|p| p.answered.is_none())
            .map(|p| &p.request)
    }

    /// Rows this pane would like at this outer width: small when empty.
    pub fn desired_height(&self, width: u16) -> u16 {
        if self.queue.is_empty() {
            return 3;
        }
        let inner = width.saturating_sub(2) as usize;
        let theme = Theme::default();
        let detail: usize = self.selected().map_or(0, |p| {
            detail_lines(p, inner, &theme).iter().map(Vec::len).sum()
        });
        let diff = self
            .selected()
            .and_then(|p| p.diff.as_ref())
            .map_or(0, |d| {
                diff_card::lines(d, 0, diff_card::PREFERRED_ROWS, inner, &theme).len()
            });
        let cap = if diff > 0 { 22 } else { 14 };
        (2 + self.queue.len() + detail + diff).min(cap) as u16
    }

    pub(crate) fn draw(&self, frame: &mut Frame, area: Rect, focused: bool, theme: &Theme) {
        let title = if self.queue.is_empty() {
            "approvals".to_string()
        } else {
            format!("approvals ({}) · oldest first", self.unanswered())
        };
        let block = pane_block(title, focused, theme);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        self.shown.replace(None);
        if self.queue.is_empty() {
            let hint = Line::styled("no pending approvals", theme.dim);
            frame.render_widget(Paragraph::new(hint), inner);
            return;
        }
        let width = inner.width as usize;
        let height = inner.height as usize;
        let mut lines = Vec::new();
        let mut selected_line = 0;
        let mut selected_len = 1;
        for (i, p) in self.queue.iter().enumerate() {
            let selected = i == self.selected;
            if selected {
                selected_line = lines.len();
            }
            lines.push(header_line(p, selected, focused, theme));
            if selected {
                let mut detail: Vec<Line<'static>> = detail_lines(p, width, theme)
                    .into_iter()
                    .flatten()
                    .collect();
                if let Some(card) = &p.diff {
                    // The diff takes the rows the other requests leave.
                    let used = self.queue.len() + detail.len() + 1;
                    let rows = height.saturating_sub(used).max(3);
                    detail.extend(diff_card::lines(card, self.diff_row(), rows, width, theme));
                }
                selected_len += detail.len();
                lines.extend(detail);
            }
        }
        // Keep the selected request and its detail in view.
        let skip = (selected_line + selected_len)
            .saturating_sub(height)
            .min(selected_line);
        // Shown: its header and first detail line (what it would do) fit.
        let card_rows = selected_len.min(2);
        if selected_line >= skip && selected_line + card_rows <= skip + height {
            self.shown.replace(self.selected().map(card_key));
        }
        let visible: Vec<Line<'static>> = lines.into_iter().skip(skip).collect();
        frame.render_widget(Paragraph::new(visible), inner);
    }
}

fn card_key(p: &Pending) -> CardKey {
    (p.agent.as_ref().map(|a| a.id.clone()), p.request.id)
}

fn request_pending(request: ApprovalRequest, agent: Option<Foreign>, asked_ms: u64) -> Pending {
    Pending {
        diff: request
            .change
            .as_ref()
            .map(DiffCard::of)
            .or_else(|| card_facts::arguments_card(&request.facts)),
        preview: None,
        request,
        answered: None,
        agent,
        asked_ms,
    }
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn header_line(p: &Pending, selected: bool, focused: bool, theme: &Theme) -> Line<'static> {
    let marker = if selected { "› " } else { "  " };
    let mut style = Style::new();
    if selected {
        style = style.add_modifier(Modifier::BOLD);
        if focused {
            style = theme.selected.add_modifier(Modifier::BOLD);
        }
    }
    let mut spans = vec![Span::styled(marker, style)];
    if let Some(agent) = &p.agent {
        spans.push(Span::styled(
            format!("[{}] ", one_line(&sanitize(&agent.label), 32)),
            theme.info,
        ));
    }
    spans.extend([
        Span::styled(format!("#{} ", p.request.id), style),
        Span::styled(sanitize(&p.request.tool), style),
        Span::styled(
            format!(" @ {}", one_line(&sanitize(&p.request.target), 60)),
            theme.dim,
        ),
    ]);
    if let Some(answer) = &p.answered {
        let label = if answer.is_approved() {
            " approved, waiting"
        } else {
            " denied, waiting"
        };
        spans.push(Span::styled(label, theme.dim));
    }
    Line::from(spans)
}

/// Detail of the selected request, grouped as (action, claims, why).
fn detail_lines(p: &Pending, width: usize, theme: &Theme) -> Vec<Vec<Line<'static>>> {
    let gate = &p.request.gate;
    let mut out = Vec::new();
    let action = sanitize(&gate.action);
    let mut action_lines: Vec<Line<'static>> = Vec::new();
    let wrapped = wrap(&action, width.saturating_sub(4).max(8));
    let more = wrapped.len() > ACTION_LINES;
    for (i, text) in wrapped.into_iter().take(ACTION_LINES).enumerate() {
        let label = if i == 0 { "  $ " } else { "    " };
        action_lines.push(Line::from(vec![
            Span::styled(label, theme.dim),
            Span::styled(text, theme.text.add_modifier(Modifier::BOLD)),
        ]));
    }
    if more {
        action_lines.push(Line::styled("    … (action continues)", theme.dim));
    }
    out.push(action_lines);
    out.push(card_facts::lines(&p.request, width, theme));

    let dim = theme.dim;
    let risk = vec![
        Span::styled("  vigil: ", dim),
        risk_span(Some(p.request.estimate), theme),
        Span::styled(" · model: ", dim),
        risk_span(gate.model_risk, theme),
    ];
    let flags = vec![
        Span::styled("mutation ", dim),
        yes_no(gate.mutation, theme),
        Span::styled(" · privesc ", dim),
        yes_no(gate.privesc, theme),
    ];
    // One line when it fits, else two: privesc must never be clipped.
    let mut one = risk.clone();
    one.push(Span::styled(" · ", dim));
    one.extend(flags.clone());
    let one = Line::from(one);
    if one.width() <= width {
        out.push(vec![one]);
    } else {
        let mut second = vec![Span::raw("  ")];
        second.extend(flags);
        out.push(vec![Line::from(risk), Line::from(second)]);
    }
    if !p.request.estimate_reason.is_empty() && p.request.estimate != Risk::Low {
        // Why vigil rates it so: the parse error, the flag not allowed…
        let text = sanitize(&p.request.estimate_reason);
        let wrapped = wrap(&text, width.saturating_sub(9).max(8));
        let lines = wrapped
            .into_iter()
            .take(2)
            .enumerate()
            .map(|(i, part)| {
                let label = if i == 0 { "  vigil: " } else { "         " };
                Line::from(vec![Span::styled(label, dim), Span::raw(part)])
            })
            .collect();
        out.push(lines);
    }
    if let Some(why) = &gate.why {
        let text = sanitize(why);
        let wrapped = wrap(&text, width.saturating_sub(7).max(8));
        let more = wrapped.len() > WHY_LINES;
        let mut lines = Vec::new();
        for (i, mut part) in wrapped.into_iter().take(WHY_LINES).enumerate() {
            if more && i + 1 == WHY_LINES {
                part.push('…');
            }
            let label = if i == 0 { "  why: " } else { "       " };
            lines.push(Line::from(vec![Span::styled(label, dim), Span::raw(part)]));
        }
        out.push(lines);
    }
    out.push(card_facts::note(width, theme));
    out
}

fn risk_span(risk: Option<Risk>, theme: &Theme) -> Span<'static> {
    match risk {
        Some(Risk::High) => Span::styled("high", theme.risk_high),
        Some(Risk::Medium) => Span::styled("medium", theme.risk_medium),
        Some(Risk::Low) => Span::styled("low", theme.risk_low),
        None => Span::styled("?", theme.dim),
    }
}

fn yes_no(v: Option<bool>, theme: &Theme) -> Span<'static> {
    match v {
        Some(true) => Span::styled("yes", theme.warn),
        Some(false) => Span::raw("no"),
        None => Span::styled("?", theme.dim),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_protocol::GateInfo;

    pub(crate) fn request(id: u64, action: &str) -> ApprovalRequest {
        ApprovalRequest {
            id,
            call_id: format!("call-{id}"),
            tool: "run_shell".into(),
            target: "local".into(),
            gate: GateInfo {
                action: action.into(),
                model_risk: Some(Risk::High),
                mutation: Some(true),
                privesc: Some(false),
                why: Some("clean up".into()),
                editable_field: Some("command".into()),
            },
            estimate: Risk::High,
            estimate_reason: String::new(),
            automatic: false,
            change: None,
            token: format!("token-{id}"),
            facts: Default::default(),
        }
    }

    #[test]
    fn answers_go_to_the_selected_request_once() {
        let mut p = ApprovalsPane::default();
        p.push(request(1, "rm a"));
        p.push(request(2, "rm b"));
        assert_eq!(p.selected().map(|s| s.request.id), Some(1));
        let answered = p.answer(Answer::ApproveOnce);
        assert_eq!(answered.map(|a| (a.agent, a.id)), Some((None, 1)));
        assert_eq!(p.selected().map(|s| s.request.id), Some(2));
        p.select_prev();
        assert_eq!(p.answer(Answer::Deny), None, "already answered");
        assert_eq!(p.unanswered(), 1);
        assert!(p.resolve(1).is_some());
        assert_eq!(p.selected().map(|s| s.request.id), Some(2));
        assert!(p.resolve(99).is_none());
        assert!(p.resolve(2).is_some());
        assert!(p.is_empty());
        assert_eq!(p.answer(Answer::Deny), None);
    }
}
