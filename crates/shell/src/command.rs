//! A command text read once: its [`Script`] and the programs it runs
//! ([`Runs`]), made together by [`Command::read`]. The registry reads a
//! call's shell text into one of these and every decision about the call
//! (deny/ask/allow rules, the denylist, hooks, the broker's estimate and
//! prefix choices, the view's eligibility, the tmux guard) reads this same
//! value, so no reader can see another command than the rest.
//!
//! It never runs anything and never decides.

use std::cell::Cell;
use std::sync::Arc;

use super::{Runs, Script, program_runs};

/// Shell text, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The text as the model (or operator) wrote it.
    pub text: String,
    /// Its parse.
    pub script: Script,
    /// Every program it runs, through wrappers and `sh -c` text.
    pub runs: Runs,
}

impl Command {
    /// Parse `text` and tell the programs it runs: the one read every
    /// reader of this command shares.
    pub fn read(text: &str) -> Arc<Command> {
        let script = super::parse(text);
        let runs = program_runs(&script, text);
        Arc::new(Command {
            text: text.to_string(),
            script,
            runs,
        })
    }
}

/// How many texts this thread has parsed (every [`super::parse`], `sh -c`
/// text read again included): what a test of "a call is read once" counts
/// (on a single-threaded runtime).
pub fn parses() -> u64 {
    PARSES.with(Cell::get)
}

thread_local! {
    static PARSES: Cell<u64> = const { Cell::new(0) };
}

pub(super) fn count() {
    PARSES.with(|n| n.set(n.get().saturating_add(1)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_read_parses_once_and_tells_the_programs() {
        let before = parses();
        let c = Command::read("env rm -rf /tmp/x");
        assert_eq!(parses() - before, 1, "one parse for one plain text");
        assert_eq!(c.runs.programs(), vec!["env", "rm"]);
        assert_eq!(c.script.text, c.text);
        let before = parses();
        let nested = Command::read("sh -c 'rm x'");
        // The `sh -c` text is read once more, by the runs.
        assert_eq!(parses() - before, 2);
        assert!(nested.runs.programs().contains(&"rm"));
    }
}
