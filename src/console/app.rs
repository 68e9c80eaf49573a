//! The console's state: pane states, focus and the clock, with pure state
//! transitions — [`App::on_agent_event`], [`App::on_key`], [`App::on_paste`] —
//! and [`App::draw`], which composes the panes and never mutates state.
//!
//! The App never executes anything and never awaits the agent: keys become
//! [`AgentCommand`]s that the event loop sends without waiting.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};

use super::panes::approvals::ApprovalsPane;
use super::panes::conversation::ConversationPane;
use super::panes::footer::{self, FooterView};
use super::panes::input::InputPane;
use super::panes::mirror::MirrorPane;
use super::panes::status::StatusBar;
use super::panes::tools::ToolsPane;
use crate::event::{AgentCommand, AgentEvent, ApprovalDecision, McpState};

pub use super::panes::footer::Focus;

#[derive(Debug)]
pub struct App {
    pub(crate) status: StatusBar,
    pub(crate) conversation: ConversationPane,
    pub(crate) tools: ToolsPane,
    pub(crate) approvals: ApprovalsPane,
    pub(crate) mirror: MirrorPane,
    pub(crate) input: InputPane,
    focus: Focus,
    now: Instant,
    quit: bool,
    bell: bool,
}

impl App {
    pub fn new(now: Instant) -> Self {
        App {
            status: StatusBar::default(),
            conversation: ConversationPane::default(),
            tools: ToolsPane::default(),
            approvals: ApprovalsPane::default(),
            mirror: MirrorPane::default(),
            input: InputPane::default(),
            focus: Focus::Input,
            now,
            quit: false,
            bell: false,
        }
    }

    pub fn focus(&self) -> Focus {
        self.focus
    }

    pub fn set_focus(&mut self, focus: Focus) {
        self.focus = focus;
        self.input.set_focused(focus == Focus::Input);
    }

    pub fn should_quit(&self) -> bool {
        self.quit
    }

    pub fn is_running(&self) -> bool {
        self.status.is_running()
    }

    /// True once per approval that arrived since the last call.
    pub fn take_bell(&mut self) -> bool {
        std::mem::take(&mut self.bell)
    }

    /// Advance the clock; true when what is shown changed (elapsed seconds).
    pub fn tick(&mut self, now: Instant) -> bool {
        let before = self.status.elapsed_secs(self.now);
        self.now = now;
        self.status.elapsed_secs(now) != before
    }

    /// Record a message sent on the operator's behalf (the initial message).
    pub fn note_sent(&mut self, text: &str) {
        self.conversation.queue_user(text);
    }

    /// The mirror pane, for whoever captures the tmux pane.
    pub fn mirror_mut(&mut self) -> &mut MirrorPane {
        &mut self.mirror
    }

    pub fn on_agent_event(&mut self, ev: AgentEvent) {
        match ev {
            AgentEvent::SessionStarted {
                model,
                target,
                demo,
                mirror,
                tools: _,
            } => {
                self.status.session(&model, &target, demo);
                self.conversation.set_demo(demo);
                self.mirror.set_target(mirror);
            }
            AgentEvent::TurnStarted { user } => {
                self.status.turn_started = Some(self.now);
                self.conversation.turn_started(&user);
            }
            AgentEvent::AssistantDelta { text } => self.conversation.delta(&text),
            AgentEvent::AssistantMessage { text } => self.conversation.message(&text),
            AgentEvent::ToolCallRequested {
                call_id,
                name,
                arguments,
            } => {
                self.conversation.end_stream();
                self.tools.requested(&call_id, &name, &arguments);
            }
            AgentEvent::ToolStarted {
                call_id,
                name,
                summary,
            } => {
                self.conversation.end_round();
                self.tools.started(&call_id, &name, &summary);
            }
            AgentEvent::ToolOutput {
                call_id,
                stream,
                text,
            } => self.tools.output(&call_id, stream, &text),
            AgentEvent::ToolInfo { call_id, text } => self.tools.info(&call_id, &text),
            AgentEvent::ToolCompleted {
                call_id,
                name,
                summary,
            } => self.tools.completed(&call_id, &name, &summary),
            AgentEvent::ApprovalRequested { request } => {
                self.tools
                    .waiting_approval(&request.call_id, &request.tool, &request.gate.action);
                self.approvals.push(request);
                self.bell = true;
                if self.input.is_empty() {
                    self.set_focus(Focus::Approvals);
                }
            }
            AgentEvent::ApprovalResolved { id, decision } => {
                if let Some(request) = self.approvals.resolve(id) {
                    if !decision.is_approved() {
                        self.tools.denied(&request.call_id);
                    }
                }
                if self.approvals.is_empty() && self.focus == Focus::Approvals {
                    self.set_focus(Focus::Input);
                }
            }
            AgentEvent::TurnFinished { outcome } => {
                self.status.turn_started = None;
                self.conversation.turn_finished(&outcome);
            }
            AgentEvent::Notice { text } => self.conversation.notice(&text),
            AgentEvent::Error { message } => self.conversation.error(&message),
            AgentEvent::McpServerState { name, state, tools } => {
                let text = format!("MCP server {name}: {state} ({tools} tools)");
                match state {
                    McpState::Starting | McpState::Running => self.conversation.notice(&text),
                    _ => self.conversation.error(&text),
                }
            }
            other => {
                if let Some(text) = other.notice_text() {
                    self.conversation.notice(&text);
                }
            }
        }
    }

