//! Keeping the conversation inside the context limit: when the estimate
//! nears the limit (or the operator asks), older tool results are shortened
//! to projections first; if that is not enough, older turns are replaced by
//! one summary message, written by the model or, when the model cannot,
//! extracted deterministically. Only the in-memory conversation shrinks: the
//! session file keeps the full record.
//!
//! It never blocks the loop for long (one summary request, bounded by a
//! timeout) and never fails a turn: at worst it leaves the conversation as
//! it was and says so.

use std::sync::Arc;
use std::time::Duration;

use super::context::{
    SUMMARY_HEAD, cut_point, extractive_summary, project_tool_results, transcript,
};
use super::model::types::{ChatMessage, Messages, Role};
use super::shared::{Shared, lock};
use crate::event::AgentEvent;

/// The instruction for the summary request.
const SUMMARIZER: &str = "You compress conversations for an agent that operates machines. \
Summarise the transcript below in at most 20 short lines: what the operator asked, what was \
done (commands, files, results that matter), what is still open. Keep exact names, paths and \
numbers. No preamble.";

/// The longest a summary request may take.
const SUMMARY_TIMEOUT: Duration = Duration::from_secs(60);

/// Compact when near the limit, or always when `force`.
pub(crate) async fn maybe_compact(shared: &Arc<Shared>, force: bool) {
    let before = shared.context_used();
    let near = lock(&shared.context).near_limit(before);
    if !force && !near {
        return;
    }
    lock(&shared.conversation).edit(|convo| {
        let keep_from = convo
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .unwrap_or(convo.len());
        project_tool_results(convo, keep_from);
    });
    let after_projection = shared.context_used();
    let still_near = lock(&shared.context).near_limit(after_projection);
    if !force && !still_near {
        shared.emit(AgentEvent::ContextCompacted {
            before,
            after: after_projection,
            method: "projections".into(),
        });
        return;
    }
    let (old, cut) = {
        let convo = lock(&shared.conversation);
        let budget = lock(&shared.context);
        match cut_point(&budget, &convo, budget.keep_budget()) {
            Some(cut) => (convo[1..cut].to_vec(), cut),
            None => {
                drop(budget);
                drop(convo);
                if after_projection < before {
                    shared.emit(AgentEvent::ContextCompacted {
                        before,
                        after: after_projection,
                        method: "projections".into(),
                    });
                } else {
                    shared.emit(AgentEvent::Notice {
                        text: "the context is near its limit and nothing older can be compacted"
                            .into(),
                    });
                }
                return;
            }
        }
    };
    let limit_chars = lock(&shared.context).limit as usize * 4;
    let summary = match model_summary(shared, &old, limit_chars / 2).await {
        Some(s) => s,
        None => {
            shared.emit(AgentEvent::Notice {
                text: "the model could not summarise; using an extractive summary".into(),
            });
            extractive_summary(&old)
        }
    };
    let summary: String = summary.chars().take(limit_chars / 6).collect();
    let replaced = lock(&shared.conversation).edit(|convo| {
        if cut > convo.len() {
            return None;
        }
        let tail = convo.split_off(cut);
        let old: Vec<ChatMessage> = convo.drain(1..).collect();
        convo.push(ChatMessage::user(format!("{SUMMARY_HEAD}{summary}")));
        convo.extend(tail);
        Some(old)
    });
    let after = shared.context_used();
    if after >= after_projection
        && let Some(old) = replaced
    {
        // A summary no smaller than the turns it replaces gains nothing:
        // keep the turns and say so (never report a "compaction" that grew).
        lock(&shared.conversation).edit(|convo| {
            convo.splice(1..2, old);
        });
        shared.emit(AgentEvent::Notice {
            text: format!(
                "compaction would not make the context smaller (~{after_projection} → ~{after} tokens); the conversation is kept as it was"
            ),
        });
        return;
    }
    shared.emit(AgentEvent::ContextCompacted {
        before,
        after,
        method: "summary".into(),
    });
}

/// Ask the model for a summary (one attempt, no tools, bounded input).
async fn model_summary(
    shared: &Arc<Shared>,
    old: &[ChatMessage],
    max_chars: usize,
) -> Option<String> {
    let request = vec![
        ChatMessage::system(SUMMARIZER),
        ChatMessage::user(format!(
            "vigil-compaction: summarise this transcript.\n\n{}",
            transcript(old, 400, max_chars.max(2000))
        )),
    ];
    let mut ignore = |_: &str| {};
    let round = shared
        .model
        .complete_round(Messages::Typed(&request), &[], &mut ignore);
    match tokio::time::timeout(SUMMARY_TIMEOUT, round).await {
        Ok(Ok(done)) if !done.reply.content.trim().is_empty() => Some(done.reply.content),
        Ok(Ok(_)) => None,
        Ok(Err(e)) => {
            tracing::warn!("summary request failed: {e}");
            None
        }
        Err(_) => {
            tracing::warn!("summary request timed out");
            None
        }
    }
}
