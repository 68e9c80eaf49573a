//! Agent events for the [`App`], split by what they are about: the session
//! (start, recording, restore, rules, context, MCP servers), the turn and
//! the conversation, the tool calls, and the approvals.
//!
//! Events only change what is shown; nothing here sends anything or moves
//! the focus the operator chose (an approval rings; it never takes the
//! keyboard).

use crate::app::{App, CANCELLING, Overlay};
use crate::panes::modal::Modal;
use vigil_protocol::{AgentEvent, DecidedBy, McpState};

impl App {
    pub fn on_agent_event(&mut self, ev: AgentEvent) {
        use AgentEvent as E;
        match ev {
            e @ (E::SessionStarted { .. }
            | E::SessionRecording { .. }
            | E::SessionRestored { .. }
            | E::SessionRules { .. }
            | E::ContextUsage { .. }
            | E::McpServerState { .. }
            | E::TargetNotice { .. }) => self.on_session_event(e),
            e @ (E::TurnStarted { .. }
            | E::TurnContinued { .. }
            | E::TurnFinished { .. }
            | E::AssistantDelta { .. }
            | E::AssistantMessage { .. }
            | E::Notice { .. }
            | E::Error { .. }) => self.on_turn_event(e),
            e @ (E::ToolCallDelta { .. }
            | E::ToolCallRequested { .. }
            | E::ToolStarted { .. }
            | E::ToolOutput { .. }
            | E::ToolInfo { .. }
            | E::ToolCompleted { .. }
            | E::ToolCancelled { .. }
            | E::OperatorKeys { .. }) => self.on_tool_event(e),
            e @ (E::ApprovalRequested { .. }
            | E::PreviewReady { .. }
            | E::ApprovalResolved { .. }) => self.on_approval_event(e),
            other => {
                if matches!(other, E::AssistantDiscarded { .. }) {
                    // Calls streamed by the broken attempt never ran.
                    self.tools.drop_streaming();
                }
                if let Some(text) = other.notice_text() {
                    self.conversation.notice(&text);
                }
            }
        }
    }

