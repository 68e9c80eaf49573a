//! The json-tags tool protocol, for models without native tool calls: the
//! tool catalogue goes into the system prompt, calls come back as
//! `<json>{"tool_name": …, "tool_input": {…}}</json>` blocks in the reply
//! text, and results go back in a user message in the same shape with a
//! `tool_output` string. [`complete`] adapts one [`ModelClient`](super::openai::ModelClient) round so the
//! agent loop sees ordinary tool calls and tool messages either way.
//!
//! Everything here except [`complete`] is pure. It never runs a tool, never
//! sends a hidden tool's schema (it renders only the definitions it is
//! given), and never lets a tool's output close the block it sits in
//! (`</` is written `<\/`, a valid JSON escape).

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use super::error::ModelError;
use super::types::{AssistantReply, ChatMessage, FunctionCall, Role, ToolCall};
use vigil_tools::ToolDefinition;
use vigil_tools::validate::example_args;

pub const OPEN: &str = "<json>";
pub const CLOSE: &str = "</json>";

/// Corrections (cut-off or malformed blocks) asked for in one round before
/// the round fails.
pub const MAX_CORRECTIONS: usize = 2;

pub use vigil_config::ToolProtocol;

/// What a reply held.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// The text outside blocks, and the calls (possibly none).
    Calls { text: String, calls: Vec<ToolCall> },
    /// A block was opened and never closed.
    CutOff,
    /// A block could not be used; `tool` is the name it gave, if any.
    Malformed {
        problem: String,
        tool: Option<String>,
    },
}

/// The system prompt section describing the protocol and the tools.
pub fn render_catalogue(tools: &[ToolDefinition], multiple: bool) -> String {
    let mut out = String::from(
        "# Tools\nYou can call tools. To call one, write a block like this in your reply:\n\
         <json>\n{\"tool_name\": \"NAME\", \"tool_input\": {ARGUMENTS}}\n</json>\n",
    );
    out.push_str(if multiple {
        "You may write several blocks in one reply; they run in order.\n"
    } else {
        "Write at most one block per reply, then stop and wait for the result.\n"
    });
    out.push_str(
        "The result comes back in the next user message as the same object with a \
         `tool_output` string added. Never write `tool_output` yourself.\n\nAvailable tools:\n",
    );
    for def in tools {
        let f = &def.function;
        out.push_str(&format!(
            "\n## {}\n{}\nInput schema: {}\n",
            f.name, f.description, f.parameters
        ));
    }
    out
}

fn block(object: &Value) -> String {
    let text = serde_json::to_string(object).unwrap_or_else(|_| "{}".into());
    // `</` only occurs inside JSON strings, where `<\/` means the same.
    format!("{OPEN}\n{}\n{CLOSE}", text.replace("</", "<\\/"))
}

/// A call as the model writes it.
pub fn render_call(name: &str, input: &Value) -> String {
    block(&json!({"tool_name": name, "tool_input": input}))
}

/// A result as the model reads it: the call plus `tool_output`.
pub fn render_result(name: &str, input: &Value, output: &str) -> String {
    block(&json!({"tool_name": name, "tool_input": input, "tool_output": output}))
}

fn input_of(call: &ToolCall) -> Value {
    serde_json::from_str(&call.function.arguments).unwrap_or_else(|_| json!({}))
}

/// The conversation as a json-tags model sees it: the catalogue appended to
/// the system prompt, calls as blocks in the assistant text, and each run of
/// tool messages as one user message of result blocks.
pub fn encode_messages(
    messages: &[ChatMessage],
    tools: &[ToolDefinition],
    multiple: bool,
) -> Vec<ChatMessage> {
    let catalogue = (!tools.is_empty()).then(|| render_catalogue(tools, multiple));
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len() + 1);
    if let Some(cat) = &catalogue
        && messages.first().is_none_or(|m| m.role != Role::System)
    {
        out.push(ChatMessage::system(cat.clone()));
    }
    let mut last_calls: Vec<ToolCall> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::System if i == 0 => {
                let text = match &catalogue {
                    Some(cat) if m.content.is_empty() => cat.clone(),
                    Some(cat) => format!("{}\n\n{cat}", m.content),
                    None => m.content.clone(),
                };
                out.push(ChatMessage::system(text));
            }
            Role::Assistant if !m.tool_calls.is_empty() => {
                let mut text = m.content.trim_end().to_string();
                for call in &m.tool_calls {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&render_call(&call.function.name, &input_of(call)));
                }
                last_calls = m.tool_calls.clone();
                out.push(ChatMessage::assistant(text, Vec::new()));
            }
            Role::Tool => {
                let call = last_calls
                    .iter()
                    .find(|c| Some(&c.id) == m.tool_call_id.as_ref());
                let rendered = match call {
                    Some(c) => render_result(&c.function.name, &input_of(c), &m.content),
                    None => render_result("unknown", &json!({}), &m.content),
                };
                match out.last_mut() {
                    Some(prev) if prev.role == Role::User && prev.content.starts_with(OPEN) => {
                        prev.content.push('\n');
                        prev.content.push_str(&rendered);
                    }
                    _ => out.push(ChatMessage::user(rendered)),
                }
            }
            _ => out.push(m.clone()),
        }
    }
    out
}

