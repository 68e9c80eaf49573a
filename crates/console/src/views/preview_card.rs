//! The preview card under a waiting command: what the command did in a
//! throwaway view, laid out as the diff card's lines (so it scrolls and
//! zooms the same way): the verdict, the limits it hit, one line per file
//! changed, each text file's diff, refused network attempts, processes it
//! left behind, the head and tail of its output, and what a preview
//! cannot show.
//!
//! Pure: it lays a [`PreviewOutcome`] out once; it never runs anything.

use crate::views::diff::{DiffCard, DiffKind, DiffLine, line};
use vigil_protocol::{FileEffect, PreviewOutcome, PreviewReport};

/// Output lines shown at each end.
const OUTPUT_LINES: usize = 8;
/// Files named in a deny reason.
const REASON_FILES: usize = 5;

/// The card while the preview runs.
pub fn running() -> DiffCard {
    DiffCard {
        lines: vec![line(
            DiffKind::Note,
            "previewing in a throwaway view (nothing reaches this machine)…",
        )],
        label: "preview",
        ..DiffCard::default()
    }
}

/// The card for a preview's outcome.
pub fn card(outcome: &PreviewOutcome) -> DiffCard {
    let report = match outcome {
        PreviewOutcome::Report { report } => report,
        PreviewOutcome::Unavailable { why } => {
            return DiffCard {
                lines: vec![line(DiffKind::Note, why)],
                label: "preview",
                ..DiffCard::default()
            };
        }
    };
    let mut card = DiffCard {
        label: "preview",
        ..DiffCard::default()
    };
    let l = &mut card.lines;
    l.push(line(DiffKind::Hunk, &report.headline()));
    l.push(line(
        DiffKind::Context,
        "Enter: the whole report in the viewer (search, save, copy)",
    ));
    for note in report.limit_notes() {
        l.push(line(DiffKind::Note, &note));
    }
    if report.files.is_empty() {
        l.push(line(DiffKind::Context, "no file changed"));
    }
    for f in &report.files {
        l.push(line(DiffKind::Context, &f.summary()));
    }
    if report.files_cut > 0 {
        let more = format!("… {} more changes not listed", report.files_cut);
        l.push(line(DiffKind::Context, &more));
    }
    for f in report.files.iter().filter(|f| f.diff.is_some()) {
        diff_lines(f, &mut card);
    }
    tail_lines(report, &mut card.lines);
    card
}

/// One file's diff: its header as a hunk line, then the body.
fn diff_lines(f: &FileEffect, card: &mut DiffCard) {
    let Some(diff) = &f.diff else { return };
    card.lines
        .push(line(DiffKind::Hunk, &f.path.display().to_string()));
    for text in diff.lines() {
        if text.starts_with("---") || text.starts_with("+++") {
            continue;
        }
        let (kind, rest) = match text.split_at_checked(1) {
            Some(("+", rest)) => {
                card.added += 1;
                (DiffKind::Added, rest)
            }
            Some(("-", rest)) => {
                card.removed += 1;
                (DiffKind::Removed, rest)
            }
            Some((" ", rest)) => (DiffKind::Context, rest),
            _ => (DiffKind::Hunk, text),
        };
        card.lines.push(line(kind, rest));
    }
    if f.diff_cut {
        card.lines.push(line(DiffKind::Note, "… diff cut"));
    }
}

fn tail_lines(report: &PreviewReport, l: &mut Vec<DiffLine>) {
    for r in &report.refused {
        let text = format!("refused: {} {} ({})", r.call, r.address, r.program);
        l.push(line(DiffKind::Note, &text));
    }
    for p in &report.leftovers {
        let text = format!("left behind (killed): {}", p.command);
        l.push(line(DiffKind::Note, &text));
    }
    l.push(line(
        DiffKind::Hunk,
        &format!("output ({} bytes)", report.output_bytes),
    ));
    let head: Vec<&str> = report.output_head.lines().collect();
    for text in head.iter().take(OUTPUT_LINES) {
        l.push(line(DiffKind::Context, text));
    }
    let tail: Vec<&str> = report.output_tail.lines().collect();
    if head.len() > OUTPUT_LINES || !tail.is_empty() {
        l.push(line(DiffKind::Context, "…"));
    }
    for text in tail.iter().skip(tail.len().saturating_sub(OUTPUT_LINES)) {
        l.push(line(DiffKind::Context, text));
    }
    for limit in &report.limits {
        l.push(line(DiffKind::Note, &format!("limit: {limit}")));
    }
}

/// The reason a deny carries when the operator saw a preview: the verdict
/// and the first files, for the model to read.
pub fn deny_reason(report: &PreviewReport) -> String {
    let mut parts = vec![format!("the preview showed: {}", report.headline())];
    let files: Vec<String> = report
        .files
        .iter()
        .take(REASON_FILES)
        .map(FileEffect::summary)
        .collect();
    if !files.is_empty() {
        parts.push(files.join("; "));
    }
    parts.join(" — ")
}
