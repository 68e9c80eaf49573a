//! The console's one event loop: merges terminal input, agent events, the
//! mirror feed's captures and a clock tick with `tokio::select!`; state changes mark the screen dirty and
//! drawing is coalesced to at most one frame per `1/fps`, each wrapped in a
//! synchronized update so the terminal never shows a half-drawn frame.
//!
//! The operator comes first: terminal input is polled before anything else
//! (`biased`), and a key, a paste or a resize is drawn at once instead of
//! waiting for the frame clock ([`Pacer`]), so a key's frame never waits
//! behind queued output events or a timer. Streamed agent events (output,
//! tokens) only mark the screen dirty: a burst of them costs at most one
//! frame per `1/fps`; a step of the turn (a tool ended, an approval asked,
//! the answer complete) is drawn at once. A resize paints every cell, at
//! once and again when the resizes settle: the terminal may have cut its
//! copy of the screen, so the last frame is no longer what it shows.
//!
//! It never awaits the agent: commands go out on an unbounded channel. File
//! work the App asks for runs on `spawn_blocking` threads and comes back as
//! one more event source, so no frame waits on a disk.

use std::io::{self, Write};
use std::time::Duration;

use crossterm::event::{Event, KeyEventKind};
use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use crossterm::{execute, queue};
use futures::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::ConsoleOptions;
use crate::app::App;
use crate::io::{IoResult, perform};
use vigil_protocol::{AgentCommand, AgentEvent};

/// How often the clock is checked while a turn runs (the status bar shows
/// whole seconds).
const RUNNING_TICK: Duration = Duration::from_millis(250);
/// Most agent events applied between two looks at the keyboard.
const MAX_DRAIN: usize = 4096;
/// Longest time spent applying agent events between two looks at the
/// keyboard (a flood of output must not delay keys).
const DRAIN_BUDGET: Duration = Duration::from_millis(4);
/// Idle wake-up when nothing is due.
const IDLE_TICK: Duration = Duration::from_secs(3600);
/// After the last resize, the whole screen is painted once more this much
/// later: a terminal multiplexer may hand the new size to the program
/// after it has already cut its own copy of the screen, so a storm of
/// resizes can end on the size the console last drew at, over rows the
/// multiplexer blanked.
const RESIZE_SETTLE: Duration = Duration::from_millis(300);

/// When to draw: what changed the screen since the last frame and when the
/// frame clock allows the next one.
#[derive(Debug)]
pub(crate) struct Pacer {
    frame: Duration,
    next_frame: Instant,
    /// Something changed since the last frame.
    dirty: bool,
    /// The operator or a step of the turn: draw without waiting for the clock.
    urgent: bool,
    /// When the oldest key not yet drawn arrived (for the slow-key log).
    key_at: Option<std::time::Instant>,
    /// The terminal was resized: what it shows is no longer what the last
    /// frame drew, so the next frame paints every cell.
    repaint: bool,
    /// When to paint the whole screen once more after the last resize.
    settle: Option<Instant>,
}

impl Pacer {
    pub(crate) fn new(fps_cap: u32, now: Instant) -> Pacer {
        Pacer {
            frame: Duration::from_secs_f64(1.0 / f64::from(fps_cap.max(1))),
            next_frame: now,
            dirty: true,
            urgent: false,
            key_at: None,
            repaint: false,
            settle: None,
        }
    }

    /// The terminal changed size at `now`: the whole screen is painted at
    /// once, and again when the resizes have settled.
    pub(crate) fn resized(&mut self, now: Instant) {
        self.at_once();
        self.repaint = true;
        self.settle = Some(now + RESIZE_SETTLE);
    }

    /// Whether the next frame paints every cell; a settled resize's time
    /// has come at `now` counts.
    pub(crate) fn whole(&mut self, now: Instant) -> bool {
        if self.settle.is_some_and(|at| now >= at) {
            self.settle = None;
            self.repaint = true;
            self.at_once();
        }
        self.repaint
    }

    /// The operator typed: drawn at once, and timed until it is.
    pub(crate) fn key(&mut self) {
        self.at_once();
        self.key_at.get_or_insert_with(std::time::Instant::now);
    }

    /// The screen changed (agent output, a tick): drawn when the clock allows.
    pub(crate) fn changed(&mut self) {
        self.dirty = true;
    }

    /// The operator's input or a step of the turn changed the screen:
    /// drawn at once.
    pub(crate) fn at_once(&mut self) {
        self.dirty = true;
        self.urgent = true;
    }

    /// Whether to draw now.
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.dirty && (self.urgent || now >= self.next_frame)
    }

    /// A frame was drawn at `now`.
    pub(crate) fn drawn(&mut self, now: Instant) {
        self.dirty = false;
        self.urgent = false;
        self.repaint = false;
        self.next_frame = now + self.frame;
    }

    /// When to wake up if nothing arrives.
    fn wake(&self, now: Instant, ticking: bool) -> Instant {
        let wake = if self.dirty {
            self.next_frame.max(now)
        } else if ticking {
            now + RUNNING_TICK
        } else {
            now + IDLE_TICK
        };
        self.settle.map_or(wake, |at| wake.min(at))
    }
}

