//! Secret redaction for everything vigil writes down: the session files and
//! the log. Known secrets (the API key) are replaced wherever they appear, and
//! credentials in `Authorization: Bearer …` / `x-api-key: …` shapes are masked
//! even when the secret is not known.
//!
//! It only rewrites text; it never stores or prints a secret itself.

use std::io::Write;
use std::sync::{Arc, OnceLock, RwLock};

/// What replaces a secret.
pub const MASK: &str = "<redacted>";

/// Replaces known secrets and credential-shaped substrings.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// Secrets shorter than 4 characters are ignored (they would mask noise).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| s.len() >= 4)
            .collect();
        // Longest first, so a secret containing another is masked whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Redactor { secrets }
    }

    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), MASK);
            }
        }
        for marker in ["Bearer ", "bearer ", "x-api-key: ", "x-api-key\":\""] {
            out = mask_after(&out, marker);
        }
        out
    }
}

/// Masks the token that follows each `marker`.
fn mask_after(text: &str, marker: &str) -> String {
    if !text.contains(marker) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(marker) {
        let (head, tail) = rest.split_at(pos + marker.len());
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}' | '\\'))
            .unwrap_or(tail.len());
        if end > 0 && !tail[..end].starts_with(MASK) {
            out.push_str(MASK);
        } else {
            out.push_str(&tail[..end]);
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The process-wide redactor the log writer uses (set once the key is known).
fn global() -> &'static RwLock<Arc<Redactor>> {
    static GLOBAL: OnceLock<RwLock<Arc<Redactor>>> = OnceLock::new();
    GLOBAL.get_or_init(|| RwLock::new(Arc::new(Redactor::default())))
}

/// Register the secrets the log must never contain.
pub fn set_global(redactor: Redactor) {
    if let Ok(mut g) = global().write() {
        *g = Arc::new(redactor);
    }
}

/// The process-wide redactor (what the log and the decision record use).
pub fn current() -> Arc<Redactor> {
    global()
        .read()
        .map(|g| g.clone())
        .unwrap_or_else(|e| e.into_inner().clone())
}

/// A writer that redacts each buffer before passing it on (for tracing:
/// one formatted event is one write).
pub struct RedactingWriter<W: Write> {
    inner: W,
}

impl<W: Write> RedactingWriter<W> {
    pub fn new(inner: W) -> Self {
        RedactingWriter { inner }
    }
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let redactor = global().read().map(|g| g.clone()).unwrap_or_default();
        let text = String::from_utf8_lossy(buf);
        self.inner.write_all(redactor.apply(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_secrets_and_credential_shapes_are_masked() {
        let r = Redactor::new(vec!["sk-abc-123".to_string(), "x".to_string()]);
        assert_eq!(r.apply("key sk-abc-123 here"), "key <redacted> here");
        assert_eq!(
            r.apply("Authorization: Bearer tok.en-1 next"),
            "Authorization: Bearer <redacted> next"
        );
        assert_eq!(r.apply("x-api-key: k123\n"), "x-api-key: <redacted>\n");
        assert_eq!(r.apply("nothing x here"), "nothing x here");
    }

    #[test]
    fn writer_redacts_globally_registered_secrets() {
        set_global(Redactor::new(vec!["planted-secret".to_string()]));
        let mut out = Vec::new();
        RedactingWriter::new(&mut out)
            .write_all(b"a planted-secret b")
            .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "a <redacted> b");
    }
}
