//! Scenario files: the ordered rules the scripted model answers from.
//!
//! A scenario is TOML: top-level defaults and a list of `[[rule]]`s. Each rule
//! has a `when` matched against the request's last message, a `times` budget,
//! and a reply (text, tool calls) or a misbehaviour (status, empty body, cut
//! stream). This module parses, validates and selects; it never does I/O
//! beyond reading the scenario file, and never panics on a bad file: errors
//! name the line and key (from `toml`) or the rule number.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// The bundled demo scenario.
const DEMO: &str = include_str!("../../../assets/demo.toml");

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid scenario{origin}: {source}")]
    Parse {
        /// `" in <path>"` or empty.
        origin: String,
        source: toml::de::Error,
    },
    #[error("invalid scenario: rule {rule}: {reason}")]
    Invalid { rule: usize, reason: String },
}

/// A whole scenario.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The model id reported by `/v1/models` and in completions.
    #[serde(default = "default_model")]
    pub model: String,
    /// Default delay between streamed chunks, in milliseconds.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Send a usage chunk before `[DONE]` (and usage in plain completions).
    #[serde(default)]
    pub usage: bool,
    /// Answer 400 to any request holding an assistant message whose
    /// `content` is null (as some real servers do).
    #[serde(default)]
    pub reject_null_content: bool,
    /// Keep every request body for [`super::ScriptedServer::requests`]
    /// (turn off for long benchmarks).
    #[serde(default = "yes")]
    pub record_requests: bool,
    /// Play llama.cpp's context size: published in `/v1/models` as
    /// `meta.n_ctx`, and a request whose prompt (body bytes / 4) is larger
    /// is refused with HTTP 400 `exceed_context_size_error`.
    #[serde(default)]
    pub n_ctx: Option<u64>,
    /// Refuse (HTTP 400) a request carrying `stream_options`, as some
    /// servers do.
    #[serde(default)]
    pub reject_stream_options: bool,
    /// Refuse (HTTP 500, as llama.cpp does) a request whose history holds a
    /// tool call with arguments that are not JSON.
    #[serde(default)]
    pub strict_tool_arguments: bool,
    #[serde(default, rename = "rule")]
    pub rules: Vec<Rule>,
}

fn yes() -> bool {
    true
}

fn default_model() -> String {
    "vigil-scripted".into()
}

/// One rule: a condition, a budget and a reply.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    #[serde(default)]
    pub when: When,
    /// How many times this rule may fire; 0 means unlimited.
    #[serde(default = "one")]
    pub times: u32,
    /// Reply text; `{last_user}` and `{last_tool}` are substituted.
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// Overrides the scenario's `chunk_delay_ms`.
    #[serde(default)]
    pub chunk_delay_ms: Option<u64>,
    /// Answer with this HTTP status and a JSON error body instead.
    #[serde(default)]
    pub status: Option<u16>,
    /// The error message in the JSON error body (with `status`).
    #[serde(default)]
    pub error_message: Option<String>,
    /// `Retry-After` header value in seconds (with `status`).
    #[serde(default)]
    pub retry_after: Option<u64>,
    /// `Retry-After` as an HTTP date (IMF-fixdate) this many seconds after
    /// the answer is sent (negative: in the past), with `status`.
    #[serde(default)]
    pub retry_after_date: Option<i64>,
    /// Answer 200 with an empty body.
    #[serde(default)]
    pub empty_body: bool,
    /// Close the connection after this many stream chunks, without `[DONE]`.
    #[serde(default)]
    pub cut_after_chunks: Option<usize>,
    /// The finish reason sent instead of `stop` / `tool_calls` (e.g.
    /// `length`).
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// In a stream, send an error event carrying this HTTP status after the
    /// text and close (a 200 stream that fails, as llama.cpp's do).
    #[serde(default)]
    pub stream_error: Option<u16>,
}

fn one() -> u32 {
    1
}

/// What a rule matches: the role and content of the request's last message.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct When {
    #[serde(default)]
    pub role: RoleMatch,
    /// A substring the last message's content must contain.
    #[serde(default)]
    pub contains: Option<String>,
    /// Only while the conversation holds a single user message (an opening
    /// turn: a resumed conversation never matches it again).
    #[serde(default)]
    pub first_turn: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoleMatch {
    User,
    Tool,
    #[default]
    Any,
}

