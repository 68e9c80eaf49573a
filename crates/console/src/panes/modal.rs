//! Modals drawn over the panes: the deny-with-reason box, the edit-command
//! box, the approve-for-the-session box (the exact command or a prefix of
//! it), the approval policy menu, the output search line and the save-as
//! box. A modal takes every key until it closes, so no approval key or
//! pane key acts behind it.
//!
//! It only edits its own text and reports an outcome; the App turns the
//! outcome into a command or an I/O request.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Wrap};
use ratatui_textarea::TextArea;

use super::pane::{Command, Ctx, Look, Outcome, Pane};
use super::status::policy_label;
use crate::style::theme::Theme;
use vigil_protocol::ApprovalPolicy;
use vigil_protocol::PrefixChoices;

/// The policy menu's entries (the timed one takes its minutes from the menu).
pub const POLICIES: [ApprovalPolicy; 6] = [
    ApprovalPolicy::Ask,
    ApprovalPolicy::AutoApproveLow,
    ApprovalPolicy::ApproveAll,
    ApprovalPolicy::DenyAll,
    ApprovalPolicy::ByEffect,
    // The timed entry stays last: `+`/`-` select it.
    ApprovalPolicy::ApproveAllFor { minutes: 15 },
];

pub enum Modal {
    /// Deny approval `id` with the typed reason.
    Reason {
        id: u64,
        area: TextArea<'static>,
    },
    /// Run approval `id` with the edited action.
    Edit {
        id: u64,
        original: String,
        area: TextArea<'static>,
    },
    /// Approve request `id` for the session: the exact command, or the
    /// prefix of it the operator shortens it to.
    Session {
        id: u64,
        command: String,
        /// vigil rates this command high (a prefix rule never covers such).
        high: bool,
        /// The rules the agent said this command can have.
        choices: PrefixChoices,
        area: TextArea<'static>,
    },
    Policy {
        selected: usize,
        minutes: u32,
    },
    Search {
        query: String,
    },
    Save {
        area: TextArea<'static>,
    },
}

impl std::fmt::Debug for Modal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Modal::Reason { id, area } => write!(f, "Reason({id}, {:?})", area.lines()),
            Modal::Edit { id, area, .. } => write!(f, "Edit({id}, {:?})", area.lines()),
            Modal::Session { id, area, .. } => write!(f, "Session({id}, {:?})", area.lines()),
            Modal::Policy { selected, minutes } => write!(f, "Policy({selected}, {minutes})"),
            Modal::Search { query } => write!(f, "Search({query:?})"),
            Modal::Save { area } => write!(f, "Save({:?})", area.lines()),
        }
    }
}

/// What a key did to the modal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Stay,
    Close,
    Reason(u64, String),
    /// (id, edited action, true when it differs from the original).
    Edited(u64, String, bool),
    /// (id, the confirmed prefix; `None` for exactly this command).
    Session(u64, Option<String>),
    Policy(ApprovalPolicy),
    Search(String),
    Save(String),
}

fn text_area(initial: &str) -> TextArea<'static> {
    let lines: Vec<String> = initial.split('\n').map(str::to_string).collect();
    let mut area = TextArea::new(lines);
    area.set_cursor_line_style(Style::new());
    area.set_cursor_style(Style::new().add_modifier(Modifier::REVERSED));
    // Long commands wrap: the start of a command is never scrolled away.
    area.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
    area.move_cursor(ratatui_textarea::CursorMove::Bottom);
    area.move_cursor(ratatui_textarea::CursorMove::End);
    area
}

impl Modal {
    pub fn reason(id: u64) -> Modal {
        Modal::reason_with(id, "")
    }

    /// The reason box holding `text` to edit (a preview's summary).
    pub fn reason_with(id: u64, text: &str) -> Modal {
        Modal::Reason {
            id,
            area: text_area(text),
        }
    }

    pub fn edit(id: u64, action: &str) -> Modal {
        Modal::Edit {
            id,
            original: action.to_string(),
            area: text_area(action),
        }
    }

    pub fn session(id: u64, command: &str, high: bool, choices: PrefixChoices) -> Modal {
        Modal::Session {
            id,
            command: command.to_string(),
            high,
            choices,
            area: text_area(command),
        }
    }

