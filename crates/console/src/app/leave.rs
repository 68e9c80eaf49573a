//! How the operator leaves the [`App`], and what a read-only console
//! refuses.
//!
//! A console attached to an agent process (`App::attached`) leaves in one
//! of two ways: detach (the agent keeps working; Ctrl-C, a killed console
//! and the detach key all detach: nothing is lost) or stop the agent
//! (through the `q` question, then the keep/remove question for remote
//! managed sessions when there are any). A console that runs its own agent
//! in-process only stops. A watcher (`vigil attach --watch`) never sends a
//! command: approval keys, typing, pasting and passthrough are refused with
//! a visible "watching: read-only". Nothing here sends anything: answers are
//! returned as [`AgentCommand`]s and [`Leaving`].

use crossterm::event::KeyEvent;

use crate::app::{App, Focus};
use crate::keys::Scope;
use crate::panes::input::InputPane;
use crate::panes::leave::{Answer, LeaveAsk};
use crate::panes::mirror::MirrorPane;
use crate::panes::pane::Ctx;
use crate::panes::quit_ask::{QuitAnswer, QuitAsk};
use crate::panes::tools::CallStatus;
use vigil_client::Leaving;
use vigil_protocol::{AgentCommand, OnExit};

/// What a watcher is told when a key would act on the agent.
pub const READ_ONLY: &str = "watching: read-only — this console cannot approve, type or send";

impl App {
    /// This console is a client of an agent process (detach works; `q`
    /// asks detach / stop / cancel).
    pub fn set_attached(&mut self, attached: bool) {
        self.attached = attached;
    }

    /// Make this console read-only (`--watch`). The focus leaves the
    /// message box, where every key would be typing.
    pub fn set_read_only(&mut self, read_only: bool) {
        self.read_only = read_only;
        self.status.read_only = read_only;
        if read_only {
            self.set_focus(Focus::Conversation);
        }
    }

    /// The agent's events ended (it stopped, or the connection was lost):
    /// leaving can no longer stop anything. Returns what to tell the
    /// operator.
    pub fn agent_gone(&mut self) -> &'static str {
        self.agent_gone = true;
        if self.attached {
            "no agent on the other end any more: press q to leave"
        } else {
            "the agent stopped; press q or Ctrl-C to leave"
        }
    }

    /// Ctrl-C: an attached console detaches (nothing is lost); an
    /// in-process one stops, keeping remote sessions.
    pub(crate) fn interrupt(&mut self) -> Vec<AgentCommand> {
        if self.attached && self.agent_gone {
            self.leave_as(Leaving::AgentGone)
        } else if self.attached {
            self.leave_as(Leaving::Detach)
        } else {
            self.leave_as(Leaving::Stop(OnExit::Unsaid))
        }
    }

    /// The quit key: ask detach / stop / cancel when attached to a live
    /// agent; otherwise stop (asking about remote sessions first).
    pub(crate) fn quit_key(&mut self) -> Vec<AgentCommand> {
        if self.attached && self.agent_gone {
            return self.leave_as(Leaving::AgentGone);
        }
        if self.attached {
            let running: Vec<String> = self
                .tools
                .calls()
                .filter(|c| !c.operator && c.status == CallStatus::Running)
                .map(|c| c.summary.clone())
                .collect();
            self.quit_ask = Some(QuitAsk::new(&running, self.approvals.unanswered()));
            return Vec::new();
        }
        self.stop_key()
    }

    /// The detach key.
    pub(crate) fn detach_key(&mut self) -> Vec<AgentCommand> {
        if !self.attached {
            self.flash = Some("this console runs its own agent: there is nothing to detach".into());
            return Vec::new();
        }
        self.leave_as(Leaving::Detach)
    }

    /// Stop the agent: first the keep/remove question when quitting leaves
    /// remote managed sessions behind.
    fn stop_key(&mut self) -> Vec<AgentCommand> {
        if let Some(what) = &self.ask_on_exit {
            self.leaving = Some(LeaveAsk::new(what));
            return Vec::new();
        }
        self.leave_as(Leaving::Stop(OnExit::Unsaid))
    }

    /// Leave now, this way.
    pub(crate) fn leave_as(&mut self, how: Leaving) -> Vec<AgentCommand> {
        let stop = matches!(how, Leaving::Stop(_));
        self.exit_choice = how;
        self.quit = true;
        if stop {
            vec![AgentCommand::Quit]
        } else {
            Vec::new()
        }
    }

    /// The detach / stop / cancel question's answer.
    pub(crate) fn on_quit_answer(&mut self, answer: QuitAnswer) -> Vec<AgentCommand> {
        self.quit_ask = None;
        match answer {
            QuitAnswer::Detach => self.leave_as(Leaving::Detach),
            QuitAnswer::Stop => self.stop_key(),
            QuitAnswer::Cancel | QuitAnswer::Stay => Vec::new(),
        }
    }

    /// The keep/remove question's answer.
    pub(crate) fn on_leave_answer(&mut self, answer: Answer) -> Vec<AgentCommand> {
        self.leaving = None;
        match answer {
            Answer::Quit(choice) => self.leave_as(Leaving::Stop(choice)),
            Answer::Back | Answer::Stay => Vec::new(),
        }
    }

    /// A watcher's key that would act on the agent (approve, type, start
    /// typing into the pane): refused, and the footer says why.
    pub(crate) fn refuse_read_only(&mut self, key: &KeyEvent, ctx: &Ctx) -> bool {
        if !self.read_only {
            return false;
        }
        let refused = (self.focus == Focus::Input && InputPane::passes(key, ctx).is_none())
            || self
                .keys
                .action(key, Scope::Approvals)
                .is_some_and(|a| a.scope() == Scope::Approvals)
            || (self.focus == Focus::Mirror && MirrorPane::is_enter(key));
        if refused {
            self.flash = Some(READ_ONLY.into());
        }
        refused
    }

    /// The last line of defence: a watcher sends nothing but leaving.
    pub(crate) fn read_only_filter(&mut self, out: Vec<AgentCommand>) -> Vec<AgentCommand> {
        if !self.read_only {
            return out;
        }
        let before = out.len();
        let kept: Vec<AgentCommand> = out
            .into_iter()
            .filter(|c| *c == AgentCommand::Quit)
            .collect();
        if kept.len() < before {
            self.flash = Some(READ_ONLY.into());
        }
        kept
    }
}
