//! The agent as its own process: the Unix socket it listens on and the
//! consoles attached to it. It speaks [`vigil_protocol::wire`] and never
//! renders anything.
//!
//! - [`vigil_protocol::runtime`]: where sockets live (0700, ours).
//! - [`lock`]: one agent per session (`flock`, with the holder's pid).
//! - [`listener`]: bind 0600, stale sockets, the peer's uid.
//! - [`journal`]: every event numbered, output bounded, read by cursor.
//! - [`hub`]: what the connections share; [`hub::pump`] fills the journal.
//! - [`accept`], [`conn`], [`writer`]: one task pair per client.
//! - [`vigil_protocol::lines`]: line framing with a length bound.

pub mod accept;
pub mod conn;
pub mod hub;
pub mod journal;
pub mod listener;
pub mod lock;
pub mod writer;
