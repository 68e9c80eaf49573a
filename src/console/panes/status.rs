//! The status bar: model, target, the running turn with its elapsed seconds,
//! and how many approvals wait (visible even when the queue pane is small).
//!
//! It only renders; time comes from the App's clock so rendering is
//! deterministic in tests.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::console::text::{one_line, sanitize};

#[derive(Debug, Default)]
pub struct StatusBar {
    pub model: Option<String>,
    pub target: Option<String>,
    pub demo: bool,
    /// When the running turn started; `None` when idle.
    pub turn_started: Option<Instant>,
}

impl StatusBar {
    pub fn session(&mut self, model: &str, target: &str, demo: bool) {
        self.model = Some(one_line(&sanitize(model), 40));
        self.target = Some(one_line(&sanitize(target), 40));
        self.demo = demo;
    }

    pub fn is_running(&self) -> bool {
        self.turn_started.is_some()
    }

    pub fn elapsed_secs(&self, now: Instant) -> Option<u64> {
        self.turn_started
            .map(|t| now.saturating_duration_since(t).as_secs())
    }

    pub fn render(&self, frame: &mut Frame, area: Rect, now: Instant, pending: usize) {
        let bar = Style::new().bg(Color::DarkGray).fg(Color::White);
        let mut spans = vec![Span::styled(" vigil ", bar.add_modifier(Modifier::BOLD))];
        let model = self.model.as_deref().unwrap_or("connecting…");
        spans.push(Span::styled(format!("│ {model} "), bar));
        if self.demo {
            spans.push(Span::styled("(demo) ", bar.fg(Color::Yellow)));
        }
        if let Some(target) = &self.target {
            spans.push(Span::styled(format!("│ on {target} "), bar));
        }
        match self.elapsed_secs(now) {
            Some(secs) => spans.push(Span::styled(
                format!("│ ● running {secs}s "),
                bar.fg(Color::LightCyan),
            )),
            None => spans.push(Span::styled("│ idle ", bar)),
        }
        if pending > 0 {
            let s = if pending == 1 { "" } else { "s" };
            spans.push(Span::styled(
                format!("│ {pending} approval{s} pending "),
                bar.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)).style(bar), area);
    }
}
