//! Text hygiene for anything vigil shows on a terminal: escape sequences
//! (CSI, OSC, DCS and friends, 7- and 8-bit), control characters other
//! than `\n`, and bidi overrides are removed, tabs expanded. One function,
//! [`sanitize`], used by the console's panes and by every line the command
//! line prints (`vigil exec`, `sessions`, `ps`, `policy check`, `audit
//! export`), so the same text is harmless in both.
//!
//! [`json_for_terminal`] is its form for JSON lines: the characters a
//! terminal would act on are written as `\uXXXX` escapes, so the line
//! still reads as the same JSON values.
//!
//! Pure functions: nothing here writes to a terminal.

use std::iter::Peekable;
use std::str::Chars;

use unicode_width::UnicodeWidthStr;

/// Tab stops every this many columns.
pub const TAB_WIDTH: usize = 4;

/// Remove escape sequences (CSI, OSC, DCS and friends, 7- and 8-bit), control
/// characters other than `\n`, and bidi overrides; expand tabs to spaces.
pub fn sanitize(input: &str) -> String {
    // Fast path for the common case (plain printable ASCII lines), which a
    // flood of command output mostly is.
    if is_plain(input) {
        return input.to_string();
    }
    let mut out = String::with_capacity(input.len());
    let mut col = 0usize;
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                out.push('\n');
                col = 0;
            }
            '\t' => {
                let n = TAB_WIDTH - col % TAB_WIDTH;
                out.extend(std::iter::repeat_n(' ', n));
                col += n;
            }
            '\u{1b}' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() || is_bidi_control(c) => {}
            c => {
                out.push(c);
                col += char_width(c);
            }
        }
    }
    out
}

/// Whether `input` is printable ASCII and newlines only, which
/// [`sanitize`] leaves as it is.
pub fn is_plain(input: &str) -> bool {
    let plain = |b: u8| b == b'\n' || (0x20..0x7f).contains(&b);
    // Whole blocks without an early exit inside, so the check vectorizes.
    let mut blocks = input.as_bytes().chunks_exact(64);
    for block in &mut blocks {
        if !block.iter().fold(true, |ok, &b| ok & plain(b)) {
            return false;
        }
    }
    blocks.remainder().iter().all(|&b| plain(b))
}

/// Bidirectional overrides and isolates can make text display differently
/// from what it is (a command that reads safe but is not).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

fn skip_escape(chars: &mut Peekable<Chars<'_>>) {
    match chars.peek().copied() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            skip_string(chars);
        }
        Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
            // nF sequence: intermediates then one final byte.
            while chars
                .next_if(|c| ('\u{20}'..='\u{2f}').contains(c))
                .is_some()
            {}
            chars.next_if(|c| ('\u{30}'..='\u{7e}').contains(c));
        }
        Some(c) if ('\u{30}'..='\u{7e}').contains(&c) => {
            chars.next();
        }
        _ => {}
    }
}

fn skip_csi(chars: &mut Peekable<Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        if ('\u{20}'..='\u{3f}').contains(&c) {
            chars.next();
        } else {
            if ('\u{40}'..='\u{7e}').contains(&c) {
                chars.next();
            }
            return;
        }
    }
}

fn skip_string(chars: &mut Peekable<Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

/// Display width of one character (0 for combining marks and controls).
pub fn char_width(c: char) -> usize {
    let mut buf = [0u8; 4];
    UnicodeWidthStr::width(&*c.encode_utf8(&mut buf))
}

/// A JSON line safe to print on a terminal and still the same JSON: every
/// control character (C0, DEL, C1), bidi control and line or paragraph
/// separator is written as a `\uXXXX` escape. Outside strings JSON holds
/// none of them, and inside a string the escape reads as the same
/// character; serde_json already escapes C0 controls, so only the others
/// change.
pub fn json_for_terminal(line: &str) -> String {
    let risky =
        |c: char| c.is_control() || is_bidi_control(c) || matches!(c, '\u{2028}' | '\u{2029}');
    if !line.chars().any(risky) {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        if risky(c) && c != '\n' {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escape_sequences_and_controls() {
        assert_eq!(sanitize("\x1b[31mred\x1b[0m"), "red");
        assert_eq!(sanitize("a\x1b]0;title\x07b"), "ab");
        assert_eq!(sanitize("a\x1b]52;c;aGk=\x07b"), "ab");
        assert_eq!(
            sanitize("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b"),
            "alinkb"
        );
        assert_eq!(sanitize("x\x1b(By"), "xy");
        assert_eq!(sanitize("x\x1bcy"), "xy");
        assert_eq!(sanitize("one\r\ntwo\x07\x08"), "one\ntwo");
        assert_eq!(sanitize("a\u{9b}2Jb"), "ab");
        assert_eq!(sanitize("safe\u{202e}txt.exe"), "safetxt.exe");
        assert_eq!(sanitize("trailing\x1b"), "trailing");
    }

    #[test]
    fn expands_tabs_to_stops() {
        assert_eq!(sanitize("a\tb"), "a   b");
        assert_eq!(sanitize("abcd\tb"), "abcd    b");
        assert_eq!(sanitize("x\n\ty"), "x\n    y");
    }

    #[test]
    fn plain_means_printable_ascii_and_newlines_in_any_block() {
        let long = "a".repeat(200);
        assert!(is_plain(&long));
        assert!(is_plain(&format!("{long}\n{long}")));
        for at in [0, 63, 64, 130, 199] {
            let mut s = long.clone().into_bytes();
            s[at] = b'\t';
            assert!(!is_plain(std::str::from_utf8(&s).unwrap()), "tab at {at}");
        }
        assert!(!is_plain(&format!("{long}é")));
        assert!(!is_plain("\x1b[2J"));
    }

    #[test]
    fn json_for_a_terminal_reads_back_as_the_same_values() {
        let value =
            serde_json::json!({"a": "x\u{1b}]52;c;aGk=\u{7}y\u{202e}z\u{9b}2J\u{7f}é\u{2028}"});
        let line = serde_json::to_string(&value).unwrap();
        let safe = json_for_terminal(&line);
        assert!(
            !safe
                .chars()
                .any(|c| c.is_control() || is_bidi_control(c) || c == '\u{2028}'),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        assert_eq!(
            json_for_terminal(r#"{"a":"plain é"}"#),
            r#"{"a":"plain é"}"#
        );
    }
}
