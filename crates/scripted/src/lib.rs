//! The scripted OpenAI-compatible model server: a real HTTP server on
//! loopback that answers from a scenario file, in the OpenAI Chat Completions
//! dialect and (at `/v1/messages`) the Anthropic Messages dialect. It serves
//! `--demo` and is the tests' model. It knows nothing of the agent's
//! internals.

pub mod anthropic;
pub mod chunks;
pub mod http;
pub mod quirks;
pub mod scenario;
pub mod server;

pub use scenario::{Scenario, ScenarioError};
pub use server::ScriptedServer;
