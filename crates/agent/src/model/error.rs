//! Why a model round failed ([`ModelError`]), and how a server's error
//! answer is read: its HTTP status, its `Retry-After`, and a refusal because
//! the request does not fit the model's context (llama.cpp's
//! `exceed_context_size_error` with `n_prompt_tokens`/`n_ctx`, OpenAI's
//! `context_length_exceeded`), which the agent loop answers by compacting.
//!
//! Pure: it never does I/O and never decides whether to retry (that is
//! [`super::retry`]'s job, from [`ModelError::is_transient`]).

use serde_json::Value;

/// Why a model round failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The server could not be reached (the message names the URL).
    #[error("cannot reach the model server: {0}")]
    Connect(String),
    /// The server answered with a non-success status (or an error event
    /// inside a stream carried this status).
    #[error("the model server answered HTTP {status}: {body}")]
    Status {
        status: u16,
        body: String,
        /// The `Retry-After` header as seconds from its arrival, when the
        /// server sent one (an HTTP date already in the past is 0).
        retry_after: Option<u64>,
    },
    /// The server refused the request because it does not fit the model's
    /// context window. The numbers are the server's, when it gave them.
    #[error("{}", context_text(*prompt_tokens, *context_size, body))]
    ContextExceeded {
        prompt_tokens: Option<u64>,
        context_size: Option<u64>,
        body: String,
    },
    /// The stream stopped before the answer was complete (connection broke,
    /// or no `[DONE]` and no finish reason). Nothing from it was acted on.
    #[error("the answer was cut off mid-stream: {0}")]
    StreamCut(String),
    /// A 200 answer with no body, even after the non-streaming retry.
    #[error("the model server sent an empty response")]
    EmptyBody,
    /// The answer could not be understood, was cut off, or carried an error.
    #[error("model protocol error: {0}")]
    Protocol(String),
    /// The request was sent (or being sent) but the connection closed before
    /// any answer came: a pooled keep-alive connection the server had just
    /// closed, a reset. Nothing was answered, so asking again is safe.
    #[error("the model server closed the connection without answering: {0}")]
    Unanswered(String),
    /// The server stopped answering (connect or idle timeout).
    #[error("the model server timed out")]
    Timeout,
    /// The server could not read what the model produced as the format it
    /// expects (llama.cpp: "The model produced output that does not match
    /// the expected … format", in a stream or as HTTP 500). The model's
    /// fault, not the server's: at temperature 0 it repeats, so the round is
    /// tried again at most once. Carries the server's message.
    #[error("the model's output did not match the format the server expects: {0}")]
    ModelOutput(String),
}

fn context_text(prompt: Option<u64>, size: Option<u64>, body: &str) -> String {
    match (prompt, size) {
        (Some(p), Some(n)) => format!(
            "the request needs {p} tokens but the model server's context holds {n} \
             (HTTP 400: {body})"
        ),
        _ => format!("the request does not fit the model's context (HTTP 400: {body})"),
    }
}

impl ModelError {
    /// Whether trying the same request again later may succeed
    /// (connection trouble, timeouts, 408/409/429/5xx, empty bodies).
    pub fn is_transient(&self) -> bool {
        match self {
            ModelError::Connect(_)
            | ModelError::Unanswered(_)
            | ModelError::Timeout
            | ModelError::EmptyBody
            | ModelError::StreamCut(_) => true,
            ModelError::Status { status, .. } => {
                matches!(status, 408 | 409 | 429) || *status >= 500
            }
            ModelError::Protocol(_)
            | ModelError::ContextExceeded { .. }
            | ModelError::ModelOutput(_) => false,
        }
    }

    /// How many attempts a round that failed this way gets, out of the
    /// configured `max`: all of them for a transient error, two for a model
    /// output the server could not parse, one for anything else.
    pub fn attempts(&self, max: u32) -> u32 {
        match self {
            ModelError::ModelOutput(_) => max.min(2),
            e if e.is_transient() => max,
            _ => 1,
        }
    }