/// A tool call the scripted model makes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    pub name: String,
    /// Sent as a JSON string (OpenAI's double encoding).
    #[serde(default)]
    pub arguments: toml::Table,
    /// Sent verbatim instead of `arguments`, even when it is not valid JSON
    /// (to play a hostile or broken model).
    #[serde(default)]
    pub raw_arguments: Option<String>,
}

impl ScriptedCall {
    /// The arguments as the JSON string the wire carries.
    pub fn arguments_json(&self) -> String {
        if let Some(raw) = &self.raw_arguments {
            return raw.clone();
        }
        serde_json::to_string(&self.arguments).unwrap_or_else(|_| "{}".into())
    }
}

/// The reply a request gets, placeholders already substituted.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub text: String,
    /// (name, JSON argument string)
    pub tool_calls: Vec<(String, String)>,
    pub chunk_delay_ms: u64,
    pub status: Option<u16>,
    pub error_message: Option<String>,
    pub retry_after: Option<u64>,
    pub retry_after_date: Option<i64>,
    pub empty_body: bool,
    pub cut_after_chunks: Option<usize>,
    pub finish_reason: Option<String>,
    pub stream_error: Option<u16>,
}

impl Scenario {
    /// Parses and validates a scenario.
    pub fn from_toml_str(text: &str) -> Result<Scenario, ScenarioError> {
        Self::parse(text, String::new())
    }

    /// Reads, parses and validates a scenario file.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, format!(" in {}", path.display()))
    }

    /// The bundled `assets/demo.toml` scenario used by `vigil --demo`.
    pub fn demo() -> Scenario {
        // The bundled file is validated by a unit test; an empty scenario
        // still answers every request with the fallback text.
        Self::from_toml_str(DEMO).unwrap_or_else(|e| {
            tracing::error!("bundled demo scenario is invalid: {e}");
            Scenario::empty()
        })
    }

    /// No rules: every request gets the fallback reply.
    pub fn empty() -> Scenario {
        Scenario {
            model: default_model(),
            chunk_delay_ms: 0,
            usage: false,
            reject_null_content: false,
            record_requests: true,
            n_ctx: None,
            reject_stream_options: false,
            strict_tool_arguments: false,
            rules: Vec::new(),
        }
    }

    fn parse(text: &str, origin: String) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario =
            toml::from_str(text).map_err(|source| ScenarioError::Parse { origin, source })?;
        scenario.validate()?;
        Ok(scenario)
    }

    fn validate(&self) -> Result<(), ScenarioError> {
        for (i, rule) in self.rules.iter().enumerate() {
            let bad = |reason: &str| ScenarioError::Invalid {
                rule: i + 1,
                reason: reason.to_string(),
            };
            let has_reply = rule.text.is_some()
                || !rule.tool_calls.is_empty()
                || rule.status.is_some()
                || rule.empty_body;
            if !has_reply {
                return Err(bad(
                    "has no reply (set text, tool_calls, status or empty_body)",
                ));
            }
            if let Some(status) = rule.status {
                if !(100..=599).contains(&status) {
                    return Err(bad(&format!("status {status} is not an HTTP status")));
                }
            }
            if rule.tool_calls.iter().any(|c| c.name.trim().is_empty()) {
                return Err(bad("a tool call has an empty name"));
            }
        }
        Ok(())
    }

    /// Picks the first rule that matches `request` and still has budget,
    /// spending one use of it. `used` holds per-rule use counts (same length
    /// as `rules`). `None` means: answer with [`fallback_text`].
    pub fn select(&self, used: &mut [u32], request: &Value) -> Option<Planned> {
        let messages = request.get("messages").and_then(Value::as_array);
        let last = messages.and_then(|m| m.last());
        let last_role = last.and_then(|m| m.get("role")).and_then(Value::as_str);
        let last_text = last.map(content_text).unwrap_or_default();
        let users = messages.map_or(0, |m| {
            m.iter()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                .count()
        });
        let (i, rule) = self.rules.iter().enumerate().find(|(i, rule)| {
            let budget = rule.times == 0 || used.get(*i).copied().unwrap_or(0) < rule.times;
            let role_ok = match rule.when.role {
                RoleMatch::Any => true,
                RoleMatch::User => last_role == Some("user"),
                RoleMatch::Tool => last_role == Some("tool"),
            };
            let text_ok = rule
                .when
                .contains
                .as_ref()
                .is_none_or(|needle| last_text.contains(needle.as_str()));
            let turn_ok = !rule.when.first_turn || users <= 1;
            budget && role_ok && text_ok && turn_ok
        })?;
        if let Some(n) = used.get_mut(i) {
            *n = n.saturating_add(1);
        }
        let text = rule
            .text
            .as_deref()
            .map(|t| substitute(t, request))
            .unwrap_or_default();
        Some(Planned {
            text,
            tool_calls: rule
                .tool_calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments_json()))
                .collect(),
            chunk_delay_ms: rule.chunk_delay_ms.unwrap_or(self.chunk_delay_ms),
            status: rule.status,
            error_message: rule.error_message.clone(),
            retry_after: rule.retry_after,
            retry_after_date: rule.retry_after_date,
            empty_body: rule.empty_body,
            cut_after_chunks: rule.cut_after_chunks,
            finish_reason: rule.finish_reason.clone(),
            stream_error: rule.stream_error,
        })
    }

    /// The reply when no rule matches.
    pub fn fallback(&self, request: &Value) -> Planned {
        Planned {
            text: fallback_text(request),
            tool_calls: Vec::new(),
            chunk_delay_ms: self.chunk_delay_ms,
            status: None,
            error_message: None,
            retry_after: None,
            retry_after_date: None,
            empty_body: false,
            cut_after_chunks: None,
            finish_reason: None,
            stream_error: None,
        }
    }
}

