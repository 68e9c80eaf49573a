//! Approval policy in one place: how risky a call is ([`risk`], read from the
//! parsed command against the [`allow_list`]), what is refused outright
//! ([`denylist`]), which session prefix rules may exist and what they cover
//! ([`prefix_rule`]), the operator's `[[approval.rules]]` at work ([`rules`]),
//! and the types a gated call and its decision travel in ([`gate`]).
//!
//! Pure decisions over [`crate::shell`]'s AST and the configuration: it never
//! runs a process, never waits for the operator (that is the agent's
//! broker) and never renders.

pub mod allow_list;
pub mod denylist;
pub mod gate;
pub mod prefix_rule;
pub mod resolve;
pub mod risk;
pub mod rules;
pub mod secret_reads;
