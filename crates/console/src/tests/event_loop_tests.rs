//! The event loop's pacing: output bursts coalesce into frames, the
//! operator's keys are drawn at once and ahead of queued output. Driven
//! through [`run_with`] with a recording backend (every frame's text) and
//! a channel standing in for the terminal's input. Also the bytes written
//! between frames when an approval waits: bell, title, desktop escape.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use futures::channel::mpsc as fmpsc;
use ratatui::Terminal;
use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::ConsoleOptions;
use crate::terminal::event_loop::{Pacer, run, streamed};
use crate::tests::app_tests::app;
use vigil_protocol::{AgentCommand, AgentEvent, OutputStream};

/// A [`TestBackend`] that keeps the text of every frame (one per
/// `Backend::flush`, which `Terminal::draw` calls once).
struct Recorder {
    inner: TestBackend,
    frames: Arc<Mutex<Vec<String>>>,
    /// Bytes written outside frames (bell, title, notifications).
    written: Arc<Mutex<Vec<u8>>>,
}

impl Recorder {
    fn text(&self) -> String {
        let b = self.inner.buffer();
        let mut out = String::new();
        for y in 0..b.area.height {
            for x in 0..b.area.width {
                out.push_str(b[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }
}

impl io::Write for Recorder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn ok<T>(r: Result<T, std::convert::Infallible>) -> io::Result<T> {
    r.map_err(|e| match e {})
}

impl Backend for Recorder {
    type Error = io::Error;
    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        ok(self.inner.draw(content))
    }
    fn hide_cursor(&mut self) -> io::Result<()> {
        ok(self.inner.hide_cursor())
    }
    fn show_cursor(&mut self) -> io::Result<()> {
        ok(self.inner.show_cursor())
    }
    fn get_cursor_position(&mut self) -> io::Result<Position> {
        ok(self.inner.get_cursor_position())
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        ok(self.inner.set_cursor_position(position))
    }
    fn clear(&mut self) -> io::Result<()> {
        ok(self.inner.clear())
    }
    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        ok(self.inner.clear_region(clear_type))
    }
    fn size(&self) -> io::Result<Size> {
        ok(self.inner.size())
    }
    fn window_size(&mut self) -> io::Result<WindowSize> {
        ok(self.inner.window_size())
    }
    fn flush(&mut self) -> io::Result<()> {
        let text = self.text();
        self.frames.lock().unwrap().push(text);
        ok(Backend::flush(&mut self.inner))
    }
}

fn recorder() -> (Terminal<Recorder>, Frames, Arc<Mutex<Vec<u8>>>) {
    let frames: Arc<Mutex<Vec<String>>> = Arc::default();
    let written: Arc<Mutex<Vec<u8>>> = Arc::default();
    let backend = Recorder {
        inner: TestBackend::new(100, 30),
        frames: frames.clone(),
        written: written.clone(),
    };
    (Terminal::new(backend).expect("terminal"), frames, written)
}

fn started() -> AgentEvent {
    AgentEvent::ToolStarted {
        call_id: "c1".into(),
        name: "run_shell".into(),
        summary: "seq 1 1000000".into(),
    }
}

fn output(text: String) -> AgentEvent {
    AgentEvent::ToolOutput {
        call_id: "c1".into(),
        stream: OutputStream::Stdout,
        text,
    }
}

fn key(c: char) -> io::Result<Event> {
    Ok(Event::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

/// Wait (up to 20 s) until some frame contains `what`.
async fn frame_with(frames: &Frames, what: &str) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if frames.lock().unwrap().iter().any(|f| f.contains(what)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

type Frames = Arc<Mutex<Vec<String>>>;

/// Run the loop on `agent_rx` with a recorded 100×30 screen while `driver`
/// runs; the driver ends the loop by dropping the input sender it got.
/// Returns every frame drawn.
async fn drive<D, F>(
    agent_rx: &mut mpsc::UnboundedReceiver<AgentEvent>,
    first_keys: &[char],
    opts: ConsoleOptions,
    driver: D,
) -> Vec<String>
where
    D: FnOnce(fmpsc::UnboundedSender<io::Result<Event>>, Frames) -> F,
    F: std::future::Future<Output = ()>,
{
    let (mut term, frames, _) = recorder();
    let mut app = app();
    let (key_tx, mut keys) = fmpsc::unbounded();
    for &c in first_keys {
        key_tx.unbounded_send(key(c)).unwrap();
    }
    let (cmd_tx, _cmd_rx) = mpsc::unbounded_channel::<AgentCommand>();
    let (ran, ()) = tokio::join!(
        run(&mut term, &mut app, &mut keys, agent_rx, &cmd_tx, &opts),
        driver(key_tx, frames.clone())
    );
    ran.expect("the loop ends when the input ends");
    frames.lock().unwrap().clone()
}

#[test]
fn output_waits_for_the_frame_clock_and_the_operator_does_not() {
    let t0 = Instant::now();
    let frame = Duration::from_millis(100);
    let mut p = Pacer::new(10, t0);
    assert!(p.due(t0), "the first frame is drawn at once");
    p.drawn(t0);
    for _ in 0..1000 {
        p.changed();
    }
    assert!(!p.due(t0 + frame / 2), "a burst waits for the clock");
    assert!(p.due(t0 + frame), "and is drawn once it allows");
    p.drawn(t0 + frame);
    assert!(!p.due(t0 + frame * 3), "nothing changed, nothing drawn");
    p.at_once();
    assert!(p.due(t0 + frame), "a key is drawn without waiting");
}

#[test]
fn a_resize_paints_the_whole_screen_now_and_once_more_when_it_settles() {
    let t0 = Instant::now();
    let mut p = Pacer::new(10, t0);
    p.drawn(t0);
    assert!(!p.whole(t0), "an ordinary frame paints what changed");
    p.resized(t0);
    assert!(
        p.whole(t0) && p.due(t0),
        "a resize is painted whole at once"
    );
    p.drawn(t0);
    let soon = t0 + Duration::from_millis(100);
    assert!(
        !p.whole(soon) && !p.due(soon),
        "not again before it settles"
    );
    let later = t0 + Duration::from_secs(1);
    assert!(p.whole(later) && p.due(later), "and whole once more after");
    p.drawn(later);
    assert!(!p.whole(later + Duration::from_secs(5)), "then only once");
}

#[test]
fn streams_wait_for_the_clock_and_steps_of_the_turn_do_not() {
    assert!(streamed(&output("x\n".into())));
    assert!(streamed(&AgentEvent::AssistantDelta { text: "a".into() }));
    assert!(!streamed(&started()));
    assert!(!streamed(&AgentEvent::TurnFinished {
        outcome: vigil_protocol::TurnOutcome::Completed,
    }));
}

#[tokio::test]
async fn a_key_is_drawn_before_queued_output_is_applied() {
    let (agent_tx, mut agent_rx) = mpsc::unbounded_channel();
    agent_tx.send(started()).unwrap();
    for i in 0..3000 {
        agent_tx.send(output(format!("flood-line-{i}\n"))).unwrap();
    }
    agent_tx.send(output("LAST-OUTPUT\n".into())).unwrap();
    let opts = ConsoleOptions::default();
    let frames = drive(&mut agent_rx, &['Z'], opts, |keys, frames| async move {
        assert!(frame_with(&frames, "LAST-OUTPUT").await, "the output shows");
        drop(keys);
    })
    .await;
    assert!(
        !frames[0].contains('Z'),
        "no Z before the key:\n{}",
        frames[0]
    );
    let first_z = frames
        .iter()
        .position(|f| f.contains('Z'))
        .expect("a frame shows the key");
    assert!(
        !frames[first_z].contains("flood-line-"),
        "the key's frame came after queued output:\n{}",
        frames[first_z]
    );
}

#[tokio::test]
async fn a_stream_of_output_costs_at_most_one_frame_per_tick() {
    let (agent_tx, mut agent_rx) = mpsc::unbounded_channel();
    let opts = ConsoleOptions {
        fps_cap: 10,
        ..ConsoleOptions::default()
    };
    let events = 300;
    let start = Instant::now();
    let frames = drive(&mut agent_rx, &[], opts, |keys, frames| async move {
        agent_tx.send(started()).unwrap();
        for i in 0..events {
            agent_tx.send(output(format!("line-{i}\n"))).unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        agent_tx.send(output("LAST-OUTPUT\n".into())).unwrap();
        assert!(frame_with(&frames, "LAST-OUTPUT").await, "the output shows");
        drop(keys);
    })
    .await;
    let elapsed = start.elapsed();
    // One frame at start, one for the tool's start (a step, drawn at
    // once), then at most one per 100 ms tick (and one for the tick that
    // was running when the stream ended). Unpaced, each event would draw.
    let allowed = 3 + (elapsed.as_millis() / 100) as usize;
    assert!(
        frames.len() <= allowed,
        "{} frames for {events} output events in {elapsed:?} (at most {allowed})",
        frames.len()
    );
}

#[tokio::test]
async fn the_title_counts_waiting_approvals_and_a_new_one_notifies() {
    use crate::terminal::notify::{Desktop, NotifyOptions, Osc, desktop, set_title};
    use vigil_protocol::{ApprovalDecision, DecidedBy};
    let (mut term, frames, written) = recorder();
    let mut app = app();
    let nine = Desktop {
        osc: Osc::Nine,
        tmux: false,
    };
    let opts = ConsoleOptions {
        notify: NotifyOptions {
            title: true,
            desktop: Some(nine),
        },
        ..ConsoleOptions::default()
    };
    let (agent_tx, mut agent_rx) = mpsc::unbounded_channel();
    let (key_tx, mut keys) = fmpsc::unbounded::<io::Result<Event>>();
    let (cmd_tx, _cmd_rx) = mpsc::unbounded_channel::<AgentCommand>();
    let request = crate::tests::app_tests::request(1, "c1", "rm -rf /tmp/x");
    let shown = written.clone();
    let seen = move |what: String| {
        let shown = shown.clone();
        async move {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(20) {
                if String::from_utf8_lossy(&shown.lock().unwrap()).contains(&what) {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            false
        }
    };
    let driver = async move {
        agent_tx
            .send(AgentEvent::ApprovalRequested { request })
            .unwrap();
        assert!(frame_with(&frames, "rm -rf /tmp/x").await);
        assert!(seen(set_title(1)).await, "the title counts one");
        agent_tx
            .send(AgentEvent::ApprovalResolved {
                id: 1,
                decision: ApprovalDecision::ApproveOnce,
                decided_by: DecidedBy::Operator,
                previewed: false,
                answered_by: None,
            })
            .unwrap();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            let text = String::from_utf8_lossy(&written.lock().unwrap()).into_owned();
            if text.rfind(&set_title(0)) > text.find(&set_title(1)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(key_tx);
        written
    };
    let (ran, written) = tokio::join!(
        run(
            &mut term,
            &mut app,
            &mut keys,
            &mut agent_rx,
            &cmd_tx,
            &opts
        ),
        driver
    );
    ran.expect("the loop ends when the input ends");
    let text = String::from_utf8_lossy(&written.lock().unwrap()).into_owned();
    let at = |what: &str| {
        text.find(what)
            .unwrap_or_else(|| panic!("{what:?} in {text:?}"))
    };
    let first = at(&set_title(0));
    let one = at(&set_title(1));
    // The bell, then the desktop notification naming the command.
    let rang = format!(
        "\x07{}",
        desktop(nine, "run_shell wants to run rm -rf /tmp/x")
    );
    assert!(first < at(&rang) && first < one, "{text:?}");
    assert!(
        text.rfind(&set_title(0)).unwrap() > one,
        "back to no count once answered: {text:?}"
    );
    assert_eq!(
        text.matches("\x1b]9;").count(),
        1,
        "one notification: {text:?}"
    );
}
