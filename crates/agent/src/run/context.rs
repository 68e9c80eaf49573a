//! Context accounting: a token estimate per message (characters / 4,
//! calibrated by the `usage.prompt_tokens` the server reports), the limit,
//! and the pure steps that shrink a conversation: shortening older tool
//! results to projections, choosing where older turns end, and the
//! transcript a summary is written from.
//!
//! Pure functions and plain data: no I/O, no model calls (the compaction flow
//! that asks the model lives in [`crate::run::compact`]).

use crate::model::types::{ChatMessage, Role};

/// Fraction of the limit at which compaction starts.
pub const COMPACT_AT: f64 = 0.8;
/// Fraction of the limit the kept (recent) part may use after a summary.
pub const KEEP_RECENT: f64 = 0.3;
/// Tool results longer than this are shortened when projections are made.
const PROJECT_OVER: usize = 400;
/// The marker that starts a projected tool result.
pub const PROJECTED: &str = "[shortened by vigil; full result in the session file] ";
/// The marker that starts a summary message.
pub const SUMMARY_HEAD: &str = "[vigil: summary of the earlier conversation, compacted to fit \
the context window]\n";

/// Characters of one message as sent (content, call names and arguments).
pub fn message_chars(m: &ChatMessage) -> usize {
    m.content.len()
        + m.tool_calls
            .iter()
            .map(|c| c.id.len() + c.function.name.len() + c.function.arguments.len() + 24)
            .sum::<usize>()
        + m.tool_call_id.as_ref().map_or(0, |s| s.len())
        + 16
}

/// The context limit and the calibration learnt from the server.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextBudget {
    pub limit: u64,
    /// Reported tokens per estimated token (1.0 until the server reports).
    ratio: f64,
    /// Characters of the tool definitions sent with every request.
    tools_chars: usize,
}

impl ContextBudget {
    pub fn new(limit: u64, tools_chars: usize) -> Self {
        ContextBudget {
            limit: limit.max(1),
            ratio: 1.0,
            tools_chars,
        }
    }

    /// Uncalibrated estimate (chars / 4) of a request with these messages.
    pub fn raw(&self, messages: &[ChatMessage]) -> u64 {
        self.raw_chars(messages.iter().map(message_chars).sum())
    }

    /// [`Self::raw`] of messages whose [`message_chars`] add up to `chars`
    /// (a running total: no walk over the messages).
    pub fn raw_chars(&self, chars: usize) -> u64 {
        ((chars + self.tools_chars) as u64).div_ceil(4)
    }

    /// The tool definitions sent with every request are `chars` long (they
    /// change when a small window gets them shortened).
    pub fn set_tools_chars(&mut self, chars: usize) {
        self.tools_chars = chars;
    }

    /// Calibrated estimate of `chars` of text alone, in tokens.
    pub fn tokens_of(&self, chars: usize) -> u64 {
        self.calibrated((chars as u64).div_ceil(4))
    }

    /// Calibrated estimate, in tokens.
    pub fn estimate(&self, messages: &[ChatMessage]) -> u64 {
        self.calibrated(self.raw(messages))
    }

    /// [`Self::estimate`] from a running character total.
    pub fn estimate_chars(&self, chars: usize) -> u64 {
        self.calibrated(self.raw_chars(chars))
    }

    fn calibrated(&self, raw: u64) -> u64 {
        (raw as f64 * self.ratio).round() as u64
    }

    /// Learn from a reported prompt size for a request whose raw estimate
    /// was `raw` (ignored when either is zero; bounded to 0.25..4).
    pub fn calibrate(&mut self, raw: u64, reported: u64) {
        if raw == 0 || reported == 0 {
            return;
        }
        let observed = (reported as f64 / raw as f64).clamp(0.25, 4.0);
        self.ratio = if self.ratio == 1.0 {
            observed
        } else {
            0.5 * self.ratio + 0.5 * observed
        };
    }

    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    pub fn near_limit(&self, used: u64) -> bool {
        used as f64 >= self.limit as f64 * COMPACT_AT
    }

    /// Tokens the recent, kept part may use after a summary.
    pub fn keep_budget(&self) -> u64 {
        (self.limit as f64 * KEEP_RECENT) as u64
    }
}

/// Shorten tool results before `keep_from` to projections. Returns how many
/// were changed.
pub fn project_tool_results(messages: &mut [ChatMessage], keep_from: usize) -> usize {
    let mut changed = 0;
    for m in messages.iter_mut().take(keep_from) {
        if m.role == Role::Tool
            && m.content.len() > PROJECT_OVER
            && !m.content.starts_with(PROJECTED)
        {
            m.content = projection(&m.content);
            changed += 1;
        }
    }
    changed
}

