//! The token on each approval card, and answers checked against it: the
//! agent makes 128 random bits (the kernel's `getrandom`) for every request
//! it asks about, the card carries them, and an answer must bring them back
//! ([`ApprovalBroker::answer`]). A client that never received the card —
//! one that guesses call ids — cannot answer it; its answer is refused and
//! the call keeps waiting.
//!
//! It checks and delivers; it never decides a call.

use super::ApprovalBroker;
use vigil_protocol::approval::ApprovalDecision;

/// Why an answer was not taken (the call, if it waits, keeps waiting).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerRefused {
    #[error("approval #{0} is not waiting (already answered, decided or withdrawn)")]
    NotWaiting(u64),
    #[error(
        "approval #{0}: the answer carries no token; an answer must carry the token of the card \
         it answers (a client that did not receive the card cannot answer it)"
    )]
    NoToken(u64),
    #[error(
        "approval #{0}: the answer's token is not this card's: refused, the call keeps waiting"
    )]
    WrongToken(u64),
}

/// A fresh token: 128 bits from the kernel's random source, as hex.
pub fn new_token() -> String {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        let rest = &mut bytes[filled..];
        // SAFETY: the pointer and length describe `rest`, which lives
        // across the call.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n > 0 {
            filled += n as usize;
        } else if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return urandom_token();
        }
    }
    hex(&bytes)
}

/// The same from `/dev/urandom`, for a kernel without `getrandom(2)`.
fn urandom_token() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        // No randomness at all: a token nobody can produce, so no answer
        // over the socket matches and every such call stays asked.
        return String::from("\u{0}unanswerable");
    }
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Equal, in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl ApprovalBroker {
    /// Whether an answer carrying `token` may answer request `id` now.
    pub fn check_token(&self, id: u64, token: &str) -> Result<(), AnswerRefused> {
        let Some(request) = self.desk.waiting(id) else {
            return Err(AnswerRefused::NotWaiting(id));
        };
        if token.is_empty() {
            return Err(AnswerRefused::NoToken(id));
        }
        if request.token.is_empty() || !same(&request.token, token) {
            return Err(AnswerRefused::WrongToken(id));
        }
        Ok(())
    }

    /// Deliver an operator's answer to request `id` when it carries the
    /// card's token.
    pub fn answer(
        &self,
        id: u64,
        token: &str,
        decision: ApprovalDecision,
    ) -> Result<(), AnswerRefused> {
        self.check_token(id, token)?;
        if self.resolve(id, decision) {
            Ok(())
        } else {
            Err(AnswerRefused::NotWaiting(id))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_fresh_and_compared_whole() {
        let a = new_token();
        let b = new_token();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert!(same(&a, &a.clone()));
        assert!(!same(&a, &b));
        assert!(!same(&a, &a[..31]));
        assert!(!same("", "x"));
    }
}
