//! Terminal setup and restore: raw mode, alternate screen, bracketed paste
//! and mouse capture on entry; a guard that undoes them on drop; a panic hook that restores the
//! terminal before the default hook prints the panic.
//!
//! It never draws and never reads input.

pub mod event_loop;
pub mod fault;
pub mod notify;
pub mod passthrough;

use std::io::{self, Stdout, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Whether the terminal is in vigil's modes (between [`TerminalGuard::enter`]
/// and the first [`restore`]).
static ENTERED: AtomicBool = AtomicBool::new(false);
/// The console's title is on the terminal (pushed with the old one saved).
static TITLED: AtomicBool = AtomicBool::new(false);

/// Say whether the console's title is on the terminal, so that a restore
/// after a panic puts back what the console changed ([`restore`]).
pub fn set_titled(on: bool) {
    TITLED.store(on, Ordering::SeqCst);
}

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
        ENTERED.store(true, Ordering::SeqCst);
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
/// more than once: only the first call after [`TerminalGuard::enter`] writes
/// (a second "leave alternate screen" would move the cursor back to where it
/// was on entry, and the next output would overwrite a panic message).
pub fn restore() -> io::Result<()> {
    if !ENTERED.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let raw = disable_raw_mode();
    let mut out = io::stdout();
    if TITLED.swap(false, Ordering::SeqCst) {
        // No stale "N waiting" left in the title (where the terminal keeps
        // no title stack), then the title from before the console.
        let _ = write!(
            out,
            "{}{}",
            crate::terminal::notify::set_title(0),
            crate::terminal::notify::POP_TITLE
        );
    }
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

/// Told after a panic on the console's thread unwinds out of the console.
pub const CRASH_NOTE: &str = "vigil: internal error (above); the terminal was restored and \
the agent keeps working: `vigil attach --last` returns to it (and once it is gone, the recorded \
session is kept: `vigil resume --last` continues it)";

/// Restore the terminal before the previous hook prints, so the panic message
/// lands on the normal screen, then say what survives when it is the
/// console's own thread (`main`) that panicked. A panic on another thread while
/// the console is up goes to the log only: the console keeps the terminal and
/// says "the agent stopped" when the agent task is what died. Installed once
/// per process.
pub fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let console_thread = std::thread::current().name() == Some("main");
            if !console_thread && ENTERED.load(Ordering::SeqCst) {
                // A worker (the agent task, a tool) panicked while the console
                // is up: the console keeps the terminal and reports the task's
                // end itself; printing here would scribble over the screen.
                tracing::error!(target: "vigil::panic", "{info}");
                return;
            }
            let _ = restore();
            previous(info);
            if console_thread {
                eprintln!("{CRASH_NOTE}");
            }
        }));
    });
}
