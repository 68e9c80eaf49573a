//! OpenTelemetry export (`[telemetry] otlp_endpoint`, docs/audit.md): spans
//! for turns, tool calls and approval decisions, sent over OTLP/HTTP
//! (protobuf) to `<endpoint>/v1/traces` as each span ends. One trace per
//! session; a call's span is a child of its turn's, a decision's a child of
//! its call's.
//!
//! A relay looks at events on their way to the session recorder and never
//! holds one back: each export is its own task with a time limit. A failed
//! export is logged, the first one as a warning; spans are not kept for a
//! later try. It decides nothing and never renders.

pub mod proto;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::mpsc::UnboundedReceiver;

use proto::{AttrValue, Span};
use vigil_protocol::{AgentEvent, TurnOutcome};

/// Where spans go and what they are named.
pub struct Exporter {
    url: String,
    service: String,
    timeout: Duration,
    session: String,
    trace_id: [u8; 16],
    next: AtomicU64,
    told: AtomicBool,
    /// Exports still under way ([`Exporter::flush`] waits for them).
    sending: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// A turn span is open: its end is still to come through the tap
    /// ([`Exporter::flush`] waits for it).
    turn_open: AtomicBool,
}

/// Longest [`Exporter::flush`] waits for the tap to see an open turn end.
const TURN_END_WAIT: Duration = Duration::from_secs(5);

/// Spans started and not yet ended.
#[derive(Default)]
struct Open {
    turn: Option<Span>,
    calls: HashMap<String, Span>,
    decisions: HashMap<u64, Span>,
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A text attribute, with known secrets masked (it leaves the machine).
fn str_attr(k: &str, v: impl Into<String>) -> (String, AttrValue) {
    let text = crate::record::redact::current().apply(&v.into());
    (k.to_string(), AttrValue::Str(text))
}

impl Exporter {
    /// An exporter to `endpoint` (e.g. `http://127.0.0.1:4318`).
    pub fn new(endpoint: &str, service: &str, timeout: Duration, session: &str) -> Arc<Exporter> {
        let digest = Sha256::digest(format!("vigil trace {session}").as_bytes());
        let mut trace_id = [0u8; 16];
        trace_id.copy_from_slice(&digest[..16]);
        Arc::new(Exporter {
            url: format!("{}/v1/traces", endpoint.trim_end_matches('/')),
            service: service.to_string(),
            timeout,
            session: session.to_string(),
            trace_id,
            next: AtomicU64::new(1),
            told: AtomicBool::new(false),
            sending: std::sync::Mutex::new(Vec::new()),
            turn_open: AtomicBool::new(false),
        })
    }

    fn span_id(&self) -> [u8; 8] {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let digest = Sha256::digest(format!("{} {n}", self.session).as_bytes());
        let mut id = [0u8; 8];
        id.copy_from_slice(&digest[..8]);
        id
    }

    fn start(
        &self,
        name: String,
        parent: Option<[u8; 8]>,
        attributes: Vec<(String, AttrValue)>,
    ) -> Span {
        let mut attributes = attributes;
        attributes.push(str_attr("vigil.session_id", self.session.clone()));
        Span {
            trace_id: self.trace_id,
            span_id: self.span_id(),
            parent,
            name,
            start_ns: now_ns(),
            end_ns: 0,
            attributes,
            error: None,
        }
    }

    /// Forward every event from `rx` unchanged, exporting spans as they end.
    pub fn relay(
        self: Arc<Self>,
        rx: UnboundedReceiver<AgentEvent>,
    ) -> UnboundedReceiver<AgentEvent> {
        let mut open = Open::default();
        crate::telemetry::relay::tap(rx, move |event| {
            if let Some(done) = self.observe(&mut open, event) {
                let me = self.clone();
                let send = tokio::spawn(async move { me.send(done).await });
                let mut sending = self.sending.lock().unwrap_or_else(|e| e.into_inner());
                sending.retain(|h| !h.is_finished());
                sending.push(send);
            }
        })
    }