    pub fn policy(current: Option<ApprovalPolicy>) -> Modal {
        let selected = current
            .and_then(|c| {
                POLICIES
                    .iter()
                    .position(|p| std::mem::discriminant(p) == std::mem::discriminant(&c))
            })
            .unwrap_or(0);
        Modal::Policy {
            selected,
            minutes: 15,
        }
    }

    pub fn save(default_path: &str) -> Modal {
        Modal::Save {
            area: text_area(default_path),
        }
    }

    /// The footer's hint while this modal is open.
    pub fn hint(&self) -> &'static str {
        match self {
            Modal::Reason { .. } => "Enter deny with this reason · Esc back",
            Modal::Edit { .. } => "Enter run the edited command · Alt-Enter newline · Esc back",
            Modal::Session { .. } => "Enter approve · Tab shorter · Shift-Tab longer · Esc back",
            Modal::Policy { .. } => "↑↓ select · +/- minutes · Enter apply · Esc back",
            Modal::Search { .. } => "Enter search · Esc back",
            Modal::Save { .. } => "Enter save · Esc back",
        }
    }

    pub fn on_paste(&mut self, text: &str) {
        match self {
            Modal::Reason { area, .. } | Modal::Edit { area, .. } | Modal::Save { area } => {
                area.insert_str(text);
            }
            Modal::Session { area, .. } => {
                area.insert_str(text.replace(['\n', '\r'], " "));
            }
            Modal::Search { query } => query.push_str(&text.replace('\n', " ")),
            Modal::Policy { .. } => {}
        }
    }

    fn answer_key(&mut self, key: KeyEvent) -> Answer {
        if key.code == KeyCode::Esc {
            return Answer::Close;
        }
        let newline = key.code == KeyCode::Enter
            && key
                .modifiers
                .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT);
        match self {
            Modal::Reason { id, area } => match key.code {
                KeyCode::Enter if !newline => {
                    Answer::Reason(*id, area.lines().join("\n").trim().to_string())
                }
                _ => {
                    area.input(key);
                    Answer::Stay
                }
            },
            Modal::Edit { id, original, area } => {
                if newline {
                    area.insert_newline();
                    return Answer::Stay;
                }
                match key.code {
                    KeyCode::Enter => {
                        let text = area.lines().join("\n").trim().to_string();
                        if text.is_empty() {
                            return Answer::Stay;
                        }
                        let changed = text != original.trim();
                        Answer::Edited(*id, text, changed)
                    }
                    _ => {
                        area.input(key);
                        Answer::Stay
                    }
                }
            }
            Modal::Session {
                id,
                command,
                area,
                choices,
                ..
            } => match key.code {
                KeyCode::Enter => {
                    let text = session_text(area);
                    if choices.error(&text, command).is_some() {
                        return Answer::Stay;
                    }
                    let prefix = (text != command.trim()).then_some(text);
                    Answer::Session(*id, prefix)
                }
                KeyCode::Tab | KeyCode::BackTab => {
                    let text = session_text(area);
                    let candidates = choices.candidates(command);
                    let next = if key.code == KeyCode::Tab {
                        candidates.iter().rev().find(|c| c.len() < text.len())
                    } else {
                        candidates.iter().find(|c| c.len() > text.len())
                    };
                    let next = next
                        .cloned()
                        .or_else(|| (key.code == KeyCode::BackTab).then(|| command.clone()));
                    if let Some(next) = next {
                        *area = text_area(&next);
                    }
                    Answer::Stay
                }
                _ => {
                    area.input(key);
                    Answer::Stay
                }
            },
            Modal::Save { area } => match key.code {
                KeyCode::Enter => {
                    let text = area.lines().join("").trim().to_string();
                    if text.is_empty() {
                        Answer::Stay
                    } else {
                        Answer::Save(text)
                    }
                }
                _ => {
                    area.input(key);
                    Answer::Stay
                }
            },
            Modal::Search { query } => match key.code {
                KeyCode::Enter => Answer::Search(std::mem::take(query)),
                KeyCode::Backspace => {
                    query.pop();
                    Answer::Stay
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    query.push(c);
                    Answer::Stay
                }
                _ => Answer::Stay,
            },
            Modal::Policy { selected, minutes } => match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    *selected = selected.saturating_sub(1);
                    Answer::Stay
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    *selected = (*selected + 1).min(POLICIES.len() - 1);
                    Answer::Stay
                }
                KeyCode::Char('+') | KeyCode::Char('=') | KeyCode::Right => {
                    *selected = POLICIES.len() - 1;
                    *minutes = (*minutes + 5).min(24 * 60);
                    Answer::Stay
                }
                KeyCode::Char('-') | KeyCode::Left => {
                    *selected = POLICIES.len() - 1;
                    *minutes = minutes.saturating_sub(5).max(1);
                    Answer::Stay
                }
                KeyCode::Char(c @ '1'..='6') => {
                    *selected = (c as usize) - ('1' as usize);
                    Answer::Stay
                }
                KeyCode::Enter => Answer::Policy(choice(*selected, *minutes)),
                _ => Answer::Stay,
            },
        }
    }

    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let (title, height) = match self {
            Modal::Reason { .. } => ("deny with a reason (the model reads it)", 7),
            Modal::Edit { .. } => ("edit the command, then run it", 9),
            Modal::Session { .. } => ("approve for the rest of the session", 10),
            Modal::Policy { .. } => ("approval policy", 9),
            Modal::Search { .. } => ("search", 3),
            Modal::Save { .. } => ("save the full output to", 5),
        };
        let rect = centered(area, 72, height);
        frame.render_widget(Clear, rect);
        let block = Block::bordered()
            .border_type(BorderType::Double)
            .border_style(theme.modal)
            .title(format!(" {title} "))
            .title_style(theme.modal.add_modifier(Modifier::BOLD))
            .title_bottom(format!(" {} ", self.hint()));
        let inner = block.inner(rect);
        frame.render_widget(block, rect);
        match self {
            Modal::Reason { area, .. } | Modal::Edit { area, .. } | Modal::Save { area, .. } => {
                frame.render_widget(area, inner);
            }
            Modal::Session {
                command,
                area,
                high,
                choices,
                ..
            } => {
                let [text, _, note] = Layout::vertical([
                    Constraint::Length(4),
                    Constraint::Length(1),
                    Constraint::Min(0),
                ])
                .areas(inner);
                frame.render_widget(area, text);
                let typed = session_text(area);
                let line = match choices.error(&typed, command) {
                    Some(e) => Line::styled(format!("✗ {e}"), theme.error),
                    None if typed == *command => {
                        Line::styled("✓ this exact command, whenever it is asked for", theme.ok)
                    }
                    None if *high => Line::styled(
                        format!(
                            "! vigil rates this command high: a prefix rule covers only the \
                             commands starting with `{typed}` it rates lower"
                        ),
                        theme.error,
                    ),
                    None => Line::styled(
                        format!(
                            "✓ commands starting with `{typed}`; never chained ones \
                             (; && | $( > …); vigil still asks for high-risk ones"
                        ),
                        theme.ok,
                    ),
                };
                frame.render_widget(Paragraph::new(line).wrap(Wrap { trim: false }), note);
            }
            Modal::Search { query } => {
                let line = Line::from(vec![
                    Span::styled("/", theme.footer_key),
                    Span::raw(query.clone()),
                    Span::styled("▌", theme.dim),
                ]);
                frame.render_widget(Paragraph::new(line), inner);
            }
            Modal::Policy { selected, minutes } => {
                let mut lines = Vec::new();
                for (i, p) in POLICIES.iter().enumerate() {
                    let label = match p {
                        ApprovalPolicy::Ask => "ask for every gated call".to_string(),
                        ApprovalPolicy::AutoApproveLow => {
                            "auto-approve what vigil rates low risk".to_string()
                        }
                        ApprovalPolicy::ByEffect => {
                            "ask only when the view shows an effect".to_string()
                        }
                        ApprovalPolicy::ApproveAllFor { .. } => {
                            format!("approve all for {minutes} minutes (+/-)")
                        }
                        other => policy_label(*other).to_lowercase(),
                    };
                    let mark = if i == *selected { "› " } else { "  " };
                    let style = if i == *selected {
                        theme.selected
                    } else {
                        theme.text
                    };
                    lines.push(Line::styled(format!("{mark}{}  {label}", i + 1), style));
                }
                let [list, _] =
                    Layout::vertical([Constraint::Min(0), Constraint::Length(0)]).areas(inner);
                frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), list);
            }
        }
    }
}

