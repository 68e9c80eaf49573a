//! The model client: one chat-completion round against an OpenAI-compatible
//! server, streamed, with text forwarded as it arrives.
//!
//! It POSTs `{base_url}/chat/completions` with `stream: true` and assembles the
//! reply with [`super::sse::StreamAssembler`]. When a streaming request gets an
//! empty 200 body it retries once with `stream: false`
//! ([`Completion::fell_back`] says so). It never hangs (connect timeout plus an
//! idle timeout on every wait for the server), never retries anything else
//! (retry policy is the agent loop's job), and never lets the API key reach an
//! error message or `Debug` output.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};

use super::chat::{ChatModel, Completion, RoundSink, TextOnly, told};
use super::error::ModelError;
use super::http::{
    ModelClientConfig, is_json, next_sse_event, redact_key, stream_error, success_or_status,
    transport_error,
};
use super::json_tags::{self, ToolProtocol};
use super::sse::{StreamAssembler, StreamError, parse_completion};
use super::types::{AssistantReply, ChatMessage, Messages, RequestOptions, request_body};
use vigil_tools::ToolDefinition;

/// The model client. Cheap to clone; one per configured model.
#[derive(Clone)]
pub struct ModelClient {
    config: Arc<ModelClientConfig>,
    http: reqwest::Client,
    protocol: ToolProtocol,
    /// json-tags only: several calls per reply allowed.
    multiple_calls: bool,
    /// Sent as `max_tokens` with every request.
    max_tokens: Option<u32>,
    /// The server refused `stream_options` once: never sent again.
    usage_refused: Arc<AtomicBool>,
}

impl fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Counts streamed body bytes, to tell an empty body from a silent one.
#[derive(Default)]
struct ByteCount(AtomicU64);

