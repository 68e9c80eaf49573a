//! What the agent writes down: the session files and reading them back
//! for resume ([`session`], [`restore`]), the hash-chained decision record
//! ([`audit`]), who answered which approval ([`answers`]) and the redaction
//! of secrets in everything written ([`redact`]). It never renders and
//! never decides.

pub mod answers;
pub mod audit;
pub mod redact;
pub mod restore;
pub mod session;
