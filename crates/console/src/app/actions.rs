//! What the layers' actions do to the [`App`]: the bound keys (moving
//! between panes, back, cancel, the views, theme, zoom...), the approval
//! answers, what a modal or an overlay answered. `keys` decides which layer
//! a key reaches; this file carries out what that layer asked for.
//!
//! Nothing here sends anything: answers are returned as [`AgentCommand`]s
//! and file work is queued as [`IoRequest`]s.

use crate::app::{App, CANCELLING, Focus, Overlay};
use crate::io::IoRequest;
use crate::keys::Action;
use crate::panes::approvals::Answered;
use crate::panes::help::HelpOverlay;
use crate::panes::modal::{Answer as ModalAnswer, Modal};
use crate::panes::pane::{OverlayAction, PaneAction};
use vigil_client::Leaving;
use vigil_protocol::{AgentCommand, Answer as OperatorAnswer, ApprovalPolicy};

impl App {
    /// What the focused pane or the global keys asked for.
    pub(crate) fn on_pane_action(
        &mut self,
        action: PaneAction,
        confirming: bool,
    ) -> Vec<AgentCommand> {
        match action {
            PaneAction::Bound(a) => self.on_bound(a, confirming),
            PaneAction::Send(text) => {
                self.conversation.queue_user(&text);
                self.conversation.scroll.end();
                vec![AgentCommand::UserMessage { text }]
            }
            PaneAction::OpenPreview => {
                self.open_preview();
                Vec::new()
            }
            PaneAction::RefuseApproval => {
                self.refuse_approval_key();
                Vec::new()
            }
        }
    }

    /// A bound key, the same wherever it is pressed; `confirming`: the
    /// cancel key was pressed just before.
    pub(crate) fn on_bound(&mut self, action: Action, confirming: bool) -> Vec<AgentCommand> {
        match action {
            Action::NextPane => self.next_pane(),
            Action::PrevPane => self.set_focus(self.focus.prev()),
            Action::Back => self.back(),
            Action::Cancel => return self.cancel_key(confirming),
            Action::Detach => return self.detach_key(),
            Action::Quit => return self.quit_key(),
            Action::Retry => return vec![AgentCommand::Retry],
            Action::Compact => return vec![AgentCommand::Compact],
            a @ (Action::Approve
            | Action::ApproveSession
            | Action::Deny
            | Action::DenyReason
            | Action::Edit
            | Action::Preview) => return self.on_approval_action(a),
            other => self.open_or_toggle(other),
        }
        Vec::new()
    }

    /// The bound keys that open a view or change what is shown.
    fn open_or_toggle(&mut self, action: Action) {
        match action {
            Action::FocusInput => self.set_focus(Focus::Input),
            Action::Agents if self.has_fleet => self.open_agents(),
            Action::Agents => {
                self.flash = Some(
                    "no agents view here: it is for a local console attached to an agent \
                     (`vigil attach`), not read-only"
                        .into(),
                );
            }
            Action::Rules => self.overlay = Overlay::Rules,
            Action::Copy => self.copy_selected(),
            Action::Help => self.overlay = Overlay::Help(HelpOverlay::default()),
            Action::Zoom => {
                self.zoom = match self.zoom {
                    Some(z) if z == self.focus => None,
                    _ => Some(self.focus),
                };
            }
            Action::CycleTheme => self.cycle_theme(),
            Action::Policy => self.modal = Some(Modal::policy(self.status.policy)),
            Action::History => self.overlay = Overlay::History { viewer: None },
            Action::Follow => match self.focus {
                Focus::Tools => self.tools.scroll.end(),
                _ => self.conversation.scroll.end(),
            },
            _ => {}
        }
    }

    /// What the footer and the banner promise: Tab reaches a waiting
    /// approval at once, unzoomed.
    fn next_pane(&mut self) {
        let next = if self.focus != Focus::Approvals && self.approvals.unanswered() > 0 {
            self.zoom = None;
            Focus::Approvals
        } else {
            self.focus.next()
        };
        self.set_focus(next);
    }