/// Read the calls out of a reply. `next_id` names each call.
pub fn parse_reply(
    content: &str,
    finish_reason: Option<&str>,
    multiple: bool,
    next_id: &mut dyn FnMut() -> String,
) -> Parsed {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut rest = content;
    while let Some(start) = rest.find(OPEN) {
        text.push_str(&rest[..start]);
        let body_start = start + OPEN.len();
        let Some(len) = rest[body_start..].find(CLOSE) else {
            let body = &rest[body_start..];
            rest = "";
            if !calls.is_empty() && !multiple {
                break;
            }
            if finish_reason == Some("length") {
                return Parsed::CutOff;
            }
            // The model finished by itself without `</json>`: a call whose
            // close tag it forgot, or no call at all.
            if !looks_like_call(body) {
                text.push_str(body);
                break;
            }
            match block_call(body, next_id) {
                Ok(call) => calls.push(call),
                Err((problem, tool)) => {
                    return Parsed::Malformed {
                        problem: format!("the block was not closed with {CLOSE} and {problem}"),
                        tool,
                    };
                }
            }
            break;
        };
        let body = &rest[body_start..body_start + len];
        rest = &rest[body_start + len + CLOSE.len()..];
        if calls.len() == 1 && !multiple {
            // One call per reply: later blocks are not run.
            continue;
        }
        match block_call(body, next_id) {
            Ok(call) => calls.push(call),
            Err((problem, tool)) => return Parsed::Malformed { problem, tool },
        }
    }
    text.push_str(rest);
    let tail = text.trim_end();
    let partial_tag = (1..OPEN.len()).any(|n| tail.ends_with(&OPEN[..n]));
    if calls.is_empty() && (partial_tag && finish_reason == Some("length")) {
        return Parsed::CutOff;
    }
    Parsed::Calls {
        text: text.trim().to_string(),
        calls,
    }
}

/// Whether the text after `<json>` can be the start of a call (a JSON
/// object, possibly in a code fence); anything else is prose.
fn looks_like_call(body: &str) -> bool {
    let t = body.trim_start();
    t.is_empty() || t.starts_with('{') || t.starts_with('`')
}

type BlockError = (String, Option<String>);

/// A block's body as a call named by `next_id`.
fn block_call(body: &str, next_id: &mut dyn FnMut() -> String) -> Result<ToolCall, BlockError> {
    let (name, input) = parse_block(body)?;
    Ok(ToolCall {
        id: next_id(),
        kind: "function".into(),
        function: FunctionCall {
            name,
            arguments: input.to_string(),
        },
    })
}

fn parse_block(body: &str) -> Result<(String, Value), BlockError> {
    let mut body = body.trim();
    if let Some(inner) = body.strip_prefix("```") {
        body = inner
            .trim_start_matches("json")
            .trim()
            .trim_end_matches("```")
            .trim();
    }
    let value: Value = serde_json::from_str(body)
        .map_err(|e| (format!("the block is not valid JSON ({e})"), None))?;
    let Value::Object(mut map) = value else {
        return Err(("the block must hold one JSON object".into(), None));
    };
    let name = match map.remove("tool_name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(_) => return Err(("`tool_name` must be a non-empty string".into(), None)),
        None => return Err(("the key `tool_name` is missing".into(), None)),
    };
    let tool = Some(name.clone());
    let input = match map.remove("tool_input") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(v @ Value::Object(_)) => v,
            _ => return Err(("`tool_input` must be a JSON object".into(), tool)),
        },
        Some(_) => return Err(("`tool_input` must be a JSON object".into(), tool)),
    };
    if map.contains_key("tool_output") {
        return Err((
            "the block contains `tool_output`; never write it yourself, vigil adds the real \
             output after running the tool"
                .into(),
            tool,
        ));
    }
    if let Some(key) = map.keys().next() {
        return Err((format!("unknown key `{key}`"), tool));
    }
    Ok((name, input))
}

/// The message asking for a cut-off call again.
pub fn cut_off_message() -> String {
    format!(
        "Your last reply was cut off in the middle of a {OPEN} tool call block, so no tool \
         was run. Send the complete call again: one {OPEN} block with `tool_name` and \
         `tool_input`, closed with {CLOSE}, and little text around it."
    )
}

/// The message answering a malformed block: the problem, the accepted keys
/// and a literal example (for `tool` when it names a known tool).
pub fn malformed_message(problem: &str, tool: Option<&str>, tools: &[ToolDefinition]) -> String {
    let names: Vec<&str> = tools.iter().map(|d| d.function.name.as_str()).collect();
    let example = tools
        .iter()
        .find(|d| Some(d.function.name.as_str()) == tool)
        .or(tools.first());
    let mut out = format!(
        "Your tool call could not be read: {problem}. No tool was run.\n\
         A call is one {OPEN} block holding a JSON object with exactly these keys:\n\
         - tool_name (string, required): one of {}\n\
         - tool_input (object, required): the tool's arguments, as its input schema says\n",
        names.join(", ")
    );
    if let Some(def) = example {
        out.push_str("Example:\n");
        out.push_str(&render_call(
            &def.function.name,
            &example_args(&def.function.parameters),
        ));
        out.push('\n');
    }
    out.push_str("Send the corrected call now.");
    out
}

