//! The session's decision record (docs/audit.md): who or what decided
//! each gated call, in `audit.jsonl` beside the session's other files, as a
//! hash chain of canonical JSON lines whose head is kept apart from the
//! session's directory (the head store), so an edit, a deletion, a
//! reordering, a cut or a line that reads two ways shows (`vigil audit
//! verify`).
//!
//! [`record`] builds the entries from the events passing by, [`chain`]
//! hashes and appends them, [`verify`] checks a record. Nothing here
//! decides a call, renders, or talks to a console.

pub mod chain;
pub mod record;
pub mod strict;
pub mod verify;
