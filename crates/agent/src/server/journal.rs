//! The agent process's journal: every event the agent emitted, numbered
//! from 1, kept in memory so that an attaching console replays them and
//! gets the screen of one that never left.
//!
//! Lossless events (conversation, tool calls, approvals, notices) are kept
//! whole, serialized once as the line every client is sent. Output deltas
//! ([`AgentEvent::ToolOutput`]) are best-effort: consecutive deltas of one
//! call and stream are merged into one entry (remembering where each delta
//! began, so a client that saw part of an entry gets only the rest), and
//! only the newest [`Limits::per_call`] bytes of each call and
//! [`Limits::total`] bytes over all calls are kept; where output was
//! dropped a marker entry says how much. The journal is thus bounded
//! independently of how much a command prints.
//!
//! Clients read it with [`Journal::read_after`] from their own cursor, both
//! for the replay and live: there is no per-client queue, so memory does
//! not grow with the number of consoles. It never touches a socket.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use vigil_protocol::wire::ServerMsg;
use vigil_protocol::{AgentEvent, OutputStream};

/// How much output the journal keeps.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Output bytes kept per tool call (the newest).
    pub per_call: usize,
    /// Output bytes kept over all calls (the oldest calls lose theirs first).
    pub total: usize,
    /// Largest merged output entry, in bytes.
    pub merge_bytes: usize,
    /// Most deltas merged into one entry.
    pub merge_pieces: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // The console keeps 500 lines of up to 2 000 characters per call.
            per_call: 1 << 20,
            total: 16 << 20,
            merge_bytes: 64 << 10,
            merge_pieces: 1024,
        }
    }
}

/// One line for a client: shared by every client, or made for one.
#[derive(Debug, Clone)]
pub enum Line {
    Shared(Arc<str>),
    Owned(String),
}

impl Line {
    pub fn as_str(&self) -> &str {
        match self {
            Line::Shared(s) => s,
            Line::Owned(s) => s,
        }
    }
}

/// What [`Journal::read_after`] found.
#[derive(Debug, Default)]
pub struct Batch {
    /// Complete lines, `\n`-terminated, in order.
    pub lines: Vec<Line>,
    /// The cursor after this batch (the newest seq covered).
    pub upto: u64,
}

struct Entry {
    seq: u64,
    body: Body,
}

enum Body {
    /// A whole event line (`{"type":"event","seq":…}` + `\n`).
    Event(Arc<str>),
    Output(Output),
    /// Output of this call was dropped here: how many bytes so far.
    Dropped {
        call_id: Arc<str>,
        bytes: u64,
    },
    /// Nothing left (removed by the next compaction).
    Gone,
}

struct Output {
    call_id: Arc<str>,
    stream: OutputStream,
    text: String,
    /// `(seq, byte offset)` where each merged delta begins.
    pieces: Vec<(u64, usize)>,
}

#[derive(Default)]
struct CallOut {
    /// Seqs of this call's kept output entries, oldest first.
    entries: VecDeque<u64>,
    bytes: usize,
    dropped: u64,
    /// Seq of this call's drop marker, if any.
    marker: Option<u64>,
}

/// The numbered, bounded record of everything the agent emitted.
pub struct Journal {
    entries: VecDeque<Entry>,
    newest: u64,
    calls: HashMap<Arc<str>, CallOut>,
    /// Calls holding output, by first output (the global bound drops here).
    order: VecDeque<Arc<str>>,
    kept: usize,
    gone: usize,
    limits: Limits,
}

impl Default for Journal {
    fn default() -> Self {
        Journal::new(Limits::default())
    }
}

impl Journal {
    pub fn new(limits: Limits) -> Journal {
        Journal {
            entries: VecDeque::new(),
            newest: 0,
            calls: HashMap::new(),
            order: VecDeque::new(),
            kept: 0,
            gone: 0,
            limits,
        }
    }

    /// The newest seq handed out (0: none yet).
    pub fn newest(&self) -> u64 {
        self.newest
    }

    /// Output bytes kept now (all calls).
    pub fn output_bytes(&self) -> usize {
        self.kept
    }

