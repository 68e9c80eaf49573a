//! The App's side of the fleet: the other agents' calls in the approval
//! queue (answered through the fleet feed, never as this agent's command),
//! and the agents overlay, whose Enter leaves the console with
//! `Leaving::Switch` (in `actions`) so the client re-attaches to the
//! chosen agent.
//!
//! It never talks to an agent: answers wait in `fleet_out` for the event
//! loop, and switching is a way of leaving.

use crate::app::{App, Overlay};
use crate::keys::Action;
use vigil_protocol::Answer;
use vigil_protocol::fleet::{FleetAnswer, FleetView, short_id};

impl App {
    /// The fleet client's latest view, seen at `now_ms` (wall clock): the
    /// other agents' calls join the approval queue by age.
    pub fn set_fleet(&mut self, view: FleetView, now_ms: u64) {
        self.has_fleet = true;
        let new = self.approvals.sync_foreign(&view.pending);
        if new > 0 && !self.read_only {
            // It rings; the focus stays where the operator put it.
            self.bell = true;
        }
        self.leave_empty_queue();
        if let Overlay::Agents { selected } = &mut self.overlay {
            *selected = (*selected).min(view.agents.len().saturating_sub(1));
        }
        self.fleet = view;
        self.fleet_now_ms = now_ms;
    }

    /// A fleet feed will come (the agents key opens the overlay at once,
    /// before the first view).
    pub fn enable_fleet(&mut self) {
        self.has_fleet = true;
    }

    /// Answers to other agents' calls since the last call (the event loop
    /// sends them on the fleet feed).
    pub fn take_fleet_answers(&mut self) -> Vec<FleetAnswer> {
        std::mem::take(&mut self.fleet_out)
    }

    /// Answer another agent's call `id`.
    pub(crate) fn answer_elsewhere(&mut self, agent: String, id: u64, decision: Answer) {
        self.flash = Some(format!(
            "answered #{id} of agent {} (it runs there)",
            short_id(&agent)
        ));
        self.fleet_out.push(FleetAnswer {
            agent,
            id,
            decision,
        });
    }

    /// Why `action` cannot be done from here on the selected call, when it
    /// is another agent's: only approve once and deny travel; editing,
    /// previewing, session rules and reasons are done on that agent.
    pub(crate) fn foreign_refusal(&self, action: Action) -> Option<String> {
        let agent = self.approvals.selected()?.agent.as_ref()?;
        if matches!(action, Action::Approve | Action::Deny) {
            return None;
        }
        Some(format!(
            "#{} is agent {}'s call: {} approves once and {} denies here; \
             {} switches to that agent for the rest",
            self.approvals.selected()?.request.id,
            agent.label,
            self.keys.label(Action::Approve),
            self.keys.label(Action::Deny),
            self.keys.label(Action::Agents),
        ))
    }

    /// Open the agents overlay on this console's agent.
    pub(crate) fn open_agents(&mut self) {
        let selected = self.fleet.agents.iter().position(|a| a.this).unwrap_or(0);
        self.overlay = Overlay::Agents { selected };
    }
}