/// The short form of a tool result: the marker and its first characters.
pub fn projection(content: &str) -> String {
    let head: String = content.chars().take(120).collect();
    format!("{PROJECTED}{head}… ({} chars)", content.len())
}

/// Where the recent part starts when it may use `keep_tokens`: the earliest
/// index whose suffix fits, moved back to a user or assistant message (a
/// tool result must stay with its call). `None` when there is nothing older
/// than the recent part to summarise (index 0 is the system prompt).
pub fn cut_point(
    budget: &ContextBudget,
    messages: &[ChatMessage],
    keep_tokens: u64,
) -> Option<usize> {
    let mut used = 0u64;
    let mut start = messages.len();
    while start > 1 {
        let cost = budget.estimate(&messages[start - 1..start]);
        if used + cost > keep_tokens && start < messages.len() {
            break;
        }
        used += cost;
        start -= 1;
    }
    // A tool result must stay with the call before it: widen the kept part.
    while start > 1 && start < messages.len() && messages[start].role == Role::Tool {
        start -= 1;
    }
    // Compact at least two messages after the system prompt.
    (start > 2).then_some(start)
}

/// A plain-text transcript of `messages`, each message cut to `per` chars,
/// the whole cut to about `max` chars (keeping the start and the end).
pub fn transcript(messages: &[ChatMessage], per: usize, max: usize) -> String {
    let lines: Vec<String> = messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| {
            let mut text = cut(&m.content, per);
            for c in &m.tool_calls {
                text.push_str(&format!(
                    " [call {}({})]",
                    c.function.name,
                    cut(&c.function.arguments, 120)
                ));
            }
            format!("{}: {}", role_name(m.role), text)
        })
        .collect();
    let total: usize = lines.iter().map(|l| l.len() + 1).sum();
    if total <= max {
        return lines.join("\n");
    }
    let mut head = Vec::new();
    let mut size = 0;
    for l in &lines {
        if size + l.len() > max / 2 {
            break;
        }
        size += l.len() + 1;
        head.push(l.clone());
    }
    let mut tail = Vec::new();
    size = 0;
    for l in lines.iter().rev() {
        if size + l.len() > max / 2 {
            break;
        }
        size += l.len() + 1;
        tail.push(l.clone());
    }
    tail.reverse();
    let skipped = lines.len().saturating_sub(head.len() + tail.len());
    format!(
        "{}\n… ({skipped} messages left out) …\n{}",
        head.join("\n"),
        tail.join("\n")
    )
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convo(n: usize) -> Vec<ChatMessage> {
        let mut v = vec![ChatMessage::system("sys"), ChatMessage::user("do it")];
        for i in 0..n {
            v.push(ChatMessage::assistant(format!("step {i}"), vec![]));
            v.push(ChatMessage::user("x".repeat(400)));
        }
        v
    }

    #[test]
    fn estimate_is_chars_over_four_and_calibrates() {
        let mut b = ContextBudget::new(1000, 0);
        let m = vec![ChatMessage::user("x".repeat(84))];
        assert_eq!(b.estimate(&m), 25);
        b.calibrate(25, 50);
        assert_eq!(b.estimate(&m), 50);
        b.calibrate(25, 0);
        assert_eq!(b.estimate(&m), 50);
    }

    #[test]
    fn projections_spare_recent_and_short_results() {
        let mut m = vec![
            ChatMessage::tool("a", "y".repeat(1000)),
            ChatMessage::tool("b", "short"),
            ChatMessage::tool("c", "z".repeat(1000)),
        ];
        assert_eq!(project_tool_results(&mut m, 2), 1);
        assert!(m[0].content.starts_with(PROJECTED) && m[0].content.len() < 500);
        assert_eq!(m[2].content.len(), 1000);
        assert_eq!(project_tool_results(&mut m, 2), 0, "idempotent");
    }

    #[test]
    fn cut_point_keeps_a_recent_suffix_not_starting_with_a_tool_result() {
        let b = ContextBudget::new(10_000, 0);
        let m = convo(10);
        let cut = cut_point(&b, &m, 300).unwrap();
        assert!(cut > 2 && cut < m.len());
        assert!(b.estimate(&m[cut..]) <= 300 || cut == m.len() - 1);
        let mut t = convo(3);
        t.push(ChatMessage::tool("q", "r"));
        let c = cut_point(&b, &t, 1).unwrap();
        assert_ne!(t[c].role, Role::Tool);
        assert!(cut_point(&b, &convo(0), 1).is_none());
    }

    #[test]
    fn summaries_and_transcripts_are_bounded() {
        let m = convo(50);
        let t = transcript(&m, 100, 2000);
        assert!(t.len() < 2600, "{}", t.len());
        assert!(t.contains("left out"));
    }
}
