//! The one trait every pane, overlay and modal implements, and what it
//! trades with the App.
//!
//! A [`Pane`] answers a key with an [`Outcome`] (consumed, ignored, or an
//! action the App carries out), lists the [`Command`]s it offers (the
//! footer is written from them, so the footer names exactly the keys the
//! pane answers), and renders from `&self`: drawing never changes state.
//!
//! The App stacks these as layers (see `app::layers`): the key goes to the
//! top layer first and falls through only when it is ignored. A pane never
//! sends anything and never reaches into another pane: what it cannot do
//! alone it returns as its [`Pane::Action`].

use crossterm::event::{KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;

use crate::keys::{Action, Keymap, Scope};
use crate::panes::footer::Focus;
use crate::style::theme::Theme;

/// What a layer did with a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<A> {
    /// Handled here; nothing else to do.
    Consumed,
    /// Not this layer's key: the next layer down gets it.
    Ignored,
    /// Handled here; the App carries out the rest.
    Action(A),
}

impl<A> Outcome<A> {
    /// Anything but [`Outcome::Ignored`].
    pub fn is_handled(&self) -> bool {
        !matches!(self, Outcome::Ignored)
    }
}

/// One key a layer offers, as the footer shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The key as shown (`y`, `PgUp/PgDn`, `↑↓`); empty for a note.
    pub key: String,
    /// What it does.
    pub label: &'static str,
}

impl Command {
    pub fn new(key: impl Into<String>, label: &'static str) -> Command {
        Command {
            key: key.into(),
            label,
        }
    }

    /// The key the keymap binds to `action`, named `label`.
    pub fn bound(ctx: &Ctx, action: Action, label: &'static str) -> Command {
        Command::new(ctx.keys.label(action), label)
    }

    /// A line of text with no key of its own (a modal's hint).
    pub fn note(label: &'static str) -> Command {
        Command::new(String::new(), label)
    }
}

/// What a layer may know about the console when it handles a key or lists
/// its commands.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub keys: Keymap,
    pub focus: Focus,
    /// A turn is running (the cancel key works).
    pub running: bool,
    /// Approvals waiting for an answer.
    pub pending: usize,
    /// A client of an agent process (detach works, `q` asks).
    pub attached: bool,
    /// The agents the fleet view knows (this one included).
    pub agents: usize,
}

impl Ctx {
    /// The global action bound to this key, if any.
    pub fn global(&self, key: &KeyEvent) -> Option<Action> {
        self.keys.action(key, Scope::Global)
    }

    /// Other agents run beside this console's (the agents key is offered).
    pub fn others(&self) -> bool {
        self.agents > 1
    }
}

/// What a layer needs to draw itself.
#[derive(Debug, Clone, Copy)]
pub struct Look<'a> {
    pub theme: &'a Theme,
    pub keys: &'a Keymap,
    /// This pane has the keyboard.
    pub focused: bool,
}

/// A pane, overlay or modal: one event handler, the commands it offers and
/// a render that cannot mutate state.
pub trait Pane {
    /// What a handled key asks of the App.
    type Action;

    /// Answer a key: consumed, ignored (the next layer gets it) or an action.
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome<Self::Action>;

    /// The keys this layer answers, for the footer, most important first.
    fn commands(&self, ctx: &Ctx) -> Vec<Command>;

    /// Draw into `area`.
    fn render(&self, frame: &mut Frame, area: Rect, look: &Look);
}

/// Ctrl or Alt is held: a pane's plain keys (scrolling, selecting) never
/// answer such a key.
pub fn chorded(key: &KeyEvent) -> bool {
    key.modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
}

/// What the panes under the overlays ask of the App.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaneAction {
    /// Do what the keymap binds this key to, as anywhere in the console.
    Bound(Action),
    /// Send this message to the agent (the message box).
    Send(String),
    /// Open the selected approval's preview in the viewer.
    OpenPreview,
    /// An approval key outside the approvals pane: say where to answer.
    RefuseApproval,
}

/// What an overlay (help, history, viewer, rules, agents) asks of the App.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverlayAction {
    /// Close this overlay (the viewer goes back to the history list).
    Close,
    /// Do what the keymap binds this key to.
    Bound(Action),
    /// Open the selected entry (a call's full output).
    Open,
    /// Ask for a search query.
    Search,
    /// Ask where to save the output.
    SaveAs,
    /// Mark the first line of a range to copy.
    Mark,
    /// Copy the marked range or the whole output.
    CopyOutput,
    /// Keep (or discard) the session rules read back from the log.
    Keep(bool),
    /// Revoke the selected rule.
    Revoke,
    /// Switch to the agent at this row.
    Switch(usize),
}

/// The action this key is bound to where approvals are answered (the
/// approval keys first, then the global ones).
pub fn bound(key: &KeyEvent, ctx: &Ctx) -> Option<Action> {
    ctx.keys.action(key, Scope::Approvals)
}

/// A pane's answer to a bound key: the ones it `offers` are its own (the
/// App runs them), every other bound key falls through to the global keys
/// (the keymap wins over a pane's plain keys). `None`: the key is unbound.
pub fn claim(key: &KeyEvent, ctx: &Ctx, offers: &[Action]) -> Option<Outcome<PaneAction>> {
    let action = bound(key, ctx)?;
    Some(if offers.contains(&action) {
        Outcome::Action(PaneAction::Bound(action))
    } else {
        Outcome::Ignored
    })
}

/// The bottom layer: every bound key no layer above answered (moving
/// between panes, back, cancel, quit, help, zoom, the views...). An
/// approval key reaches it only outside the approvals pane, where it
/// answers nothing and says where approvals are answered.
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobalKeys;

impl Pane for GlobalKeys {
    type Action = PaneAction;

    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome<PaneAction> {
        match bound(key, ctx) {
            Some(a) if a.scope() == Scope::Approvals => Outcome::Action(PaneAction::RefuseApproval),
            Some(a) => Outcome::Action(PaneAction::Bound(a)),
            None => Outcome::Ignored,
        }
    }

    /// What every pane but the message box ends its footer with.
    fn commands(&self, ctx: &Ctx) -> Vec<Command> {
        let mut c = Vec::new();
        if ctx.focus == Focus::Input {
            return c;
        }
        if ctx.running {
            c.push(Command::bound(ctx, Action::Cancel, "cancel turn"));
        }
        c.push(Command::bound(ctx, Action::Help, "help"));
        if ctx.attached {
            c.push(Command::bound(ctx, Action::Detach, "detach"));
            c.push(Command::bound(ctx, Action::Quit, "leave…"));
        } else {
            c.push(Command::bound(ctx, Action::Quit, "quit"));
        }
        c
    }

    /// The global keys have no area: the footer shows them.
    fn render(&self, _frame: &mut Frame, _area: Rect, _look: &Look) {}
}
