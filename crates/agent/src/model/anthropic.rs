//! The Anthropic Messages dialect: one round against `POST {base}/messages`,
//! streamed, with `x-api-key` and `anthropic-version` headers; the wire
//! mapping lives in [`super::anthropic_wire`]. Same contract as the OpenAI
//! client ([`ChatModel`]): same errors, same timeouts, an empty streamed 200
//! falls back once to a non-streamed request, and the key never reaches an
//! error message or `Debug` output. It never retries (the loop does).

use std::fmt;
use std::sync::Arc;

use eventsource_stream::Eventsource;
use reqwest::header::ACCEPT;

use super::anthropic_wire::{MessagesAssembler, parse_message, request_body};
use super::chat::{self, ChatModel, Completion, RoundSink, TextOnly};
use super::error::ModelError;
use super::http::{self, ModelClientConfig, is_json};
use super::sse::StreamError;
use super::types::{AssistantReply, ChatMessage, Messages};
use vigil_tools::ToolDefinition;

pub use super::http::ANTHROPIC_VERSION;

/// A client for the Messages API. Cheap to clone.
#[derive(Clone)]
pub struct AnthropicClient {
    config: Arc<ModelClientConfig>,
    max_tokens: u32,
    http: reqwest::Client,
}

impl fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("config", &self.config)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

impl AnthropicClient {
    pub fn new(config: ModelClientConfig, max_tokens: u32) -> Result<Self, ModelError> {
        let http = vigil_tools::http::client_builder()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.request_timeout)
            .build()
            .map_err(|e| ModelError::Protocol(format!("cannot build the HTTP client: {e}")))?;
        Ok(AnthropicClient {
            config: Arc::new(config),
            max_tokens: max_tokens.max(1),
            http,
        })
    }

    fn url(&self) -> String {
        format!("{}/messages", self.config.base_url.trim_end_matches('/'))
    }

    async fn send(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
        stream: bool,
    ) -> Result<reqwest::Response, ModelError> {
        let body = request_body(&self.config.model, self.max_tokens, messages, tools, stream);
        let url = self.url();
        tracing::debug!(%url, model = %self.config.model, messages = messages.len(), stream, "anthropic request");
        let mut req = self
            .http
            .post(&url)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header(
                ACCEPT,
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .json(&body);
        if let Some(key) = &self.config.api_key {
            req = req.header("x-api-key", key);
        }
        let timeout = self.config.request_timeout;
        let resp = tokio::time::timeout(timeout, req.send())
            .await
            .map_err(|_| ModelError::Timeout)?
            .map_err(|e| self.transport_error(&e, &url))?;
        http::success_or_status(&self.config, resp).await
    }

    async fn streamed(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
        sink: &mut (dyn RoundSink + Send),
    ) -> Result<AssistantReply, ModelError> {
        let resp = self.send(messages, tools, true).await?;
        if is_json(&resp) {
            let mut on_text = |t: &str| sink.text(t);
            return Ok(chat::told(self.read_whole(resp).await?, &mut on_text));
        }
        let mut events = resp.bytes_stream().eventsource();
        let mut asm = MessagesAssembler::new();
        let mut any = false;
        while !asm.is_done() {
            let Some(event) = http::next_sse_event(&self.config, &mut events).await? else {
                break;
            };
            any = true;
            if event.event == "error" {
                // llama.cpp: `event: error` with the error object itself.
                return Err(self.stream_error(StreamError::from_error_event(&event.data)));
            }
            if let Some(delta) = asm.feed(&event.data).map_err(|e| self.stream_error(e))? {
                sink.text(&delta);
            }
            for call in asm.take_call_deltas() {
                sink.call(&call);
            }
        }
        if !any {
            return Err(ModelError::EmptyBody);
        }
        asm.finish().map_err(|e| self.stream_error(e))
    }

    async fn read_whole(&self, resp: reqwest::Response) -> Result<AssistantReply, ModelError> {
        let text = tokio::time::timeout(self.config.request_timeout, resp.text())
            .await
            .map_err(|_| ModelError::Timeout)?
            .map_err(|e| ModelError::Protocol(format!("cannot read the answer: {e}")))?;
        parse_message(&text).map_err(|e| self.stream_error(e))
    }

    fn stream_error(&self, e: StreamError) -> ModelError {
        http::stream_error(&self.config, e)
    }

    fn transport_error(&self, e: &reqwest::Error, url: &str) -> ModelError {
        http::transport_error(&self.config, e, url)
    }
}

#[async_trait::async_trait]
impl ChatModel for AnthropicClient {
    async fn complete_round(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<Completion, ModelError> {
        self.complete_streaming(messages, tools, &mut TextOnly(on_text))
            .await
    }

    async fn complete_streaming(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
        sink: &mut (dyn RoundSink + Send),
    ) -> Result<Completion, ModelError> {
        let messages = messages.typed();
        let streamed = self.streamed(messages, tools, sink).await;
        let whole = async {
            let resp = self.send(messages, tools, false).await?;
            self.read_whole(resp).await
        };
        let mut on_text = |t: &str| sink.text(t);
        Completion::or_unstreamed(streamed, whole, &mut on_text).await
    }

    fn model_name(&self) -> &str {
        &self.config.model
    }

    fn base_url(&self) -> Option<&str> {
        Some(&self.config.base_url)
    }

    async fn discover(&self) -> super::discover::Discovery {
        super::discover::ask(
            &self.http,
            &self.config,
            super::discover::KeyHeader::Anthropic,
        )
        .await
    }
}
