//! The console's state: pane states, focus, zoom, the open view or modal,
//! the theme and the clock. Agent events land in [`App::on_agent_event`]
//! (`events`, split by what they are about);
//! keys go through the layer stack in [`keys`] (the only place a key is
//! routed; what a layer asks for is done in `actions`); mouse and paste in
//! `mouse`; drawing in `draw` (which never mutates state apart from
//! remembering where panes were drawn).
//!
//! The App never executes anything, never awaits the agent and never does
//! I/O: keys become [`AgentCommand`](vigil_protocol::AgentCommand)s the
//! event loop sends without waiting, and file work becomes [`IoRequest`]s
//! the loop runs on a blocking thread.

mod actions;
pub(crate) mod copy;
mod draw;
mod events;
mod fleet;
mod history;
pub mod keys;
pub(crate) mod leave;
mod mouse;
mod restore;

use std::cell::Cell;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ratatui::layout::Rect;

use crate::io::{IoRequest, IoResult};
use crate::keys::Keymap;
use crate::panes::approvals::ApprovalsPane;
use crate::panes::conversation::ConversationPane;
use crate::panes::help::HelpOverlay;
use crate::panes::history::HistoryPane;
use crate::panes::input::InputPane;
use crate::panes::leave::LeaveAsk;
use crate::panes::mirror::MirrorPane;
use crate::panes::modal::Modal;
use crate::panes::quit_ask::QuitAsk;
use crate::panes::rules::RulesView;
use crate::panes::status::StatusBar;
use crate::panes::tools::ToolsPane;
use crate::panes::viewer::Viewer;
use crate::style::theme::Theme;
use vigil_client::Leaving;
use vigil_protocol::ApprovalPolicy;
use vigil_protocol::fleet::{FleetAnswer, FleetView};

pub use crate::panes::footer::Focus;

/// What the cancel key says until the turn has ended.
pub(crate) const CANCELLING: &str = "cancelling the turn…";

/// What covers the panes.
#[derive(Debug, Default)]
pub enum Overlay {
    #[default]
    None,
    Help(HelpOverlay),
    /// The history list, with the full-output viewer open on top of it.
    History {
        viewer: Option<Viewer>,
    },
    /// The standing approvals (session rules), with revoke.
    Rules,
    /// The running agents, with the one Enter switches to.
    Agents {
        selected: usize,
    },
}

/// Where each pane was last drawn (for mouse hits).
#[derive(Debug, Clone, Copy, Default)]
pub struct PaneRects {
    pub conversation: Rect,
    pub tools: Rect,
    pub approvals: Rect,
    pub mirror: Rect,
    pub input: Rect,
}

