//! The pointer and the clipboard for the [`App`]: bracketed paste goes to
//! the pane the operator types into, the open modal or the message box; a
//! click focuses the pane under it and the wheel scrolls what is shown.
//! Keys are routed in `keys`; nothing here sends anything.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use crate::app::{App, Focus, Overlay};
use vigil_protocol::AgentCommand;

/// Lines one mouse-wheel notch scrolls.
const WHEEL_LINES: isize = 3;

impl App {
    /// Bracketed paste goes to the pane while the operator types into it,
    /// else to the open modal, else the input box.
    pub fn on_paste(&mut self, text: &str) -> Vec<AgentCommand> {
        if self.read_only {
            self.flash = Some(crate::app::leave::READ_ONLY.into());
            return Vec::new();
        }
        if self.mirror.typing() {
            let keys = self.mirror.passthrough.paste(text);
            if keys.is_empty() {
                return Vec::new();
            }
            return vec![AgentCommand::PaneKeys { keys }];
        }
        if let Some(m) = &mut self.modal {
            m.on_paste(text);
            return Vec::new();
        }
        self.overlay = Overlay::None;
        self.set_focus(Focus::Input);
        self.input.paste(text);
        Vec::new()
    }

    /// Mouse: a click focuses the pane under it, the wheel scrolls it.
    pub fn on_mouse(&mut self, m: MouseEvent) -> bool {
        let at = Position::new(m.column, m.row);
        let rects = self.rects.get();
        let hit = |r: Rect| r.contains(at);
        let pane = [
            (rects.input, Focus::Input),
            (rects.conversation, Focus::Conversation),
            (rects.tools, Focus::Tools),
            (rects.approvals, Focus::Approvals),
            (rects.mirror, Focus::Mirror),
        ]
        .into_iter()
        .find(|(r, _)| hit(*r))
        .map(|(_, f)| f);
        let delta = match m.kind {
            MouseEventKind::ScrollUp => -WHEEL_LINES,
            MouseEventKind::ScrollDown => WHEEL_LINES,
            MouseEventKind::Down(MouseButton::Left) => {
                if self.modal.is_some() || !matches!(self.overlay, Overlay::None) {
                    return false;
                }
                return match pane {
                    Some(f) => {
                        self.set_focus(f);
                        true
                    }
                    None => false,
                };
            }
            _ => return false,
        };
        if self.modal.is_some() {
            return false;
        }
        match &mut self.overlay {
            Overlay::History { viewer: Some(v) } => v.scroll.scroll_by(delta),
            Overlay::History { viewer: None } => {
                if delta < 0 {
                    self.history.select_prev();
                } else {
                    self.history.select_next();
                }
            }
            Overlay::Help(help) => {
                help.scroll = help.scroll.saturating_add_signed(delta as i16);
            }
            Overlay::Rules if delta < 0 => self.rules.select_prev(),
            Overlay::Rules => self.rules.select_next(),
            Overlay::Agents { .. } => return false,
            Overlay::None => match pane {
                Some(Focus::Conversation) => self.conversation.scroll.scroll_by(delta),
                Some(Focus::Tools) => self.tools.scroll.scroll_by(delta),
                Some(Focus::Approvals) if delta < 0 => self.approvals.select_prev(),
                Some(Focus::Approvals) => self.approvals.select_next(),
                _ => return false,
            },
        }
        true
    }
}
