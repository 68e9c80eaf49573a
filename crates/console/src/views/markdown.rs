//! A light Markdown renderer for assistant text: fenced code blocks,
//! headings, bullet and numbered lists with hanging indents, `**bold**` and
//! `` `inline code` ``, wrapped to a width.
//!
//! Hand-written and forgiving: anything it does not recognise is shown as
//! plain text. It takes already-sanitized text and never touches the
//! terminal.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::style::text::{char_width, str_width};
use crate::style::theme::Theme;

/// Render `text` to lines at most `width` columns wide.
pub fn render(text: &str, width: usize, theme: &Theme, base: Style) -> Vec<Line<'static>> {
    let width = width.max(4);
    let mut out = Vec::new();
    let mut in_code = false;
    for raw in text.split('\n') {
        let trimmed = raw.trim_start();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            if in_code {
                let lang = trimmed.trim_start_matches('`').trim();
                let label = if lang.is_empty() {
                    "┌─".to_string()
                } else {
                    format!("┌─ {lang}")
                };
                out.push(Line::styled(label, theme.dim));
            } else {
                out.push(Line::styled("└─", theme.dim));
            }
            continue;
        }
        if in_code {
            code_line(raw, width, theme, &mut out);
            continue;
        }
        if trimmed.is_empty() {
            out.push(Line::default());
            continue;
        }
        if let Some(rest) = heading(trimmed) {
            let segs = inline(rest, base.patch(theme.heading), theme);
            wrap_segments(&segs, width, "", "", &mut out);
            continue;
        }
        if let Some((indent, marker, rest)) = list_item(raw) {
            let first = format!("{}{marker} ", " ".repeat(indent));
            let hang = " ".repeat(str_width(&first));
            let segs = inline(rest, base, theme);
            wrap_segments(&segs, width, &first, &hang, &mut out);
            continue;
        }
        let segs = inline(raw, base, theme);
        wrap_segments(&segs, width, "", "", &mut out);
    }
    if out.is_empty() {
        out.push(Line::default());
    }
    out
}

fn code_line(raw: &str, width: usize, theme: &Theme, out: &mut Vec<Line<'static>>) {
    let room = width.saturating_sub(2).max(1);
    let mut cur = String::new();
    let mut w = 0;
    let mut pushed = false;
    for c in raw.chars() {
        let cw = char_width(c);
        if w + cw > room && !cur.is_empty() {
            out.push(code(std::mem::take(&mut cur), theme));
            pushed = true;
            w = 0;
        }
        cur.push(c);
        w += cw;
    }
    if !cur.is_empty() || !pushed {
        out.push(code(cur, theme));
    }
}

fn code(text: String, theme: &Theme) -> Line<'static> {
    Line::from(vec![
        Span::styled("│ ", theme.dim),
        Span::styled(text, theme.code),
    ])
}

fn heading(line: &str) -> Option<&str> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&level) && line[level..].starts_with(' ') {
        Some(line[level..].trim())
    } else {
        None
    }
}

/// `(indent, marker, rest)` for `- x`, `* x`, `+ x`, `1. x`, `2) x`.
fn list_item(line: &str) -> Option<(usize, String, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let body = &line[indent..];
    let indent = indent.min(8);
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = body.strip_prefix(bullet) {
            return Some((indent, "•".to_string(), rest));
        }
    }
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let after = &body[digits..];
        if let Some(rest) = after
            .strip_prefix(". ")
            .or_else(|| after.strip_prefix(") "))
        {
            return Some((indent, format!("{}.", &body[..digits]), rest));
        }
    }
    None
}

/// Split a line into styled segments for `**bold**`, `__bold__` and
/// `` `code` ``; unmatched markers stay as text.
pub fn inline(text: &str, base: Style, theme: &Theme) -> Vec<(String, Style)> {
    let mut segs: Vec<(String, Style)> = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('`')
            && let Some(end) = after.find('`')
            && end > 0
        {
            flush(&mut plain, base, &mut segs);
            segs.push((after[..end].to_string(), theme.code));
            rest = &after[end + 1..];
            continue;
        }
        let bold = ["**", "__"].into_iter().find_map(|m| {
            let after = rest.strip_prefix(m)?;
            let end = after.find(m)?;
            (end > 0).then(|| (&after[..end], &after[end + m.len()..]))
        });
        if let Some((inner, after)) = bold {
            flush(&mut plain, base, &mut segs);
            let style = base.add_modifier(Modifier::BOLD);
            for (t, s) in inline(inner, style, theme) {
                segs.push((t, s.add_modifier(Modifier::BOLD)));
            }
            rest = after;
            continue;
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            plain.push(c);
        }
        rest = chars.as_str();
    }
    flush(&mut plain, base, &mut segs);
    segs
}

