//! The question on quitting when vigil leaves managed tmux sessions on a
//! remote target: keep them (`k`, also Enter: the default loses nothing),
//! remove them (`r`), or go back (Esc). It only renders and maps keys; the
//! choice is carried out by the caller after the console has closed.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Wrap};

use super::modal::centered;
use super::pane::{Command, Ctx, Look, Outcome, Pane};
use crate::style::text::one_line;
use crate::style::theme::Theme;
use vigil_protocol::OnExit;
use vigil_protocol::text::sanitize;

/// The footer's hint while the question is open.
pub const HINT: &str = "k keep (Enter) · r remove · Esc back";

/// What a key did to the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Quit with this choice.
    Quit(OnExit),
    /// Close the question and stay.
    Back,
    /// Not an answer; keep asking.
    Stay,
}

/// The open question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveAsk {
    /// What is left behind, in the operator's words.
    pub what: String,
}

impl LeaveAsk {
    pub fn new(what: &str) -> LeaveAsk {
        LeaveAsk {
            what: one_line(&sanitize(what), 200),
        }
    }

    fn answer_key(&self, key: &KeyEvent) -> Answer {
        match key.code {
            KeyCode::Char('k' | 'K') | KeyCode::Enter => Answer::Quit(OnExit::Keep),
            KeyCode::Char('r' | 'R') => Answer::Quit(OnExit::Remove),
            KeyCode::Esc => Answer::Back,
            _ => Answer::Stay,
        }
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let explain = "Keep them (attach later) or remove them? The connection closes either way.";
        question(
            frame,
            area,
            theme,
            (" quit vigil ", HINT),
            &self.what,
            explain,
        );
    }
}

impl Pane for LeaveAsk {
    /// Never `Answer::Stay` (that is [`Outcome::Consumed`]).
    type Action = Answer;

    /// The question takes every key until it is answered.
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome<Answer> {
        match self.answer_key(key) {
            Answer::Stay => Outcome::Consumed,
            answer => Outcome::Action(answer),
        }
    }

    fn commands(&self, _ctx: &Ctx) -> Vec<Command> {
        vec![Command::note(HINT)]
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        self.draw(frame, area, look.theme);
    }
}

/// A leaving question: a double-bordered box over `area` with a title and
/// its keys at the bottom, what is at stake, then what the choices do.
pub fn question(
    frame: &mut Frame,
    area: Rect,
    theme: &Theme,
    (title, hint): (&str, &str),
    what: &str,
    explain: &str,
) {
    let rect = centered(area, 72, 7);
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(theme.modal)
        .title(title.to_string())
        .title_style(theme.modal.add_modifier(Modifier::BOLD))
        .title_bottom(format!(" {hint} "));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let lines = vec![
        Line::styled(format!("{what}."), theme.text),
        Line::styled(explain.to_string(), theme.dim),
    ];
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_map_to_answers_and_the_default_keeps() {
        let ask = LeaveAsk::new("sessions on ssh u@h");
        assert_eq!(
            ask.answer_key(&key(KeyCode::Char('k'))),
            Answer::Quit(OnExit::Keep)
        );
        assert_eq!(
            ask.answer_key(&key(KeyCode::Enter)),
            Answer::Quit(OnExit::Keep)
        );
        assert_eq!(
            ask.answer_key(&key(KeyCode::Char('r'))),
            Answer::Quit(OnExit::Remove)
        );
        assert_eq!(ask.answer_key(&key(KeyCode::Esc)), Answer::Back);
        assert_eq!(ask.answer_key(&key(KeyCode::Char('q'))), Answer::Stay);
        assert_eq!(OnExit::default(), OnExit::Unsaid);
    }
}
