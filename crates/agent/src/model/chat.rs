//! The contract every model dialect implements ([`ChatModel`]: one round
//! of a conversation with the tools offered, text streamed as it arrives)
//! and what a round returns ([`Completion`]). Plain types and one shared
//! ending of a round; no HTTP and no dialect lives here.

use super::discover::{Discovery, ServerModels};
use super::error::ModelError;
use super::types::{AssistantReply, CallDelta, Messages};
use vigil_tools::ToolDefinition;

/// One model dialect (OpenAI Chat Completions, Anthropic Messages): one round
/// of a conversation with the tools offered, text streamed to `on_text`.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    /// `messages` may carry their wire form ([`Messages::Wire`]): a dialect
    /// that speaks that form sends it as is, the others use the typed
    /// messages.
    async fn complete_round(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<Completion, ModelError>;

    /// [`Self::complete_round`] with the tool calls' arguments streamed to
    /// `sink` as they arrive, as well as the text. A dialect that cannot
    /// stream calls gives the text only (the default).
    async fn complete_streaming(
        &self,
        messages: Messages<'_>,
        tools: &[ToolDefinition],
        sink: &mut (dyn RoundSink + Send),
    ) -> Result<Completion, ModelError> {
        let mut on_text = |t: &str| sink.text(t);
        self.complete_round(messages, tools, &mut on_text).await
    }

    /// The model name sent with each request.
    fn model_name(&self) -> &str;

    /// The server's base URL, for remembering what it published
    /// ([`super::discover_cache`]); None: nothing to remember it by.
    fn base_url(&self) -> Option<&str> {
        None
    }

    /// What the server says it serves (its model list and the context
    /// window it publishes), asked once at the start of a session.
    async fn discover(&self) -> Discovery {
        Discovery::Answered(ServerModels::default())
    }
}

/// Where a streamed round goes as it arrives: text, and tool-call pieces.
pub trait RoundSink {
    fn text(&mut self, text: &str);
    fn call(&mut self, _delta: &CallDelta) {}
}

/// A sink that keeps only the text (for callers that want nothing else).
pub(crate) struct TextOnly<'a>(pub &'a mut (dyn FnMut(&str) + Send));

impl RoundSink for TextOnly<'_> {
    fn text(&mut self, text: &str) {
        (self.0)(text)
    }
}

/// One successful round.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub reply: AssistantReply,
    /// The streaming request got an empty body and the reply came from the
    /// non-streaming retry (its text was passed to `on_text` in one piece).
    pub fell_back: bool,
}

impl Completion {
    /// A streamed round, or, when the server answered the stream with an
    /// empty body, the non-streaming retry (`whole`), its text passed to
    /// `on_text` in one piece. Both dialects end a round through this.
    pub(crate) async fn or_unstreamed<W>(
        streamed: Result<AssistantReply, ModelError>,
        whole: W,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Completion, ModelError>
    where
        W: std::future::Future<Output = Result<AssistantReply, ModelError>>,
    {
        match streamed {
            Err(ModelError::EmptyBody) => {
                tracing::warn!("empty streamed answer; retrying without streaming");
                Ok(Completion {
                    reply: told(whole.await?, on_text),
                    fell_back: true,
                })
            }
            other => other.map(|reply| Completion {
                reply,
                fell_back: false,
            }),
        }
    }
}

/// A reply that arrived whole (not streamed): its text goes to `on_text` in
/// one piece, so the operator sees it like a streamed one.
pub(crate) fn told(
    reply: AssistantReply,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> AssistantReply {
    if !reply.content.is_empty() {
        on_text(&reply.content);
    }
    reply
}
