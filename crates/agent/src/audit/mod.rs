//! The session's decision record (docs/audit.md): who or what decided
//! each gated call, in `audit.jsonl` beside the session's other files, as a
//! hash chain whose head is kept apart from the file, so an edit, a
//! deletion, a reordering or a cut shows (`vigil audit verify`).
//!
//! [`record`] builds the entries from the events passing by, [`chain`]
//! hashes and appends them, [`verify`] checks a record. Nothing here
//! decides a call, renders, or talks to a console.

pub mod chain;
pub mod record;
pub mod verify;

use super::session::META_FILE;
