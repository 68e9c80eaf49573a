//! The key→frame probe of the flood bench: a `Z` typed into the console's
//! input box with tmux send-keys until capture-pane shows it, the same
//! probe with nothing running (idle) and beside a bare flood (the floor),
//! and the screen watch that notes when the turn's end first showed.

use std::process::Command;
use std::time::{Duration, Instant};

use super::Tmux;

/// Screen captures of the console that note when the turn's end first
/// showed (the time the capture that showed it returned).
pub struct Watch {
    pub start: Instant,
    pub done: Option<Duration>,
}

impl Watch {
    pub fn look(&mut self, t: &Tmux) -> String {
        let s = t.screen("c");
        if self.done.is_none() && s.contains("FLOOD-DONE") {
            self.done = Some(self.start.elapsed());
        }
        s
    }

    /// Watch the screen for `d` (a capture every ~5 ms).
    pub fn pause(&mut self, t: &Tmux, d: Duration) {
        let until = Instant::now() + d;
        while self.done.is_none() && Instant::now() < until {
            self.look(t);
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Type one more `Z` (the `typed`-th) and wait until the screen shows
/// `typed` of them; `None` when the turn ended first or it took over 10 s.
pub fn probe_key(t: &Tmux, typed: usize, watch: &mut Watch) -> Option<Duration> {
    let sent = Instant::now();
    t.run(&["send-keys", "-t", "c", "-l", "Z"]);
    let want = "Z".repeat(typed);
    loop {
        let s = watch.look(t);
        if s.contains(&want) {
            return Some(sent.elapsed());
        }
        if sent.elapsed() > Duration::from_secs(10) || watch.done.is_some() {
            return None;
        }
    }
}

/// Key→frame with nothing running, by the same method: the floor of what
/// this probe can see on this machine at this moment.
pub fn idle_keys(t: &Tmux) -> Vec<Duration> {
    let mut watch = Watch {
        start: Instant::now(),
        done: None,
    };
    let keys = (1..=20)
        .filter_map(|i| {
            let d = probe_key(t, i, &mut watch);
            std::thread::sleep(Duration::from_millis(30));
            d
        })
        .collect();
    clear_input(t, 20);
    keys
}

/// The bare flood [`beside_keys`] runs: the command's bytes stored in a
/// file as each mode stores them — written by the command itself (tmux
/// mode: the pane's shell redirects to a file) or read from a pipe and
/// written by another process (plain mode).
pub fn beside_script(n: u64, piped: bool, file: &std::path::Path) -> String {
    let store = if piped { "| cat >" } else { ">" };
    format!("seq 1 {n} {store} '{}'", file.display())
}

/// Key→frame while the same command runs outside vigil, vigil idle
/// ([`beside_script`]), started again whenever it ends, until 20 keys were
/// probed. What the flood itself costs the keys on this machine at this
/// moment: the floor for the key→frame figures during vigil's own flood.
pub fn beside_keys(t: &Tmux, n: u64, piped: bool) -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = beside_script(n, piped, &dir.path().join("out"));
    let mut watch = Watch {
        start: Instant::now(),
        done: None,
    };
    let mut keys = Vec::new();
    let mut typed = 0usize;
    let mut flood: Option<std::process::Child> = None;
    while keys.len() < 20 {
        if flood
            .as_mut()
            .is_none_or(|c| c.try_wait().ok().flatten().is_some())
        {
            let child = Command::new("sh").args(["-c", &script]).spawn();
            flood = Some(child.expect("sh"));
        }
        if typed >= 40 {
            clear_input(t, typed);
            typed = 0;
            continue;
        }
        typed += 1;
        keys.extend(probe_key(t, typed, &mut watch));
        std::thread::sleep(Duration::from_millis(30));
    }
    if let Some(mut c) = flood {
        let _ = c.wait();
    }
    clear_input(t, typed);
    keys
}

/// Erase the `typed` probe keys from the input box (Backspace: the input
/// box has no kill-line key) and wait until no `Z` is left on screen, so
/// the next probe cannot match an old one.
pub fn clear_input(t: &Tmux, typed: usize) {
    t.run(&["send-keys", "-t", "c", "-N", &typed.to_string(), "BSpace"]);
    let start = Instant::now();
    while t.screen("c").contains('Z') && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
}
