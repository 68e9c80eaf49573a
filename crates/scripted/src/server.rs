//! The scripted server itself: a tokio accept loop on `127.0.0.1:0`, routing,
//! rule selection, streaming with delays, and the misbehaviour knobs.
//!
//! Routes: `POST /v1/chat/completions` (and `/chat/completions`),
//! `POST /v1/messages` (Anthropic dialect, see [`super::anthropic`]),
//! `GET /v1/models` (and `/models`); anything else is a 404 JSON error. One
//! request per connection. It records every chat request body, in order. It
//! never hangs a client (no match means a fallback text, never silence) and it
//! stops accepting, and drops its open connections, when dropped.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use super::anthropic;
use super::chunks::{self, FakeUsage, Meta};
use super::http::{self, HttpError, Request};
use super::quirks;
use super::scenario::{Planned, Scenario};

struct Shared {
    scenario: Scenario,
    used: Mutex<Vec<u32>>,
    requests: Mutex<Vec<Value>>,
    headers: Mutex<Vec<Vec<(String, String)>>>,
    next_call: AtomicU64,
    next_completion: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running scripted model server. Dropping it shuts it down.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl ScriptedServer {
    /// Binds `127.0.0.1:0` and starts serving `scenario`.
    pub async fn start(scenario: Scenario) -> std::io::Result<ScriptedServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            used: Mutex::new(vec![0; scenario.rules.len()]),
            scenario,
            requests: Mutex::new(Vec::new()),
            headers: Mutex::new(Vec::new()),
            next_call: AtomicU64::new(1),
            next_completion: AtomicU64::new(1),
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(ScriptedServer { addr, shared, task })
    }

    /// e.g. `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every chat request body received so far, in order (a body that was
    /// not JSON is recorded as a JSON string).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests).clone()
    }

    /// The headers of every chat request, in the same order as
    /// [`ScriptedServer::requests`] (names lower-cased).
    pub fn request_headers(&self) -> Vec<Vec<(String, String)>> {
        lock(&self.shared.headers).clone()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // Connection tasks live in the set, so aborting this task drops them too.
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    conns.spawn(serve_connection(stream, Arc::clone(&shared)));
                }
                Err(e) => {
                    tracing::warn!("scripted server: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

async fn serve_connection(mut stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let result = match http::read_request(&mut stream).await {
        Ok(req) => route(&mut stream, &shared, req).await,
        Err(e) => reject(&mut stream, &e).await,
    };
    if let Err(e) = result {
        tracing::debug!("scripted server: connection ended early: {e}");
    }
    let _ = stream.shutdown().await;
}

async fn reject<W: AsyncWrite + Unpin>(w: &mut W, e: &HttpError) -> std::io::Result<()> {
    match e.status() {
        Some(status) => send_error(w, status, &e.to_string(), "invalid_request_error").await,
        None => Ok(()),
    }
}

async fn send_error<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: u16,
    message: &str,
    kind: &str,
) -> std::io::Result<()> {
    let body = http::error_body(message, kind, status);
    http::write_response(w, status, "application/json", &[], &body).await
}

async fn route<W: AsyncWrite + Unpin>(
    w: &mut W,
    shared: &Shared,
    req: Request,
) -> std::io::Result<()> {
    let path = req.path.trim_end_matches('/');
    match (req.method.as_str(), path) {
        ("POST", "/v1/chat/completions" | "/chat/completions") => chat(w, shared, &req).await,
        ("POST", "/v1/messages" | "/messages") => messages(w, shared, &req).await,
        ("GET", "/v1/models" | "/models") => {
            let mut model = json!({ "id": shared.scenario.model, "object": "model", "created": 0, "owned_by": "vigil" });
            if let Some(n_ctx) = shared.scenario.n_ctx {
                // Where llama.cpp publishes its context size.
                model["meta"] = json!({ "n_ctx": n_ctx });
            }
            let body = json!({ "object": "list", "data": [model] });
            http::write_response(w, 200, "application/json", &[], body.to_string().as_bytes()).await
        }
        (_, "/v1/chat/completions" | "/chat/completions" | "/v1/models" | "/models") => {
            let msg = format!("method {} not allowed on {}", req.method, req.path);
            send_error(w, 405, &msg, "invalid_request_error").await
        }
        _ => {
            let msg = format!("no route for {} {}", req.method, req.path);
            send_error(w, 404, &msg, "not_found").await
        }
    }
}

async fn chat<W: AsyncWrite + Unpin>(
    w: &mut W,
    shared: &Shared,
    req: &Request,
) -> std::io::Result<()> {
    let body: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(e) => {
            let raw = String::from_utf8_lossy(&req.body).into_owned();
            lock(&shared.requests).push(Value::String(raw));
            let msg = format!("request body is not JSON: {e}");
            return send_error(w, 400, &msg, "invalid_request_error").await;
        }
    };
    if shared.scenario.record_requests {
        lock(&shared.requests).push(body.clone());
        lock(&shared.headers).push(req.headers.clone());
    }
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if shared.scenario.reject_null_content && has_null_assistant_content(&body) {
        let msg = "messages: assistant message content must not be null";
        return send_error(w, 400, msg, "invalid_request_error").await;
    }
    if let Some(refusal) = quirks::refusal(&shared.scenario, &body, req.body.len()) {
        let text = refusal.body.to_string();
        return http::write_response(w, refusal.status, "application/json", &[], text.as_bytes())
            .await;
    }
    let plan = plan_for(shared, &body);
    if plan.status.is_some() || plan.empty_body {
        return send_misbehaviour(w, &plan, stream).await;
    }

    let call_ids = call_ids(shared, &plan);
    let meta = meta(shared, &body);
    let usage = shared
        .scenario
        .usage
        .then(|| FakeUsage::estimate(req.body.len(), &plan));
    if stream {
        send_stream(w, &meta, &plan, &call_ids, usage).await
    } else {
        let text = chunks::completion(&meta, &plan, &call_ids, usage).to_string();
        match plan.cut_after_chunks {
            Some(_) => send_cut(w, &text).await,
            None => http::write_response(w, 200, "application/json", &[], text.as_bytes()).await,
        }
    }
}