/// The session box's text, as one line without surrounding spaces.
fn session_text(area: &TextArea<'static>) -> String {
    area.lines().join(" ").trim().to_string()
}

fn choice(selected: usize, minutes: u32) -> ApprovalPolicy {
    match POLICIES.get(selected) {
        Some(ApprovalPolicy::ApproveAllFor { .. }) => ApprovalPolicy::ApproveAllFor { minutes },
        Some(p) => *p,
        None => ApprovalPolicy::Ask,
    }
}

impl Pane for Modal {
    /// Never [`Answer::Stay`] (that is [`Outcome::Consumed`]).
    type Action = Answer;

    /// A modal takes every key until it closes.
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome<Answer> {
        match self.answer_key(*key) {
            Answer::Stay => Outcome::Consumed,
            answer => Outcome::Action(answer),
        }
    }

    fn commands(&self, _ctx: &Ctx) -> Vec<Command> {
        vec![Command::note(self.hint())]
    }

    fn render(&self, frame: &mut Frame, area: Rect, look: &Look) {
        self.draw(frame, area, look.theme);
    }
}

/// A `width`×`height` rectangle centred in `area` (clipped to it).
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn edit_reports_whether_the_command_changed() {
        let mut m = Modal::edit(4, "rm -rf /tmp/x");
        assert_eq!(
            m.answer_key(key(KeyCode::Enter)),
            Answer::Edited(4, "rm -rf /tmp/x".into(), false)
        );
        m.answer_key(key(KeyCode::Backspace));
        assert_eq!(
            m.answer_key(key(KeyCode::Enter)),
            Answer::Edited(4, "rm -rf /tmp/".into(), true)
        );
        assert_eq!(m.answer_key(key(KeyCode::Esc)), Answer::Close);
    }

    #[test]
    fn policy_menu_picks_and_times() {
        let mut m = Modal::policy(Some(ApprovalPolicy::Ask));
        m.answer_key(key(KeyCode::Char('+')));
        assert_eq!(
            m.answer_key(key(KeyCode::Enter)),
            Answer::Policy(ApprovalPolicy::ApproveAllFor { minutes: 20 })
        );
        m.answer_key(key(KeyCode::Char('4')));
        assert_eq!(
            m.answer_key(key(KeyCode::Enter)),
            Answer::Policy(ApprovalPolicy::DenyAll)
        );
    }

    #[test]
    fn session_box_shortens_to_word_prefixes_and_refuses_others() {
        let session = |id, command: &str| {
            // The choices as the agent sends them with the request.
            let choices = vigil_policy::prefix_rule::choices(command);
            Modal::session(id, command, false, choices)
        };
        let mut m = session(7, "git status -s");
        m.answer_key(key(KeyCode::Tab));
        assert_eq!(
            m.answer_key(key(KeyCode::Enter)),
            Answer::Session(7, Some("git status".into()))
        );
        m.answer_key(key(KeyCode::Tab));
        m.answer_key(key(KeyCode::Tab));
        assert_eq!(
            m.answer_key(key(KeyCode::Enter)),
            Answer::Session(7, Some("git status".into())),
            "the shortest prefix stays: a rule on bare `git` is refused"
        );
        let choices = vigil_policy::prefix_rule::choices("git status -s");
        let refused = choices.error("git", "git status -s").expect("bare git");
        assert!(refused.contains("run any code"), "{refused}");
        m.answer_key(key(KeyCode::BackTab));
        assert_eq!(m.answer_key(key(KeyCode::Enter)), Answer::Session(7, None));
        // Typed text that is not a word prefix is refused, and kept.
        m.answer_key(key(KeyCode::Backspace));
        assert_eq!(m.answer_key(key(KeyCode::Enter)), Answer::Stay);
        m.answer_key(key(KeyCode::Char('s')));
        assert_eq!(m.answer_key(key(KeyCode::Enter)), Answer::Session(7, None));
        assert_eq!(m.answer_key(key(KeyCode::Esc)), Answer::Close);
        // A chained command can be approved exactly, never by a prefix.
        let mut m = session(8, "make && rm x");
        assert_eq!(m.answer_key(key(KeyCode::Enter)), Answer::Session(8, None));
        m.answer_key(key(KeyCode::Tab));
        assert_eq!(m.answer_key(key(KeyCode::Enter)), Answer::Session(8, None));
    }
}