    /// Start or end a span for `event`; Some: a span that ended.
    fn observe(&self, open: &mut Open, event: &AgentEvent) -> Option<Span> {
        let turn_id = open.turn.as_ref().map(|t| t.span_id);
        let ended = match event {
            AgentEvent::TurnStarted { .. } | AgentEvent::TurnContinued { .. }
                if open.turn.is_none() =>
            {
                open.turn = Some(self.start("turn".into(), None, Vec::new()));
                self.turn_open.store(true, Ordering::SeqCst);
                None
            }
            AgentEvent::TurnFinished { outcome } => open.turn.take().map(|mut s| {
                self.turn_open.store(false, Ordering::SeqCst);
                let (word, error) = match outcome {
                    TurnOutcome::Completed => ("completed", None),
                    TurnOutcome::Cancelled => ("cancelled", None),
                    TurnOutcome::Failed(why) => ("failed", Some(why.clone())),
                };
                s.attributes.push(str_attr("vigil.turn.outcome", word));
                s.error = error;
                s
            }),
            AgentEvent::ToolCallRequested { call_id, name, .. } => {
                let attrs = vec![
                    str_attr("vigil.call_id", call_id.clone()),
                    str_attr("vigil.tool", name.clone()),
                ];
                open.calls.insert(
                    call_id.clone(),
                    self.start(format!("call {name}"), turn_id, attrs),
                );
                None
            }
            AgentEvent::ToolCompleted {
                call_id, summary, ..
            } => open.calls.remove(call_id).map(|mut s| {
                s.attributes
                    .push(("vigil.ok".into(), AttrValue::Bool(summary.ok)));
                if let Some(code) = summary.exit_code {
                    s.attributes
                        .push(("vigil.exit_code".into(), AttrValue::Int(i64::from(code))));
                }
                s.error = summary.error.clone().filter(|_| !summary.ok);
                s
            }),
            AgentEvent::ToolCancelled { call_id, .. } => open.calls.remove(call_id).map(|mut s| {
                s.error = Some("cancelled".into());
                s
            }),
            AgentEvent::ApprovalRequested { request } => {
                let parent = open
                    .calls
                    .get(&request.call_id)
                    .map(|c| c.span_id)
                    .or(turn_id);
                let attrs = vec![
                    str_attr("vigil.call_id", request.call_id.clone()),
                    str_attr("vigil.tool", request.tool.clone()),
                    str_attr("vigil.action", request.gate.action.clone()),
                ];
                open.decisions
                    .insert(request.id, self.start("decision".into(), parent, attrs));
                None
            }
            AgentEvent::ApprovalResolved {
                id,
                decision,
                decided_by,
                previewed,
                answered_by,
            } => open.decisions.remove(id).map(|mut s| {
                s.attributes.push((
                    "vigil.approved".into(),
                    AttrValue::Bool(decision.is_approved()),
                ));
                s.attributes.push(str_attr(
                    "vigil.decided_by",
                    decided_by.record(decision, *previewed),
                ));
                if let Some(who) = answered_by {
                    s.attributes
                        .push(str_attr("vigil.console", who.console.describe()));
                }
                s
            }),
            _ => None,
        };
        ended.map(|mut s| {
            s.end_ns = now_ns();
            s
        })
    }

    /// Wait for the exports under way (each within its time limit). The
    /// agent's task has ended by then, but the tap may not yet have seen
    /// its last events (the turn's end is the last): an open turn is waited
    /// for, up to [`TURN_END_WAIT`], so its span is sent before vigil exits.
    pub async fn flush(&self) {
        let deadline = tokio::time::Instant::now() + TURN_END_WAIT;
        while self.turn_open.load(Ordering::SeqCst) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let sending: Vec<_> =
            std::mem::take(&mut *self.sending.lock().unwrap_or_else(|e| e.into_inner()));
        futures::future::join_all(sending).await;
    }

    async fn send(&self, span: Span) {
        let body = proto::export_request(&self.service, &[span]);
        let sent = async {
            let client = vigil_tools::http::client_builder()
                .timeout(self.timeout)
                .build()?;
            client
                .post(&self.url)
                .header("content-type", "application/x-protobuf")
                .body(body)
                .send()
                .await?
                .error_for_status()
        };
        if let Err(e) = sent.await {
            let text = format!("OpenTelemetry export to {} failed: {e}", self.url);
            if self.told.swap(true, Ordering::Relaxed) {
                tracing::debug!("{text}");
            } else {
                tracing::warn!("{text} (later failures are logged at debug level)");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The agent's task ended with its last event still queued in the tap:
    /// flush waits for the turn to end there and sends its span.
    #[tokio::test(flavor = "current_thread")]
    async fn flush_waits_for_a_turn_whose_end_the_tap_has_not_seen() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let kept = bodies.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let kept = kept.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    let n = conn.read(&mut buf).await.unwrap_or(0);
                    kept.lock().unwrap().extend_from_slice(&buf[..n]);
                    let ok = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                    let _ = conn.write_all(ok.as_bytes()).await;
                });
            }
        });
        let exporter = Exporter::new(
            &format!("http://127.0.0.1:{port}"),
            "vigil-test",
            Duration::from_secs(5),
            "s",
        );
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut out = exporter.clone().relay(rx);
        tx.send(AgentEvent::TurnStarted { user: "x".into() })
            .unwrap();
        out.recv().await.unwrap();
        // Queued, not yet seen: on one thread the tap runs only when
        // flush waits.
        tx.send(AgentEvent::TurnFinished {
            outcome: TurnOutcome::Completed,
        })
        .unwrap();
        exporter.flush().await;
        let got = bodies.lock().unwrap().clone();
        assert!(
            got.windows(4).any(|w| w == b"turn"),
            "the turn's span was sent: {}",
            String::from_utf8_lossy(&got)
        );
    }
}
