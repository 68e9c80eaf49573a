//! The status bar: model, target, the approval policy in force, the running
//! turn with its elapsed seconds, and how many approvals wait (visible even
//! when the queue pane is hidden or zoomed away).
//!
//! It only renders ([`StatusLine`]: the bar as of the App's clock, so
//! rendering is deterministic in tests); it takes no key.

use std::time::Instant;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::pane::{Command, Ctx, Look, Outcome, Pane};
use crate::style::text::one_line;
use crate::style::theme::Theme;
use vigil_protocol::ApprovalPolicy;
use vigil_protocol::text::sanitize;

#[derive(Debug, Default)]
pub struct StatusBar {
    pub model: Option<String>,
    pub target: Option<String>,
    pub demo: bool,
    /// When the running turn started; `None` when idle.
    pub turn_started: Option<Instant>,
    /// The policy last sent to the agent (None: not known).
    pub policy: Option<ApprovalPolicy>,
    /// When a timed "approve all" ends.
    pub policy_until: Option<Instant>,
    /// The recorded session's id (for `vigil resume ID`).
    pub session_id: Option<String>,
    /// Estimated context use, in tokens: (used, limit).
    pub context: Option<(u64, u64)>,
    /// The latest notice about the target (connection re-established, no
    /// tmux there), until the next one.
    pub target_note: Option<String>,
    /// A read-only console (`vigil attach --watch`).
    pub read_only: bool,
}

/// A short label for a policy.
pub fn policy_label(policy: ApprovalPolicy) -> String {
    match policy {
        ApprovalPolicy::Ask => "ask".into(),
        ApprovalPolicy::AutoApproveLow => "auto-approve low".into(),
        ApprovalPolicy::ByEffect => "by effect".into(),
        ApprovalPolicy::ApproveAll => "APPROVE ALL".into(),
        ApprovalPolicy::DenyAll => "deny all".into(),
        ApprovalPolicy::ApproveAllFor { minutes } => format!("approve all {minutes}m"),
    }
}

impl StatusBar {
    pub fn session(&mut self, model: &str, target: &str, demo: bool) {
        self.model = Some(one_line(&sanitize(model), 40));
        self.target = Some(one_line(&sanitize(target), 40));
        self.demo = demo;
    }

    /// Remember the latest notice about the target.
    pub fn target_notice(&mut self, text: &str) {
        self.target_note = Some(one_line(&sanitize(text), 60));
    }

    /// Context use as a whole percentage of the limit.
    pub fn context_percent(&self) -> Option<u64> {
        let (used, limit) = self.context?;
        (limit > 0).then(|| used.saturating_mul(100) / limit)
    }

    pub fn is_running(&self) -> bool {
        self.turn_started.is_some()
    }

    pub fn elapsed_secs(&self, now: Instant) -> Option<u64> {
        self.turn_started
            .map(|t| now.saturating_duration_since(t).as_secs())
    }

    /// Whole minutes (rounded up) left on a timed policy.
    pub fn policy_minutes_left(&self, now: Instant) -> Option<u64> {
        self.policy_until
            .map(|u| u.saturating_duration_since(now).as_secs().div_ceil(60))
    }

    /// The policy label as shown now (a timed policy counts down, then
    /// reads "ask").
    pub fn policy_text(&self, now: Instant) -> Option<String> {
        let policy = self.policy?;
        Some(match (policy, self.policy_minutes_left(now)) {
            (ApprovalPolicy::ApproveAllFor { .. }, Some(0)) => "ask".into(),
            (ApprovalPolicy::ApproveAllFor { .. }, Some(m)) => format!("approve all, {m}m left"),
            (p, _) => policy_label(p),
        })
    }

