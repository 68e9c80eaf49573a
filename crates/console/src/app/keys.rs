//! The layer stack: where every key goes. This file only routes; what a
//! layer's action does is in `actions`, the layers themselves are panes
//! (each implements [`Pane`]).
//!
//! A key meets the layers top first and stops at the first that does not
//! ignore it ([`App::layers`]):
//!
//! 1. passthrough, while the operator types into the mirrored pane: every
//!    key goes there, Ctrl-C included;
//! 2. Ctrl-C, which always leaves (an attached console detaches, an
//!    in-process one quits keeping remote sessions);
//! 3. the detach / stop question, the keep/remove question, an open modal:
//!    each takes every key;
//! 4. the open overlay (help, history list, full-output viewer, rules,
//!    agents): takes every key;
//! 5. a watcher's keys that would act on the agent, refused;
//! 6. the focused pane: its own keys and the bound keys its footer offers
//!    (the message box keeps every typed character, so approval keys never
//!    act while the operator types);
//! 7. the global keys: every other bound key. An approval key reaches it
//!    only outside the approvals pane and answers nothing there.
//!
//! Approval keys answer only in the approvals pane, which focus reaches
//! only by the operator's own key or click (never when a call arrives),
//! and only the card the last frame showed selected. Esc only ever goes
//! back; cancelling the turn is its own key, pressed twice.

use crossterm::event::{KeyEvent, KeyEventKind};

use crate::app::{App, Focus, Overlay};
use crate::keys::is_interrupt;
use crate::panes::agents::AgentsPicker;
use crate::panes::pane::{Command, Ctx, GlobalKeys, Outcome, Pane, PaneAction};
use vigil_protocol::AgentCommand;

/// One layer of the stack, top first (the order of the variants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    Passthrough,
    Interrupt,
    QuitAsk,
    LeaveAsk,
    Modal,
    Overlay,
    ReadOnly,
    Focused,
    Global,
}

