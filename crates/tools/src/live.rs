//! Live output of a running command for the console: best-effort deltas
//! under a byte budget per interval, so a flood cannot queue without bound
//! between the agent and the console.
//!
//! Output beyond the budget is skipped and counted; the next delta that is
//! sent comes after an info line "N bytes not shown live", and when the run
//! ends with bytes skipped the operator gets that line and the last lines
//! of the output. The model's view and the spill file never depend on this
//! module: it must never be the only record of any byte.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{StreamSink, ToolStream};
use vigil_exec::OutputFn;
use vigil_protocol::tool::OutputStream;

/// The budget is renewed every interval...
const INTERVAL: Duration = Duration::from_millis(100);
/// ...and allows this many bytes of deltas in it.
const BUDGET: usize = 64 * 1024;
/// At most this much of the tail is sent after a run that skipped bytes.
const TAIL_MAX: usize = 8 * 1024;

#[derive(Debug)]
struct State {
    window_start: Instant,
    sent: usize,
    /// Bytes skipped since the last marker.
    skipped: u64,
    /// Bytes skipped over the whole run.
    skipped_total: u64,
}

/// Rate-limits one run's output deltas into a tool's stream sink.
pub struct LiveOutput {
    sink: StreamSink,
    state: Mutex<State>,
    budget: usize,
}

/// The line that tells the operator how much the live view left out.
pub fn not_shown(bytes: u64) -> String {
    format!("[{bytes} bytes not shown live]")
}

impl LiveOutput {
    pub fn new(sink: StreamSink) -> Arc<LiveOutput> {
        LiveOutput::with_budget(sink, BUDGET)
    }

    pub fn with_budget(sink: StreamSink, budget: usize) -> Arc<LiveOutput> {
        Arc::new(LiveOutput {
            sink,
            state: Mutex::new(State {
                window_start: Instant::now(),
                sent: 0,
                skipped: 0,
                skipped_total: 0,
            }),
            budget,
        })
    }

    /// The callback to hand to the execution layer.
    pub fn output_fn(self: &Arc<Self>) -> OutputFn {
        let me = self.clone();
        Arc::new(move |which, text: &str| me.delta(which, text))
    }

    fn delta(&self, which: OutputStream, text: &str) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if now.duration_since(st.window_start) >= INTERVAL {
            st.window_start = now;
            st.sent = 0;
        }
        if st.sent + text.len() > self.budget {
            // The window is over budget: skip the rest of it too, so a
            // flood of uneven chunks gives one marker per window, not a
            // marker and a fragment for every chunk that still fits.
            st.sent = self.budget;
            st.skipped += text.len() as u64;
            st.skipped_total += text.len() as u64;
            return;
        }
        st.sent += text.len();
        let skipped = std::mem::take(&mut st.skipped);
        drop(st);
        if skipped > 0 {
            (self.sink)(ToolStream::Info(not_shown(skipped)));
        }
        (self.sink)(match which {
            OutputStream::Stdout => ToolStream::Stdout(text.to_string()),
            OutputStream::Stderr => ToolStream::Stderr(text.to_string()),
        })
    }

    /// Bytes skipped over the whole run so far.
    pub fn skipped_total(&self) -> u64 {
        self.state
            .lock()
            .map(|s| s.skipped_total)
            .unwrap_or_default()
    }

    /// The run is over: when bytes were skipped since the last delta, say
    /// how many and send the last lines of `stdout_tail` (the end of the
    /// output as the capture kept it).
    pub fn finish(&self, stdout_tail: &[u8]) {
        let skipped = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::take(&mut st.skipped)
        };
        if skipped == 0 {
            return;
        }
        (self.sink)(ToolStream::Info(not_shown(skipped)));
        let tail = last_lines(stdout_tail, TAIL_MAX);
        if !tail.is_empty() {
            (self.sink)(ToolStream::Stdout(tail));
        }
    }
}

/// At most `max` bytes from the end of `bytes`, starting after a newline
/// when there is one, decoded lossily.
fn last_lines(bytes: &[u8], max: usize) -> String {
    let from = bytes.len().saturating_sub(max);
    let mut part = &bytes[from..];
    if from > 0 {
        if let Some(nl) = part.iter().position(|&b| b == b'\n') {
            part = &part[nl + 1..];
        }
    }
    String::from_utf8_lossy(part).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder() -> (Arc<Mutex<Vec<ToolStream>>>, StreamSink) {
        let log: Arc<Mutex<Vec<ToolStream>>> = Arc::default();
        let l = log.clone();
        (log, Arc::new(move |ev| l.lock().unwrap().push(ev)))
    }

    #[test]
    fn a_flood_is_skipped_with_a_marker_and_ends_with_its_tail() {
        let (log, sink) = recorder();
        let live = LiveOutput::with_budget(sink, 10);
        let f = live.output_fn();
        f(OutputStream::Stdout, "12345678\n");
        f(OutputStream::Stdout, "abcdefgh\n");
        f(OutputStream::Stdout, "ijklmnop\n");
        assert_eq!(live.skipped_total(), 18);
        live.finish(b"x\nlast line\n");
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 3, "{log:?}");
        assert!(matches!(&log[0], ToolStream::Stdout(t) if t == "12345678\n"));
        assert!(
            matches!(&log[1], ToolStream::Info(t) if t.starts_with("[18 bytes not shown live"))
        );
        assert!(matches!(&log[2], ToolStream::Stdout(t) if t == "x\nlast line\n"));
    }

    #[test]
    fn a_trickle_passes_whole_and_the_budget_renews() {
        let (log, sink) = recorder();
        let live = LiveOutput::with_budget(sink, 4);
        let f = live.output_fn();
        f(OutputStream::Stdout, "abc");
        f(OutputStream::Stderr, "toolong");
        std::thread::sleep(INTERVAL + Duration::from_millis(20));
        f(OutputStream::Stderr, "e");
        live.finish(b"");
        let log = log.lock().unwrap();
        assert!(matches!(&log[0], ToolStream::Stdout(t) if t == "abc"));
        assert!(matches!(&log[1], ToolStream::Info(t) if t.starts_with("[7 bytes")));
        assert!(matches!(&log[2], ToolStream::Stderr(t) if t == "e"));
        assert_eq!(log.len(), 3, "nothing left to report at the end");
    }

    #[test]
    fn once_a_window_skips_a_chunk_smaller_ones_do_not_slip_through() {
        let (log, sink) = recorder();
        let live = LiveOutput::with_budget(sink, 10);
        let f = live.output_fn();
        f(OutputStream::Stdout, "1234567\n");
        f(OutputStream::Stdout, "too long\n");
        f(OutputStream::Stdout, "a\n");
        f(OutputStream::Stdout, "b\n");
        assert_eq!(live.skipped_total(), 13);
        let log = log.lock().unwrap();
        assert_eq!(
            log.len(),
            1,
            "one delta, then nothing until the window ends: {log:?}"
        );
    }

    #[test]
    fn the_tail_starts_at_a_line() {
        assert_eq!(last_lines(b"aaaa\nbb\ncc", 6), "bb\ncc");
        assert_eq!(last_lines(b"short", 100), "short");
    }
}
