//! The client end of an agent's socket, for any front end (the protocol
//! crate below it is data only; the server is in the agent crate): find and
//! connect to an agent, say hello and read the welcome ([`attach`]), turn a
//! welcomed connection into channels of events and commands ([`bridge`]),
//! and follow the other agents of this machine ([`fleet`]). The agent's
//! server is `vigil_agent::server`; both sides frame lines with
//! [`vigil_protocol::lines`] and find sockets with [`vigil_protocol::runtime`].
//!
//! It never starts an agent process, never renders and never executes.

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;

use vigil_protocol::OnExit;
use vigil_protocol::fleet::{FleetAnswer, FleetView};

pub mod attach;
pub mod bridge;
pub mod fleet;

/// The fleet client's feed ([`fleet`] fills it): the latest
/// [`FleetView`], and where answers to another agent's calls go.
#[derive(Debug, Clone)]
pub struct FleetFeed {
    pub view: watch::Receiver<FleetView>,
    pub answers: UnboundedSender<FleetAnswer>,
}

/// How the operator left the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leaving {
    /// The agent keeps working (pending approvals wait); `vigil attach`
    /// comes back.
    Detach,
    /// Stop the agent, doing this with remote managed sessions.
    Stop(OnExit),
    /// Detach and attach to the agent of this session instead (the agents
    /// overlay).
    Switch(String),
    /// The agent was already gone (stopped elsewhere, or the connection
    /// lost): nothing keeps working and nothing is left to stop.
    AgentGone,
}
