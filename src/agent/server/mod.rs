//! The agent as its own process: the Unix socket it listens on and the
//! consoles attached to it. It speaks [`crate::event::wire`] and never
//! renders anything.

pub mod runtime;
