//! The bounded output of one tool call: at most [`MAX_LINES_PER_CALL`] lines
//! (each cut at [`MAX_LINE_CHARS`]) plus a count of the lines dropped.
//!
//! Output chunks are appended as text and split into lines only when the
//! lines are read (a frame, the history view). A flood of output thus costs
//! a copy per chunk, not one allocation per line that the next chunk would
//! push out again; between reads the unsplit text is cut back to the lines
//! that can still be shown, so memory stays bounded too.
//!
//! It only stores text; it never renders and never runs anything.

use std::cell::{Ref, RefCell};
use std::collections::VecDeque;

use crate::style::text::truncate_chars;
use vigil_protocol::text::{is_plain, sanitize};

pub const MAX_LINES_PER_CALL: usize = 500;
pub const MAX_LINE_CHARS: usize = 2_000;
/// Unsplit text beyond this many bytes is split at once (one long line
/// without newlines must not grow without bound).
const MAX_PENDING_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineKind {
    #[default]
    Stdout,
    Stderr,
    Info,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLine {
    pub kind: LineKind,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct LineStore {
    inner: RefCell<Inner>,
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Inner {
    lines: VecDeque<OutputLine>,
    /// Lines dropped from the front to respect the bound.
    dropped: usize,
    /// The last stored line has no newline yet.
    open: bool,
    /// Sanitized text of kind `pending_kind` not split into lines yet.
    pending: String,
    pending_kind: LineKind,
    pending_newlines: usize,
}

impl LineStore {
    /// Append output of `kind` (sanitized here).
    pub fn append(&mut self, kind: LineKind, text: &str) {
        let inner = self.inner.get_mut();
        if !inner.pending.is_empty() && inner.pending_kind != kind {
            inner.flush();
        }
        inner.pending_kind = kind;
        let start = inner.pending.len();
        if is_plain(text) {
            inner.pending.push_str(text);
        } else {
            inner.pending.push_str(&sanitize(text));
        }
        inner.pending_newlines += count_newlines(&inner.pending.as_bytes()[start..]);
        if inner.pending_newlines > 2 * MAX_LINES_PER_CALL {
            inner.cut_pending();
        }
        if inner.pending.len() > MAX_PENDING_BYTES {
            inner.flush();
        }
    }

    /// End the open line, if any (the next output starts a new line).
    pub fn close_line(&mut self) {
        let inner = self.inner.get_mut();
        inner.flush();
        inner.open = false;
    }

    /// The stored lines, oldest first.
    pub fn lines(&self) -> Ref<'_, VecDeque<OutputLine>> {
        self.settle();
        Ref::map(self.inner.borrow(), |i| &i.lines)
    }

    /// Lines dropped from the front.
    pub fn dropped(&self) -> usize {
        self.settle();
        self.inner.borrow().dropped
    }

    /// Split pending text into lines.
    pub fn settle(&self) {
        let needed = !self.inner.borrow().pending.is_empty();
        if needed {
            self.inner.borrow_mut().flush();
        }
    }
}

fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| **b == b'\n').count()
}

