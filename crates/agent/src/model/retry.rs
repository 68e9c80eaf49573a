//! Retrying one model round: connect errors, timeouts, 429/5xx, empty bodies
//! and streams cut mid-answer are tried again with exponential backoff and
//! jitter, honouring the server's `Retry-After` up to a cap.
//!
//! Every retry is reported as [`AgentEvent::RetryScheduled`]; text already
//! streamed from a broken attempt is declared void with
//! [`AgentEvent::AssistantDiscarded`] before the round is asked again (tool
//! calls streamed so far with it: they never ran), so the
//! console never shows the same words twice unmarked. A cut round can always
//! be retried: the round's tool calls only run after the round completed.
//! This module never runs tools and never retries a permanent error.

use std::time::Duration;

use super::chat::{ChatModel, Completion, RoundSink};
use super::error::ModelError;
use super::types::{CallDelta, Messages};
use vigil_protocol::AgentEvent;
use vigil_tools::ToolDefinition;

/// How often and how patiently a round is retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts per round, including the first (1 = no retries).
    pub max_attempts: u32,
    /// The first backoff; doubled for each further attempt.
    pub base_delay: Duration,
    /// The longest backoff (and the cap on a server's `Retry-After`).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt `attempt` (1-based): the server's
    /// `Retry-After` when given (capped), else `base * 2^(attempt-1)` capped,
    /// with "equal jitter" (between half and all of it).
    pub fn delay(&self, attempt: u32, error: &ModelError) -> Duration {
        if let Some(secs) = error.retry_after() {
            return Duration::from_secs(secs).min(self.max_delay);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.max_delay);
        let half = capped / 2;
        half + half.mul_f64(fastrand::f64())
    }
}

/// A round's stream as events: text as `AssistantDelta`, tool-call pieces
/// as `ToolCallDelta`; counts what was shown (text characters, call
/// pieces), so a broken attempt can be declared void.
struct Emitting<'a> {
    emit: &'a (dyn Fn(AgentEvent) + Send + Sync),
    shown: usize,
    calls: usize,
}

impl RoundSink for Emitting<'_> {
    fn text(&mut self, text: &str) {
        self.shown += text.chars().count();
        (self.emit)(AgentEvent::AssistantDelta {
            text: text.to_string(),
        });
    }

    fn call(&mut self, delta: &CallDelta) {
        self.calls += 1;
        (self.emit)(AgentEvent::ToolCallDelta {
            index: delta.index,
            call_id: delta.id.clone().unwrap_or_default(),
            name: delta.name.clone(),
            arguments: delta.arguments.clone(),
        });
    }
}

/// One round with retries. `emit` receives the streamed text
/// (`AssistantDelta`), the retry notices and the discard markers.
pub async fn complete_with_retries(
    model: &dyn ChatModel,
    policy: &RetryPolicy,
    messages: Messages<'_>,
    tools: &[ToolDefinition],
    emit: &(dyn Fn(AgentEvent) + Send + Sync),
) -> Result<Completion, ModelError> {
    let max = policy.max_attempts.max(1);
    let mut attempt = 1;
    loop {
        let mut sink = Emitting {
            emit,
            shown: 0,
            calls: 0,
        };
        let result = model.complete_streaming(messages, tools, &mut sink).await;
        let error = match result {
            Ok(done) => return Ok(done),
            Err(e) => e,
        };
        if sink.shown > 0 || sink.calls > 0 {
            emit(AgentEvent::AssistantDiscarded { chars: sink.shown });
        }
        // A transient error gets every attempt, a model output the server
        // could not parse one more, anything else none.
        let allowed = error.attempts(max);
        if attempt >= allowed {
            return Err(error);
        }
        let delay = policy.delay(attempt, &error);
        tracing::warn!(
            attempt,
            allowed,
            ?delay,
            "model round failed, retrying: {error}"
        );
        emit(AgentEvent::RetryScheduled {
            attempt,
            max_attempts: allowed,
            delay_ms: delay.as_millis() as u64,
            error: error.to_string(),
        });
        tokio::time::sleep(delay).await;
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, retry_after: Option<u64>) -> ModelError {
        ModelError::Status {
            status: code,
            body: String::new(),
            retry_after,
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        for _ in 0..20 {
            let d1 = p.delay(1, &ModelError::Timeout);
            assert!(d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100));
            let d3 = p.delay(3, &ModelError::Timeout);
            assert!(d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400));
            let d9 = p.delay(9, &ModelError::Timeout);
            assert!(d9 <= Duration::from_secs(1));
        }
    }

    #[test]
    fn retry_after_is_honoured_and_bounded() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, &status(429, Some(3))), Duration::from_secs(3));
        assert_eq!(
            p.delay(1, &status(503, Some(3600))),
            Duration::from_secs(60)
        );
    }
}
