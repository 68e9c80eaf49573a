//! Keeping the conversation inside the context limit: when the estimate
//! nears the limit (or the operator asks, or the server refused), older tool
//! results are shortened to projections first; if that is not enough, older
//! turns are replaced by one summary message written by the model, or, when
//! the model gives no usable summary twice (empty, only a code fence, or cut
//! at its token limit), dropped with a marker that says so. The current
//! turn's request always stays verbatim. When the newest tool results alone
//! still do not fit, the largest is cut to its head and tail, the full text
//! kept in a spill file, as for any cut output. Only the in-memory
//! conversation shrinks: the session file keeps the full record.
//!
//! It never blocks the loop for long (two summary requests at most, each
//! bounded by a timeout) and never fails a turn: at worst it leaves the
//! conversation as it was and says so.

use std::sync::Arc;
use std::time::Duration;

use crate::model::types::{ChatMessage, Messages, Role};
use crate::run::context::{COMPACT_AT, SUMMARY_HEAD, cut_point, project_tool_results, transcript};
use crate::run::shared::{Shared, lock};
use vigil_protocol::AgentEvent;
use vigil_tools::truncate::{Keep, cut_with_spill};

/// The instruction for the summary request.
const SUMMARIZER: &str = "You compress conversations for an agent that operates machines. \
Summarise the transcript below in at most 20 short lines: what the operator asked, what was \
done (commands, files, results that matter), what is still open. Keep exact names, paths and \
numbers. No preamble.";

/// The marker left where older turns were dropped without a summary.
pub const DROPPED: &str = "[vigil: older messages were dropped to fit the context window (no \
usable summary could be made); the session file keeps them]";

/// The longest a summary request may take.
const SUMMARY_TIMEOUT: Duration = Duration::from_secs(60);

/// The fewest characters a shortened newest tool result keeps.
const NEWEST_MIN_CHARS: usize = 400;

/// Compact when near the limit, or always when `force`.
pub(crate) async fn maybe_compact(shared: &Arc<Shared>, force: bool) {
    let before = shared.context_used();
    if !force && !near(shared) {
        return;
    }
    lock(&shared.conversation).edit(|convo| {
        let keep_from = convo
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .unwrap_or(convo.len());
        project_tool_results(convo, keep_from);
    });
    let projected = shared.context_used();
    let mut method = (projected < before).then_some("projections");
    if force || near(shared) {
        if let Some(done) = replace_older_turns(shared, projected).await {
            method = Some(done);
        }
    }
    if near(shared) && shorten_newest(shared) {
        method = Some("newest tool result shortened");
    }
    let after = shared.context_used();
    match method {
        Some(method) => shared.emit(AgentEvent::ContextCompacted {
            before,
            after,
            method: method.into(),
        }),
        None => shared.emit(AgentEvent::Notice {
            text: "the context is near its limit and nothing older can be compacted".into(),
        }),
    }
}

fn near(shared: &Shared) -> bool {
    let used = shared.context_used();
    lock(&shared.context).near_limit(used)
}

/// Where the current turn's request is: the last user message that is not
/// a summary or a marker of vigil's.
fn current_request(convo: &[ChatMessage]) -> Option<usize> {
    convo.iter().rposition(|m| {
        m.role == Role::User && !m.content.starts_with(SUMMARY_HEAD) && m.content != DROPPED
    })
}

/// Replaces the turns before the recent part with a summary (or, failing
/// that, a marker). Returns the method, or None when nothing was replaced.
async fn replace_older_turns(shared: &Arc<Shared>, projected: u64) -> Option<&'static str> {
    let (old, cut, request) = {
        let convo = lock(&shared.conversation);
        let budget = lock(&shared.context);
        let cut = cut_point(&budget, &convo, budget.keep_budget())?;
        let request = current_request(&convo).filter(|r| *r < cut && *r > 0);
        (convo[1..cut].to_vec(), cut, request)
    };
    // The current request is summarised with the rest but also kept as it
    // was written, right after the summary.
    let kept = request.map(|r| lock(&shared.conversation)[r].clone());
    if kept.is_some() && old.len() <= 1 {
        return None;
    }
    let limit_chars = lock(&shared.context).limit as usize * 4;
    let (head, method) = match model_summary(shared, &old, limit_chars / 2).await {
        Some(summary) => {
            let summary: String = summary.chars().take(limit_chars / 6).collect();
            (format!("{SUMMARY_HEAD}{summary}"), "summary")
        }
        None => {
            shared.emit(AgentEvent::Notice {
                text: "the model gave no usable summary; the oldest turns are dropped with a \
                       marker instead"
                    .into(),
            });
            (DROPPED.to_string(), "dropped")
        }
    };
    let replaced = lock(&shared.conversation).edit(|convo| {
        if cut > convo.len() {
            return None;
        }
        let tail = convo.split_off(cut);
        let old: Vec<ChatMessage> = convo.drain(1..).collect();
        convo.push(ChatMessage::user(head));
        convo.extend(kept);
        convo.extend(tail);
        Some(old)
    });
    let after = shared.context_used();
    if after < projected {
        return Some(method);
    }
    if let Some(old) = replaced {
        // A replacement no smaller than the turns it replaces gains nothing:
        // keep the turns and say so (never report a "compaction" that grew).
        lock(&shared.conversation).edit(|convo| {
            let added = if request.is_some() { 2 } else { 1 };
            convo.splice(1..1 + added, old);
        });
        shared.emit(AgentEvent::Notice {
            text: format!(
                "compaction would not make the context smaller (~{projected} → ~{after} \
                 tokens); the conversation is kept as it was"
            ),
        });
    }
    None
}

