//! The standing-approvals view: every rule the operator approved for the
//! session (exact actions and word prefixes), with a selection the operator
//! can revoke.
//!
//! It only keeps the list the agent last reported
//! ([`AgentEvent::SessionRules`](vigil_protocol::AgentEvent::SessionRules)), or
//! the rules a resumed session's log holds, which approve nothing until the
//! operator keeps them, and renders it; revoking, keeping and discarding are
//! commands the App sends. It never changes a rule by itself.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::pane::{Command, Ctx, Look, Outcome, OverlayAction, Pane};
use super::pane_block;
use crate::keys::Action;
use crate::style::text::{fit_line, plural};
use crate::style::theme::Theme;
use vigil_protocol::text::sanitize;

/// One standing rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub tool: String,
    pub rule: String,
    /// A word prefix (true) or the exact action (false).
    pub prefix: bool,
}

impl Rule {
    /// How the rule reads: `ls -la` exactly, `git status …` as a prefix.
    pub fn shown(&self) -> String {
        if self.prefix {
            format!("{} …", self.rule)
        } else {
            self.rule.clone()
        }
    }
}

#[derive(Debug, Default)]
pub struct RulesView {
    rules: Vec<Rule>,
    selected: usize,
    /// The rules are the ones read back from a resumed session's log, held
    /// by the agent until the operator keeps or discards them.
    held: bool,
}

impl RulesView {
    /// Replace the list with what the agent reports in force.
    pub fn set(&mut self, exact: Vec<(String, String)>, prefixes: Vec<(String, String)>) {
        self.held = false;
        let exact = exact.into_iter().map(|(tool, rule)| Rule {
            tool,
            rule,
            prefix: false,
        });
        let prefixes = prefixes.into_iter().map(|(tool, rule)| Rule {
            tool,
            rule,
            prefix: true,
        });
        self.rules = prefixes.chain(exact).collect();
        self.selected = self.selected.min(self.rules.len().saturating_sub(1));
    }

    /// Show the rules a resumed session's log holds: they approve nothing
    /// until the operator keeps them.
    pub fn hold(&mut self, exact: Vec<(String, String)>, prefixes: Vec<(String, String)>) {
        self.set(exact, prefixes);
        self.held = true;
    }

    /// Whether the list is the held rules of a resumed session.
    pub fn is_held(&self) -> bool {
        self.held
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn selected(&self) -> Option<&Rule> {
        self.rules.get(self.selected)
    }

    pub fn select_next(&mut self) {
        if self.selected + 1 < self.rules.len() {
            self.selected += 1;
        }
    }

    pub fn select_prev(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let title = if self.held {
            format!(
                "session rules restored from the log · {}",
                plural(self.rules.len(), "rule")
            )
        } else {
            format!(
                "standing approvals · {} this session",
                plural(self.rules.len(), "rule")
            )
        };
        let block = pane_block(title, true, theme);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let width = inner.width as usize;
        let mut lines = if self.held {
            vec![
                Line::styled(
                    "Read back from the session's log, which anyone with access can append to.",
                    theme.notice,
                ),
                Line::styled(
                    "They approve nothing until you keep them: y keep · n discard",
                    theme.notice,
                ),
            ]
        } else {
            vec![Line::styled(
                "Calls these rules cover run without asking, in the kernel sandbox (a prefix \
                 never covers a command vigil rates high, nor one that chains).",
                theme.dim,
            )]
        };
        if self.rules.is_empty() {
            lines.push(Line::styled(
                "no session rules: `a` on an approval adds one",
                theme.dim,
            ));
        }
        for (i, r) in self.rules.iter().enumerate() {
            let selected = i == self.selected;
            let style = if selected { theme.selected } else { theme.text };
            let kind = if r.prefix { "prefix" } else { "exact " };
            let line = Line::from(vec![
                Span::styled(if selected { "› " } else { "  " }, style),
                Span::styled(format!("{kind} "), theme.dim),
                Span::styled(format!("{} ", sanitize(&r.tool)), theme.dim),
                Span::styled(sanitize(&r.shown()), style),
            ]);
            lines.push(fit_line(line, width));
        }
        let height = inner.height as usize;
        let head = if self.held { 3 } else { 2 };
        let skip = (self.selected + head).saturating_sub(height);
        let visible: Vec<Line<'static>> = lines.into_iter().skip(skip).collect();
        frame.render_widget(Paragraph::new(visible), inner);
    }
}

impl Pane for RulesView {
    type Action = OverlayAction;

    /// The view takes every key while it is open; rules read back from the
    /// log are kept (`y`) or discarded (`n`) first.
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome<OverlayAction> {
        if self.is_held() {
            match key.code {
                KeyCode::Char('y') => return Outcome::Action(OverlayAction::Keep(true)),
                KeyCode::Char('n') => return Outcome::Action(OverlayAction::Keep(false)),
                _ => {}
            }
        }
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.select_prev(),
            KeyCode::Down | KeyCode::Char('j') => self.select_next(),
            KeyCode::Char('d') | KeyCode::Delete if self.selected().is_some() => {
                return Outcome::Action(OverlayAction::Revoke);
            }
            KeyCode::Char('d') | KeyCode::Delete => {}
            _ => {
                if let Some(Action::Back | Action::Rules | Action::Quit) = ctx.global(key) {
                    return Outcome::Action(OverlayAction::Close);
                }
            }
        }
        Outcome::Consumed
    }

    fn commands(&self, ctx: &Ctx) -> Vec<Command> {
        vec![
            Command::new("↑↓", "select"),
            Command::new("d", "revoke"),
            Command::bound(ctx, Action::Back, "close"),
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
    fn prefixes_come_first_and_the_selection_stays_in_range() {
        let mut v = RulesView::default();
        v.set(
            vec![("run_shell".into(), "make".into())],
            vec![("run_shell".into(), "git status".into())],
        );
        assert_eq!(
            v.selected().map(Rule::shown).as_deref(),
            Some("git status …")
        );
        v.select_next();
        v.select_next();
        assert_eq!(v.selected().map(Rule::shown).as_deref(), Some("make"));
        v.set(vec![], vec![("run_shell".into(), "ls".into())]);
        assert_eq!(v.selected().map(|r| r.prefix), Some(true));
        v.set(vec![], vec![]);
        assert!(v.selected().is_none());
    }

    #[test]
    fn held_rules_stay_held_until_the_agent_reports_rules_in_force() {
        let mut v = RulesView::default();
        v.hold(vec![], vec![("run_shell".into(), "touch".into())]);
        assert!(v.is_held());
        assert_eq!(v.rules().len(), 1);
        v.set(vec![], vec![("run_shell".into(), "touch".into())]);
        assert!(!v.is_held());
    }
}
