//! The agents overlay: every live agent (this console's marked), with its
//! state, the calls it waits on, its consoles, model, target and age; the
//! selection is where Enter switches to.
//!
//! It only renders the [`FleetView`] the fleet client last sent and moves
//! the selection ([`AgentsPicker`]); switching is the App's (it leaves the console with
//! `Leaving::Switch`). It never talks to an agent.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::pane::{Command, Ctx, Look, Outcome, OverlayAction, Pane};
use super::pane_block;
use crate::style::text::fit_line;
use crate::style::theme::Theme;
use vigil_protocol::fleet::{FleetAgent, FleetView, short_id};
use vigil_protocol::text::sanitize;
use vigil_protocol::wire::AgentState;

/// Draw the list with `selected` highlighted; `now_ms` dates the ages.
fn draw(
    frame: &mut Frame,
    area: Rect,
    view: &FleetView,
    selected: usize,
    now_ms: u64,
    theme: &Theme,
) {
    let title = format!("agents · {} running", view.agents.len());
    let block = pane_block(title, true, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines = vec![Line::styled(
        "* this console's agent · Enter switches to the selected one (it keeps working)",
        theme.dim,
    )];
    if view.agents.is_empty() {
        lines.push(Line::styled("looking for agents…", theme.dim));
    }
    for (i, a) in view.agents.iter().enumerate() {
        lines.push(fit_line(row(a, i == selected, now_ms, theme), width));
    }
    let skip = (selected + 2).saturating_sub(inner.height as usize);
    let visible: Vec<Line<'static>> = lines.into_iter().skip(skip).collect();
    frame.render_widget(Paragraph::new(visible), inner);
}

/// The open overlay: the fleet as last seen and the selected row.
#[derive(Debug, Clone, Copy)]
pub struct AgentsPicker<'a> {
    pub fleet: &'a FleetView,
    pub selected: usize,
    /// Now, in Unix milliseconds (dates the ages).
    pub now_ms: u64,
}

impl Pane for AgentsPicker<'_> {
    type Action = OverlayAction;

    /// The arrows select, Enter switches, any other key closes.
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome<OverlayAction> {
        let last = self.fleet.agents.len().saturating_sub(1);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.selected = (self.selected + 1).min(last),
            KeyCode::Enter => return Outcome::Action(OverlayAction::Switch(self.selected)),
            _ => return Outcome::Action(OverlayAction::Close),
        }
        Outcome::Consumed
    }

    fn commands(&self, _ctx: &Ctx) -> Vec<Command> {
        vec![Command::note(
            "↑↓ select · Enter switch to it (this agent keeps working) · Esc close",
        )]
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        draw(
            frame,
            area,
            self.fleet,
            self.selected,
            self.now_ms,
            look.theme,
        );
    }
}

fn row(a: &FleetAgent, selected: bool, now_ms: u64, theme: &Theme) -> Line<'static> {
    let info = &a.info;
    let style = if selected { theme.selected } else { theme.text };
    let state = match info.state {
        AgentState::Idle => theme.dim,
        AgentState::Working => theme.running,
        AgentState::Waiting => theme.warn,
    };
    let waiting = match info.pending_approvals {
        0 => "no approvals".to_string(),
        1 => "1 approval".to_string(),
        n => format!("{n} approvals"),
    };
    let consoles = match info.consoles {
        1 => "1 console".to_string(),
        n => format!("{n} consoles"),
    };
    Line::from(vec![
        Span::styled(if selected { "› " } else { "  " }, style),
        Span::styled(if a.this { "* " } else { "  " }, theme.info),
        Span::styled(format!("{:<6} ", short_id(&info.id)), style),
        Span::styled(format!("{:<8} ", info.state.as_str()), state),
        Span::styled(format!("{waiting:<13} "), theme.text),
        Span::styled(format!("{consoles:<11} "), theme.dim),
        Span::styled(
            format!("{:>4}  ", age(now_ms.saturating_sub(info.started_ms))),
            theme.dim,
        ),
        Span::styled(format!("{} ", sanitize(&info.model)), theme.text),
        Span::styled(format!("@ {}", sanitize(&info.target)), theme.dim),
    ])
}

/// `42s`, `5m`, `3h`, `2d`.
fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}
