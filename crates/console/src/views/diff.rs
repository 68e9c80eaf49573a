//! The diff review card's lines: what a `write_file` or `edit` call would do
//! to a file, as a unified diff (hunk headers, `-` removed, `+` added, three
//! lines of context), a new file's content, or why no diff can be shown
//! (binary, too large, unreadable).
//!
//! Pure: it lays text out once per request (the approvals pane keeps the
//! result) and never reads a file or draws.

use similar::{ChangeTag, TextDiff};

use vigil_protocol::FileChange;
use vigil_protocol::text::sanitize;

/// Lines of unchanged text shown around each change.
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffKind {
    /// `@@ -a,b +c,d @@`
    Hunk,
    Added,
    Removed,
    Context,
    /// Something about the change that is not file text.
    Note,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: DiffKind,
    pub text: String,
}

/// The whole card for one change, and how many lines it adds and removes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffCard {
    pub lines: Vec<DiffLine>,
    pub added: usize,
    pub removed: usize,
    /// The card's title word (empty: "diff").
    pub label: &'static str,
}

pub fn line(kind: DiffKind, text: &str) -> DiffLine {
    DiffLine {
        kind,
        text: sanitize(text.strip_suffix('\n').unwrap_or(text)),
    }
}

impl DiffCard {
    pub fn of(change: &FileChange) -> DiffCard {
        match change {
            FileChange::Create { content, .. } => {
                let body: Vec<DiffLine> =
                    content.lines().map(|l| line(DiffKind::Added, l)).collect();
                let mut lines = vec![line(
                    DiffKind::Note,
                    &format!("new file: {} lines, {} bytes", body.len(), content.len()),
                )];
                let added = body.len();
                lines.extend(body);
                DiffCard {
                    lines,
                    added,
                    removed: 0,
                    label: "",
                }
            }
            FileChange::Modify { before, after, .. } => unified(before, after),
            FileChange::Opaque { why, .. } => DiffCard {
                lines: vec![line(DiffKind::Note, &format!("no diff: {why}"))],
                added: 0,
                removed: 0,
                label: "",
            },
        }
    }
}

fn unified(before: &str, after: &str) -> DiffCard {
    let diff = TextDiff::from_lines(before, after);
    let mut card = DiffCard::default();
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old = first.old_range().start..last.old_range().end;
        let new = first.new_range().start..last.new_range().end;
        card.lines.push(line(
            DiffKind::Hunk,
            &format!(
                "@@ -{},{} +{},{} @@",
                old.start + 1,
                old.len(),
                new.start + 1,
                new.len()
            ),
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let kind = match change.tag() {
                    ChangeTag::Delete => {
                        card.removed += 1;
                        DiffKind::Removed
                    }
                    ChangeTag::Insert => {
                        card.added += 1;
                        DiffKind::Added
                    }
                    ChangeTag::Equal => DiffKind::Context,
                };
                card.lines.push(line(kind, change.value()));
            }
        }
    }
    if card.lines.is_empty() {
        card.lines.push(line(
            DiffKind::Note,
            "no change: the content stays the same",
        ));
    }
    card
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modify(before: &str, after: &str) -> FileChange {
        FileChange::Modify {
            path: "/etc/x.conf".into(),
            before: before.into(),
            after: after.into(),
        }
    }

    fn render(card: &DiffCard) -> Vec<String> {
        card.lines
            .iter()
            .map(|l| {
                let mark = match l.kind {
                    DiffKind::Added => "+",
                    DiffKind::Removed => "-",
                    DiffKind::Context => " ",
                    DiffKind::Hunk | DiffKind::Note => "",
                };
                format!("{mark}{}", l.text)
            })
            .collect()
    }

    #[test]
    fn a_changed_line_shows_with_context_and_a_hunk_header() {
        let before: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let after = before.replace("line 5\n", "line five\n");
        let card = DiffCard::of(&modify(&before, &after));
        assert_eq!(
            render(&card),
            [
                "@@ -2,7 +2,7 @@",
                " line 2",
                " line 3",
                " line 4",
                "-line 5",
                "+line five",
                " line 6",
                " line 7",
                " line 8",
            ]
        );
        assert_eq!((card.added, card.removed), (1, 1));
    }

    #[test]
    fn far_apart_changes_make_two_hunks() {
        let before: String = (1..=30).map(|i| format!("{i}\n")).collect();
        let after = before.replace("\n2\n", "\ntwo\n").replace("\n28\n", "\n");
        let card = DiffCard::of(&modify(&before, &after));
        let hunks = card
            .lines
            .iter()
            .filter(|l| l.kind == DiffKind::Hunk)
            .count();
        assert_eq!(hunks, 2);
        assert_eq!((card.added, card.removed), (1, 2));
    }

    #[test]
    fn new_files_binary_files_and_no_change_say_so() {
        let new = DiffCard::of(&FileChange::Create {
            path: "/tmp/n".into(),
            content: "a\nb\n".into(),
        });
        assert_eq!(render(&new), ["new file: 2 lines, 4 bytes", "+a", "+b"]);
        let binary = DiffCard::of(&FileChange::of_write("/bin/x", Some(&[0xff, 0, 1]), "t"));
        assert_eq!(binary.lines.len(), 1);
        assert!(binary.lines[0].text.contains("binary"), "{binary:?}");
        let same = DiffCard::of(&modify("a\n", "a\n"));
        assert_eq!(render(&same), ["no change: the content stays the same"]);
    }

    #[test]
    fn escape_sequences_in_file_text_are_neutralised() {
        let card = DiffCard::of(&modify("a\n", "\x1b[2Jb\n"));
        assert!(card.lines.iter().all(|l| !l.text.contains('\x1b')));
    }
}