    /// Entries held (events, output entries, markers).
    pub fn len(&self) -> usize {
        self.entries.len() - self.gone
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Record `event`; returns its seq.
    pub fn append(&mut self, event: AgentEvent) -> u64 {
        self.newest += 1;
        let seq = self.newest;
        match event {
            AgentEvent::ToolOutput {
                call_id,
                stream,
                text,
            } => self.append_output(seq, call_id, stream, text),
            event => {
                let line = event_line(seq, &event);
                self.entries.push_back(Entry {
                    seq,
                    body: Body::Event(line.into()),
                });
            }
        }
        self.compact();
        seq
    }

    fn append_output(&mut self, seq: u64, call_id: String, stream: OutputStream, text: String) {
        let len = text.len();
        let merged = match self.entries.back_mut() {
            Some(Entry {
                seq: last,
                body: Body::Output(out),
            }) if *out.call_id == *call_id
                && out.stream == stream
                && out.text.len() + len <= self.limits.merge_bytes
                && out.pieces.len() < self.limits.merge_pieces =>
            {
                out.pieces.push((seq, out.text.len()));
                out.text.push_str(&text);
                let old = *last;
                *last = seq;
                Some((old, out.call_id.clone()))
            }
            _ => None,
        };
        let call_id: Arc<str> = match merged {
            Some((old, id)) => {
                let call = self.calls.entry(id.clone()).or_default();
                if let Some(back) = call.entries.back_mut().filter(|b| **b == old) {
                    *back = seq;
                }
                id
            }
            None => {
                let id: Arc<str> = self
                    .calls
                    .get_key_value(call_id.as_str())
                    .map(|(k, _)| k.clone())
                    .unwrap_or_else(|| call_id.into());
                self.entries.push_back(Entry {
                    seq,
                    body: Body::Output(Output {
                        call_id: id.clone(),
                        stream,
                        text,
                        pieces: vec![(seq, 0)],
                    }),
                });
                let call = self.calls.entry(id.clone()).or_default();
                if call.entries.is_empty() {
                    self.order.push_back(id.clone());
                }
                call.entries.push_back(seq);
                id
            }
        };
        let call = self.calls.entry(call_id.clone()).or_default();
        call.bytes += len;
        self.kept += len;
        self.enforce(&call_id);
    }

    /// Drop the oldest output until both bounds hold. The newest entry of
    /// the call being written is kept whatever its size.
    fn enforce(&mut self, current: &Arc<str>) {
        while self
            .calls
            .get(current)
            .is_some_and(|c| c.bytes > self.limits.per_call && c.entries.len() > 1)
        {
            self.drop_oldest_of(current);
        }
        while self.kept > self.limits.total {
            let Some(victim) = self.order.front().cloned() else {
                break;
            };
            let is_current = *victim == **current;
            let n = self.calls.get(&victim).map_or(0, |c| c.entries.len());
            if is_current && n <= 1 {
                break;
            }
            if n == 0 || !self.drop_oldest_of(&victim) {
                self.order.pop_front();
            }
        }
    }

    /// Drop one output entry (the oldest) of `call`; false when none.
    fn drop_oldest_of(&mut self, call_id: &Arc<str>) -> bool {
        let Some(call) = self.calls.get_mut(call_id) else {
            return false;
        };
        let Some(seq) = call.entries.pop_front() else {
            return false;
        };
        let empty = call.entries.is_empty();
        let old_marker = call.marker.replace(seq);
        let Some(i) = self.index_of(seq) else {
            return false;
        };
        let bytes = match &self.entries[i].body {
            Body::Output(out) => out.text.len(),
            _ => 0,
        };
        let call = self.calls.get_mut(call_id).expect("present above");
        call.bytes -= bytes;
        call.dropped += bytes as u64;
        let dropped = call.dropped;
        self.kept -= bytes;
        self.entries[i].body = Body::Dropped {
            call_id: call_id.clone(),
            bytes: dropped,
        };
        if let Some(j) = old_marker.and_then(|m| self.index_of(m)) {
            self.entries[j].body = Body::Gone;
            self.gone += 1;
        }
        if empty {
            self.order.retain(|c| c != call_id);
        }
        true
    }

    fn index_of(&self, seq: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&seq, |e| e.seq).ok()
    }

    /// Remove dropped-and-replaced entries once they are many.
    fn compact(&mut self) {
        if self.gone > 1024 && self.gone * 2 > self.entries.len() {
            self.entries.retain(|e| !matches!(e.body, Body::Gone));
            self.gone = 0;
        }
    }

    /// The lines after seq `after`: at most `max_lines` entries or about
    /// `max_bytes` bytes (always at least one line when there is one).
    pub fn read_after(&self, after: u64, max_lines: usize, max_bytes: usize) -> Batch {
        let start = self.entries.partition_point(|e| e.seq <= after);
        let mut batch = Batch {
            lines: Vec::new(),
            upto: after,
        };
        let mut bytes = 0;
        for entry in self.entries.range(start..) {
            if batch.lines.len() >= max_lines || (bytes >= max_bytes && !batch.lines.is_empty()) {
                return batch;
            }
            if let Some(line) = entry_line(entry, after) {
                bytes += line.as_str().len();
                batch.lines.push(line);
            }
            batch.upto = entry.seq;
        }
        batch.upto = self.newest.max(after);
        batch
    }
}

/// The line of one entry for a client whose cursor is `after`.
fn entry_line(entry: &Entry, after: u64) -> Option<Line> {
    match &entry.body {
        Body::Event(line) => Some(Line::Shared(line.clone())),
        Body::Gone => None,
        Body::Dropped { call_id, bytes } => {
            let event = AgentEvent::ToolInfo {
                call_id: call_id.to_string(),
                text: format!(
                    "… {bytes} bytes of earlier output not shown (the agent keeps the newest \
                     output of each call)"
                ),
            };
            Some(Line::Owned(event_line(entry.seq, &event)))
        }
        Body::Output(out) => {
            let from = out
                .pieces
                .iter()
                .find(|(s, _)| *s > after)
                .map_or(out.text.len(), |(_, off)| *off);
            let event = AgentEvent::ToolOutput {
                call_id: out.call_id.to_string(),
                stream: out.stream,
                text: out.text[from..].to_string(),
            };
            Some(Line::Owned(event_line(entry.seq, &event)))
        }
    }
}

/// `{"type":"event","seq":N,"event":…}\n`: the form of
/// [`ServerMsg::Event`], written without copying the event.
pub fn event_line(seq: u64, event: &AgentEvent) -> String {
    #[derive(serde::Serialize)]
    struct EventRef<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        seq: u64,
        event: &'a AgentEvent,
    }
    let line = serde_json::to_string(&EventRef {
        kind: "event",
        seq,
        event,
    });
    let mut line = line.unwrap_or_else(|e| {
        // An event that cannot be encoded is replaced by a notice saying so.
        let notice = ServerMsg::Event {
            seq,
            event: AgentEvent::Notice {
                text: format!("an event could not be encoded: {e}"),
            },
        };
        serde_json::to_string(&notice).unwrap_or_default()
    });
    line.push('\n');
    line
}

#[cfg(test)]
mod tests;
