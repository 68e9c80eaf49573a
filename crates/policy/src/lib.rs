//! Approval policy in one place: how risky a call is ([`risk`], read from the
//! parsed command against the [`allow_list`]), what is refused outright
//! ([`denylist`]), which session prefix rules may exist and what they cover
//! ([`prefix_rule`]), the operator's `[[approval.rules]]` at work ([`rules`]),
//! and the types a gated call and its decision travel in ([`gate`]).
//!
//! Whether a command reads one of the secret places ([`secret_reads`], with
//! [`secret_operands`] for the words that name files, [`secret_patterns`]
//! for globs, braces and words that still expand, and [`resolve`] to follow
//! symlinks) feeds the same estimate.
//!
//! Pure decisions over [`vigil_shell`]'s AST and the configuration: it never
//! runs a process, never opens a file (the secret-read check only reads
//! directory entries and symlinks), never waits for the operator (that is
//! the agent's broker) and never renders.

pub mod allow_list;
pub mod blind;
pub mod call;
pub mod denylist;
pub mod gate;
mod pane_names;
pub mod pane_state;
pub mod prefix_rule;
pub mod resolve;
pub mod risk;
pub mod rules;
pub mod secret_content;
pub mod secret_operands;
pub mod secret_patterns;
pub mod secret_reads;
pub mod secret_walks;
pub mod view_eligible;