impl App {
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<AgentCommand> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.flash = None;
        let out = self.route_key(key);
        self.read_only_filter(out)
    }

    /// The layers a key meets now, top first.
    pub fn layers(&self) -> Vec<Layer> {
        let open = [
            (self.mirror.typing(), Layer::Passthrough),
            (true, Layer::Interrupt),
            (self.quit_ask.is_some(), Layer::QuitAsk),
            (self.leaving.is_some(), Layer::LeaveAsk),
            (self.modal.is_some(), Layer::Modal),
            (!matches!(self.overlay, Overlay::None), Layer::Overlay),
            (self.read_only, Layer::ReadOnly),
            (true, Layer::Focused),
            (true, Layer::Global),
        ];
        open.into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, l)| l)
            .collect()
    }

    /// What every layer may know about the console.
    pub(crate) fn ctx(&self) -> Ctx {
        Ctx {
            keys: self.keys.clone(),
            focus: self.focus,
            running: self.status.is_running(),
            pending: self.approvals.unanswered(),
            attached: self.attached,
            agents: self.fleet.agents.len(),
        }
    }

    fn route_key(&mut self, key: KeyEvent) -> Vec<AgentCommand> {
        let ctx = self.ctx();
        let mut confirming = None;
        for layer in self.layers() {
            // Any key that gets past the modals ends the cancel question.
            if layer >= Layer::Overlay && confirming.is_none() {
                confirming = Some(std::mem::take(&mut self.confirm_cancel));
            }
            let confirming = confirming.unwrap_or(false);
            if let Some(out) = self.offer(layer, &key, &ctx, confirming) {
                return out;
            }
        }
        Vec::new()
    }

    /// Offer the key to one layer; `None` when it ignored it.
    fn offer(
        &mut self,
        layer: Layer,
        key: &KeyEvent,
        ctx: &Ctx,
        confirming: bool,
    ) -> Option<Vec<AgentCommand>> {
        match layer {
            Layer::Passthrough => {
                let out = self.mirror.passthrough.handle_key(key, ctx);
                self.settle(out, |_, keys| vec![AgentCommand::PaneKeys { keys }])
            }
            Layer::Interrupt => is_interrupt(key).then(|| self.interrupt()),
            Layer::QuitAsk => {
                let out = self.quit_ask.as_mut()?.handle_key(key, ctx);
                self.settle(out, App::on_quit_answer)
            }
            Layer::LeaveAsk => {
                let out = self.leaving.as_mut()?.handle_key(key, ctx);
                self.settle(out, App::on_leave_answer)
            }
            Layer::Modal => {
                let out = self.modal.as_mut()?.handle_key(key, ctx);
                self.settle(out, App::on_modal_answer)
            }
            Layer::Overlay => self.offer_overlay(key, ctx),
            Layer::ReadOnly => self.refuse_read_only(key, ctx).then(Vec::new),
            Layer::Focused => {
                let out = self.focused_pane_mut().handle_key(key, ctx);
                self.settle(out, |app, a| app.on_pane_action(a, confirming))
            }
            Layer::Global => {
                let out = GlobalKeys.handle_key(key, ctx);
                self.settle(out, |app, a| app.on_pane_action(a, confirming))
            }
        }
    }

    fn offer_overlay(&mut self, key: &KeyEvent, ctx: &Ctx) -> Option<Vec<AgentCommand>> {
        let out = match &mut self.overlay {
            Overlay::None => return None,
            Overlay::Help(help) => help.handle_key(key, ctx),
            Overlay::History { viewer: Some(v) } => v.handle_key(key, ctx),
            Overlay::History { viewer: None } => self.history.handle_key(key, ctx),
            Overlay::Rules => self.rules.handle_key(key, ctx),
            Overlay::Agents { selected } => {
                let mut picker = AgentsPicker {
                    fleet: &self.fleet,
                    selected: *selected,
                    now_ms: self.fleet_now_ms,
                };
                let out = picker.handle_key(key, ctx);
                *selected = picker.selected;
                out
            }
        };
        self.settle(out, App::on_overlay_action)
    }

    /// Turn a layer's outcome into what the key sends.
    fn settle<A>(
        &mut self,
        out: Outcome<A>,
        then: impl FnOnce(&mut App, A) -> Vec<AgentCommand>,
    ) -> Option<Vec<AgentCommand>> {
        match out {
            Outcome::Ignored => None,
            Outcome::Consumed => Some(Vec::new()),
            Outcome::Action(a) => Some(then(self, a)),
        }
    }

    /// The agents overlay over the fleet as last seen.
    pub(crate) fn fleet_picker(&self, selected: usize) -> AgentsPicker<'_> {
        AgentsPicker {
            fleet: &self.fleet,
            selected,
            now_ms: self.fleet_now_ms,
        }
    }

    pub(crate) fn focused_pane(&self) -> &dyn Pane<Action = PaneAction> {
        match self.focus {
            Focus::Input => &self.input,
            Focus::Conversation => &self.conversation,
            Focus::Tools => &self.tools,
            Focus::Approvals => &self.approvals,
            Focus::Mirror => &self.mirror,
        }
    }

    pub(crate) fn focused_pane_mut(&mut self) -> &mut dyn Pane<Action = PaneAction> {
        match self.focus {
            Focus::Input => &mut self.input,
            Focus::Conversation => &mut self.conversation,
            Focus::Tools => &mut self.tools,
            Focus::Approvals => &mut self.approvals,
            Focus::Mirror => &mut self.mirror,
        }
    }

    /// The footer: the commands of the top layer the operator sees (the
    /// focused pane's followed by the global keys when nothing covers it).
    pub fn footer_commands(&self) -> Vec<Command> {
        let ctx = self.ctx();
        if let Some(ask) = &self.quit_ask {
            return ask.commands(&ctx);
        }
        if let Some(ask) = &self.leaving {
            return ask.commands(&ctx);
        }
        if let Some(modal) = &self.modal {
            return modal.commands(&ctx);
        }
        match &self.overlay {
            Overlay::Help(help) => return help.commands(&ctx),
            Overlay::History { viewer: Some(v) } => return v.commands(&ctx),
            Overlay::History { viewer: None } => return self.history.commands(&ctx),
            Overlay::Rules => return self.rules.commands(&ctx),
            Overlay::Agents { selected } => return self.fleet_picker(*selected).commands(&ctx),
            Overlay::None => {}
        }
        if self.mirror.typing() {
            return self.mirror.passthrough.commands(&ctx);
        }
        let mut commands = self.focused_pane().commands(&ctx);
        commands.extend(GlobalKeys.commands(&ctx));
        commands
    }
}