fn plan_for(shared: &Shared, body: &Value) -> Planned {
    let mut used = lock(&shared.used);
    shared
        .scenario
        .select(&mut used, body)
        .unwrap_or_else(|| shared.scenario.fallback(body))
}

fn has_null_assistant_content(body: &Value) -> bool {
    body.get("messages")
        .and_then(Value::as_array)
        .is_some_and(|msgs| {
            msgs.iter().any(|m| {
                m.get("role").and_then(Value::as_str) == Some("assistant")
                    && m.get("content").is_none_or(Value::is_null)
            })
        })
}

fn call_ids(shared: &Shared, plan: &Planned) -> Vec<String> {
    plan.tool_calls
        .iter()
        .map(|_| format!("call_{}", shared.next_call.fetch_add(1, Ordering::Relaxed)))
        .collect()
}

fn meta(shared: &Shared, body: &Value) -> Meta {
    Meta {
        id: format!(
            "chatcmpl-scripted-{}",
            shared.next_completion.fetch_add(1, Ordering::Relaxed)
        ),
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(&shared.scenario.model)
            .to_string(),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    }
}

/// A cut plain answer: headers promise the full length, half comes.
async fn send_cut<W: AsyncWrite + Unpin>(w: &mut W, text: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    );
    w.write_all(head.as_bytes()).await?;
    w.write_all(&text.as_bytes()[..text.len() / 2]).await?;
    w.flush().await
}

/// A rule that misbehaves instead of replying (an HTTP error status or an
/// empty 200 body), the same for both dialects.
async fn send_misbehaviour<W: AsyncWrite + Unpin>(
    w: &mut W,
    plan: &Planned,
    stream: bool,
) -> std::io::Result<()> {
    if let Some(status) = plan.status {
        return send_status(w, plan, status).await;
    }
    let kind = if stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    http::write_response(w, 200, kind, &[], b"").await
}