/// What the scripted model says when no rule matches.
pub fn fallback_text(request: &Value) -> String {
    let heard = last_of(request, None);
    format!(
        "(scripted demo model) No scripted reply matches this request. I am a scripted \
         demo model and cannot really think. I heard: {}",
        if heard.is_empty() {
            "(nothing)"
        } else {
            &heard
        }
    )
}

/// Replaces `{last_user}` and `{last_tool}` with the content of the last
/// user / tool message in the request.
pub fn substitute(text: &str, request: &Value) -> String {
    let mut out = text.to_string();
    if out.contains("{last_user}") {
        out = out.replace("{last_user}", &last_of(request, Some("user")));
    }
    if out.contains("{last_tool}") {
        out = out.replace("{last_tool}", &last_of(request, Some("tool")));
    }
    out
}

/// Content of the last message with `role` (any role when `None`).
fn last_of(request: &Value, role: Option<&str>) -> String {
    request
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|msgs| {
            msgs.iter()
                .rev()
                .find(|m| role.is_none_or(|r| m.get("role").and_then(Value::as_str) == Some(r)))
        })
        .map(content_text)
        .unwrap_or_default()
}

/// A message's content as text: a string, or the text parts of an array.
fn content_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(msgs: Value) -> Value {
        json!({ "model": "m", "messages": msgs })
    }

    const SAMPLE: &str = r#"
        model = "t"
        [[rule]]
        when = { role = "user", contains = "hello" }
        text = "Hi! You said {last_user}"
        [[rule]]
        when = { role = "tool" }
        times = 0
        text = "tool said {last_tool}"
        [[rule]]
        when = { role = "user" }
        [[rule.tool_calls]]
        name = "run_shell"
        arguments = { command = "ls", mutation = false }
    "#;

    #[test]
    fn parses_and_selects_in_order_with_budgets() {
        let s = Scenario::from_toml_str(SAMPLE).unwrap();
        assert_eq!(s.rules.len(), 3);
        let mut used = vec![0; 3];
        let r = req(json!([{"role":"user","content":"hello there"}]));
        let p = s.select(&mut used, &r).unwrap();
        assert_eq!(p.text, "Hi! You said hello there");
        // Budget spent: the same request now falls to rule 3.
        let p = s.select(&mut used, &r).unwrap();
        assert_eq!(p.tool_calls.len(), 1);
        assert_eq!(p.tool_calls[0].0, "run_shell");
        let args: Value = serde_json::from_str(&p.tool_calls[0].1).unwrap();
        assert_eq!(args, json!({"command":"ls","mutation":false}));
        assert!(s.select(&mut used, &r).is_none());
        // Unlimited rule.
        let t = req(
            json!([{"role":"user","content":"x"},{"role":"tool","content":"out","tool_call_id":"c"}]),
        );
        for _ in 0..5 {
            assert_eq!(s.select(&mut used, &t).unwrap().text, "tool said out");
        }
    }

    #[test]
    fn contains_matches_only_the_last_message() {
        let s = Scenario::from_toml_str(SAMPLE).unwrap();
        let mut used = vec![0; 3];
        let r = req(json!([{"role":"user","content":"hello"},{"role":"user","content":"bye"}]));
        let p = s.select(&mut used, &r).unwrap();
        assert!(p.text.is_empty(), "rule 1 must not match");
    }

    #[test]
    fn array_content_parts_are_read() {
        let r = req(
            json!([{"role":"user","content":[{"type":"text","text":"hel"},{"type":"text","text":"lo"}]}]),
        );
        assert_eq!(substitute("{last_user}", &r), "hello");
    }

    #[test]
    fn fallback_says_it_is_a_demo_model_and_echoes() {
        let r = req(json!([{"role":"user","content":"what now"}]));
        let t = fallback_text(&r);
        assert!(t.contains("demo model"));
        assert!(t.contains("what now"));
        assert!(fallback_text(&json!({})).contains("(nothing)"));
    }

    #[test]
    fn unknown_key_is_named_with_its_line() {
        let err = Scenario::from_toml_str("[[rule]]\ntext = \"a\"\ntxet = \"b\"\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("txet"), "{msg}");
        assert!(msg.contains("line 3"), "{msg}");
    }

    #[test]
    fn bad_role_and_bad_types_are_errors() {
        let err = Scenario::from_toml_str("[[rule]]\nwhen = { role = \"robot\" }\ntext = \"a\"\n")
            .unwrap_err();
        assert!(err.to_string().contains("robot"), "{err}");
        let err =
            Scenario::from_toml_str("[[rule]]\ntimes = \"many\"\ntext = \"a\"\n").unwrap_err();
        assert!(err.to_string().contains("times"), "{err}");
    }

    #[test]
    fn semantic_errors_name_the_rule() {
        let err =
            Scenario::from_toml_str("[[rule]]\ntext = \"a\"\n[[rule]]\ntimes = 2\n").unwrap_err();
        assert!(err.to_string().contains("rule 2"), "{err}");
        let err = Scenario::from_toml_str("[[rule]]\nstatus = 9000\n").unwrap_err();
        assert!(err.to_string().contains("9000"), "{err}");
    }

    #[test]
    fn load_reports_missing_file_path() {
        let err = Scenario::load("/nonexistent/vigil.toml").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/vigil.toml"));
    }

    #[test]
    fn load_names_the_file_on_parse_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, "[[rule]]\nbogus = 1\n").unwrap();
        let err = Scenario::load(&path).unwrap_err().to_string();
        assert!(err.contains("s.toml") && err.contains("bogus"), "{err}");
    }

    #[test]
    fn bundled_demo_is_valid_and_flows() {
        let s = Scenario::from_toml_str(DEMO).expect("assets/demo.toml parses");
        assert_eq!(s, Scenario::demo());
        let mut used = vec![0; s.rules.len()];
        let first = req(json!([{"role":"user","content":"Show me what you can do."}]));
        let p1 = s.select(&mut used, &first).unwrap();
        assert!(!p1.text.is_empty());
        assert_eq!(p1.tool_calls[0].0, "run_shell");
        let a1: Value = serde_json::from_str(&p1.tool_calls[0].1).unwrap();
        assert_eq!(a1["risk"], "low");
        assert_eq!(a1["mutation"], false);
        let tool1 = req(json!([{"role":"tool","content":"Linux box","tool_call_id":"call_1"}]));
        let p2 = s.select(&mut used, &tool1).unwrap();
        let a2: Value = serde_json::from_str(&p2.tool_calls[0].1).unwrap();
        assert_eq!(a2["mutation"], true);
        let denied =
            req(json!([{"role":"tool","content":"denied by user","tool_call_id":"call_2"}]));
        let p3 = s.select(&mut used.clone(), &denied).unwrap();
        assert!(p3.text.to_lowercase().contains("denied"), "{}", p3.text);
        assert!(p3.tool_calls.is_empty());
        let done = req(json!([{"role":"tool","content":"stamp written","tool_call_id":"call_2"}]));
        let p3 = s.select(&mut used, &done).unwrap();
        assert!(p3.tool_calls.is_empty());
        // A resumed demo (earlier turns in the request) never gets the
        // opening turn again: `next` starts the tour.
        let resumed = req(json!([
            {"role":"user","content":"Show me what you can do."},
            {"role":"assistant","content":"All done."},
            {"role":"user","content":"next"}
        ]));
        let fresh = vec![0; s.rules.len()];
        let p = s.select(&mut fresh.clone(), &resumed).unwrap();
        assert!(p.text.starts_with("Tour 1/8"), "{}", p.text);
        let later = req(json!([{"role":"user","content":"and now?"}]));
        for _ in 0..3 {
            let p = s.select(&mut used, &later).unwrap();
            assert!(p.text.contains("demo model") && p.text.contains("and now?"));
        }
    }
}