fn flush(plain: &mut String, style: Style, segs: &mut Vec<(String, Style)>) {
    if !plain.is_empty() {
        segs.push((std::mem::take(plain), style));
    }
}

/// Greedy word wrap over styled segments; long words are broken.
fn wrap_segments(
    segs: &[(String, Style)],
    width: usize,
    first: &str,
    hang: &str,
    out: &mut Vec<Line<'static>>,
) {
    let mut line: Vec<Span<'static>> = vec![Span::raw(first.to_string())];
    let mut w = str_width(first);
    let mut empty = true;
    let hang_w = str_width(hang);
    for (text, style) in segs {
        for word in text.split_inclusive(' ') {
            let ww = str_width(word);
            let trimmed_w = str_width(word.trim_end_matches(' '));
            if w + trimmed_w > width && !empty {
                out.push(finish(std::mem::take(&mut line)));
                line.push(Span::raw(hang.to_string()));
                w = hang_w;
                empty = true;
            }
            if w + ww <= width || w + trimmed_w <= width {
                push_span(&mut line, word, *style);
                w += ww;
                empty = false;
                continue;
            }
            // A word longer than the line: break it.
            for c in word.chars() {
                let cw = char_width(c);
                if w + cw > width && !empty {
                    out.push(Line::from(std::mem::take(&mut line)));
                    line.push(Span::raw(hang.to_string()));
                    w = hang_w;
                }
                let mut buf = [0u8; 4];
                push_span(&mut line, c.encode_utf8(&mut buf), *style);
                w += cw;
                empty = false;
            }
        }
    }
    out.push(Line::from(line));
}

/// A finished wrapped line, without the spaces it broke at.
fn finish(mut spans: Vec<Span<'static>>) -> Line<'static> {
    if let Some(last) = spans.last_mut() {
        let trimmed = last.content.trim_end_matches(' ').len();
        last.content.to_mut().truncate(trimmed);
    }
    Line::from(spans)
}

fn push_span(line: &mut Vec<Span<'static>>, text: &str, style: Style) {
    match line.last_mut() {
        Some(last) if last.style == style && !last.content.is_empty() => {
            last.content.to_mut().push_str(text);
        }
        _ => line.push(Span::styled(text.to_string(), style)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn lists_hang_and_code_blocks_keep_their_lines() {
        let t = Theme::default();
        let text = "Steps:\n- first item that wraps around\n2. second\n```sh\nls -l\n```";
        let lines = render(text, 20, &t, Style::new());
        assert_eq!(
            plain(&lines),
            [
                "Steps:",
                "• first item that",
                "  wraps around",
                "2. second",
                "┌─ sh",
                "│ ls -l",
                "└─"
            ]
        );
        assert_eq!(lines[5].spans[1].style, t.code);
    }

    #[test]
    fn bold_and_inline_code_are_styled() {
        let t = Theme::default();
        let segs = inline("run **now** with `ls`, a*b", Style::new(), &t);
        let texts: Vec<&str> = segs.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(texts, ["run ", "now", " with ", "ls", ", a*b"]);
        assert!(segs[1].1.add_modifier.contains(Modifier::BOLD));
        assert_eq!(segs[3].1, t.code);
    }

    #[test]
    fn long_words_break_and_headings_render() {
        let t = Theme::default();
        let lines = render("# Title\nabcdefghijkl", 5, &t, Style::new());
        assert_eq!(plain(&lines), ["Title", "abcde", "fghij", "kl"]);
    }

    /// Why this renderer and not a CommonMark one (docs/dependencies.md):
    /// the operator sees every character the model sent except the markers
    /// styled here, and a half-streamed list is not drawn as a heading.
    #[test]
    fn escapes_entities_links_and_partial_lists_are_shown_as_sent() {
        let t = Theme::default();
        let text = "see [docs](https://x.example) \\d+\\.\\d+ &lt;b&gt; *glob*\n> quoted\n\n[1]: https://y.example\nSome text\n-";
        let lines = render(text, 200, &t, Style::new());
        assert_eq!(
            plain(&lines),
            [
                "see [docs](https://x.example) \\d+\\.\\d+ &lt;b&gt; *glob*",
                "> quoted",
                "",
                "[1]: https://y.example",
                "Some text",
                "-",
            ]
        );
    }
}
