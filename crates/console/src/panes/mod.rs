//! The console's panes: one file per pane, overlay and modal, each with its
//! own state and one implementation of the [`pane::Pane`] trait: a key
//! handler that answers consumed / ignored / an action, the commands it
//! offers (the footer is written from them) and a `render(&self, ..)` that
//! never mutates state (apart from the remembered viewport size in
//! [`Scroll`] and what the approvals pane last showed).
//!
//! Panes never execute anything and never talk to the agent: the
//! [`App`](super::app::App) stacks them as layers (see `app::keys`) and
//! turns their actions into commands. The status bar implements the trait
//! too but takes no key, so it is drawn and never stacked; the banner and
//! the footer are lines the App draws from other panes' state (the footer
//! from the top layer's commands).

pub mod agents;
pub mod approvals;
pub mod approvals_keys;
pub mod banner;
pub mod card_facts;
pub mod conversation;
pub mod diff_card;
pub mod footer;
pub mod heights;
pub mod help;
pub mod history;
pub mod input;
pub mod leave;
pub mod mirror;
pub mod modal;
pub mod pane;
pub mod quit_ask;
pub mod rules;
pub mod scrolling;
pub mod status;
pub mod tool_lines;
pub mod tools;
pub mod viewer;

use std::cell::Cell;

use ratatui::style::Modifier;
use ratatui::widgets::{Block, BorderType};

use crate::style::theme::Theme;

/// The bordered block every pane sits in; the focused one stands out (thick
/// border and bold title, so it shows without colour too).
pub fn pane_block(title: String, focused: bool, theme: &Theme) -> Block<'static> {
    let block = Block::bordered().title(format!(" {title} "));
    if focused {
        block
            .border_type(BorderType::Thick)
            .border_style(theme.border_focused)
            .title_style(theme.title_focused.add_modifier(Modifier::BOLD))
    } else {
        block.border_style(theme.border)
    }
}

/// Vertical scroll position of a line list: follows the tail until the
/// operator scrolls, and goes back to following when scrolled to the end.
#[derive(Debug, Default)]
pub struct Scroll {
    /// First visible line; `None` follows the tail.
    top: Option<usize>,
    /// (total lines, viewport height) at the last render, for paging.
    last: Cell<(usize, usize)>,
}

impl Scroll {
    pub fn is_following(&self) -> bool {
        self.top.is_none()
    }

    /// The first visible line for this many lines in this height; remembers
    /// both for the next page key.
    pub fn first_visible(&self, total: usize, height: usize) -> usize {
        self.last.set((total, height));
        let max_top = total.saturating_sub(height);
        match self.top {
            None => max_top,
            Some(t) => t.min(max_top),
        }
    }

    /// Lines below the viewport (0 when following).
    pub fn lines_below(&self, total: usize, height: usize) -> usize {
        let top = self.first_visible(total, height);
        total.saturating_sub(top + height)
    }

    /// The first visible line at the last render.
    pub fn current_top(&self) -> usize {
        let (total, height) = self.last.get();
        let max_top = total.saturating_sub(height);
        self.top.map_or(max_top, |t| t.min(max_top))
    }

    pub fn up(&mut self, lines: usize) {
        self.top = Some(self.current_top().saturating_sub(lines));
    }

    pub fn down(&mut self, lines: usize) {
        let (total, height) = self.last.get();
        let next = self.current_top() + lines;
        self.top = if next >= total.saturating_sub(height) {
            None
        } else {
            Some(next)
        };
    }

    pub fn page(&self) -> usize {
        self.last.get().1.saturating_sub(1).max(1)
    }

    pub fn page_up(&mut self) {
        self.up(self.page());
    }

    pub fn page_down(&mut self) {
        self.down(self.page());
    }

    /// Scroll by a signed number of lines (mouse wheel).
    pub fn scroll_by(&mut self, delta: isize) {
        if delta < 0 {
            self.up(delta.unsigned_abs());
        } else {
            self.down(delta as usize);
        }
    }

    /// Keep `line` in view (search hits), leaving the tail when needed.
    pub fn reveal(&mut self, line: usize) {
        let (_, height) = self.last.get();
        let top = self.current_top();
        if line < top || line >= top + height.max(1) {
            self.top = Some(line.saturating_sub(height / 3));
        }
    }

    pub fn home(&mut self) {
        self.top = Some(0);
    }

    pub fn end(&mut self) {
        self.top = None;
    }

    /// Apply a scroll key; true when the key was one.
    pub fn apply_key(&mut self, code: crossterm::event::KeyCode) -> bool {
        use crossterm::event::KeyCode;
        match code {
            KeyCode::PageUp => self.page_up(),
            KeyCode::PageDown => self.page_down(),
            KeyCode::Home => self.home(),
            KeyCode::End => self.end(),
            KeyCode::Up | KeyCode::Char('k') => self.up(1),
            KeyCode::Down | KeyCode::Char('j') => self.down(1),
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scroll_follows_until_moved_and_resumes_at_end() {
        let mut s = Scroll::default();
        assert_eq!(s.first_visible(100, 10), 90);
        s.page_up();
        assert!(!s.is_following());
        assert_eq!(s.first_visible(100, 10), 81);
        // New lines do not move a scrolled view.
        assert_eq!(s.first_visible(120, 10), 81);
        s.home();
        assert_eq!(s.first_visible(120, 10), 0);
        s.page_down();
        assert_eq!(s.first_visible(120, 10), 9);
        s.end();
        assert!(s.is_following());
        s.up(5);
        s.down(5);
        assert!(s.is_following());
    }
}
