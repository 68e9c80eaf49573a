//! Terminal setup and restore: raw mode, alternate screen, bracketed paste
//! and mouse capture on entry; a guard that undoes them on drop; a panic hook that restores the
//! terminal before the default hook prints the panic.
//!
//! It never draws and never reads input.

use std::io::{self, Stdout, Write};
use std::sync::Once;

use crossterm::cursor::Show;
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::execute;
use crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub type ConsoleTerminal = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal when dropped (on return, error or unwinding panic).
#[derive(Debug)]
pub struct TerminalGuard {
    _private: (),
}

impl TerminalGuard {
    /// Install the panic hook, enter raw mode and the alternate screen.
    pub fn enter() -> io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        // From here on, dropping the guard undoes whatever was done.
        let guard = TerminalGuard { _private: () };
        // Clear with an escape sequence: ratatui's `Terminal::clear` asks the
        // terminal for the cursor position, which not every terminal answers.
        execute!(
            io::stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture,
            Clear(ClearType::All)
        )?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = restore();
    }
}

/// A ratatui terminal on stdout.
pub fn new_terminal() -> io::Result<ConsoleTerminal> {
    Terminal::new(CrosstermBackend::new(io::stdout()))
}

/// Leave raw mode and the alternate screen and show the cursor. Safe to call
/// more than once.
pub fn restore() -> io::Result<()> {
    let raw = disable_raw_mode();
    let mut out = io::stdout();
    let screen = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        Show
    );
    let _ = out.flush();
    raw.and(screen)
}

/// Restore the terminal before the previous hook prints, so the panic message
/// lands on the normal screen. Installed once per process.
pub fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = restore();
            previous(info);
        }));
    });
}