async fn send_status<W: AsyncWrite + Unpin>(
    w: &mut W,
    plan: &Planned,
    status: u16,
) -> std::io::Result<()> {
    let message = plan
        .error_message
        .clone()
        .unwrap_or_else(|| format!("scripted failure (HTTP {status})"));
    let kind = if status == 429 {
        "rate_limit_error"
    } else {
        "server_error"
    };
    let mut headers = Vec::new();
    if let Some(secs) = plan.retry_after {
        headers.push(("Retry-After", secs.to_string()));
    }
    if let Some(offset) = plan.retry_after_date {
        let now = SystemTime::now();
        let step = Duration::from_secs(offset.unsigned_abs());
        let at = if offset >= 0 { now + step } else { now - step };
        headers.push(("Retry-After", httpdate::fmt_http_date(at)));
    }
    let err = http::error_body(&message, kind, status);
    http::write_response(w, status, "application/json", &headers, &err).await
}

/// The Anthropic Messages dialect, answered from the same rules.
async fn messages<W: AsyncWrite + Unpin>(
    w: &mut W,
    shared: &Shared,
    req: &Request,
) -> std::io::Result<()> {
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return send_error(w, 400, "request body is not JSON", "invalid_request_error").await;
    };
    lock(&shared.requests).push(body.clone());
    lock(&shared.headers).push(req.headers.clone());
    if req.header("anthropic-version").is_none() {
        return send_error(
            w,
            400,
            "anthropic-version header is required",
            "invalid_request_error",
        )
        .await;
    }
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let plan = plan_for(shared, &anthropic::as_chat_request(&body));
    if plan.status.is_some() || plan.empty_body {
        return send_misbehaviour(w, &plan, stream).await;
    }
    let ids: Vec<String> = call_ids(shared, &plan)
        .into_iter()
        .map(|id| id.replace("call_", "toolu_"))
        .collect();
    let meta = meta(shared, &body);
    let input_tokens = (req.body.len() as u64).div_ceil(4);
    if !stream {
        let text = anthropic::message(&meta, &plan, &ids, input_tokens).to_string();
        return http::write_response(w, 200, "application/json", &[], text.as_bytes()).await;
    }
    http::write_stream_head(w).await?;
    let delay = Duration::from_millis(plan.chunk_delay_ms);
    for (sent, (name, data)) in anthropic::stream_events(&meta, &plan, &ids, input_tokens)
        .iter()
        .enumerate()
    {
        if plan.cut_after_chunks.is_some_and(|n| sent >= n) {
            return Ok(());
        }
        if sent > 0 && !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        w.write_all(format!("event: {name}\ndata: {data}\n\n").as_bytes())
            .await?;
        w.flush().await?;
    }
    Ok(())
}

async fn send_stream<W: AsyncWrite + Unpin>(
    w: &mut W,
    meta: &Meta,
    plan: &Planned,
    call_ids: &[String],
    usage: Option<FakeUsage>,
) -> std::io::Result<()> {
    http::write_stream_head(w).await?;
    let delay = Duration::from_millis(plan.chunk_delay_ms);
    let payloads = chunks::stream_payloads(meta, plan, call_ids, usage);
    // A failing stream: its text, then an error event where it would finish.
    let text_chunks = 1 + chunks::split_text(&plan.text).len();
    for (sent, payload) in payloads.iter().enumerate() {
        if plan.cut_after_chunks.is_some_and(|n| sent >= n) {
            // Misbehave: close without finishing the stream.
            return Ok(());
        }
        if let Some(status) = plan.stream_error.filter(|_| sent == text_chunks) {
            let err = http::error_body("scripted failure mid-stream", "server_error", status);
            w.write_all(b"data: ").await?;
            w.write_all(&err).await?;
            w.write_all(b"\n\n").await?;
            return w.flush().await;
        }
        if sent > 0 && !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        w.write_all(format!("data: {payload}\n\n").as_bytes())
            .await?;
        w.flush().await?;
    }
    w.write_all(b"data: [DONE]\n\n").await?;
    w.flush().await
}
