//! What a run keeps of its two output streams while they arrive: every
//! byte (small helper commands) or a [`Capture`]'s windows with the rest on
//! its way to a spill file, and the decoder that hands the live view valid
//! UTF-8 only. Shared by the pipe reader ([`super::process`]), the file
//! follower ([`super::follow`]) and the tmux streamer.
//!
//! It holds bytes and counts; it never starts, reads or kills a process.

use super::capture::{Capture, Captured, Retain};

/// Turns byte chunks into valid UTF-8 text, holding back an incomplete
/// multi-byte sequence at the end of a chunk until the next one arrives.
#[derive(Debug, Default)]
pub struct Utf8Chunker {
    pending: Vec<u8>,
}

impl Utf8Chunker {
    /// Add bytes; returns the text that is complete so far. Bytes that can
    /// never be valid become U+FFFD; an incomplete tail is kept.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        if self.pending.is_empty() {
            // The common case: a chunk that is whole UTF-8 is copied once.
            if let Ok(text) = std::str::from_utf8(bytes) {
                return text.to_string();
            }
        }
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // The prefix is valid by construction.
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                    }
                }
            }
        }
    }

    /// End of stream: whatever is still held back becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        rest
    }
}

/// Where one stream's bytes go: all of them in memory (helpers), or a
/// [`Capture`] that keeps windows and streams the rest to a spill file.
pub enum Store {
    All(Vec<u8>),
    Capture(Box<Capture>),
}

impl Store {
    /// The stores for stdout and stderr a request asks for.
    pub fn pair(retain: Option<&Retain>) -> [Store; 2] {
        let one = |i: usize| match retain {
            None => Store::All(Vec::new()),
            Some(r) => Store::Capture(Box::new(Capture::new(
                r.window,
                r.spill_dir.clone().map(|d| (d, r.labels[i].clone())),
            ))),
        };
        [one(0), one(1)]
    }

    pub fn push(&mut self, bytes: &[u8]) {
        match self {
            Store::All(v) => v.extend_from_slice(bytes),
            Store::Capture(c) => c.push(bytes),
        }
    }

    /// The bytes for `RunOutcome::stdout` / `stderr` and, for a capture,
    /// what it kept.
    pub(crate) fn finish(self) -> (Vec<u8>, Option<Captured>) {
        match self {
            Store::All(v) => (v, None),
            Store::Capture(c) => {
                let done = c.finish();
                (done.head.clone(), Some(done))
            }
        }
    }
}
