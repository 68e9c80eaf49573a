//! What vigil keeps for one managed pane across the runs in it: the run
//! lock, whether the shell must be probed before typing, a detached
//! command, notes for the next result, and the names vigil's own commands
//! there assigned or defined (the only ones a trial replays).
//!
//! Bookkeeping only: it never talks to tmux.

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use super::manager::lock;

/// Per-pane bookkeeping shared by the runs in that pane.
#[derive(Default)]
pub struct PaneSlot {
    /// Held for the whole of one command: a pane runs one command at a time.
    pub run: tokio::sync::Mutex<()>,
    /// The shell may not be at its prompt (after a cancel, a timeout or a
    /// fresh start): confirm with a probe before typing.
    pub dirty: AtomicBool,
    /// The agent typed keys somewhere (send-keys): the shell may sit at a
    /// continuation prompt. Probed like `dirty`, but only while a shell is in
    /// the foreground, so a program started with keys is never interrupted.
    pub typed: AtomicBool,
    /// A detached command still believed to run: (token, command, when).
    pub busy: Mutex<Option<(String, String, std::time::Instant)>>,
    /// Notes for the next command's result.
    pub notes: Mutex<Vec<String>>,
    /// Variables vigil's own commands in this pane assigned a value
    /// written in the text (`X=1`, `export X=…`): with the environment's
    /// allow-list, the only variables of the pane a trial replays
    /// ([`crate::shell_replay`]).
    pub assigned: Mutex<std::collections::BTreeSet<String>>,
    /// Functions and aliases vigil's own commands in this pane defined:
    /// the only ones a capture reads ([`crate::shell_replay::defined_names`]).
    pub defined: Mutex<std::collections::BTreeSet<String>>,
    /// Resolved at least once.
    pub(super) seen: AtomicBool,
    /// vigil started this pane's shell and no probe has answered since: it
    /// may still be reading its rc files, so its first probe waits longer.
    pub(super) fresh: AtomicBool,
}

impl PaneSlot {
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.notes))
    }
    pub fn note(&self, s: String) {
        lock(&self.notes).push(s);
    }
    /// Remember the variables `read` assigns (see [`Self::assigned`]) and
    /// the functions and aliases it defines (see [`Self::defined`]).
    pub fn assigns(&self, read: &vigil_shell::Command) {
        lock(&self.assigned).extend(crate::shell_replay::assigned_names(read));
        lock(&self.defined).extend(crate::shell_replay::defined_names(read));
    }
    /// The functions and aliases vigil's commands here defined.
    pub fn defined_names(&self) -> Vec<String> {
        lock(&self.defined).iter().cloned().collect()
    }
    /// Whether one of vigil's commands here assigned `name`.
    pub fn assigned(&self, name: &str) -> bool {
        lock(&self.assigned).contains(name)
    }
}
