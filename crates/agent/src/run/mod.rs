//! The agent loop's room: [`runner`] owns the conversation and takes
//! commands, [`turn`] runs one turn of model rounds and tool calls, with
//! the state they share ([`shared`]), the conversation as sent
//! ([`conversation`]), context accounting ([`context`]), compaction
//! ([`compact`]) and the tool definitions' share of the window
//! ([`tool_budget`]). It never renders and never decides an approval.

pub mod compact;
pub mod context;
pub mod conversation;
pub mod runner;
pub mod shared;
pub mod tool_budget;
pub mod turn;