#[derive(Debug)]
pub struct App {
    pub(crate) status: StatusBar,
    pub(crate) conversation: ConversationPane,
    pub(crate) tools: ToolsPane,
    pub(crate) approvals: ApprovalsPane,
    pub(crate) mirror: MirrorPane,
    pub(crate) input: InputPane,
    pub(crate) history: HistoryPane,
    pub(crate) rules: RulesView,
    pub(crate) focus: Focus,
    pub(crate) zoom: Option<Focus>,
    pub(crate) overlay: Overlay,
    pub(crate) modal: Option<Modal>,
    pub(crate) keys: Keymap,
    pub(crate) themes: Vec<Theme>,
    pub(crate) theme_index: usize,
    pub(crate) rects: Cell<PaneRects>,
    /// Where "save output" proposes to write.
    pub(crate) save_dir: PathBuf,
    pub(crate) io: Vec<IoRequest>,
    pub(crate) now: Instant,
    pub(crate) quit: bool,
    pub(crate) bell: bool,
    /// A one-line message for the operator in the footer, until the next key.
    pub(crate) flash: Option<String>,
    /// What quitting leaves behind on a remote target (asked about first).
    pub(crate) ask_on_exit: Option<String>,
    /// The open keep/remove question.
    pub(crate) leaving: Option<LeaveAsk>,
    /// How the operator leaves: detach, or stop the agent (keeping remote
    /// sessions unless they chose to remove them).
    pub(crate) exit_choice: Leaving,
    /// A client of an agent process: `q` asks detach / stop / cancel and
    /// the detach key works.
    pub(crate) attached: bool,
    /// The open detach / stop / cancel question.
    pub(crate) quit_ask: Option<QuitAsk>,
    /// A read-only console (`vigil attach --watch`): no approvals, no
    /// typing, no messages.
    pub(crate) read_only: bool,
    /// The agent (or the connection to it) is gone: nothing left to stop.
    pub(crate) agent_gone: bool,
    /// The cancel key was pressed once: the next press cancels the turn.
    pub(crate) confirm_cancel: bool,
    /// Text to put on the system clipboard (OSC 52), taken by the loop.
    pub(crate) clipboard: Option<String>,
    /// The other agents, as the fleet client last saw them.
    pub(crate) fleet: FleetView,
    /// When that view arrived (Unix milliseconds; dates the agents' ages).
    pub(crate) fleet_now_ms: u64,
    /// Answers to other agents' calls, taken by the loop.
    pub(crate) fleet_out: Vec<FleetAnswer>,
    /// A fleet feed is connected (the agents key works).
    pub(crate) has_fleet: bool,
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
            history: HistoryPane::default(),
            rules: RulesView::default(),
            focus: Focus::Input,
            zoom: None,
            overlay: Overlay::None,
            modal: None,
            keys: Keymap::default(),
            themes: vec![Theme::default()],
            theme_index: 0,
            rects: Cell::new(PaneRects::default()),
            save_dir: std::env::temp_dir(),
            io: Vec::new(),
            now,
            quit: false,
            bell: false,
            flash: None,
            ask_on_exit: None,
            leaving: None,
            exit_choice: Leaving::Stop(vigil_protocol::OnExit::Unsaid),
            attached: false,
            quit_ask: None,
            read_only: false,
            agent_gone: false,
            confirm_cancel: false,
            clipboard: None,
            fleet: FleetView::default(),
            fleet_now_ms: 0,
            fleet_out: Vec::new(),
            has_fleet: false,
        }
    }

    /// Use these key bindings.
    pub fn set_keymap(&mut self, keys: Keymap) {
        self.keys = keys;
    }

    /// The themes the theme key cycles through, the first in force. An empty
    /// list keeps the current ones.
    pub fn set_themes(&mut self, themes: Vec<Theme>) {
        if !themes.is_empty() {
            self.themes = themes;
            self.theme_index = 0;
        }
    }

    pub fn theme(&self) -> &Theme {
        self.themes
            .get(self.theme_index)
            .or_else(|| self.themes.first())
            .unwrap_or_else(|| default_theme())
    }

    /// The policy the agent started with (shown in the status bar).
    pub fn set_policy_shown(&mut self, policy: ApprovalPolicy) {
        self.status.policy = Some(policy);
        self.status.policy_until = match policy {
            ApprovalPolicy::ApproveAllFor { minutes } => {
                Some(self.now + Duration::from_secs(u64::from(minutes) * 60))
            }
            _ => None,
        };
    }

    /// Where saved outputs go by default.
    pub fn set_save_dir(&mut self, dir: PathBuf) {
        self.save_dir = dir;
    }

    pub fn focus(&self) -> Focus {
        self.focus
    }

    pub fn set_focus(&mut self, focus: Focus) {
        self.focus = focus;
        if focus != Focus::Mirror {
            self.mirror.set_typing(false);
        }
        self.input.set_focused(focus == Focus::Input);
    }

    /// The queue emptied under the operator: the focus goes to the
    /// conversation (never the message box, where the next key, say the
    /// cancel key, would become text).
    pub(crate) fn leave_empty_queue(&mut self) {
        if self.approvals.is_empty() && self.focus == Focus::Approvals {
            self.set_focus(Focus::Conversation);
        }
    }

    pub fn zoomed(&self) -> Option<Focus> {
        self.zoom
    }

    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Ask before quitting because quitting leaves `what` behind (remote
    /// managed tmux sessions); None: quit at once.
    pub fn set_ask_on_exit(&mut self, what: Option<String>) {
        self.ask_on_exit = what;
    }

    /// How the operator left (see [`Leaving`]); stopping keeps remote
    /// sessions unless the operator chose to remove them.
    pub fn leaving(&self) -> Leaving {
        self.exit_choice.clone()
    }

    pub fn is_running(&self) -> bool {
        self.status.is_running()
    }

    /// Approvals that wait for an answer (the title shows the count).
    pub fn waiting(&self) -> usize {
        self.approvals.unanswered()
    }

    /// The newest approval waiting, as one line for a desktop notification.
    pub fn newest_waiting(&self) -> Option<String> {
        self.approvals
            .newest_open()
            .map(|r| format!("{} wants to run {}", r.tool, r.gate.action))
    }

    /// True once per approval that arrived since the last call.
    pub fn take_bell(&mut self) -> bool {
        std::mem::take(&mut self.bell)
    }

    /// Text the operator copied since the last call (the loop writes it to
    /// the terminal as OSC 52).
    pub fn take_clipboard(&mut self) -> Option<String> {
        self.clipboard.take()
    }

    /// File work requested since the last call (run it off the UI task and
    /// hand the results to [`App::on_io`]).
    pub fn take_io(&mut self) -> Vec<IoRequest> {
        std::mem::take(&mut self.io)
    }

    /// Advance the clock; true when what is shown changed (elapsed seconds,
    /// a timed policy's minutes).
    pub fn tick(&mut self, now: Instant) -> bool {
        let before = (
            self.status.elapsed_secs(self.now),
            self.status.policy_minutes_left(self.now),
        );
        self.now = now;
        (
            self.status.elapsed_secs(now),
            self.status.policy_minutes_left(now),
        ) != before
    }

    /// True when the clock must be checked soon (a turn or a timed policy).
    pub fn needs_tick(&self) -> bool {
        self.status.is_running() || self.status.policy_until.is_some()
    }

    /// Record a message sent on the operator's behalf (the initial message).
    pub fn note_sent(&mut self, text: &str) {
        self.conversation.queue_user(text);
    }

    /// The mirror pane, for whoever captures the tmux pane.
    pub fn mirror_mut(&mut self) -> &mut MirrorPane {
        &mut self.mirror
    }

    /// Copy a call's state from the tools pane into the history.
    pub(crate) fn track(&mut self, call_id: &str) {
        if let Some(c) = self.tools.call(call_id) {
            self.history
                .track(&c.call_id, &c.name, &c.summary, &c.status);
            self.history.set_decided(&c.call_id, c.decided.as_deref());
        }
    }

    /// A finished file job.
    pub fn on_io(&mut self, result: IoResult) {
        match result {
            IoResult::Loaded { call_id, result } => {
                if let Overlay::History {
                    viewer: Some(viewer),
                } = &mut self.overlay
                    && viewer.call_id == call_id
                {
                    match result {
                        Ok(content) => viewer.set_content(content),
                        Err(why) => {
                            viewer.state = crate::panes::viewer::State::Failed(why);
                        }
                    }
                }
            }
            IoResult::Saved { path, result } => {
                self.flash = Some(match result {
                    Ok(n) => format!("saved {n} bytes to {}", path.display()),
                    Err(e) => format!("could not save to {}: {e}", path.display()),
                });
            }
        }
    }
}

fn default_theme() -> &'static Theme {
    static DEFAULT: std::sync::OnceLock<Theme> = std::sync::OnceLock::new();
    DEFAULT.get_or_init(Theme::default)
}
