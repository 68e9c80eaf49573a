//! The approvals pane's keys and footer: the approval keys answer the
//! selected card (the App sends the answer), the arrows select a request,
//! PgUp/PgDn and J/K scroll a write's diff, Enter opens the preview.
//!
//! Approval keys act only here, the pane the operator moved to: outside it
//! they fall through to the global keys, which refuse them.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;

use super::approvals::ApprovalsPane;
use super::pane::{Command, Ctx, Look, Outcome, Pane, PaneAction, bound, chorded};
use crate::keys::{Action, Scope};

/// Rows PageUp/PageDown move a diff card.
const DIFF_PAGE: isize = 6;

/// The global keys the pane offers beside the approval keys.
const OFFERS: [Action; 3] = [Action::Policy, Action::Rules, Action::FocusInput];

impl Pane for ApprovalsPane {
    type Action = PaneAction;

    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome<PaneAction> {
        match bound(key, ctx) {
            Some(a) if a.scope() == Scope::Approvals || OFFERS.contains(&a) => {
                return Outcome::Action(PaneAction::Bound(a));
            }
            Some(_) => return Outcome::Ignored,
            None => {}
        }
        if chorded(key) {
            return Outcome::Ignored;
        }
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.select_prev(),
            KeyCode::Down | KeyCode::Char('j') => self.select_next(),
            KeyCode::PageDown | KeyCode::Char('J') => {
                self.scroll_diff(DIFF_PAGE);
            }
            KeyCode::PageUp | KeyCode::Char('K') => {
                self.scroll_diff(-DIFF_PAGE);
            }
            KeyCode::Home => {
                self.scroll_diff(isize::MIN / 2);
            }
            KeyCode::End => {
                self.scroll_diff(isize::MAX / 2);
            }
            KeyCode::Enter => return Outcome::Action(PaneAction::OpenPreview),
            _ => return Outcome::Ignored,
        }
        Outcome::Consumed
    }

    fn commands(&self, ctx: &Ctx) -> Vec<Command> {
        if ctx.pending == 0 {
            return vec![
                Command::note("no pending approvals"),
                Command::bound(ctx, Action::Policy, "policy"),
                Command::bound(ctx, Action::Rules, "rules"),
                Command::bound(ctx, Action::FocusInput, "message"),
            ];
        }
        vec![
            Command::bound(ctx, Action::Approve, "once"),
            Command::bound(ctx, Action::ApproveSession, "session"),
            Command::bound(ctx, Action::Deny, "deny"),
            Command::bound(ctx, Action::DenyReason, "deny+why"),
            Command::bound(ctx, Action::Edit, "edit"),
            Command::new("↑↓", "select"),
            Command::bound(ctx, Action::Policy, "policy"),
        ]
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        self.draw(frame, area, look.focused, look.theme);
    }
}