/// Run until the operator quits, the terminal closes or drawing fails.
/// Forwards every command except `Quit`, which the caller sends once.
/// `input` is the terminal's events (a crossterm `EventStream`; tests feed
/// their own).
pub async fn run<B, S>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    input: &mut S,
    events: &mut UnboundedReceiver<AgentEvent>,
    commands: &UnboundedSender<AgentCommand>,
    opts: &ConsoleOptions,
) -> io::Result<()>
where
    B: Backend + Write,
    io::Error: From<B::Error>,
    S: Stream<Item = io::Result<Event>> + Unpin,
{
    let (io_tx, mut io_rx) = tokio::sync::mpsc::unbounded_channel::<IoResult>();
    let mut agent_open = true;
    let mut mirror = opts.mirror.clone();
    let mut fleet = opts.fleet.as_ref().map(|f| f.view.clone());
    let mut pacer = Pacer::new(opts.fps_cap, Instant::now());
    let mut titled: Option<usize> = None;
    loop {
        side_effects(terminal, app, opts);
        if opts.notify.title {
            retitle(terminal, app.waiting(), &mut titled);
        }
        let now = Instant::now();
        let whole = pacer.whole(now);
        if pacer.due(now) {
            let started = std::time::Instant::now();
            draw(terminal, app, whole)?;
            pacer.drawn(now);
            log_slow_frame(pacer.key_at.take(), started);
        }
        let wake = pacer.wake(now, app.needs_tick());
        // `biased`: the keyboard is looked at first, so a key never waits
        // behind a queue of agent events.
        tokio::select! {
            biased;
            maybe = input.next() => match maybe {
                Some(Ok(ev)) => {
                    on_terminal_event(app, ev, commands, &mut pacer);
                    if app.should_quit() {
                        return Ok(());
                    }
                    start_io(app, &io_tx);
                }
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
            Some(result) = io_rx.recv() => {
                app.on_io(result);
                pacer.changed();
            }
            changed = mirror_changed(&mut mirror) => {
                match changed {
                    Some(text) => app.mirror_mut().set_content(&text),
                    // The feed ended (the agent's tmux layer is gone).
                    None => mirror = None,
                }
                pacer.changed();
            }
            changed = watched(&mut fleet) => {
                match changed {
                    Some(view) => app.set_fleet(view, wall_ms()),
                    None => fleet = None,
                }
                pacer.at_once();
            }
            maybe = events.recv(), if agent_open => match maybe {
                Some(ev) => {
                    if drain(app, ev, events) {
                        pacer.at_once();
                    } else {
                        pacer.changed();
                    }
                }
                None => {
                    agent_open = false;
                    let message = app.agent_gone().to_string();
                    app.on_agent_event(AgentEvent::Error { message });
                    pacer.at_once();
                }
            },
            _ = tokio::time::sleep_until(wake) => {}
        }
        if app.tick(std::time::Instant::now()) {
            pacer.changed();
        }
    }
}

/// The bell and the clipboard the App asked for since the last loop.
fn side_effects<B: Backend + Write>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    opts: &ConsoleOptions,
) {
    if app.take_bell() {
        if opts.bell {
            write_raw(terminal, "\x07");
        }
        if let (Some(d), Some(what)) = (opts.notify.desktop, app.newest_waiting()) {
            write_raw(terminal, &crate::terminal::notify::desktop(d, &what));
        }
    }
    let answers = app.take_fleet_answers();
    if let Some(fleet) = &opts.fleet {
        for answer in answers {
            // Unbounded: never waits; a closed feed lost its agents anyway.
            let _ = fleet.answers.send(answer);
        }
    }
    if let Some(text) = app.take_clipboard() {
        // OSC 52: the terminal (or tmux with set-clipboard on) puts it
        // on the clipboard; nothing else is written for it.
        let backend = terminal.backend_mut();
        let _ = backend.write_all(crate::app::copy::osc52(&text).as_bytes());
        let _ = Write::flush(backend);
    }
}

/// Write bytes straight to the terminal, outside a frame (a failed write
/// is not worth stopping the console for: the next frame reports it).
pub(crate) fn write_raw<B: Backend + Write>(terminal: &mut Terminal<B>, bytes: &str) {
    let backend = terminal.backend_mut();
    let _ = backend.write_all(bytes.as_bytes());
    let _ = Write::flush(backend);
}

/// Put the count of waiting approvals in the title when it changed.
fn retitle<B: Backend + Write>(
    terminal: &mut Terminal<B>,
    waiting: usize,
    shown: &mut Option<usize>,
) {
    if *shown != Some(waiting) {
        write_raw(terminal, &crate::terminal::notify::set_title(waiting));
        *shown = Some(waiting);
    }
}

