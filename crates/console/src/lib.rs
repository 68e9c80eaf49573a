//! The operator console (ratatui). It renders agent events and sends
//! commands; it never executes anything and never awaits the agent. It is
//! a client of `vigil_protocol` and knows no other layer but the config.
//!
//! - [`run`] sets up the terminal, runs the one event loop and always
//!   restores the terminal ([`terminal`]: the loop, faults, passthrough of
//!   keys to the mirrored pane, title and desktop notifications).
//! - [`app`] holds the pane states and every state transition (keys,
//!   drawing, history, restore, fleet, leaving); it is testable without a
//!   terminal.
//! - [`panes`] has one file per pane and overlay; [`views`] lays out what
//!   sits inside them (a file change's diff, a preview card, markdown).
//! - [`style`] holds the themes and the text helpers that neutralise
//!   foreign text; [`keys`] the configurable bindings; [`io`] is the only
//!   file I/O, run off the UI task.
//! - `tests/` drives the App key by key and keeps the snapshot tests.
//!
//! # Panes and layers
//!
//! Every pane, overlay and modal implements one trait,
//! [`panes::pane::Pane`]:
//!
//! - `handle_key(&mut self, key, ctx) -> Outcome`: [`Consumed`], [`Ignored`]
//!   (the next layer down gets the key) or [`Action`] (something only the
//!   App can do: send a command, open a view, answer an approval);
//! - `commands(&self, ctx) -> Vec<Command>`: the keys it answers, each with
//!   its label. The footer is written from these and nothing else, and a
//!   test presses every one of them on the layer that offers it;
//! - `render(&self, frame, area, look)`: drawing never changes state.
//!
//! The App stacks the layers and routes every key in one place
//! (`app::keys`), top first, stopping at the first layer that does not
//! ignore the key ([`app::keys::Layer`] lists them in this order):
//!
//! 1. passthrough (typing into the mirrored pane takes every key);
//! 2. Ctrl-C, which always leaves;
//! 3. the detach / stop question, the keep / remove question, a modal;
//! 4. the open overlay (help, history, viewer, rules, agents);
//! 5. a watcher's refusal of keys that would act on the agent;
//! 6. the focused pane (its own keys and the bound keys it offers);
//! 7. the global keys (every other binding in the keymap).
//!
//! Layers 1 and 3–4 take every key while open, so nothing behind a modal
//! ever acts. What a layer's action does is in `app::actions`; no other
//! file looks at a key.
//!
//! [`Consumed`]: panes::pane::Outcome::Consumed
//! [`Ignored`]: panes::pane::Outcome::Ignored
//! [`Action`]: panes::pane::Outcome::Action

pub mod app;
pub mod io;
pub mod keys;
pub mod panes;
pub mod style;
pub mod terminal;
pub mod views;

#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::time::Instant;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;

use keys::Keymap;
use style::theme::{self, Theme};
use terminal::{event_loop, notify};
use vigil_client::{FleetFeed, Leaving};
use vigil_config::ConsoleConfig;
use vigil_protocol::{AgentCommand, AgentEvent, ApprovalPolicy};

/// How the console behaves. Model and target come from `SessionStarted`.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// Sent as `AgentCommand::UserMessage` right after start (the demo uses it).
    pub initial_message: Option<String>,
    /// Draw at most this many frames per second.
    pub fps_cap: u32,
    /// Ring the terminal bell when an approval arrives.
    pub bell: bool,
    /// Key bindings in force.
    pub keys: Keymap,
    /// Themes the theme key cycles through; the first is used at start.
    pub themes: Vec<Theme>,
    /// The approval policy the agent started with (for the status bar).
    pub initial_policy: Option<ApprovalPolicy>,
    /// Where "save output" proposes to write (default: the current dir).
    pub save_dir: Option<PathBuf>,
    /// The latest capture of the managed pane, kept fresh by the agent side
    /// (`app::Running::mirror`); the console only reads it.
    pub mirror: Option<watch::Receiver<String>>,
    /// Quitting leaves this behind (remote managed tmux sessions): ask the
    /// operator to keep or remove it first. None: quit at once.
    pub ask_on_exit: Option<String>,
    /// A client of an agent process: the detach key works and `q` asks
    /// detach / stop the agent / cancel. False: the agent lives in this
    /// process and leaving stops it.
    pub attached: bool,
    /// Read-only (`vigil attach --watch`): approval keys, typing, pasting
    /// and passthrough are refused with a visible "watching: read-only".
    pub watch: bool,
    /// The title with the waiting count and the desktop notification
    /// (`[notify]`, see [`ConsoleOptions::apply_notify`]).
    pub notify: notify::NotifyOptions,
    /// The other agents (the agents overlay, their calls in the approval
    /// queue). None: this console sees its own agent only.
    pub fleet: Option<FleetFeed>,
}