impl Inner {
    /// Pending text holds more complete lines than can be shown: every
    /// stored line and all but the last [`MAX_LINES_PER_CALL`] pending lines
    /// would be pushed out, so count them as dropped now.
    fn cut_pending(&mut self) {
        let excess = self.pending_newlines - MAX_LINES_PER_CALL;
        // Byte just after the `excess`-th newline.
        let mut seen = 0;
        let mut cut = 0;
        for (i, b) in self.pending.bytes().enumerate() {
            if b == b'\n' {
                seen += 1;
                if seen == excess {
                    cut = i + 1;
                    break;
                }
            }
        }
        // The first pending line continues the open stored line: they are
        // one line, counted once.
        let merged = self.open
            && self
                .lines
                .back()
                .is_some_and(|l| l.kind == self.pending_kind);
        self.dropped += self.lines.len() + excess - usize::from(merged);
        self.lines.clear();
        self.open = false;
        self.pending.drain(..cut);
        self.pending_newlines = MAX_LINES_PER_CALL;
    }

    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        self.pending_newlines = 0;
        self.split_in(self.pending_kind, &pending);
        // Keep the buffer's capacity for the next chunks.
        self.pending = pending;
        self.pending.clear();
    }

    fn push_line(&mut self, kind: LineKind, text: &str) {
        self.lines.push_back(OutputLine {
            kind,
            text: truncate_chars(text, MAX_LINE_CHARS),
        });
        if self.lines.len() > MAX_LINES_PER_CALL {
            self.lines.pop_front();
            self.dropped += 1;
        }
    }

    fn split_in(&mut self, kind: LineKind, clean: &str) {
        let parts: Vec<&str> = clean.split('\n').collect();
        let last_index = parts.len() - 1;
        // Lines that would only be pushed out again by this same text are
        // counted as dropped without being stored.
        let skip_to = last_index.saturating_sub(MAX_LINES_PER_CALL);
        if skip_to > 1 {
            self.dropped += skip_to - 1;
        }
        for (i, part) in parts.into_iter().enumerate() {
            if i >= 1 && i < skip_to {
                continue;
            }
            if i == last_index && part.is_empty() {
                // Text ended with a newline (or was empty): nothing left open.
                if i > 0 {
                    self.open = false;
                }
                break;
            }
            let continues = i == 0 && self.open;
            match self.lines.back_mut() {
                Some(line) if continues && line.kind == kind => {
                    if line.text.chars().count() < MAX_LINE_CHARS {
                        line.text.push_str(part);
                        line.text = truncate_chars(&line.text, MAX_LINE_CHARS);
                    }
                }
                _ => self.push_line(kind, part),
            }
            self.open = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &LineStore) -> Vec<String> {
        s.lines().iter().map(|l| l.text.clone()).collect()
    }

    /// The same output fed in different chunkings stores the same lines and
    /// counts the same drops (the eager, line-by-line reference included).
    #[test]
    fn chunking_does_not_change_the_result() {
        let text: String = (0..3_000).map(|i| format!("line {i}\n")).collect();
        let text = format!("{text}tail without newline");
        let mut reference = LineStore::default();
        reference.append(LineKind::Stdout, "open start ");
        for c in text.split_inclusive('\n') {
            reference.append(LineKind::Stdout, c);
            reference.settle();
        }
        for chunk in [1, 7, 100, 8192, text.len()] {
            let mut s = LineStore::default();
            s.append(LineKind::Stdout, "open start ");
            assert_eq!(texts(&s), ["open start "]);
            let bytes = text.as_bytes();
            for part in bytes.chunks(chunk) {
                s.append(LineKind::Stdout, std::str::from_utf8(part).unwrap());
            }
            assert_eq!(s.lines().len(), MAX_LINES_PER_CALL, "chunk {chunk}");
            assert_eq!(texts(&s), texts(&reference), "chunk {chunk}");
            assert_eq!(s.dropped(), reference.dropped(), "chunk {chunk}");
        }
    }

    #[test]
    fn streams_do_not_merge_and_control_text_is_cleaned() {
        let mut s = LineStore::default();
        s.append(LineKind::Stdout, "out");
        s.append(LineKind::Stderr, "err\x1b[2J\n");
        s.append(LineKind::Stdout, "more\n");
        let kinds: Vec<LineKind> = s.lines().iter().map(|l| l.kind).collect();
        assert_eq!(
            kinds,
            [LineKind::Stdout, LineKind::Stderr, LineKind::Stdout]
        );
        assert_eq!(texts(&s), ["out", "err", "more"]);
        s.close_line();
        assert_eq!(s.dropped(), 0);
    }

    #[test]
    fn a_long_line_without_newlines_stays_bounded() {
        let mut s = LineStore::default();
        let chunk = "x".repeat(64 * 1024);
        for _ in 0..64 {
            s.append(LineKind::Stdout, &chunk);
        }
        assert!(s.inner.borrow().pending.len() <= MAX_PENDING_BYTES + chunk.len());
        let lines = s.lines();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].text.chars().count() <= MAX_LINE_CHARS + 1);
    }
}
