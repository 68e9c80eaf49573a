//! The agent: the model client, the loop that drives tools, the approval
//! broker the console answers. It emits [`crate::event::AgentEvent`]s and never
//! renders anything.

pub mod approval;
pub mod client;
pub mod json_tags;
pub mod runner;
pub mod sse;
pub mod types;
