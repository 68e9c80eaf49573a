//! Every mistake in a config file, in file order: serde stops at the first
//! error it meets (in struct field order, not file order), so the text is
//! parsed again with each reported setting blanked out until it parses or
//! nothing new is found; the messages are then sorted by line.
//!
//! Pure text work on the file's contents; it never reads a file.

use super::Config;

/// Most mistakes reported for one file.
const MAX_MISTAKES: usize = 20;

/// Each mistake as `(line, "line L, column C: message")`, sorted by line;
/// empty when the text parses.
pub(super) fn all_mistakes(text: &str) -> Vec<(usize, String)> {
    let mut work = text.to_string();
    let mut found: Vec<(usize, String)> = Vec::new();
    while found.len() < MAX_MISTAKES {
        let Err(e) = toml::from_str::<Config>(&work) else {
            break;
        };
        let message = super::describe_toml_error(&work, &e);
        let Some(span) = e.span() else {
            found.push((usize::MAX, message));
            break;
        };
        let line = work[..span.start.min(work.len())].matches('\n').count() + 1;
        if found.iter().any(|(l, _)| *l == line) {
            break; // no progress: blanking did not remove it
        }
        found.push((line, message));
        let Some(blanked) = blank(&work, span.start, span.end) else {
            break;
        };
        work = blanked;
    }
    found.sort_by_key(|(line, _)| *line);
    found
}

/// `text` with the lines from `start` to `end` turned into comments (a
/// table header takes its whole table); line numbers stay the same.
fn blank(text: &str, start: usize, end: usize) -> Option<String> {
    let start = start.min(text.len());
    let end = end.clamp(start, text.len());
    let from = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let mut to = text[end..].find('\n').map_or(text.len(), |i| end + i);
    if text[from..].trim_start().starts_with('[') {
        // A bad table: comment out up to the next header.
        let rest = &text[to..];
        to = rest
            .match_indices('\n')
            .map(|(i, _)| to + i + 1)
            .find(|&i| text[i..].trim_start().starts_with('['))
            .map_or(text.len(), |i| i - 1);
    }
    if from >= to {
        return None;
    }
    let commented: String = text[from..to]
        .split('\n')
        .map(|l| format!("#{}", " ".repeat(l.len().saturating_sub(1))))
        .collect::<Vec<_>>()
        .join("\n");
    Some(format!("{}{}{}", &text[..from], commented, &text[to..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mistake_is_reported_in_file_order() {
        let text = "[tools]\nshel_confirm = false\n[model]\nbase_url = 5\nmodle = \"x\"\n[tooles]\na = 1\nb = 2\n[agent]\nmax_rounds = \"many\"\n";
        let found = all_mistakes(text);
        let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [2, 4, 5, 6, 10], "{found:#?}");
        assert!(found[0].1.contains("shel_confirm"), "{found:#?}");
        assert!(found[3].1.contains("tooles"), "{found:#?}");
    }

    #[test]
    fn a_good_file_has_none_and_a_syntax_error_is_one() {
        assert!(all_mistakes("[model]\nmodel = \"m\"\n").is_empty());
        assert_eq!(all_mistakes("[model\nmodel = \"m\"\n").len(), 1);
    }
}