    /// What the open overlay asked for.
    pub(crate) fn on_overlay_action(&mut self, action: OverlayAction) -> Vec<AgentCommand> {
        match action {
            OverlayAction::Close => match &mut self.overlay {
                Overlay::History {
                    viewer: v @ Some(_),
                } => *v = None,
                _ => self.overlay = Overlay::None,
            },
            OverlayAction::Bound(a) => return self.on_bound(a, false),
            OverlayAction::Open => self.open_selected_output(),
            OverlayAction::Search => {
                self.modal = Some(Modal::Search {
                    query: String::new(),
                });
            }
            OverlayAction::SaveAs => self.ask_save_path(),
            OverlayAction::Mark => self.mark_in_viewer(),
            OverlayAction::CopyOutput => self.copy_from_viewer(),
            OverlayAction::Keep(keep) => {
                if !keep {
                    self.rules.set(Vec::new(), Vec::new());
                }
                self.overlay = Overlay::None;
                return vec![AgentCommand::RestoredRules { keep }];
            }
            OverlayAction::Revoke => return self.revoke_selected(),
            OverlayAction::Switch(row) => return self.switch_to(row),
        }
        Vec::new()
    }

    /// Revoke the rule selected in the rules view.
    fn revoke_selected(&mut self) -> Vec<AgentCommand> {
        let Some(r) = self.rules.selected() else {
            return Vec::new();
        };
        self.flash = Some(format!("revoking `{}`…", r.shown()));
        vec![AgentCommand::RevokeRule {
            tool: r.tool.clone(),
            rule: r.rule.clone(),
            prefix: r.prefix,
        }]
    }

    /// Enter in the agents overlay: leave for that agent.
    fn switch_to(&mut self, row: usize) -> Vec<AgentCommand> {
        let chosen = self.fleet.agents.get(row).cloned();
        self.overlay = Overlay::None;
        match chosen {
            Some(a) if !a.this => return self.leave_as(Leaving::Switch(a.info.id)),
            Some(_) => self.flash = Some("this console is on that agent".into()),
            None => {}
        }
        Vec::new()
    }

    fn cycle_theme(&mut self) {
        if self.themes.len() > 1 {
            self.theme_index = (self.theme_index + 1) % self.themes.len();
            self.flash = Some(format!("theme: {}", self.theme().name));
        } else {
            self.flash = Some(format!("theme: {} (colours are off)", self.theme().name));
        }
    }

    /// Esc: back out of whatever is open, never destroying work.
    fn back(&mut self) {
        if self.zoom.is_some() {
            self.zoom = None;
        } else if self.focus == Focus::Input {
            self.set_focus(Focus::Conversation);
        }
    }

    /// The cancel key: the first press asks, the second cancels the turn.
    fn cancel_key(&mut self, confirming: bool) -> Vec<AgentCommand> {
        let key = self.keys.label(Action::Cancel);
        if !self.status.is_running() {
            self.flash = Some("nothing is running to cancel".into());
            return Vec::new();
        }
        if confirming {
            self.flash = Some(CANCELLING.into());
            return vec![AgentCommand::Cancel];
        }
        self.confirm_cancel = true;
        self.flash = Some(format!(
            "cancel the running turn? press {key} again to cancel (any other key: keep it running)"
        ));
        Vec::new()
    }

    /// An approval key outside the approvals pane answers nothing; it says
    /// where approvals are answered.
    fn refuse_approval_key(&mut self) {
        self.flash = Some(if self.approvals.unanswered() == 0 {
            "no approval is waiting".into()
        } else {
            format!(
                "approvals are answered in their pane: {} moves there, then {} approves",
                self.keys.label(Action::NextPane),
                self.keys.label(Action::Approve)
            )
        });
    }

