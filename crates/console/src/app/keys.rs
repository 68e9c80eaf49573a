//! Operator input for the [`App`]: keys, paste and mouse become state
//! changes, [`AgentCommand`]s (returned, never sent here) and I/O requests.
//!
//! Order of precedence: while the operator types into the mirrored pane
//! every key goes there (`app_passthrough`, Ctrl-C included); otherwise
//! Ctrl-C always leaves (`app_leave`: an attached console detaches, an
//! in-process one quits keeping remote sessions); the detach / stop
//! question, the keep/remove question and then an open modal take every
//! key; a watcher's keys that would act on the agent are refused;
//! then the help overlay, the history view and its viewer, the rules view;
//! then the input box (so approval keys never act while the operator
//! types); then global keys, then the approval keys, then the focused
//! pane's keys.
//!
//! Approval keys answer only in the approvals pane, which focus reaches
//! only by the operator's own key or click (never when a call arrives),
//! and only the card the last frame showed selected: typed text meant for
//! elsewhere never answers anything.
//!
//! Esc only ever goes back (leave the box, unzoom, close); cancelling the
//! turn is its own key, pressed twice.

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::{Position, Rect};

use crate::app::{App, CANCELLING, Focus, Overlay};
use crate::io::IoRequest;
use crate::keys::{Action, Scope};
use crate::panes::approvals::Answered;
use crate::panes::leave::Answer;
use crate::panes::modal::{Modal, Outcome};
use vigil_protocol::{AgentCommand, Answer as OperatorAnswer, ApprovalPolicy};

/// Lines one mouse-wheel notch scrolls.
const WHEEL_LINES: isize = 3;
/// Rows PageUp/PageDown move a diff card.
const DIFF_PAGE: isize = 6;

impl App {
    /// Bracketed paste goes to the pane while the operator types into it,
    /// else to the open modal, else the input box.
    pub fn on_paste(&mut self, text: &str) -> Vec<AgentCommand> {
        if self.read_only {
            self.flash = Some(crate::app::leave::READ_ONLY.into());
            return Vec::new();
        }
        if self.mirror.typing() {
            return self.paste_into_pane(text);
        }
        if let Some(m) = &mut self.modal {
            m.on_paste(text);
            return Vec::new();
        }
        self.overlay = Overlay::None;
        self.set_focus(Focus::Input);
        self.input.paste(text);
        Vec::new()
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Vec<AgentCommand> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.flash = None;
        let out = self.route_key(key);
        self.read_only_filter(out)
    }