    /// Bracketed paste goes to the input box.
    pub fn on_paste(&mut self, text: &str) {
        self.set_focus(Focus::Input);
        self.input.paste(text);
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Vec<AgentCommand> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return vec![AgentCommand::Quit];
        }
        match key.code {
            KeyCode::Tab => {
                self.set_focus(self.focus.next());
                return Vec::new();
            }
            KeyCode::BackTab => {
                self.set_focus(self.focus.prev());
                return Vec::new();
            }
            KeyCode::Esc => {
                if self.status.is_running() {
                    return vec![AgentCommand::Cancel];
                }
                if self.focus == Focus::Input {
                    self.set_focus(Focus::Conversation);
                }
                return Vec::new();
            }
            _ => {}
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
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            return Vec::new();
        }
        match key.code {
            KeyCode::Char('q') => {
                self.quit = true;
                return vec![AgentCommand::Quit];
            }
            KeyCode::Char('i') => {
                self.set_focus(Focus::Input);
                return Vec::new();
            }
            KeyCode::Enter if self.focus != Focus::Approvals => {
                self.set_focus(Focus::Input);
                return Vec::new();
            }
            _ => {}
        }
        match self.focus {
            Focus::Input => {}
            Focus::Conversation => {
                self.conversation.scroll.on_key(key.code);
            }
            Focus::Tools => {
                self.tools.scroll.on_key(key.code);
            }
            Focus::Approvals => return self.on_approval_key(key.code),
        }
        Vec::new()
    }

    fn on_approval_key(&mut self, code: KeyCode) -> Vec<AgentCommand> {
        let decision = match code {
            KeyCode::Char('y') => ApprovalDecision::ApproveOnce,
            KeyCode::Char('a') => ApprovalDecision::ApproveSession,
            KeyCode::Char('n') => ApprovalDecision::Deny,
            KeyCode::Up | KeyCode::Char('k') => {
                self.approvals.select_prev();
                return Vec::new();
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.approvals.select_next();
                return Vec::new();
            }
            _ => return Vec::new(),
        };
        match self.approvals.answer(decision.clone()) {
            Some(id) => vec![AgentCommand::Approval { id, decision }],
            None => Vec::new(),
        }
    }

    pub fn draw(&self, frame: &mut Frame) {
        let [status, body, foot] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(0),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(body);
        let [conversation, input] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(self.input.desired_height()),
        ])
        .areas(left);
        let mirror_h = (body.height / 4).clamp(3, 10);
        let [tools, approvals, mirror] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(self.approvals.desired_height(right.width)),
            Constraint::Length(mirror_h),
        ])
        .areas(right);

        let pending = self.approvals.unanswered();
        self.status.render(frame, status, self.now, pending);
        self.conversation
            .render(frame, conversation, self.focus == Focus::Conversation);
        self.input.render(frame, input);
        self.tools.render(frame, tools, self.focus == Focus::Tools);
        self.approvals
            .render(frame, approvals, self.focus == Focus::Approvals);
        self.mirror.render(frame, mirror, false);
        footer::render(
            frame,
            foot,
            FooterView {
                focus: self.focus,
                running: self.status.is_running(),
                pending,
            },
        );
    }
}
