//! The model dialects: one round of a conversation against a model server,
//! in OpenAI Chat Completions ([`openai`]), Anthropic Messages
//! ([`anthropic`]) or json-tags text blocks for models without native tool
//! calls ([`json_tags`]); the server-sent-event assembly ([`sse`]), the
//! retry classes ([`retry`]), the wire types ([`types`]), the HTTP helpers
//! both dialects share ([`http`]), the server's model list ([`discover`])
//! and what it said, remembered per server ([`discover_cache`]). It talks HTTP and parses answers; it never
//! runs a tool, never decides on an approval and never renders.

pub mod anthropic;
pub mod anthropic_wire;
pub mod chat;
pub mod discover;
pub mod discover_cache;
pub mod error;
pub mod http;
pub mod json_tags;
pub mod openai;
pub mod retry;
pub mod retry_after;
pub mod sse;
pub mod types;

pub use chat::{ChatModel, Completion};
pub use error::ModelError;
pub use http::ModelClientConfig;
pub use openai::ModelClient;
