//! The lines of an approval card that show what vigil itself found out
//! about the call ([`CallFacts`]), not what the model says: where a command
//! will run (`in: DIR on TARGET`), where a write really lands when a symlink
//! or `..` leads elsewhere (`→ /root/.profile (via symlink …)`), and on
//! every card that a preview is not proof; under `by_effect`, why the call
//! is asked (`asked: tried in the view: changes 1 file …`), and what each
//! decide hook answered (`hook: `no-rm` (c.toml:3): ask — why`). An MCP call's full arguments are
//! a scrollable card of their own ([`arguments_card`]).
//!
//! Pure layout: nothing here is ever cut without a way to see the rest
//! (long lines wrap), and nothing reads the filesystem.

use ratatui::text::{Line, Span};

use crate::style::text::wrap;
use crate::style::theme::Theme;
use crate::views::diff::{DiffCard, DiffKind, line};
use vigil_protocol::ApprovalRequest;
use vigil_protocol::CallFacts;
use vigil_protocol::text::sanitize;

/// What every card says about previews.
pub const NOT_PROOF: &str = "a preview is not proof: a command can recognise the view and act \
differently when approved";

/// The same, on a narrow card (one row).
pub const NOT_PROOF_SHORT: &str = "a preview is not proof";

/// Characters of an argument line per card row (longer lines continue on
/// the next rows, marked `↪`), so a narrow pane cuts nothing.
const ARG_CHUNK: usize = 48;

/// `label` then `text` wrapped to `width`, every row shown.
fn labelled(
    label: &'static str,
    text: &str,
    width: usize,
    style: ratatui::style::Style,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let indent = " ".repeat(label.chars().count());
    wrap(&sanitize(text), width.saturating_sub(label.len()).max(8))
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let head = if i == 0 {
                label.to_string()
            } else {
                indent.clone()
            };
            Line::from(vec![
                Span::styled(head, theme.dim),
                Span::styled(part, style),
            ])
        })
        .collect()
}

/// The card's fact lines for `request`, after its action line (see
/// [`note`] for its last line).
pub fn lines(request: &ApprovalRequest, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let facts = &request.facts;
    let mut out = Vec::new();
    if request.is_command() {
        let dir = facts.cwd.as_deref().unwrap_or("(not known)");
        let text = format!("{dir} on {}", request.target);
        out.extend(labelled("  in: ", &text, width, theme.text, theme));
    }
    if let Some(real) = &facts.resolved {
        let style = if real.contains("via symlink") || real.contains("hard link") {
            theme.warn
        } else {
            theme.text
        };
        out.extend(labelled("  → ", real, width, style, theme));
    }
    if let Some(why) = &facts.trial {
        out.extend(labelled("  asked: ", why, width, theme.warn, theme));
    }
    for said in &facts.hooks {
        let said = said.strip_prefix("hook ").unwrap_or(said);
        let style = if said.contains(": allow") {
            theme.text
        } else {
            theme.warn
        };
        out.extend(labelled("  hook: ", said, width, style, theme));
    }
    out
}

/// The last line of every card: a preview is not proof.
pub fn note(width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let note = if "  note: ".len() + NOT_PROOF.len() <= width {
        NOT_PROOF
    } else {
        NOT_PROOF_SHORT
    };
    labelled("  note: ", note, width, theme.dim, theme)
}