    fn draw(&self, frame: &mut Frame, area: Rect, now: Instant, pending: usize, theme: &Theme) {
        let bar = theme.status_bar;
        let mut spans = vec![Span::styled(" vigil ", bar.add_modifier(Modifier::BOLD))];
        if self.read_only {
            spans.push(Span::styled("│ watching: read-only ", theme.status_alert));
        }
        let model = self.model.as_deref().unwrap_or("connecting…");
        spans.push(Span::styled(format!("│ {model} "), bar));
        if self.demo {
            spans.push(Span::styled("(demo) ", theme.status_accent));
        }
        if let Some(target) = &self.target {
            spans.push(Span::styled(format!("│ on {target} "), bar));
        }
        if let Some(pct) = self.context_percent() {
            let style = if pct >= 80 { theme.status_alert } else { bar };
            spans.push(Span::styled(format!("│ ctx {pct}% "), style));
        }
        if let Some(policy) = self.policy_text(now) {
            let style = match self.policy {
                Some(
                    ApprovalPolicy::Ask | ApprovalPolicy::AutoApproveLow | ApprovalPolicy::ByEffect,
                )
                | None => bar,
                _ if policy == "ask" => bar,
                _ => theme.status_alert,
            };
            spans.push(Span::styled(format!("│ policy: {policy} "), style));
        }
        // While approvals wait, the agent is not working: it waits for
        // the operator, and the bar says so instead of "running".
        match self.elapsed_secs(now) {
            Some(_) if pending > 0 => {}
            Some(secs) => spans.push(Span::styled(
                format!("│ ● running {secs}s "),
                theme.status_accent,
            )),
            None => spans.push(Span::styled("│ idle ", bar)),
        }
        if pending > 0 {
            let s = if pending == 1 { "" } else { "s" };
            spans.push(Span::styled(
                format!("│ ◆ waiting for you: {pending} approval{s} "),
                theme.status_alert,
            ));
        }
        if let Some(note) = &self.target_note {
            spans.push(Span::styled(format!("│ ⚠ {note} "), theme.status_alert));
        }
        if let Some(id) = &self.session_id {
            spans.push(Span::styled(
                format!("│ session {} ", one_line(id, 24)),
                bar,
            ));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)).style(bar), area);
    }
}

/// The status bar as drawn now: `now` from the App's clock, `pending`
/// approvals waiting.
#[derive(Debug, Clone, Copy)]
pub struct StatusLine<'a> {
    pub bar: &'a StatusBar,
    pub now: Instant,
    pub pending: usize,
}

impl Pane for StatusLine<'_> {
    type Action = ();

    /// The status bar takes no key.
    fn handle_key(&mut self, _key: &KeyEvent, _ctx: &Ctx) -> Outcome<()> {
        Outcome::Ignored
    }

    fn commands(&self, _ctx: &Ctx) -> Vec<Command> {
        Vec::new()
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        self.bar
            .draw(frame, area, self.now, self.pending, look.theme);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timed_policy_counts_down_then_reads_ask() {
        let now = Instant::now();
        let bar = StatusBar {
            policy: Some(ApprovalPolicy::ApproveAllFor { minutes: 10 }),
            policy_until: Some(now + Duration::from_secs(570)),
            ..Default::default()
        };
        assert_eq!(
            bar.policy_text(now).as_deref(),
            Some("approve all, 10m left")
        );
        let later = now + Duration::from_secs(600);
        assert_eq!(bar.policy_text(later).as_deref(), Some("ask"));
    }

    #[test]
    fn a_target_notice_shows_in_the_bar_until_the_next() {
        use ratatui::backend::TestBackend;
        use vigil_protocol::AgentEvent;
        let mut app = crate::app::App::new(Instant::now());
        app.on_agent_event(AgentEvent::SessionStarted {
            model: "m".into(),
            target: "tmux vigil-agent (ssh u@h:22)".into(),
            demo: false,
            mirror: None,
            tools: vec![],
        });
        let bar = |app: &crate::app::App| {
            let mut t = ratatui::Terminal::new(TestBackend::new(160, 1)).unwrap();
            t.draw(|f| {
                app.status
                    .draw(f, f.area(), Instant::now(), 0, &Theme::default())
            })
            .unwrap();
            let b = t.backend().buffer();
            (0..b.area.width)
                .map(|x| b[(x, 0)].symbol().to_string())
                .collect::<String>()
        };
        assert!(!bar(&app).contains('⚠'), "{}", bar(&app));
        app.on_agent_event(AgentEvent::TargetNotice {
            text: "the ssh connection to u@h:22 had gone away; it was re-established".into(),
        });
        let shown = bar(&app);
        assert!(
            shown.contains(
                "on tmux vigil-agent (ssh u@h:22) │ idle │ ⚠ the ssh connection to u@h:22"
            ),
            "{shown}"
        );
        app.on_agent_event(AgentEvent::TargetNotice {
            text: "tmux\x1b[31m is not\navailable".into(),
        });
        let shown = bar(&app);
        assert!(!shown.contains("re-established"), "{shown}");
        assert!(shown.contains("⚠ tmux"), "{shown}");
        assert!(!shown.contains('\x1b'), "{shown}");
    }

    #[test]
    fn context_gauge_is_a_percentage_of_the_limit() {
        let mut bar = StatusBar::default();
        assert_eq!(bar.context_percent(), None);
        bar.context = Some((2_600, 32_768));
        assert_eq!(bar.context_percent(), Some(7));
        bar.context = Some((10, 0));
        assert_eq!(bar.context_percent(), None);
    }
}
