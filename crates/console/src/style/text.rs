//! Text hygiene for the console: neutralises terminal escape sequences and
//! control characters in agent and tool text, expands tabs, and wraps lines to
//! a width.
//!
//! Every pane except the tmux mirror passes foreign text through
//! [`sanitize`](vigil_protocol::text::sanitize) before rendering: the one
//! sanitiser of `vigil_protocol::text`, which the command line's output goes
//! through too. Pure functions: this module never touches the terminal.

use ratatui::text::{Line, Span};

/// Display width of one character (0 for combining marks).
pub fn char_width(c: char) -> usize {
    let mut buf = [0u8; 4];
    Span::raw(&*c.encode_utf8(&mut buf)).width()
}

/// Width `c` adds after `prev`: a variation selector can widen the
/// character before it (`5` + U+FE0F is an emoji, two columns).
fn joined_width(prev: Option<char>, c: char) -> usize {
    match prev {
        Some(p) => {
            let mut buf = [0u8; 8];
            let n = p.encode_utf8(&mut buf).len();
            let m = c.encode_utf8(&mut buf[n..]).len();
            let pair = std::str::from_utf8(&buf[..n + m]).map_or(0, str_width);
            pair.saturating_sub(char_width(p))
        }
        None => char_width(c),
    }
}

/// Display width of a string.
pub fn str_width(s: &str) -> usize {
    Span::raw(s).width()
}

/// Wrap already-sanitized text to `width` columns: greedy on word boundaries,
/// breaking words longer than a line. Always returns at least one line.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    for line in text.split('\n') {
        wrap_line(line, width, &mut out);
    }
    out
}

fn wrap_line(line: &str, width: usize, out: &mut Vec<String>) {
    let mut cur = String::new();
    let mut cur_w = 0usize;
    for word in line.split_inclusive(' ') {
        let w = str_width(word);
        if cur_w + w <= width {
            cur.push_str(word);
            cur_w += w;
            continue;
        }
        let trimmed = word.trim_end_matches(' ');
        if cur_w + str_width(trimmed) <= width {
            cur.push_str(trimmed);
            out.push(std::mem::take(&mut cur));
            cur_w = 0;
            continue;
        }
        if !cur.is_empty() {
            out.push(cur.trim_end_matches(' ').to_string());
            cur.clear();
            cur_w = 0;
        }
        for c in word.chars() {
            let cw = joined_width(cur.chars().last(), c);
            if cur_w + cw > width && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
                cur_w = 0;
            }
            cur.push(c);
            cur_w += cw;
        }
    }
    out.push(cur);
}

/// Cut a string to at most `max` characters, marking the cut with `…`.
pub fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A count with its noun: `1 rule`, `2 rules`.
pub fn plural(n: usize, word: &str) -> String {
    match n {
        1 => format!("1 {word}"),
        _ => format!("{n} {word}s"),
    }
}

/// The first line of `s`, cut to `max` characters.
pub fn one_line(s: &str, max: usize) -> String {
    let first = s.lines().next().unwrap_or("");
    let cut = truncate_chars(first, max);
    if s.trim_end().contains('\n') && !cut.ends_with('…') {
        format!("{cut} …")
    } else {
        cut
    }
}

/// Cut a rendered line to `width` columns, ending it with `…` when
/// something was cut (so a clipped row never looks complete).
pub fn fit_line(line: Line<'static>, width: usize) -> Line<'static> {
    if line.width() <= width || width == 0 {
        return line;
    }
    let room = width - 1;
    let mut used = 0usize;
    let mut spans = Vec::new();
    for span in line.spans {
        let w = span.width();
        if used + w <= room {
            used += w;
            spans.push(span);
            continue;
        }
        let mut cut = String::new();
        for c in span.content.chars() {
            let cw = char_width(c);
            if used + cw > room {
                break;
            }
            used += cw;
            cut.push(c);
        }
        spans.push(Span::styled(cut, span.style));
        spans.push(Span::styled("…", span.style));
        break;
    }
    Line::from(spans).style(line.style)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_protocol::text::is_plain;

    /// Found by the fuzzer: `5` + U+FE0F is two columns, not one.
    #[test]
    fn wrapped_lines_fit_with_variation_selectors() {
        for width in 1..8 {
            for line in wrap("red35\u{fe0f}m8;;http:/", width) {
                assert!(str_width(&line) <= width.max(2), "{line:?} at {width}");
            }
        }
    }

    // The sanitiser's own tests live with it (vigil_protocol::text).

    #[test]
    fn wraps_on_words_and_breaks_long_words() {
        assert_eq!(wrap("hello world foo", 11), ["hello world", "foo"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("a\n\nb", 10), ["a", "", "b"]);
        assert_eq!(wrap("", 10), [""]);
        assert_eq!(wrap("x", 0), ["x"]);
    }

    #[test]
    fn fitted_lines_end_with_a_mark_when_cut() {
        let line = Line::from(vec![
            Span::raw("▶ run_shell  "),
            Span::raw("ls -la /var/log"),
        ]);
        let fitted = fit_line(line.clone(), 20);
        assert_eq!(fitted.width(), 20);
        assert!(fitted.to_string().ends_with('…'), "{fitted}");
        assert_eq!(fit_line(line.clone(), 40), line);
        assert_eq!(fit_line(Line::raw("日本語"), 4).to_string(), "日…");
    }

    #[test]
    fn one_line_marks_cuts() {
        assert_eq!(one_line("abc", 10), "abc");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("ab\ncd", 10), "ab …");
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
}