/// Every argument of a call whose action line cannot show them (an MCP
/// tool's), as a card the operator scrolls (PgDn/PgUp, `z`): pretty JSON,
/// long lines continued on the next rows.
pub fn arguments_card(facts: &CallFacts) -> Option<DiffCard> {
    let text = facts.arguments.as_deref()?;
    let mut lines = vec![line(
        DiffKind::Note,
        "every argument, in full (the action line above may be cut):",
    )];
    for row in text.lines() {
        let chars: Vec<char> = row.chars().collect();
        for (i, chunk) in chars.chunks(ARG_CHUNK).enumerate() {
            let piece: String = chunk.iter().collect();
            let piece = if i == 0 {
                piece
            } else {
                format!("↪ {piece}")
            };
            lines.push(line(DiffKind::Context, &piece));
        }
    }
    Some(DiffCard {
        lines,
        added: 0,
        removed: 0,
        label: "arguments",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_protocol::{GateInfo, Risk};

    fn request(tool: &str, facts: CallFacts) -> ApprovalRequest {
        ApprovalRequest {
            id: 1,
            call_id: "c1".into(),
            tool: tool.into(),
            target: "tmux vigil-agent".into(),
            gate: GateInfo {
                action: "x".into(),
                model_risk: None,
                mutation: None,
                privesc: None,
                why: None,
                editable_field: (tool == "run_shell").then(|| "command".into()),
            },
            estimate: Risk::Medium,
            estimate_reason: String::new(),
            automatic: false,
            change: None,
            token: String::new(),
            facts: Box::new(facts),
        }
    }

    fn text(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn a_command_says_where_it_runs_and_every_card_says_previews_are_no_proof() {
        let facts = CallFacts {
            cwd: Some("/srv/repo".into()),
            ..Default::default()
        };
        let got = text(&lines(
            &request("run_shell", facts.clone()),
            120,
            &Theme::default(),
        ));
        assert_eq!(got[0], "  in: /srv/repo on tmux vigil-agent");
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            text(&note(120, &Theme::default())),
            [format!("  note: {NOT_PROOF}")]
        );
        assert_eq!(
            text(&note(40, &Theme::default())),
            ["  note: a preview is not proof"]
        );
        let unknown = text(&lines(
            &request("run_shell", CallFacts::default()),
            80,
            &Theme::default(),
        ));
        assert_eq!(unknown[0], "  in: (not known) on tmux vigil-agent");
        let write = text(&lines(
            &request("write_file", CallFacts::default()),
            80,
            &Theme::default(),
        ));
        assert!(write.is_empty(), "{write:?}");
    }

    #[test]
    fn every_hook_that_saw_the_call_says_what_it_answered() {
        let facts = CallFacts {
            hooks: vec!["hook `slow` (c.toml:3) (failed): ask — command timed out after 1s".into()],
            ..Default::default()
        };
        let got = text(&lines(
            &request("write_file", facts),
            120,
            &Theme::default(),
        ));
        assert_eq!(
            got,
            ["  hook: `slow` (c.toml:3) (failed): ask — command timed out after 1s"]
        );
    }

    #[test]
    fn a_symlinked_write_shows_its_real_target_uncut() {
        let facts = CallFacts {
            resolved: Some(format!(
                "/root/{} (via symlink /work/notes.txt)",
                "d/".repeat(40)
            )),
            ..Default::default()
        };
        let got = text(&lines(&request("write_file", facts), 40, &Theme::default()));
        let joined = got.join("");
        assert!(got[0].starts_with("  → /root/"), "{got:?}");
        assert!(joined.contains("(via symlink"), "{got:?}");
        assert!(joined.contains("/work/notes.txt)"), "{got:?}");
    }

    #[test]
    fn every_argument_is_on_the_arguments_card() {
        let hidden = format!("{}HIDDEN-PATH", "a".repeat(200));
        let args = serde_json::json!({"note": hidden, "path": "/etc/cron.d/x"});
        let facts = CallFacts {
            arguments: Some(serde_json::to_string_pretty(&args).unwrap()),
            ..Default::default()
        };
        let card = arguments_card(&facts).unwrap();
        let all: String = card
            .lines
            .iter()
            .map(|l| l.text.trim_start_matches("↪ ").to_string())
            .collect();
        assert!(
            all.contains("HIDDEN-PATH") && all.contains("/etc/cron.d/x"),
            "{all}"
        );
        assert!(
            card.lines
                .iter()
                .skip(1)
                .all(|l| l.text.chars().count() <= ARG_CHUNK + 2)
        );
        assert!(arguments_card(&CallFacts::default()).is_none());
    }
}