impl Default for ConsoleOptions {
    fn default() -> Self {
        ConsoleOptions {
            initial_message: None,
            fps_cap: 60,
            bell: true,
            keys: Keymap::default(),
            themes: vec![Theme::default()],
            initial_policy: None,
            save_dir: None,
            mirror: None,
            ask_on_exit: None,
            attached: false,
            watch: false,
            notify: notify::NotifyOptions::default(),
            fleet: None,
        }
    }
}

impl ConsoleOptions {
    /// Options from `[console]`: key bindings, the configured theme (from
    /// `<config dir>/themes/` or the built-ins) followed by the other
    /// built-ins for cycling; with `no_color` (or `NO_COLOR` set) only a
    /// colourless version of the configured theme.
    pub fn from_config(cfg: &ConsoleConfig, no_color: bool) -> Result<ConsoleOptions, String> {
        let keys = Keymap::from_config(&cfg.keys).map_err(|e| e.to_string())?;
        let dir = theme::user_config_dir();
        let first = Theme::load(&cfg.theme, dir.as_deref()).map_err(|e| e.to_string())?;
        let themes = if no_color || theme::no_color_env() {
            vec![first.no_color()]
        } else {
            let mut themes = vec![first];
            for (name, _) in theme::BUILTIN {
                if name != cfg.theme {
                    themes.push(Theme::load(name, dir.as_deref()).map_err(|e| e.to_string())?);
                }
            }
            themes
        };
        Ok(ConsoleOptions {
            fps_cap: cfg.fps,
            bell: cfg.bell,
            keys,
            themes,
            ..ConsoleOptions::default()
        })
    }

    /// Take `[notify]` into account for the terminal this process runs in:
    /// the bell rings only when both `[console] bell` and `[notify] bell`
    /// allow it; the title and the desktop notification as configured.
    pub fn apply_notify(&mut self, cfg: &vigil_config::NotifyConfig) {
        self.bell &= cfg.bell;
        self.notify = notify::NotifyOptions::resolve(cfg, &notify::TermEnv::from_process());
    }
}

/// Run the console until the operator leaves or the terminal fails.
///
/// Takes over the terminal (alternate screen, raw mode, bracketed paste),
/// restores it on every exit path including panics, and sends
/// `AgentCommand::Quit` when the operator stops the agent (never on a
/// detach). Returns how the operator left ([`Leaving`]: detach, or stop
/// keeping remote managed sessions unless asked and answered "remove");
/// the caller carries it out.
pub async fn run(
    mut events: UnboundedReceiver<AgentEvent>,
    commands: UnboundedSender<AgentCommand>,
    opts: ConsoleOptions,
) -> std::io::Result<Leaving> {
    let guard = terminal::TerminalGuard::enter()?;
    let result = async {
        let mut term = terminal::new_terminal()?;
        let mut app = app::App::new(Instant::now());
        app.set_keymap(opts.keys.clone());
        app.set_themes(opts.themes.clone());
        if let Some(p) = opts.initial_policy {
            app.set_policy_shown(p);
        }
        app.set_save_dir(opts.save_dir.clone().unwrap_or_else(|| PathBuf::from(".")));
        app.set_ask_on_exit(opts.ask_on_exit.clone());
        app.set_attached(opts.attached);
        app.set_read_only(opts.watch);
        if opts.fleet.is_some() {
            app.enable_fleet();
        }
        if let Some(text) = opts.initial_message.clone().filter(|_| !opts.watch) {
            app.note_sent(&text);
            // The agent may already be gone; the console still shows why.
            let _ = commands.send(AgentCommand::UserMessage { text });
        }
        let mut input = crossterm::event::EventStream::new();
        if opts.notify.title {
            event_loop::write_raw(&mut term, notify::PUSH_TITLE);
            terminal::set_titled(true);
        }
        let ran = event_loop::run(
            &mut term,
            &mut app,
            &mut input,
            &mut events,
            &commands,
            &opts,
        )
        .await;
        if opts.notify.title {
            // Where the title stack is not kept, at least no stale count.
            event_loop::write_raw(&mut term, &notify::set_title(0));
            event_loop::write_raw(&mut term, notify::POP_TITLE);
            terminal::set_titled(false);
        }
        ran?;
        Ok(app.leaving())
    }
    .await;
    // A terminal failure leaves like a killed console: an attached one
    // detaches (nothing lost), an in-process one stops.
    let stop = match &result {
        Ok(how) => matches!(how, Leaving::Stop(_)),
        Err(_) => !opts.attached,
    };
    if stop {
        let _ = commands.send(AgentCommand::Quit);
    }
    drop(guard);
    result
}
