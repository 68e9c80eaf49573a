//! The one-line approval banner: when the approvals pane is not drawn (a
//! small terminal, another pane zoomed), a waiting approval still shows —
//! how many wait, the key that shows them, and the oldest one's action.
//!
//! It only renders what it is given.

use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::style::text::one_line;
use crate::style::theme::Theme;
use vigil_protocol::ApprovalRequest;
use vigil_protocol::text::sanitize;

/// The banner for `waiting` approvals, `oldest` first, at `width`.
pub fn approvals(
    waiting: usize,
    oldest: Option<&ApprovalRequest>,
    next_key: &str,
    width: u16,
    theme: &Theme,
) -> Paragraph<'static> {
    let noun = if waiting == 1 {
        "approval"
    } else {
        "approvals"
    };
    let head = format!("⚠ {waiting} {noun} waiting ({next_key} shows it): ");
    // Room for the action, with the mark a cut line ends with.
    let room = (width as usize).saturating_sub(head.chars().count() + 2);
    let what = oldest.map_or(String::new(), |r| {
        one_line(&format!("{} {}", r.tool, sanitize(&r.gate.action)), room)
    });
    Paragraph::new(Line::from(vec![
        Span::styled(head, theme.status_alert),
        Span::styled(what, theme.status_alert),
    ]))
}