/// Run the file work the App asked for off the UI task.
fn start_io(app: &mut App, io_tx: &UnboundedSender<IoResult>) {
    for req in app.take_io() {
        let tx = io_tx.clone();
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(perform(req));
        });
    }
}

/// Apply `first` and what else is pending, bounded in count and time so a
/// flood of output cannot starve the keyboard. True when one of them was a
/// step of the turn rather than a stream (see [`streamed`]).
fn drain(app: &mut App, first: AgentEvent, events: &mut UnboundedReceiver<AgentEvent>) -> bool {
    let mut step = !streamed(&first);
    app.on_agent_event(first);
    let started = std::time::Instant::now();
    for _ in 0..MAX_DRAIN {
        if started.elapsed() >= DRAIN_BUDGET {
            break;
        }
        match events.try_recv() {
            Ok(ev) => {
                step |= !streamed(&ev);
                app.on_agent_event(ev);
            }
            Err(_) => break,
        }
    }
    step
}

/// Events that come in streams (output, tokens, counters): drawn at the
/// frame clock's pace. Every other event is a step of the turn (a tool
/// started or ended, an approval asked, the answer complete), a few per
/// turn, drawn at once.
pub(crate) const fn streamed(ev: &AgentEvent) -> bool {
    matches!(
        ev,
        AgentEvent::AssistantDelta { .. }
            | AgentEvent::ToolOutput { .. }
            | AgentEvent::ToolInfo { .. }
            | AgentEvent::ContextUsage { .. }
            | AgentEvent::OperatorKeys { .. }
    )
}

/// The next capture of the mirrored pane (None: the feed ended). Never
/// resolves without a feed, so an idle or absent pane costs nothing.
async fn mirror_changed(mirror: &mut Option<watch::Receiver<String>>) -> Option<String> {
    watched(mirror).await
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The next value of a watched feed (None: the feed ended); never resolves
/// without one.
async fn watched<T: Clone>(feed: &mut Option<watch::Receiver<T>>) -> Option<T> {
    let Some(rx) = feed.as_mut() else {
        return std::future::pending().await;
    };
    match rx.changed().await {
        Ok(()) => Some(rx.borrow_and_update().clone()),
        Err(_) => None,
    }
}

/// Apply one terminal event. A key, a paste or a resize is drawn at once;
/// the mouse (wheel scrolling can come in bursts) waits for the frame clock.
fn on_terminal_event(
    app: &mut App,
    ev: Event,
    commands: &UnboundedSender<AgentCommand>,
    pacer: &mut Pacer,
) {
    match ev {
        Event::Key(key) if key.kind != KeyEventKind::Release => {
            for cmd in app.on_key(key) {
                if cmd != AgentCommand::Quit {
                    // Unbounded: never waits. A closed channel is reported
                    // by the event receiver closing.
                    let _ = commands.send(cmd);
                }
            }
            pacer.key();
        }
        Event::Paste(text) => {
            for cmd in app.on_paste(&text) {
                let _ = commands.send(cmd);
            }
            pacer.at_once();
        }
        Event::Mouse(m) if app.on_mouse(m) => pacer.changed(),
        Event::Resize(..) => pacer.resized(Instant::now()),
        Event::FocusGained => pacer.at_once(),
        _ => {}
    }
}

/// A key's frame (or any frame) slower than this is logged at debug level
/// under `vigil::latency`, with where the time went: waiting before the
/// frame (the loop was busy elsewhere) or drawing it.
const SLOW_FRAME: Duration = Duration::from_millis(25);

fn log_slow_frame(key_at: Option<std::time::Instant>, started: std::time::Instant) {
    let drawing = started.elapsed();
    let waited = key_at.map(|k| started.saturating_duration_since(k));
    if drawing + waited.unwrap_or_default() >= SLOW_FRAME {
        tracing::debug!(
            target: "vigil::latency",
            key = key_at.is_some(),
            waited_us = waited.map_or(0, |d| d.as_micros() as u64),
            drawing_us = drawing.as_micros() as u64,
            "slow frame"
        );
    }
}

/// One frame, inside a synchronized update; `whole`: every cell is painted,
/// not only those that differ from the last frame.
fn draw<B>(terminal: &mut Terminal<B>, app: &App, whole: bool) -> io::Result<()>
where
    B: Backend + Write,
    io::Error: From<B::Error>,
{
    queue!(terminal.backend_mut(), BeginSynchronizedUpdate)?;
    let drawn = match whole {
        true => terminal.clear(),
        false => Ok(()),
    };
    let drawn = drawn.and_then(|()| terminal.draw(|f| app.draw(f)).map(|_| ()));
    execute!(terminal.backend_mut(), EndSynchronizedUpdate)?;
    Ok(drawn?)
}