    fn on_approval_action(&mut self, action: Action) -> Vec<AgentCommand> {
        if self.approvals.selected_open().is_none() {
            self.approvals.select_oldest_open();
        }
        if self.approvals.selected_open().is_none() {
            self.flash = Some("no approval is waiting".into());
            return Vec::new();
        }
        // Only the card on screen: never one that arrived or moved into
        // the selection since the last frame.
        let Some(request) = self.approvals.selected_seen() else {
            self.flash = Some("look first: the selected approval was not on screen".into());
            return Vec::new();
        };
        let id = request.id;
        if let Some(refused) = self.foreign_refusal(action) {
            self.flash = Some(refused);
            return Vec::new();
        }
        let Some(request) = self.approvals.selected_open() else {
            return Vec::new();
        };
        let decision = match action {
            Action::Approve => OperatorAnswer::ApproveOnce,
            Action::ApproveSession => {
                // Shell commands may be approved by a prefix the operator
                // confirms; other actions only exactly.
                if request.tool == "run_shell"
                    || request.gate.editable_field.as_deref() == Some("command")
                {
                    let high = request.estimate == vigil_protocol::Risk::High;
                    self.modal = Some(Modal::session(
                        id,
                        &request.gate.action,
                        high,
                        request.facts.prefix_rules.clone(),
                    ));
                    return Vec::new();
                }
                OperatorAnswer::ApproveSession
            }
            Action::Deny => OperatorAnswer::Deny,
            Action::DenyReason => {
                // A preview the operator saw is offered as the reason.
                let quoted = self.approvals.selected().and_then(|p| p.preview.as_deref());
                let text = quoted.map(crate::views::preview_card::deny_reason);
                self.modal = Some(Modal::reason_with(id, text.as_deref().unwrap_or("")));
                return Vec::new();
            }
            Action::Preview => {
                return match self.approvals.start_preview() {
                    Some(id) => vec![AgentCommand::Preview { id }],
                    None => {
                        self.flash = Some("this request already has its card".into());
                        Vec::new()
                    }
                };
            }
            Action::Edit => {
                if request.gate.editable_field.is_none() {
                    self.flash = Some(format!("{} calls cannot be edited", request.tool));
                    return Vec::new();
                }
                self.modal = Some(Modal::edit(id, &request.gate.action));
                return Vec::new();
            }
            _ => return Vec::new(),
        };
        self.answer(decision)
    }

    fn answer(&mut self, decision: OperatorAnswer) -> Vec<AgentCommand> {
        match self.approvals.answer(decision.clone()) {
            Some(Answered {
                agent: None,
                id,
                token,
            }) => vec![AgentCommand::Approval {
                id,
                decision,
                token,
            }],
            Some(Answered {
                agent: Some(agent),
                id,
                ..
            }) => {
                self.answer_elsewhere(agent, id, decision);
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    /// A modal's answer (it closes with it).
    pub(crate) fn on_modal_answer(&mut self, answer: ModalAnswer) -> Vec<AgentCommand> {
        self.modal = None;
        match answer {
            ModalAnswer::Stay | ModalAnswer::Close => Vec::new(),
            ModalAnswer::Reason(id, reason) => {
                let decision = if reason.is_empty() {
                    OperatorAnswer::Deny
                } else {
                    OperatorAnswer::DenyWithReason(reason)
                };
                self.answer_id(id, decision)
            }
            ModalAnswer::Edited(id, text, changed) => {
                let decision = if changed {
                    OperatorAnswer::ApproveEdited(text)
                } else {
                    OperatorAnswer::ApproveOnce
                };
                self.answer_id(id, decision)
            }
            ModalAnswer::Session(id, prefix) => {
                let decision = match prefix {
                    None => OperatorAnswer::ApproveSession,
                    Some(p) => OperatorAnswer::ApprovePrefix(p),
                };
                self.answer_id(id, decision)
            }
            ModalAnswer::Policy(policy) => {
                self.set_policy_shown(policy);
                self.flash = Some(format!(
                    "approval policy: {}",
                    crate::panes::status::policy_label(policy)
                ));
                vec![AgentCommand::SetPolicy { policy }]
            }
            ModalAnswer::Search(query) => {
                if let Overlay::History {
                    viewer: Some(viewer),
                } = &mut self.overlay
                {
                    let n = viewer.search(&query);
                    self.flash = Some(if n == 0 {
                        format!("no line matches `{query}`")
                    } else {
                        format!("{n} lines match `{query}`")
                    });
                }
                Vec::new()
            }
            ModalAnswer::Save(path) => {
                if let Overlay::History {
                    viewer: Some(viewer),
                } = &self.overlay
                    && let Some(content) = viewer.content()
                {
                    self.io.push(IoRequest::Save {
                        path: path.into(),
                        text: content.saved_text().into(),
                    });
                    self.flash = Some("saving…".into());
                }
                Vec::new()
            }
        }
    }

    /// Answer request `id` (selecting it first: the modal was about it).
    fn answer_id(&mut self, id: u64, decision: OperatorAnswer) -> Vec<AgentCommand> {
        if !self.approvals.select_local(id) {
            return Vec::new();
        }
        self.answer(decision)
    }

    /// Change the policy as if chosen in the menu (tests, scripted use).
    pub fn choose_policy(&mut self, policy: ApprovalPolicy) -> Vec<AgentCommand> {
        self.set_policy_shown(policy);
        vec![AgentCommand::SetPolicy { policy }]
    }
}