impl ModelClient {
    pub fn new(config: ModelClientConfig) -> Result<Self, ModelError> {
        let http = vigil_tools::http::client_builder()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.request_timeout)
            .build()
            .map_err(|e| ModelError::Protocol(format!("cannot build the HTTP client: {e}")))?;
        Ok(ModelClient {
            config: Arc::new(config),
            http,
            protocol: ToolProtocol::Native,
            multiple_calls: false,
            max_tokens: None,
            usage_refused: Arc::default(),
        })
    }

    /// Send `max_tokens` with every request (the longest answer allowed).
    pub fn with_max_tokens(mut self, max_tokens: Option<u32>) -> Self {
        self.max_tokens = max_tokens.map(|n| n.max(1));
        self
    }

    /// Offer tools natively (default) or as json-tags text blocks, which
    /// [`ModelClient::complete`] then translates both ways.
    pub fn with_tool_protocol(mut self, protocol: ToolProtocol, multiple_calls: bool) -> Self {
        self.protocol = protocol;
        self.multiple_calls = multiple_calls;
        self
    }

    pub fn config(&self) -> &ModelClientConfig {
        &self.config
    }

    fn url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        )
    }

    /// One round; see [`ModelClient::complete_round`]. Returns only the reply.
    pub async fn complete(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<AssistantReply, ModelError> {
        if self.protocol == ToolProtocol::JsonTags {
            return json_tags::complete(self, self.multiple_calls, messages, tools, on_text).await;
        }
        Ok(self.complete_round(messages, tools, on_text).await?.reply)
    }

    /// One round: streams the reply, calling `on_text` with each text delta
    /// in order as it arrives. Falls back once to a non-streaming request
    /// when the streamed answer is an empty 200.
    pub async fn complete_round(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Completion, ModelError> {
        self.complete_wire(Messages::Typed(messages), tools, &mut TextOnly(on_text))
            .await
    }

    /// [`Self::complete_round`], sending the messages' wire form when they
    /// carry one; text and tool-call pieces go to `sink` as they arrive.
    async fn complete_wire(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
        sink: &mut (dyn RoundSink + Send),
    ) -> Result<Completion, ModelError> {
        let streamed = self.streamed(messages, tools, sink).await;
        let mut on_text = |t: &str| sink.text(t);
        Completion::or_unstreamed(streamed, self.unstreamed(messages, tools), &mut on_text).await
    }

    /// POSTs one request. A streaming request asks for a usage report; a
    /// server that refuses `stream_options` (HTTP 4xx naming it) is asked
    /// again without, and never asked for it again.
    async fn send(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
        stream: bool,
    ) -> Result<reqwest::Response, ModelError> {
        let include_usage = stream && !self.usage_refused.load(Ordering::Relaxed);
        let first = self.send_once(messages, tools, stream, include_usage).await;
        match first {
            Err(ModelError::Status { status, body, .. })
                if include_usage
                    && (400..500).contains(&status)
                    && body.contains("stream_options") =>
            {
                tracing::warn!("the server refuses stream_options ({body}); asking without");
                self.usage_refused.store(true, Ordering::Relaxed);
                self.send_once(messages, tools, stream, false).await
            }
            other => other,
        }
    }

    async fn send_once(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
        stream: bool,
        include_usage: bool,
    ) -> Result<reqwest::Response, ModelError> {
        let options = RequestOptions {
            max_tokens: self.max_tokens,
            include_usage,
        };
        let body = request_body(&self.config.model, messages, tools, stream, options);
        let url = self.url();
        tracing::debug!(%url, model = %self.config.model, messages = messages.typed().len(), stream, "model request");
        let mut req = self
            .http
            .post(&url)
            .header(
                ACCEPT,
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = &self.config.api_key {
            req = req.header(AUTHORIZATION, format!("Bearer {key}"));
        }
        let resp = tokio::time::timeout(self.config.request_timeout, req.send())
            .await
            .map_err(|_| ModelError::Timeout)?
            .map_err(|e| self.transport_error(&e, &url))?;
        success_or_status(&self.config, resp).await
    }

    async fn streamed(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
        sink: &mut (dyn RoundSink + Send),
    ) -> Result<AssistantReply, ModelError> {
        let resp = self.send(messages, tools, true).await?;
        if is_json(&resp) {
            // The server ignored `stream: true`; take the whole answer.
            let mut on_text = |t: &str| sink.text(t);
            return Ok(told(self.read_whole(resp).await?, &mut on_text));
        }
        let count = Arc::new(ByteCount::default());
        let counter = Arc::clone(&count);
        let mut events = resp
            .bytes_stream()
            .inspect(move |chunk| {
                if let Ok(bytes) = chunk {
                    counter.0.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                }
            })
            .eventsource();
        let mut asm = StreamAssembler::new();
        while !asm.is_done() {
            let Some(event) = next_sse_event(&self.config, &mut events).await? else {
                break;
            };
            if event.event == "error" {
                return Err(self.stream_error(StreamError::from_error_event(&event.data)));
            }
            if let Some(delta) = asm.feed(&event.data).map_err(|e| self.stream_error(e))? {
                sink.text(&delta);
            }
            for call in asm.take_call_deltas() {
                sink.call(&call);
            }
        }
        if count.0.load(Ordering::Relaxed) == 0 {
            return Err(ModelError::EmptyBody);
        }
        asm.finish().map_err(|e| self.stream_error(e))
    }

    async fn unstreamed(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
    ) -> Result<AssistantReply, ModelError> {
        let resp = self.send(messages, tools, false).await?;
        self.read_whole(resp).await
    }

    async fn read_whole(&self, resp: reqwest::Response) -> Result<AssistantReply, ModelError> {
        let text = tokio::time::timeout(self.config.request_timeout, resp.text())
            .await
            .map_err(|_| ModelError::Timeout)?
            .map_err(|e| {
                if e.is_timeout() {
                    ModelError::Timeout
                } else {
                    ModelError::Protocol(format!(
                        "cannot read the answer: {}",
                        self.redact(&e.to_string())
                    ))
                }
            })?;
        parse_completion(&text).map_err(|e| self.stream_error(e))
    }

    fn stream_error(&self, e: StreamError) -> ModelError {
        stream_error(&self.config, e)
    }

    fn transport_error(&self, e: &reqwest::Error, url: &str) -> ModelError {
        transport_error(&self.config, e, url)
    }

    /// Removes the API key from text that might echo it.
    fn redact(&self, text: &str) -> String {
        redact_key(&self.config, text)
    }
}

#[async_trait::async_trait]
impl ChatModel for ModelClient {
    async fn complete_round(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<Completion, ModelError> {
        if self.protocol == ToolProtocol::JsonTags {
            let reply =
                json_tags::complete(self, self.multiple_calls, messages.typed(), tools, on_text)
                    .await?;
            return Ok(Completion {
                reply,
                fell_back: false,
            });
        }
        self.complete_wire(messages, tools, &mut TextOnly(on_text))
            .await
    }

    async fn complete_streaming(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
        sink: &mut (dyn RoundSink + Send),
    ) -> Result<Completion, ModelError> {
        if self.protocol == ToolProtocol::JsonTags {
            let mut on_text = |t: &str| sink.text(t);
            return ChatModel::complete_round(self, messages, tools, &mut on_text).await;
        }
        self.complete_wire(messages, tools, sink).await
    }

    fn model_name(&self) -> &str {
        &self.config.model
    }

    fn base_url(&self) -> Option<&str> {
        Some(&self.config.base_url)
    }

    async fn discover(&self) -> super::discover::Discovery {
        super::discover::ask(&self.http, &self.config, super::discover::KeyHeader::Bearer).await
    }
}

#[async_trait::async_trait]
impl json_tags::TextRound for ModelClient {
    async fn text_round(
        &self,
        messages: &[ChatMessage],
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<AssistantReply, ModelError> {
        Ok(self.complete_round(messages, &[], on_text).await?.reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyed() -> ModelClientConfig {
        let mut c = ModelClientConfig::new("http://127.0.0.1:9/v1/", "m");
        c.api_key = Some("sk-secret-123".into());
        c
    }

    #[test]
    fn debug_never_shows_the_key() {
        let c = keyed();
        assert!(!format!("{c:?}").contains("sk-secret-123"));
        let client = ModelClient::new(c).unwrap();
        assert!(!format!("{client:?}").contains("sk-secret-123"));
    }

    #[test]
    fn url_joins_without_double_slash() {
        let client = ModelClient::new(keyed()).unwrap();
        assert_eq!(client.url(), "http://127.0.0.1:9/v1/chat/completions");
    }

    #[test]
    fn redact_removes_key() {
        let client = ModelClient::new(keyed()).unwrap();
        assert_eq!(
            client.redact("bad key sk-secret-123!"),
            "bad key <redacted>!"
        );
    }
}