    /// The server's requested wait, in seconds (429/503 `Retry-After`).
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ModelError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The error a non-success answer means: [`ModelError::ContextExceeded`]
    /// when the body says the request is too long for the context, else
    /// [`ModelError::Status`]. `body` is the whole answer; `shown` the
    /// (redacted, shortened) text the error carries.
    pub fn from_status(
        status: u16,
        body: &str,
        shown: String,
        retry_after: Option<u64>,
    ) -> ModelError {
        if is_model_output_error(body) || is_model_output_error(&shown) {
            return ModelError::ModelOutput(shown);
        }
        match context_refusal(status, body) {
            Some((prompt_tokens, context_size)) => ModelError::ContextExceeded {
                prompt_tokens,
                context_size,
                body: shown,
            },
            None => ModelError::Status {
                status,
                body: shown,
                retry_after,
            },
        }
    }
}

/// Whether a server's error text says the model's output did not match the
/// format the server parses (llama.cpp's chat parsers, in every version's
/// wording: "does not match the expected … format").
pub fn is_model_output_error(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    text.contains("model produced output") || text.contains("does not match the expected")
}

/// `Some((prompt tokens, context size))` when an error answer says the
/// request does not fit the context (either number may be missing).
fn context_refusal(status: u16, body: &str) -> Option<(Option<u64>, Option<u64>)> {
    if status != 400 && status != 413 {
        return None;
    }
    let value: Value = serde_json::from_str(body).ok()?;
    let err = value.get("error").unwrap_or(&value);
    let field = |k: &str| err.get(k).and_then(Value::as_str).unwrap_or("");
    let kinds = [field("type"), field("code")];
    let known = kinds.iter().any(|k| {
        matches!(
            *k,
            "exceed_context_size_error" | "context_length_exceeded" | "context_window_exceeded"
        )
    });
    if !known {
        return None;
    }
    let number = |k: &str| err.get(k).and_then(Value::as_u64);
    Some((number("n_prompt_tokens"), number("n_ctx")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_classification() {
        let status = |status| ModelError::Status {
            status,
            body: String::new(),
            retry_after: None,
        };
        assert!(ModelError::Timeout.is_transient());
        assert!(ModelError::Unanswered("x".into()).is_transient());
        assert!(status(429).is_transient());
        assert!(status(500).is_transient());
        assert!(!status(401).is_transient());
        assert!(!ModelError::Protocol("x".into()).is_transient());
    }

    #[test]
    fn llama_cpp_context_refusal_names_the_numbers() {
        let body = r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
        let e = ModelError::from_status(400, body, "shown".into(), None);
        assert_eq!(
            e,
            ModelError::ContextExceeded {
                prompt_tokens: Some(9000),
                context_size: Some(8192),
                body: "shown".into(),
            }
        );
        assert!(!e.is_transient());
        let text = e.to_string();
        assert!(
            text.contains("9000 tokens") && text.contains("holds 8192"),
            "{text}"
        );
    }

    #[test]
    fn a_model_format_error_is_the_model_s_and_gets_one_retry() {
        let body = r#"{"error":{"code":500,"message":"The model produced output that does not match the expected peg-native format","type":"server_error"}}"#;
        let e = ModelError::from_status(500, body, "shown".into(), None);
        assert_eq!(e, ModelError::ModelOutput("shown".into()));
        let streamed =
            "The model produced output that does not match the expected peg-native format";
        let e = ModelError::from_status(500, "", streamed.into(), None);
        assert!(e.to_string().contains("peg-native format"), "{e}");
        assert!(!e.is_transient());
        assert_eq!((e.attempts(5), e.attempts(1)), (2, 1));
        assert_eq!(ModelError::Timeout.attempts(5), 5);
        assert_eq!(ModelError::Protocol("x".into()).attempts(5), 1);
    }

    #[test]
    fn openai_context_refusal_and_other_errors() {
        let openai = r#"{"error":{"message":"maximum context length is 4097 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        let e = ModelError::from_status(400, openai, "s".into(), None);
        assert!(matches!(
            e,
            ModelError::ContextExceeded {
                prompt_tokens: None,
                ..
            }
        ));
        assert!(e.to_string().contains("does not fit"));
        let other = r#"{"error":{"message":"bad","type":"invalid_request_error"}}"#;
        let e = ModelError::from_status(400, other, "s".into(), Some(3));
        assert!(matches!(e, ModelError::Status { status: 400, .. }));
        let e = ModelError::from_status(500, "not json", "s".into(), None);
        assert!(matches!(e, ModelError::Status { status: 500, .. }));
    }
}
