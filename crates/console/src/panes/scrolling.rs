//! The keys and footer of the panes that scroll a line list: the
//! conversation and the tools pane. Both scroll the same way and offer the
//! same global keys; their drawing stays in their own files.
//!
//! It only moves a [`Scroll`]; everything else is returned to the App.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;

use super::Scroll;
use super::conversation::ConversationPane;
use super::pane::{Command, Ctx, Look, Outcome, Pane, PaneAction, bound, chorded, claim};
use super::tools::ToolsPane;
use crate::keys::Action;

/// The global keys the conversation and tools panes offer.
const SCROLLING_OFFERS: [Action; 6] = [
    Action::NextPane,
    Action::Zoom,
    Action::History,
    Action::Copy,
    Action::FocusInput,
    Action::Agents,
];

/// Keys of a pane that scrolls a line list (conversation, tools).
fn scrolling_key(scroll: &mut Scroll, key: &KeyEvent, ctx: &Ctx) -> Outcome<PaneAction> {
    if bound(key, ctx) == Some(Action::Follow) {
        scroll.end();
        return Outcome::Consumed;
    }
    if let Some(out) = claim(key, ctx, &SCROLLING_OFFERS) {
        return out;
    }
    if chorded(key) {
        return Outcome::Ignored;
    }
    if key.code == KeyCode::Enter {
        return Outcome::Action(PaneAction::Bound(Action::FocusInput));
    }
    if scroll.apply_key(key.code) {
        Outcome::Consumed
    } else {
        Outcome::Ignored
    }
}

/// The footer of a pane that scrolls a line list.
fn scrolling_commands(ctx: &Ctx) -> Vec<Command> {
    let mut c = Vec::new();
    if ctx.pending > 0 {
        c.push(Command::bound(ctx, Action::NextPane, "approvals"));
    }
    c.push(Command::new("PgUp/PgDn", "scroll"));
    c.push(Command::bound(ctx, Action::Follow, "follow"));
    c.push(Command::bound(ctx, Action::Zoom, "zoom"));
    c.push(Command::bound(ctx, Action::History, "history"));
    c.push(Command::bound(ctx, Action::Copy, "copy command"));
    c.push(Command::bound(ctx, Action::FocusInput, "message"));
    if ctx.others() {
        c.push(Command::bound(ctx, Action::Agents, "agents"));
    }
    c
}

impl Pane for ConversationPane {
    type Action = PaneAction;

    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome<PaneAction> {
        scrolling_key(&mut self.scroll, key, ctx)
    }

    fn commands(&self, ctx: &Ctx) -> Vec<Command> {
        scrolling_commands(ctx)
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        self.draw(frame, area, look.focused, look.theme);
    }
}

impl Pane for ToolsPane {
    type Action = PaneAction;

    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome<PaneAction> {
        scrolling_key(&mut self.scroll, key, ctx)
    }

    fn commands(&self, ctx: &Ctx) -> Vec<Command> {
        scrolling_commands(ctx)
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        self.draw(frame, area, look.focused, look.theme);
    }
}
