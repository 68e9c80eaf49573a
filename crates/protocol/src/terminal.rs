//! A writer for text on its way to a terminal: everything written passes
//! through [`crate::text::sanitize`] before it reaches the inner writer, as
//! it comes (streamed text stays streamed). An escape sequence cut in two
//! by the writes — `\x1b` in one model delta, `]52;c;…\x07` in the next —
//! is held back until it is complete, so no part of it reaches the
//! terminal either way; a UTF-8 character cut in two is held the same way.
//!
//! It never writes anything that did not pass the sanitiser, and holds at
//! most [`MAX_HELD`] bytes (an unfinished sequence longer than that is
//! dropped, as the sanitiser would drop it).

use std::io::{self, Write};

use crate::text::sanitize;

/// The longest unfinished escape sequence held back.
pub const MAX_HELD: usize = 64 * 1024;

/// Sanitises everything written to `inner`.
pub struct SafeWriter<W: Write> {
    inner: W,
    /// An unfinished escape sequence (text) from the last write.
    held: String,
    /// The bytes of a UTF-8 character cut by the last write.
    partial: Vec<u8>,
}

impl<W: Write> SafeWriter<W> {
    pub fn new(inner: W) -> Self {
        SafeWriter {
            inner,
            held: String::new(),
            partial: Vec::new(),
        }
    }

    /// The sanitised text of `text` that can go out now; an unfinished
    /// sequence at its end stays held.
    pub fn push(&mut self, text: &str) -> String {
        self.held.push_str(text);
        let keep = unfinished_from(&self.held).unwrap_or(self.held.len());
        let rest = self.held.split_off(keep);
        let ready = std::mem::replace(&mut self.held, rest);
        if self.held.len() > MAX_HELD {
            self.held.clear();
        }
        by_line(&ready)
    }

    /// Decode `buf` (with the bytes of a cut character left from before).
    fn decode(&mut self, buf: &[u8]) -> String {
        self.partial.extend_from_slice(buf);
        let bytes = std::mem::take(&mut self.partial);
        match std::str::from_utf8(&bytes) {
            Ok(s) => s.to_string(),
            Err(e) if e.error_len().is_none() => {
                let (good, cut) = bytes.split_at(e.valid_up_to());
                self.partial = cut.to_vec();
                String::from_utf8_lossy(good).into_owned()
            }
            Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
        }
    }
}

impl<W: Write> Write for SafeWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = self.decode(buf);
        let safe = self.push(&text);
        self.inner.write_all(safe.as_bytes())?;
        Ok(buf.len())
    }

    /// Flushes what went out; a held unfinished sequence stays held.
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// [`sanitize`] line by line: a sequence left open ends with its line.
fn by_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match line.strip_suffix('\n') {
            Some(body) => {
                out.push_str(&sanitize(body));
                out.push('\n');
            }
            None => out.push_str(&sanitize(line)),
        }
    }
    out
}

/// Where an unfinished escape sequence starts at the end of `s` (None:
/// everything in `s` is complete). A newline ends any sequence.
fn unfinished_from(s: &str) -> Option<usize> {
    let at = s.rfind([
        '\u{1b}', '\u{90}', '\u{98}', '\u{9b}', '\u{9d}', '\u{9e}', '\u{9f}',
    ])?;
    let mut chars = s[at..].chars();
    let intro = chars.next()?;
    let rest = chars.as_str();
    if rest.contains('\n') {
        return None;
    }
    let params_only = |t: &str| t.chars().all(|c| ('\u{20}'..='\u{3f}').contains(&c));
    let unterminated = |t: &str| !t.contains(['\u{7}', '\u{9c}']);
    let open = match intro {
        '\u{1b}' => match rest.chars().next() {
            None => true,
            Some('[') => params_only(&rest[1..]),
            Some(']' | 'P' | 'X' | '^' | '_') => unterminated(&rest[1..]),
            Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
                rest.chars().all(|c| ('\u{20}'..='\u{2f}').contains(&c))
            }
            Some(_) => false,
        },
        '\u{9b}' => params_only(rest),
        _ => unterminated(rest),
    };
    open.then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything `parts` makes the writer put out, written one by one.
    fn through(parts: &[&[u8]]) -> Vec<u8> {
        let mut w = SafeWriter::new(Vec::new());
        for p in parts {
            w.write_all(p).unwrap();
            w.flush().unwrap();
        }
        w.inner
    }

    #[test]
    fn a_sequence_cut_between_writes_never_gets_through() {
        let whole =
            "a\x1b]52;c;aGVsbG8=\x07b\x1b]2;pwned\x1b\\c\x1b[2Jd\x1b[1;1He\u{202e}f\u{9b}2Kg";
        let bytes = whole.as_bytes();
        for cut in 0..=bytes.len() {
            for cut2 in [cut, (cut + 3).min(bytes.len())] {
                let out = through(&[&bytes[..cut], &bytes[cut..cut2], &bytes[cut2..]]);
                let text = String::from_utf8(out).unwrap();
                assert_eq!(text, "abcdefg", "cut at {cut}/{cut2}");
            }
        }
    }

    #[test]
    fn plain_text_streams_at_once_and_a_newline_ends_a_held_sequence() {
        let mut w = SafeWriter::new(Vec::new());
        w.write_all(b"Hello, ").unwrap();
        assert_eq!(w.inner, b"Hello, ");
        w.write_all(b"x\x1b]0;title").unwrap();
        assert_eq!(w.inner, b"Hello, x", "the unfinished OSC is held");
        w.write_all(b" more\nnext line\n").unwrap();
        let text = String::from_utf8(w.inner.clone()).unwrap();
        assert_eq!(text, "Hello, x\nnext line\n");
        // A character cut between writes comes out whole.
        let mut w = SafeWriter::new(Vec::new());
        let e = "é".as_bytes();
        w.write_all(&e[..1]).unwrap();
        w.write_all(&e[1..]).unwrap();
        assert_eq!(w.inner, "é".as_bytes());
    }
}
