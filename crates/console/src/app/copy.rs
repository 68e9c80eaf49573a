//! Copying for the [`App`] (the selected command, an output line range or a
//! whole output, put on the system clipboard through OSC 52 — which works
//! over ssh, and in tmux with `set-clipboard on`).
//!
//! It only prepares text and commands; the event loop writes the OSC 52
//! sequence to the terminal.

use crate::app::{App, Focus, Overlay};
use crate::keys::Action;

/// Largest text put on the clipboard (terminals refuse bigger OSC 52).
pub const MAX_COPY: usize = 100_000;

impl App {
    /// The copy key outside the viewer: the selected approval's command, the
    /// selected history call's arguments, else the newest call's command.
    pub(crate) fn copy_selected(&mut self) {
        let text = match (&self.overlay, self.focus) {
            (Overlay::History { viewer: None }, _) => {
                self.history.selected().map(|r| r.summary.clone())
            }
            (_, Focus::Approvals) => self
                .approvals
                .selected()
                .map(|p| p.request.gate.action.clone()),
            _ => self
                .tools
                .calls()
                .rev()
                .find(|c| !c.operator)
                .map(|c| c.summary.clone()),
        };
        match text {
            Some(t) => self.copy("command", t),
            None => self.flash = Some("nothing to copy here".into()),
        }
    }

    /// The copy key in the viewer: the marked line range, else all of it.
    pub(crate) fn copy_from_viewer(&mut self) {
        let Overlay::History { viewer: Some(v) } = &mut self.overlay else {
            return;
        };
        let top = v.scroll.current_top();
        let (what, text) = match v.mark.take() {
            Some(m) => {
                let (a, b) = (m.min(top), m.max(top));
                (format!("lines {}–{}", a + 1, b + 1), v.output_text(a, b))
            }
            None => ("the whole output".to_string(), v.whole_output()),
        };
        match text {
            Some(t) => self.copy(&what, t),
            None => self.flash = Some("the output is still loading".into()),
        }
    }

    /// The mark key in the viewer: the top line starts a range.
    pub(crate) fn mark_in_viewer(&mut self) {
        let Overlay::History { viewer: Some(v) } = &mut self.overlay else {
            return;
        };
        let top = v.scroll.current_top();
        v.mark = Some(top);
        let copy = self.keys.label(Action::Copy);
        self.flash = Some(format!(
            "range starts at line {}: scroll to its last line, then {copy} copies it",
            top + 1
        ));
    }

    fn copy(&mut self, what: &str, text: String) {
        if text.len() > MAX_COPY {
            self.flash = Some(format!(
                "{what} is {} bytes; the clipboard takes at most {MAX_COPY} (save it instead)",
                text.len()
            ));
            return;
        }
        self.flash = Some(format!(
            "copied {what} ({} bytes) to the clipboard",
            text.len()
        ));
        self.clipboard = Some(text);
    }
}

/// The OSC 52 sequence that puts `text` on the system clipboard.
pub fn osc52(text: &str) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{encoded}\x07")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_carries_standard_base64() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(osc52(plain), format!("\x1b]52;c;{encoded}\x07"));
        }
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }
}
