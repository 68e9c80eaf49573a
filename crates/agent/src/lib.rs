//! The agent, in rooms a newcomer finds by name:
//!
//! - [`model`]: the model clients (the OpenAI and Anthropic dialects,
//!   streaming, retries, discovery of the server's models);
//! - [`run`]: the loop that drives tools: turns, the conversation, context
//!   accounting and compaction;
//! - [`approval`]: the broker the console answers (rules, session rules,
//!   trials in the view, previews);
//! - [`hooks`]: the operator's decide and lifecycle hooks;
//! - [`record`]: what is written down: session files and resume, the
//!   decision record (audit), who answered, redaction;
//! - [`telemetry`]: what is told outside: the event tap, `[notify]`,
//!   OpenTelemetry;
//! - [`server`]: the agent process's socket;
//! - [`assemble`]: builds every layer from a configuration.
//!
//! It emits [`vigil_protocol::AgentEvent`]s and never renders anything.

pub mod approval;
pub mod assemble;
pub mod hooks;
pub mod model;
pub mod record;
pub mod run;
pub mod server;
pub mod telemetry;
