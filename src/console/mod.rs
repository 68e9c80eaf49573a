//! The operator console (ratatui). It renders agent events and sends
//! commands; it never executes anything and never awaits the agent.
//!
//! - [`run`] sets up the terminal ([`terminal`]), runs the one event loop
//!   ([`event_loop`]) and always restores the terminal.
//! - [`app::App`] holds the pane states and all state transitions; it is
//!   testable without a terminal.
//! - [`panes`] has one file per pane; [`text`] neutralises foreign text.

pub mod app;
pub mod event_loop;
pub mod panes;
pub mod terminal;
pub mod text;

#[cfg(test)]
mod app_tests;
#[cfg(test)]
mod snapshot_tests;

use std::time::Instant;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::event::{AgentCommand, AgentEvent};

/// How the console behaves. Model and target come from `SessionStarted`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleOptions {
    /// Sent as `AgentCommand::UserMessage` right after start (the demo uses it).
    pub initial_message: Option<String>,
    /// Draw at most this many frames per second.
    pub fps_cap: u32,
    /// Ring the terminal bell when an approval arrives.
    pub bell: bool,
}

impl Default for ConsoleOptions {
    fn default() -> Self {
        ConsoleOptions {
            initial_message: None,
            fps_cap: 60,
            bell: true,
        }
    }
}

/// Run the console until the operator quits or the terminal fails.
///
/// Takes over the terminal (alternate screen, raw mode, bracketed paste),
/// restores it on every exit path including panics, and sends
/// `AgentCommand::Quit` when it ends.
pub async fn run(
    mut events: UnboundedReceiver<AgentEvent>,
    commands: UnboundedSender<AgentCommand>,
    opts: ConsoleOptions,
) -> std::io::Result<()> {
    let guard = terminal::TerminalGuard::enter()?;
    let result = async {
        let mut term = terminal::new_terminal()?;
        let mut app = app::App::new(Instant::now());
        if let Some(text) = opts.initial_message.clone() {
            app.note_sent(&text);
            // The agent may already be gone; the console still shows why.
            let _ = commands.send(AgentCommand::UserMessage { text });
        }
        event_loop::run(&mut term, &mut app, &mut events, &commands, &opts).await
    }
    .await;
    let _ = commands.send(AgentCommand::Quit);
    drop(guard);
    result
}