    fn route_key(&mut self, key: KeyEvent) -> Vec<AgentCommand> {
        if self.mirror.typing() {
            return self.on_passthrough_key(key);
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return self.interrupt();
        }
        if let Some(out) = self.on_quit_ask_key(key) {
            return out;
        }
        if let Some(out) = self.on_leave_key(key) {
            return out;
        }
        if self.modal.is_some() {
            return self.on_modal_key(key);
        }
        let confirming = std::mem::take(&mut self.confirm_cancel);
        match self.overlay {
            Overlay::Help { .. } => {
                self.on_help_key(key);
                return Vec::new();
            }
            Overlay::History { .. } => return self.on_history_key(key),
            Overlay::Rules => return self.on_rules_key(key),
            Overlay::Agents { .. } => return self.on_agents_key(key),
            Overlay::None => {}
        }
        if let Some(out) = self.on_global_key(&key, confirming) {
            return out;
        }
        if self.refuse_read_only(&key) {
            return Vec::new();
        }
        if self.focus == Focus::Input {
            return match self.input.on_key(key) {
                Some(text) => {
                    self.conversation.queue_user(&text);
                    self.conversation.scroll.end();
                    vec![AgentCommand::UserMessage { text }]
                }
                None => Vec::new(),
            };
        }
        if self.starts_typing(&key) {
            return Vec::new();
        }
        // Approval keys answer only in the approvals pane the operator
        // moved to, on the card it shows; elsewhere they say where to go.
        if let Some(action) = self.keys.action(&key, Scope::Approvals) {
            if self.focus != Focus::Approvals && action.scope() == Scope::Approvals {
                self.refuse_approval_key();
                return Vec::new();
            }
            if let Some(out) = self.on_action(action) {
                return out;
            }
        }
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            return Vec::new();
        }
        self.on_pane_key(key.code);
        Vec::new()
    }

    /// The quit question, when it is open: it takes every key.
    fn on_leave_key(&mut self, key: KeyEvent) -> Option<Vec<AgentCommand>> {
        let ask = self.leaving.as_ref()?;
        match ask.on_key(key) {
            Answer::Quit(choice) => {
                self.leaving = None;
                return Some(self.leave_as(crate::Leaving::Stop(choice)));
            }
            Answer::Back => self.leaving = None,
            Answer::Stay => {}
        }
        Some(Vec::new())
    }

    /// Keys that act the same in every pane (moving between panes, back,
    /// cancel); `None` when the key is not one of them.
    fn on_global_key(&mut self, key: &KeyEvent, confirming: bool) -> Option<Vec<AgentCommand>> {
        // Typed characters belong to the input box, whatever they are bound to.
        let typing = self.focus == Focus::Input
            && matches!(key.code, KeyCode::Char(_))
            && !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let global = if typing {
            None
        } else {
            self.keys.action(key, Scope::Global)
        };
        match global {
            Some(Action::NextPane) => {
                // What the footer and the banner promise: Tab reaches a
                // waiting approval at once, unzoomed.
                let next = if self.focus != Focus::Approvals && self.approvals.unanswered() > 0 {
                    self.zoom = None;
                    Focus::Approvals
                } else {
                    self.focus.next()
                };
                self.set_focus(next);
                return Some(Vec::new());
            }
            Some(Action::PrevPane) => {
                self.set_focus(self.focus.prev());
                return Some(Vec::new());
            }
            Some(Action::Back) => {
                self.back();
                return Some(Vec::new());
            }
            Some(Action::Cancel) => return Some(self.cancel_key(confirming)),
            Some(Action::Detach) => return Some(self.detach_key()),
            _ => {}
        }
        None
    }

    /// A bound action outside the message box; `None` when it does nothing
    /// here (the key then goes to the focused pane).
    fn on_action(&mut self, action: Action) -> Option<Vec<AgentCommand>> {
        match action {
            Action::Quit => return Some(self.quit_key()),
            Action::FocusInput => {
                self.set_focus(Focus::Input);
                return Some(Vec::new());
            }
            Action::Agents if self.has_fleet => {
                self.open_agents();
                return Some(Vec::new());
            }
            Action::Agents => {
                self.flash = Some(
                    "no agents view here: it is for a local console attached to an agent \
                     (`vigil attach`), not read-only"
                        .into(),
                );
                return Some(Vec::new());
            }
            Action::Rules => {
                self.overlay = Overlay::Rules;
                return Some(Vec::new());
            }
            Action::Copy => {
                self.copy_selected();
                return Some(Vec::new());
            }
            Action::Help => {
                self.overlay = Overlay::Help { scroll: 0 };
                return Some(Vec::new());
            }
            Action::Zoom => {
                self.zoom = match self.zoom {
                    Some(z) if z == self.focus => None,
                    _ => Some(self.focus),
                };
                return Some(Vec::new());
            }
            Action::CycleTheme => {
                self.cycle_theme();
                return Some(Vec::new());
            }
            Action::Policy => {
                self.modal = Some(Modal::policy(self.status.policy));
                return Some(Vec::new());
            }
            Action::History => {
                self.overlay = Overlay::History { viewer: None };
                return Some(Vec::new());
            }
            Action::Retry => return Some(vec![AgentCommand::Retry]),
            Action::Compact => return Some(vec![AgentCommand::Compact]),
            Action::Follow => {
                match self.focus {
                    Focus::Tools => self.tools.scroll.end(),
                    _ => self.conversation.scroll.end(),
                }
                return Some(Vec::new());
            }
            a @ (Action::Approve
            | Action::ApproveSession
            | Action::Deny
            | Action::DenyReason
            | Action::Edit
            | Action::Preview) => return Some(self.on_approval_action(a)),
            _ => {}
        }
        None
    }

    /// Scrolling and selection keys of the focused pane.
    fn on_pane_key(&mut self, code: KeyCode) {
        match (self.focus, code) {
            (Focus::Conversation, code) => {
                self.conversation.scroll.on_key(code);
            }
            (Focus::Tools, code) => {
                self.tools.scroll.on_key(code);
            }
            (Focus::Approvals, KeyCode::Up | KeyCode::Char('k')) => self.approvals.select_prev(),
            (Focus::Approvals, KeyCode::Down | KeyCode::Char('j')) => self.approvals.select_next(),
            (Focus::Approvals, KeyCode::PageDown | KeyCode::Char('J')) => {
                self.approvals.scroll_diff(DIFF_PAGE);
            }
            (Focus::Approvals, KeyCode::PageUp | KeyCode::Char('K')) => {
                self.approvals.scroll_diff(-DIFF_PAGE);
            }
            (Focus::Approvals, KeyCode::Home) => {
                self.approvals.scroll_diff(isize::MIN / 2);
            }
            (Focus::Approvals, KeyCode::End) => {
                self.approvals.scroll_diff(isize::MAX / 2);
            }
            (Focus::Approvals, KeyCode::Enter) => self.open_preview(),
            (_, KeyCode::Enter) => self.set_focus(Focus::Input),
            _ => {}
        }
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

    fn on_modal_key(&mut self, key: KeyEvent) -> Vec<AgentCommand> {
        let Some(modal) = &mut self.modal else {
            return Vec::new();
        };
        let outcome = modal.on_key(key);
        if outcome != Outcome::Stay {
            self.modal = None;
        }
        match outcome {
            Outcome::Stay | Outcome::Close => Vec::new(),
            Outcome::Reason(id, reason) => {
                let decision = if reason.is_empty() {
                    OperatorAnswer::Deny
                } else {
                    OperatorAnswer::DenyWithReason(reason)
                };
                self.answer_id(id, decision)
            }
            Outcome::Edited(id, text, changed) => {
                let decision = if changed {
                    OperatorAnswer::ApproveEdited(text)
                } else {
                    OperatorAnswer::ApproveOnce
                };
                self.answer_id(id, decision)
            }
            Outcome::Session(id, prefix) => {
                let decision = match prefix {
                    None => OperatorAnswer::ApproveSession,
                    Some(p) => OperatorAnswer::ApprovePrefix(p),
                };
                self.answer_id(id, decision)
            }
            Outcome::Policy(policy) => {
                self.set_policy_shown(policy);
                self.flash = Some(format!(
                    "approval policy: {}",
                    crate::panes::status::policy_label(policy)
                ));
                vec![AgentCommand::SetPolicy { policy }]
            }
            Outcome::Search(query) => {
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
            Outcome::Save(path) => {
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

    fn on_help_key(&mut self, key: KeyEvent) {
        let Overlay::Help { scroll } = &mut self.overlay else {
            return;
        };
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => *scroll = scroll.saturating_add(1),
            KeyCode::PageUp => *scroll = scroll.saturating_sub(10),
            KeyCode::PageDown => *scroll = scroll.saturating_add(10),
            _ => self.overlay = Overlay::None,
        }
    }

    /// Mouse: a click focuses the pane under it, the wheel scrolls it.
    pub fn on_mouse(&mut self, m: MouseEvent) -> bool {
        let at = Position::new(m.column, m.row);
        let rects = self.rects.get();
        let hit = |r: Rect| r.contains(at);
        let pane = [
            (rects.input, Focus::Input),
            (rects.conversation, Focus::Conversation),
            (rects.tools, Focus::Tools),
            (rects.approvals, Focus::Approvals),
            (rects.mirror, Focus::Mirror),
        ]
        .into_iter()
        .find(|(r, _)| hit(*r))
        .map(|(_, f)| f);
        let delta = match m.kind {
            MouseEventKind::ScrollUp => -WHEEL_LINES,
            MouseEventKind::ScrollDown => WHEEL_LINES,
            MouseEventKind::Down(MouseButton::Left) => {
                if self.modal.is_some() || !matches!(self.overlay, Overlay::None) {
                    return false;
                }
                return match pane {
                    Some(f) => {
                        self.set_focus(f);
                        true
                    }
                    None => false,
                };
            }
            _ => return false,
        };
        if self.modal.is_some() {
            return false;
        }
        match &mut self.overlay {
            Overlay::History { viewer: Some(v) } => v.scroll.scroll_by(delta),
            Overlay::History { viewer: None } => {
                if delta < 0 {
                    self.history.select_prev();
                } else {
                    self.history.select_next();
                }
            }
            Overlay::Help { scroll } => {
                *scroll = scroll.saturating_add_signed(delta as i16);
            }
            Overlay::Rules if delta < 0 => self.rules.select_prev(),
            Overlay::Rules => self.rules.select_next(),
            Overlay::Agents { .. } => return false,
            Overlay::None => match pane {
                Some(Focus::Conversation) => self.conversation.scroll.scroll_by(delta),
                Some(Focus::Tools) => self.tools.scroll.scroll_by(delta),
                Some(Focus::Approvals) if delta < 0 => self.approvals.select_prev(),
                Some(Focus::Approvals) => self.approvals.select_next(),
                _ => return false,
            },
        }
        true
    }

    /// Change the policy as if chosen in the menu (tests, scripted use).
    pub fn choose_policy(&mut self, policy: ApprovalPolicy) -> Vec<AgentCommand> {
        self.set_policy_shown(policy);
        vec![AgentCommand::SetPolicy { policy }]
    }
}