/// Cuts the largest tool result of the current turn to its head and tail
/// (the full text in a spill file) so that the estimate falls below the
/// compaction threshold. True when one was cut.
fn shorten_newest(shared: &Shared) -> bool {
    let used = shared.context_used();
    let (excess_chars, ratio) = {
        let budget = lock(&shared.context);
        let target = (budget.limit as f64 * COMPACT_AT * 0.9) as u64;
        let ratio = budget.ratio().max(0.25);
        let excess = used.saturating_sub(target) as f64 / ratio * 4.0;
        (excess.ceil() as usize, ratio)
    };
    tracing::debug!(excess_chars, ratio, "shortening the newest tool result");
    let spill_dir = shared.spill_dir.clone();
    lock(&shared.conversation).edit(|convo| {
        let start = current_request(convo).unwrap_or(0);
        let Some(largest) = (start..convo.len())
            .filter(|i| convo[*i].role == Role::Tool)
            .max_by_key(|i| convo[*i].content.len())
        else {
            return false;
        };
        let content = &convo[largest].content;
        let chars = content.chars().count();
        let keep = chars.saturating_sub(excess_chars).max(NEWEST_MIN_CHARS);
        if keep >= chars {
            return false;
        }
        let (cut, _) = cut_with_spill(
            content,
            keep,
            Keep::HeadTail,
            spill_dir.as_deref(),
            "tool-result",
        );
        convo[largest].content = cut.text;
        true
    })
}

/// Ask the model for a summary (no tools, bounded input): a second time
/// when the first is unusable; None when neither is.
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
    for attempt in 1..=2 {
        let mut ignore = |_: &str| {};
        let round = shared
            .model
            .complete_round(Messages::Typed(&request), &[], &mut ignore);
        let why = match tokio::time::timeout(SUMMARY_TIMEOUT, round).await {
            Ok(Ok(done)) => {
                match unusable(&done.reply.content, done.reply.finish_reason.as_deref()) {
                    None => return Some(done.reply.content),
                    Some(why) => why.to_string(),
                }
            }
            Ok(Err(e)) => format!("the request failed: {e}"),
            Err(_) => "the request timed out".into(),
        };
        tracing::warn!(attempt, "summary rejected: {why}");
    }
    None
}

/// Why a summary cannot stand for the turns it replaces: empty, nothing but
/// a code fence, or cut at its token limit. None: usable.
pub fn unusable(text: &str, finish_reason: Option<&str>) -> Option<&'static str> {
    if matches!(finish_reason, Some("length" | "max_tokens")) {
        return Some("it was cut at its token limit");
    }
    let words = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .any(|l| l.chars().any(char::is_alphanumeric));
    if text.trim().is_empty() {
        Some("it is empty")
    } else if !words {
        Some("it is only a code fence")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_fenced_and_cut_summaries_are_unusable() {
        assert_eq!(unusable("  \n", Some("stop")), Some("it is empty"));
        assert_eq!(
            unusable("```", Some("stop")),
            Some("it is only a code fence")
        );
        assert_eq!(
            unusable("```\n```\n", None),
            Some("it is only a code fence")
        );
        assert!(unusable("The operator asked for", Some("length")).is_some());
        assert_eq!(unusable("```\nls -l /srv\n```", Some("stop")), None);
        assert_eq!(unusable("Operator asked: disk space.", None), None);
    }

    #[test]
    fn the_current_request_is_the_last_user_message_of_the_operator() {
        let convo = vec![
            ChatMessage::system("s"),
            ChatMessage::user(format!("{SUMMARY_HEAD}old")),
            ChatMessage::user("do it"),
            ChatMessage::assistant("", vec![]),
            ChatMessage::tool("c", "out"),
            ChatMessage::user(DROPPED),
        ];
        assert_eq!(current_request(&convo), Some(2));
        assert_eq!(current_request(&convo[..2]), None);
    }
}
