//! The question `q` asks in a console attached to an agent process: detach
//! (the agent keeps working; `d`, also Enter: the default loses nothing),
//! stop the agent (`s`), or cancel (Esc, `c`). It says what is running or
//! waiting, so nobody stops a command by mistake. It only renders and maps
//! keys; the App carries the answer out.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;

use super::pane::{Command, Ctx, Look, Outcome, Pane};
use crate::style::text::one_line;
use crate::style::theme::Theme;
use vigil_protocol::text::sanitize;

/// The footer's hint while the question is open.
pub const HINT: &str = "d detach (Enter) · s stop the agent · Esc cancel";

/// What a key did to the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuitAnswer {
    /// Leave; the agent keeps working.
    Detach,
    /// Stop the agent, then leave.
    Stop,
    /// Close the question and stay.
    Cancel,
    /// Not an answer; keep asking.
    Stay,
}

/// The open question, with what the agent is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuitAsk {
    /// "1 command running (`sleep 60`), 2 approvals waiting", or "the agent
    /// is idle".
    pub doing: String,
}

impl QuitAsk {
    /// `running`: the summaries of the calls running now; `waiting`: the
    /// approvals nobody answered yet.
    pub fn new(running: &[String], waiting: usize) -> QuitAsk {
        QuitAsk {
            doing: describe(running, waiting),
        }
    }

    fn answer_key(&self, key: &KeyEvent) -> QuitAnswer {
        match key.code {
            KeyCode::Char('d' | 'D') | KeyCode::Enter => QuitAnswer::Detach,
            KeyCode::Char('s' | 'S') => QuitAnswer::Stop,
            KeyCode::Esc | KeyCode::Char('c' | 'C') => QuitAnswer::Cancel,
            _ => QuitAnswer::Stay,
        }
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let explain = "Detach: the agent keeps working and approvals wait; `vigil attach` \
                       comes back. Stop: the agent ends its turn and exits.";
        let title = (" leave this console ", HINT);
        super::leave::question(frame, area, theme, title, &self.doing, explain);
    }
}

impl Pane for QuitAsk {
    /// Never `QuitAnswer::Stay` (that is [`Outcome::Consumed`]).
    type Action = QuitAnswer;

    /// The question takes every key until it is answered.
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome<QuitAnswer> {
        match self.answer_key(key) {
            QuitAnswer::Stay => Outcome::Consumed,
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

/// What the agent is doing, in a line.
fn describe(running: &[String], waiting: usize) -> String {
    let mut parts = Vec::new();
    match running {
        [] => {}
        [one] => parts.push(format!(
            "1 command running (`{}`)",
            one_line(&sanitize(one), 40)
        )),
        [first, ..] => parts.push(format!(
            "{} commands running (`{}`, …)",
            running.len(),
            one_line(&sanitize(first), 30)
        )),
    }
    match waiting {
        0 => {}
        1 => parts.push("1 approval waiting".into()),
        n => parts.push(format!("{n} approvals waiting")),
    }
    if parts.is_empty() {
        "The agent is idle".into()
    } else {
        let mut text = parts.join(", ");
        if let Some(first) = text.get(..1) {
            text = first.to_uppercase() + &text[1..];
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_map_to_answers_and_the_default_detaches() {
        let ask = QuitAsk::new(&[], 0);
        assert_eq!(ask.answer_key(&key(KeyCode::Enter)), QuitAnswer::Detach);
        assert_eq!(ask.answer_key(&key(KeyCode::Char('d'))), QuitAnswer::Detach);
        assert_eq!(ask.answer_key(&key(KeyCode::Char('s'))), QuitAnswer::Stop);
        assert_eq!(ask.answer_key(&key(KeyCode::Esc)), QuitAnswer::Cancel);
        assert_eq!(ask.answer_key(&key(KeyCode::Char('q'))), QuitAnswer::Stay);
    }

    #[test]
    fn says_what_runs_and_waits() {
        assert_eq!(QuitAsk::new(&[], 0).doing, "The agent is idle");
        assert_eq!(
            QuitAsk::new(&["sleep 60".into()], 2).doing,
            "1 command running (`sleep 60`), 2 approvals waiting"
        );
        assert_eq!(
            QuitAsk::new(&["a".into(), "b".into()], 1).doing,
            "2 commands running (`a`, …), 1 approval waiting"
        );
        assert_eq!(QuitAsk::new(&[], 1).doing, "1 approval waiting");
    }
}
