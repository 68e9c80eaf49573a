//! Output made inert for a terminal: what a contained run printed is shown
//! on a shared pane as text, never as terminal commands (a title, the
//! alternate screen, hidden text, a cursor jump, a bell).
//!
//! Every C0 control but newline and tab (ESC is `^[`, carriage return
//! `^M`), DEL (`^?`), every C1 control (`M-^[` for U+009B, as `cat -v`
//! shows it) and the Unicode bidirectional controls (`<U+202E>`) are
//! written visibly; everything else is kept. It works character by
//! character, so a sequence split across chunks is neutralised as well.
//! This only transforms text; it never touches the run's own output (the
//! model's copy).

/// `text` with its control characters made visible (see the module doc).
pub fn inert(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let n = c as u32;
        match c {
            '\n' | '\t' => out.push(c),
            _ if n < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + n as u8));
            }
            '\u{7f}' => out.push_str("^?"),
            _ if (0x80..0xa0).contains(&n) => {
                out.push_str("M-^");
                out.push(char::from(b'@' + (n - 0x80) as u8));
            }
            _ if vigil_protocol::text::is_bidi_control(c) => {
                out.push_str(&format!("<U+{n:04X}>"));
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_are_shown_not_obeyed() {
        assert_eq!(
            inert("\x1b]2;T\x1b\\\x1b[?1049h\x1b[8m"),
            "^[]2;T^[\\^[[?1049h^[[8m"
        );
        assert_eq!(inert("a\tb\nc\r\x07\x7f"), "a\tb\nc^M^G^?");
        assert_eq!(inert("\u{9b}31m"), "M-^[31m");
        assert_eq!(inert("x\u{202e}y"), "x<U+202E>y");
        assert_eq!(inert("plain ünïcode ✓"), "plain ünïcode ✓");
        assert!(
            !inert(&(0u8..=255).map(char::from).collect::<String>())
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t')
        );
    }
}
