//! Helpers shared by the end-to-end tests: a private tmux server to run the
//! real binary in (send keys, read the screen), and small polling utilities.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// The `vigil` binary cargo built for these tests.
pub fn vigil_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vigil"))
}

/// A tmux server on a private socket, killed on drop.
pub struct Tmux {
    pub socket: String,
}

impl Tmux {
    pub fn new(tag: &str) -> Tmux {
        let socket = format!(
            "vigil-test-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        Tmux { socket }
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L").arg(&self.socket).arg("-f").arg("/dev/null");
        c
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Start a detached session running `shell_command` in a `width`×`height` pane.
    pub fn start(&self, session: &str, width: u16, height: u16, shell_command: &str) {
        self.ok(&[
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            shell_command,
        ]);
        self.ok(&["set-option", "-t", session, "remain-on-exit", "on"]);
    }

    /// The visible screen of the session's pane.
    pub fn screen(&self, session: &str) -> String {
        self.ok(&["capture-pane", "-p", "-t", session])
    }

    pub fn keys(&self, session: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", session];
        args.extend_from_slice(keys);
        self.ok(&args);
    }

    pub fn type_text(&self, session: &str, text: &str) {
        self.ok(&["send-keys", "-t", session, "-l", "--", text]);
    }

    /// A pane format variable (`#{pane_dead}`, `#{alternate_on}`...).
    pub fn display(&self, session: &str, format: &str) -> String {
        self.ok(&["display-message", "-p", "-t", session, format])
            .trim()
            .to_string()
    }

    /// Wait until the screen satisfies `pred`; panic with the last screen if not.
    pub fn wait_for(
        &self,
        session: &str,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen(session);
            if pred(&screen) {
                return screen;
            }
            if start.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for {what}; screen was:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_text(&self, session: &str, text: &str, timeout: Duration) -> String {
        self.wait_for(session, &format!("`{text}`"), timeout, |s| s.contains(text))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

/// Poll `f` until it returns Some or the timeout passes.
pub fn eventually<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub mod podman;
pub mod sshd;