/// Hides `<json>` blocks from streamed text (the console shows the calls as
/// tool entries instead). A "block" whose text cannot be a call (prose after
/// `<json>`) is shown as it streams, and one never closed is shown at the
/// end, so a reply is never invisible for its whole stream.
#[derive(Debug, Default)]
pub struct TextFilter {
    buf: String,
    inside: bool,
    /// The text of the open block so far.
    hidden: String,
}

impl TextFilter {
    /// Feed a delta; returns the text to show now.
    pub fn push(&mut self, delta: &str) -> String {
        self.buf.push_str(delta);
        let mut shown = String::new();
        loop {
            let tag = if self.inside { CLOSE } else { OPEN };
            if let Some(pos) = self.buf.find(tag) {
                if !self.inside {
                    shown.push_str(&self.buf[..pos]);
                }
                self.buf.drain(..pos + tag.len());
                self.hidden.clear();
                self.inside = !self.inside;
                continue;
            }
            // Keep a trailing piece that may be the start of the tag.
            let keep = (1..tag.len())
                .rev()
                .find(|n| self.buf.ends_with(&tag[..*n]))
                .unwrap_or(0);
            let cut = self.buf.len() - keep;
            let target = if self.inside {
                &mut self.hidden
            } else {
                &mut shown
            };
            target.push_str(&self.buf[..cut]);
            self.buf.drain(..cut);
            if self.inside && !looks_like_call(&self.hidden) {
                // Not a call: prose that merely starts with the tag.
                shown.push_str(OPEN);
                shown.push_str(&std::mem::take(&mut self.hidden));
                self.inside = false;
                continue;
            }
            return shown;
        }
    }

    /// The text held back at the end of the stream (a block never closed is
    /// shown as the model wrote it).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.buf);
        if self.inside {
            self.inside = false;
            format!("{OPEN}{}{rest}", std::mem::take(&mut self.hidden))
        } else {
            rest
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The most of an unusable reply sent back with its correction: a runaway
/// reply must not make the correction itself too long for the context.
const CORRECTION_ECHO: usize = 2000;

/// At most `max` characters of `text`, the cut marked.
fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!(
            "{}… [vigil: {} more characters left out]",
            &text[..i],
            text[i..].chars().count()
        ),
        None => text.to_string(),
    }
}

/// One round with a json-tags model: encode, ask, parse; a cut-off or
/// malformed block is answered (up to [`MAX_CORRECTIONS`] times) and asked
/// again without reaching the agent loop. The reply's text has the blocks
/// removed; its calls are ordinary [`ToolCall`]s.
/// One plain text round of the model, no tools offered: what json-tags mode
/// wraps (the OpenAI client implements it).
#[async_trait::async_trait]
pub trait TextRound: Send + Sync {
    async fn text_round(
        &self,
        messages: &[ChatMessage],
        on_text: &mut (dyn for<'s> FnMut(&'s str) + Send),
    ) -> Result<AssistantReply, ModelError>;
}

pub async fn complete(
    client: &dyn TextRound,
    multiple: bool,
    messages: &[ChatMessage],
    tools: &[ToolDefinition],
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<AssistantReply, ModelError> {
    let mut convo = encode_messages(messages, tools, multiple);
    for attempt in 0..=MAX_CORRECTIONS {
        let mut filter = TextFilter::default();
        let reply = {
            let mut shown = |t: &str| {
                let s = filter.push(t);
                if !s.is_empty() {
                    on_text(&s);
                }
            };
            client.text_round(&convo, &mut shown).await?
        };
        let rest = filter.finish();
        if !rest.is_empty() {
            on_text(&rest);
        }
        let mut next_id = || format!("jt_{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let correction = match parse_reply(
            &reply.content,
            reply.finish_reason.as_deref(),
            multiple,
            &mut next_id,
        ) {
            Parsed::Calls { text, mut calls } => {
                calls.extend(reply.tool_calls);
                return Ok(AssistantReply {
                    content: text,
                    tool_calls: calls,
                    ..reply
                });
            }
            Parsed::CutOff => cut_off_message(),
            Parsed::Malformed { problem, tool } => {
                malformed_message(&problem, tool.as_deref(), tools)
            }
        };
        tracing::warn!(
            "json-tags: unusable tool call (attempt {}): {correction}",
            attempt + 1
        );
        convo.push(ChatMessage::assistant(
            bounded(&reply.content, CORRECTION_ECHO),
            Vec::new(),
        ));
        convo.push(ChatMessage::user(correction));
    }
    Err(ModelError::Protocol(format!(
        "the model sent an unusable <json> tool call {} times in a row",
        MAX_CORRECTIONS + 1
    )))
}

#[cfg(test)]
#[path = "json_tags_tests.rs"]
mod tests;
