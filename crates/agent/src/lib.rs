//! The agent: the model clients (OpenAI and Anthropic dialects), retries,
//! the loop that drives tools, context accounting and compaction, session
//! files and resume, the approval broker the console answers, the agent
//! process's socket [`server`], and [`assemble`], which builds every layer
//! from a configuration. It emits [`vigil_protocol::AgentEvent`]s and never
//! renders anything.

pub mod answers;
pub mod approval;
pub mod assemble;
pub mod audit;
pub mod compact;
pub mod context;
pub mod conversation;
pub mod hooks;
pub mod model;
pub mod notify;
pub mod otel;
pub mod preview;
pub mod redact;
pub mod relay;
pub mod restore;
pub mod runner;
pub mod server;
pub mod session;
pub mod shared;
pub mod tool_budget;
pub mod turn;
