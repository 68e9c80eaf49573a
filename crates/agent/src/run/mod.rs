//! The agent loop's room: [`runner`] is the front door (the setup and the
//! task's three phases), [`start`] the start-up, [`window`] the context
//! window a session starts with, [`agent_loop`] the loop that owns the
//! conversation and takes commands, [`desk`] the commands that go straight
//! to the approval broker, [`pane_keys`] the operator's key passthrough,
//! [`cancel`] what a cancel leaves to close; [`turn`] runs one turn of model
//! rounds and tool calls, with the state they share ([`shared`]), the
//! conversation as sent ([`conversation`]), context accounting
//! ([`context`]), compaction ([`compact`]) and the tool definitions' share
//! of the window ([`tool_budget`]). It never renders and never decides an
//! approval.

pub(crate) mod agent_loop;
pub(crate) mod cancel;
pub mod compact;
pub mod context;
pub mod conversation;
pub(crate) mod desk;
pub(crate) mod pane_keys;
pub mod runner;
pub mod shared;
pub(crate) mod start;
pub mod tool_budget;
pub mod turn;
pub(crate) mod window;