    /// The session: started, recording, restored, its rules, the context
    /// used, MCP servers, notices about the target.
    fn on_session_event(&mut self, ev: AgentEvent) {
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
            AgentEvent::SessionRules { exact, prefixes } => {
                self.rules.set(exact, prefixes);
            }
            AgentEvent::TargetNotice { text } => {
                self.status.target_notice(&text);
                self.conversation.notice(&text);
            }
            AgentEvent::ContextUsage { used, limit } => {
                self.status.context = Some((used, limit));
            }
            AgentEvent::SessionRestored {
                ref standing_approvals,
                ref standing_prefixes,
                ..
            } if self.rules.rules().is_empty()
                && !(standing_approvals.is_empty() && standing_prefixes.is_empty()) =>
            {
                // Read back from the log: they approve nothing until the
                // operator keeps them, so the view opens to ask.
                self.rules
                    .hold(standing_approvals.clone(), standing_prefixes.clone());
                self.overlay = Overlay::Rules;
                self.on_agent_event(ev);
            }
            AgentEvent::SessionRecording { ref id, .. } => {
                self.status.session_id = Some(id.clone());
            }
            AgentEvent::SessionRestored {
                ref id,
                ref history,
                ref tools,
                ref interrupted,
                ..
            } => {
                self.status.session_id = Some(id.clone());
                self.restore(history, tools, interrupted);
                if let Some(text) = ev.notice_text() {
                    self.conversation.notice(&text);
                }
            }
            AgentEvent::McpServerState { name, state, tools } => {
                let text = format!("MCP server {name}: {state} ({tools} tools)");
                match state {
                    McpState::Starting | McpState::Running => self.conversation.notice(&text),
                    _ => self.conversation.error(&text),
                }
            }
            // Routed by `on_agent_event`: other events never come here.
            _ => {}
        }
    }

    /// The turn and the conversation: the model's text, notices, errors.
    fn on_turn_event(&mut self, ev: AgentEvent) {
        match ev {
            AgentEvent::TurnStarted { user } => {
                self.status.turn_started = Some(self.now);
                self.conversation.turn_started(&user);
            }
            AgentEvent::AssistantDelta { text } => self.conversation.delta(&text),
            AgentEvent::AssistantMessage { text } => self.conversation.message(&text),
            AgentEvent::TurnContinued { reason } => {
                // A retried round runs a turn again: running, cancellable.
                self.status.turn_started = Some(self.now);
                self.conversation.notice(&reason);
            }
            AgentEvent::TurnFinished { outcome } => {
                self.status.turn_started = None;
                self.conversation.turn_finished(&outcome);
                // What the cancel key said is over with the turn.
                if self.flash.as_deref() == Some(CANCELLING) {
                    self.flash = None;
                }
            }
            AgentEvent::Notice { text } => self.conversation.notice(&text),
            AgentEvent::Error { message } => self.conversation.error(&message),
            // Routed by `on_agent_event`: other events never come here.
            _ => {}
        }
    }

    /// Tool calls: streamed, requested, started, their output, finished,
    /// cancelled; what the operator typed into the pane.
    fn on_tool_event(&mut self, ev: AgentEvent) {
        match ev {
            AgentEvent::ToolCallDelta {
                index,
                call_id,
                name,
                arguments,
            } => {
                self.conversation.end_stream();
                self.tools.streaming(index, &call_id, &name, &arguments);
            }
            AgentEvent::ToolCallRequested {
                call_id,
                name,
                arguments,
            } => {
                self.conversation.end_stream();
                self.tools.requested(&call_id, &name, &arguments);
                self.track(&call_id);
            }
            AgentEvent::ToolStarted {
                call_id,
                name,
                summary,
            } => {
                self.conversation.end_round();
                if name == "run_shell" {
                    self.mirror.set_running(Some(summary.clone()));
                }
                self.tools.started(&call_id, &name, &summary);
                self.track(&call_id);
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
            } => {
                self.tools.completed(&call_id, &name, &summary);
                if name == "run_shell" {
                    self.mirror.set_running(None);
                }
                self.track(&call_id);
            }
            AgentEvent::ToolCancelled { call_id, name } => {
                self.mirror.set_running(None);
                self.tools.cancelled(&call_id, &name);
                self.track(&call_id);
            }
            AgentEvent::OperatorKeys { keys } => self.tools.operator_typed(&keys),
            // Routed by `on_agent_event`: other events never come here.
            _ => {}
        }
    }

    /// Approvals: asked, previewed, answered (by anyone).
    fn on_approval_event(&mut self, ev: AgentEvent) {
        match ev {
            AgentEvent::ApprovalRequested { request } if request.automatic => {
                self.track(&request.call_id);
                self.approvals.note_automatic(request);
            }
            AgentEvent::ApprovalRequested { request } => {
                self.tools
                    .waiting_approval(&request.call_id, &request.tool, &request.gate.action);
                self.track(&request.call_id);
                self.approvals.push(request);
                // It rings; the focus stays where the operator put it.
                self.bell = true;
            }
            AgentEvent::PreviewReady { id, outcome } => {
                self.approvals.set_preview(id, &outcome);
            }
            AgentEvent::ApprovalResolved {
                id,
                decision,
                decided_by,
                previewed,
                answered_by,
            } => {
                if let Some(request) = self.approvals.resolve(id) {
                    let call = &request.call_id;
                    let mut record = decided_by.record(&decision, previewed);
                    if let Some(who) = &answered_by {
                        record.push_str(&crate::panes::tools::answered_by_text(who));
                    }
                    self.tools.decided(call, &record);
                    if decided_by == DecidedBy::Cancelled {
                        self.tools.cancelled(call, &request.tool);
                    } else if !decision.is_approved() {
                        self.tools.denied(call);
                    }
                    self.track(call);
                    // A policy decided it: nobody needs to look any more.
                    if self.approvals.is_empty() {
                        self.bell = false;
                    }
                }
                // A modal about a request that is gone has nothing to do.
                let stale = match &self.modal {
                    Some(Modal::Reason { id: m, .. } | Modal::Edit { id: m, .. }) => *m == id,
                    _ => false,
                };
                if stale {
                    self.modal = None;
                }
                self.leave_empty_queue();
            }
            // Routed by `on_agent_event`: other events never come here.
            _ => {}
        }
    }
}
