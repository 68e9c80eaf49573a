//! The diff review card under a waiting `write_file` / `edit` approval: a
//! title with the counts and the keys, then a window of the coloured diff
//! (green `+` added, red `-` removed, hunk headers in the accent colour),
//! every cut row ending with `…`.
//!
//! It only turns a [`DiffCard`] and a scroll offset into lines; the
//! approvals pane owns the offset and the space.

use ratatui::text::{Line, Span};

use crate::style::text::{fit_line, wrap};
use crate::style::theme::Theme;
use crate::views::diff::{DiffCard, DiffKind};

/// Diff rows the pane asks for when it is not zoomed.
pub const PREFERRED_ROWS: usize = 8;

/// The first row to show so that `rows` rows starting there stay inside the
/// card (the scroll offset clamped).
pub fn first_row(card: &DiffCard, scroll: usize, rows: usize) -> usize {
    scroll.min(card.lines.len().saturating_sub(rows.max(1)))
}

/// The title row and up to `rows` diff rows from `scroll`, `width` columns.
pub fn lines(
    card: &DiffCard,
    scroll: usize,
    rows: usize,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let total = card.lines.len();
    let first = first_row(card, scroll, rows);
    let shown = rows.min(total - first.min(total));
    let label = if card.label.is_empty() {
        "diff"
    } else {
        card.label
    };
    let mut title = vec![Span::styled(format!("  {label}"), theme.dim)];
    if card.added + card.removed > 0 {
        title.push(Span::styled(format!(" +{}", card.added), theme.ok));
        title.push(Span::styled(format!(" -{}", card.removed), theme.bad));
    }
    if shown < total {
        title.push(Span::styled(
            format!(
                " · rows {}-{}/{total} · PgDn/PgUp · z zoom",
                first + 1,
                first + shown
            ),
            theme.dim,
        ));
    }
    let mut out = vec![fit_line(Line::from(title), width)];
    for l in card.lines.iter().skip(first).take(shown) {
        let (mark, style) = match l.kind {
            DiffKind::Added => ("+", theme.ok),
            DiffKind::Removed => ("-", theme.bad),
            DiffKind::Context => (" ", theme.text),
            DiffKind::Hunk => ("", theme.info),
            DiffKind::Note => {
                // What the operator must know is never cut: wrap it.
                for part in wrap(&l.text, width.saturating_sub(2).max(8)) {
                    out.push(Line::from(vec![
                        Span::raw("  "),
                        Span::styled(part, theme.warn),
                    ]));
                }
                continue;
            }
        };
        let row = Line::from(vec![
            Span::raw("  "),
            Span::styled(format!("{mark}{}", l.text), style),
        ]);
        out.push(fit_line(row, width));
    }
    out
}
