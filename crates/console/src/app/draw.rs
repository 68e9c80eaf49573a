//! Drawing the [`App`]: the layout (status bar, panes, footer), zoom, the
//! history view and the overlays. Drawing reads state and never changes it,
//! apart from remembering where each pane went (for mouse clicks).
//!
//! Layout at any size ≥ 80×24: conversation and input on the left; tools,
//! approvals and the tmux mirror on the right. Smaller terminals get the
//! focused pane alone. Whenever the approvals pane is not drawn (small
//! terminal, another pane zoomed) a waiting approval keeps a one-line
//! banner at the top.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::app::{App, Focus, Overlay, PaneRects};
use crate::panes::footer;
use crate::panes::pane::{Look, Pane, PaneAction};
use crate::panes::status::StatusLine;

/// Below this size the focused pane is shown alone.
const MIN_SPLIT: (u16, u16) = (60, 16);

impl App {
    pub fn draw(&self, frame: &mut Frame) {
        let theme = self.theme();
        let [status, body, foot] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(0),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let pending = self.approvals.unanswered();
        // Set again when the pane draws the selected card.
        self.approvals.hide();
        let look = |focused| Look {
            theme,
            keys: &self.keys,
            focused,
        };
        let bar = StatusLine {
            bar: &self.status,
            now: self.now,
            pending,
        };
        bar.render(frame, status, &look(false));
        let covered = !matches!(self.overlay, Overlay::None | Overlay::Help(_));
        if covered {
            self.rects.set(PaneRects::default());
        }
        match &self.overlay {
            Overlay::History { viewer: Some(v) } => v.render(frame, body, &look(true)),
            Overlay::History { viewer: None } => self.history.render(frame, body, &look(true)),
            Overlay::Rules => self.rules.render(frame, body, &look(true)),
            Overlay::Agents { selected } => {
                self.fleet_picker(*selected)
                    .render(frame, body, &look(true));
            }
            Overlay::Help(_) | Overlay::None => self.draw_panes(frame, body),
        }
        if let Overlay::Help(help) = &self.overlay {
            help.render(frame, body, &look(true));
        }
        if let Some(m) = &self.modal {
            m.render(frame, body, &look(true));
        }
        if let Some(ask) = &self.leaving {
            ask.render(frame, body, &look(true));
        }
        if let Some(ask) = &self.quit_ask {
            ask.render(frame, body, &look(true));
        }
        match &self.flash {
            Some(msg) => {
                let line = Line::from(vec![Span::styled(msg.clone(), theme.notice)]);
                frame.render_widget(Paragraph::new(line), foot);
            }
            None => footer::render(frame, foot, &self.footer_commands(), theme),
        }
    }

    fn draw_panes(&self, frame: &mut Frame, body: Rect) {
        let theme = self.theme();
        let small = body.width < MIN_SPLIT.0 || body.height < MIN_SPLIT.1;
        let only = match (self.zoom, small) {
            (Some(z), _) => Some(z),
            (None, true) => Some(self.focus),
            (None, false) => None,
        };
        // A pane shown alone that is not the queue: a waiting approval
        // keeps one line at the top, at any size.
        let body = match only {
            Some(pane) if pane != Focus::Approvals && self.approvals.unanswered() > 0 => {
                let [banner, rest] =
                    Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(body);
                let key = self.keys.label(crate::keys::Action::NextPane);
                let line = crate::panes::banner::approvals(
                    self.approvals.unanswered(),
                    self.approvals.oldest_open(),
                    &key,
                    banner.width,
                    theme,
                );
                frame.render_widget(line, banner);
                rest
            }
            _ => body,
        };
        let mut rects = PaneRects::default();
        if let Some(pane) = only {
            match pane {
                Focus::Conversation | Focus::Input => {
                    let [c, i] = Layout::vertical([
                        Constraint::Min(3),
                        Constraint::Length(self.input.desired_height()),
                    ])
                    .areas(body);
                    rects.conversation = c;
                    rects.input = i;
                }
                Focus::Tools => rects.tools = body,
                Focus::Approvals => rects.approvals = body,
                Focus::Mirror => rects.mirror = body,
            }
        } else {
            let [left, right] =
                Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                    .areas(body);
            let [conversation, input] = Layout::vertical([
                Constraint::Min(3),
                Constraint::Length(self.input.desired_height()),
            ])
            .areas(left);
            let mirror_h = (body.height / 4).clamp(3, 10);
            let [tools, approvals, mirror] = Layout::vertical([
                Constraint::Min(3),
                Constraint::Length(self.approvals.desired_height(right.width)),
                Constraint::Length(mirror_h),
            ])
            .areas(right);
            rects = PaneRects {
                conversation,
                tools,
                approvals,
                mirror,
                input,
            };
        }
        self.rects.set(rects);
        let f = self.focus;
        let look = |focused| Look {
            theme,
            keys: &self.keys,
            focused,
        };
        let panes: [(Rect, &dyn Pane<Action = PaneAction>, Focus); 5] = [
            (rects.conversation, &self.conversation, Focus::Conversation),
            (rects.input, &self.input, Focus::Input),
            (rects.tools, &self.tools, Focus::Tools),
            (rects.approvals, &self.approvals, Focus::Approvals),
            (rects.mirror, &self.mirror, Focus::Mirror),
        ];
        for (rect, pane, which) in panes {
            if rect.width > 0 && rect.height > 0 {
                pane.render(frame, rect, &look(f == which));
            }
        }
    }
}
