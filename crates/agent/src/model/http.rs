//! What both HTTP dialects share: where and how to reach the server
//! ([`ModelClientConfig`]), a status or a broken stream turned into a
//! [`ModelError`], the idle-timed wait for the next server-sent event, and
//! the key scrubbed from anything that might echo it. It never builds a
//! request body and never retries.

use std::fmt;
use std::time::Duration;

use eventsource_stream::EventStreamError;
use futures::StreamExt;
use reqwest::header::CONTENT_TYPE;

use super::error::ModelError;
use super::sse::{StreamError, snippet};

/// The Anthropic API version header value sent with every request (and
/// with the model list).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Where and how to reach the model.
#[derive(Clone)]
pub struct ModelClientConfig {
    /// e.g. `http://127.0.0.1:8080/v1` (without `/chat/completions`).
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer ...` when set. Never printed.
    pub api_key: Option<String>,
    /// Idle timeout: the longest wait for the response headers, for the next
    /// streamed chunk, or for a whole non-streamed body. Not a cap on the
    /// total length of a stream that keeps making progress.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
}

impl ModelClientConfig {
    /// A config with default timeouts (120 s idle, 10 s connect) and no key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ModelClientConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            request_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

impl fmt::Debug for ModelClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelClientConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

/// `Retry-After` as whole seconds from now, in either form (delta-seconds or
/// an HTTP date; see [`super::retry_after`]).
pub(crate) fn parse_retry_after(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    super::retry_after::retry_after_secs(value, std::time::SystemTime::now())
}

/// The response when its status is a success, else a [`ModelError::Status`]
/// carrying the (redacted) body and any `Retry-After` (shared by both
/// dialects).
pub(crate) async fn success_or_status(
    config: &ModelClientConfig,
    resp: reqwest::Response,
) -> Result<reqwest::Response, ModelError> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let retry_after = parse_retry_after(resp.headers());
    let text = tokio::time::timeout(config.request_timeout, resp.text())
        .await
        .map_err(|_| ModelError::Timeout)?
        .unwrap_or_default();
    let shown = redact_key(config, &snippet(&text));
    Err(ModelError::from_status(
        status.as_u16(),
        &text,
        shown,
        retry_after,
    ))
}

/// The next server-sent event, waiting at most the idle timeout; `None` at
/// the end of the stream (shared by both dialects).
pub(crate) async fn next_sse_event<S>(
    config: &ModelClientConfig,
    events: &mut S,
) -> Result<Option<eventsource_stream::Event>, ModelError>
where
    S: futures::Stream<Item = Result<eventsource_stream::Event, EventStreamError<reqwest::Error>>>
        + Unpin,
{
    let next = tokio::time::timeout(config.request_timeout, events.next())
        .await
        .map_err(|_| ModelError::Timeout)?;
    match next {
        None => Ok(None),
        Some(Ok(event)) => Ok(Some(event)),
        Some(Err(EventStreamError::Transport(e))) => Err(if e.is_timeout() {
            ModelError::Timeout
        } else {
            ModelError::StreamCut(format!(
                "the connection broke: {}",
                redact_key(config, &e.to_string())
            ))
        }),
        Some(Err(e)) => Err(ModelError::Protocol(format!("bad event stream: {e}"))),
    }
}

/// A broken answer as a [`ModelError`] (shared by both dialects).
pub(crate) fn stream_error(config: &ModelClientConfig, e: StreamError) -> ModelError {
    match e {
        StreamError::Empty => ModelError::EmptyBody,
        StreamError::Truncated => ModelError::StreamCut(e.to_string()),
        // An error event carrying an HTTP status is treated like that status.
        StreamError::ServerStatus { status, message } => {
            ModelError::from_status(status, "", redact_key(config, &message), None)
        }
        StreamError::Server(message) if super::error::is_model_output_error(&message) => {
            ModelError::ModelOutput(redact_key(config, &message))
        }
        other => ModelError::Protocol(redact_key(config, &other.to_string())),
    }
}

/// A failed request as a [`ModelError`] (shared by both dialects).
pub(crate) fn transport_error(
    config: &ModelClientConfig,
    e: &reqwest::Error,
    url: &str,
) -> ModelError {
    // reqwest names the URL in its own message too: say it once.
    let chain = error_chain(e).replace(&format!(" for url ({url})"), "");
    if e.is_timeout() {
        ModelError::Timeout
    } else if e.is_connect() {
        ModelError::Connect(redact_key(config, &format!("{url}: {chain}")))
    } else if e.is_request() && !e.is_builder() {
        // Sending failed after the connection was made (a keep-alive
        // connection the server closed, a reset): no answer came.
        ModelError::Unanswered(redact_key(config, &format!("{url}: {chain}")))
    } else {
        ModelError::Protocol(redact_key(
            config,
            &format!("request to {url} failed: {chain}"),
        ))
    }
}

/// Removes the API key from text that might echo it.
pub(crate) fn redact_key(config: &ModelClientConfig, text: &str) -> String {
    match &config.api_key {
        Some(key) if !key.is_empty() => text.replace(key.as_str(), "<redacted>"),
        _ => text.to_string(),
    }
}

pub(crate) fn is_json(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/json"))
}

/// The error and its sources on one line ("connection refused" lives deep).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
