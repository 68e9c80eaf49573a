//! Wire types of the OpenAI-compatible Chat Completions dialect: messages,
//! tool calls, and what one model round returns.

use serde::{Deserialize, Serialize};

use vigil_tools::ToolDefinition;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of the conversation as sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    /// Always serialised (an empty string rather than null: some servers
    /// refuse a null `content`).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

impl ChatMessage {
    pub fn system(text: impl Into<String>) -> Self {
        Self::plain(Role::System, text)
    }
    pub fn user(text: impl Into<String>) -> Self {
        Self::plain(Role::User, text)
    }
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        ChatMessage {
            role: Role::Assistant,
            content: text.into(),
            tool_calls,
            tool_call_id: None,
        }
    }
    pub fn tool(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Tool,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
    fn plain(role: Role, text: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool call as the model returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

impl ToolCall {
    /// Whether the arguments are a JSON object (empty counts as `{}`).
    pub fn arguments_are_object(&self) -> bool {
        let raw = self.function.arguments.trim();
        raw.is_empty()
            || matches!(
                serde_json::from_str::<serde_json::Value>(raw),
                Ok(serde_json::Value::Object(_))
            )
    }

    /// The call as it is stored and sent back to the model: arguments that
    /// are not a JSON object become `{}`, a form every server accepts (some,
    /// like llama.cpp, parse the history's arguments and refuse the whole
    /// request otherwise). The model is told so in the call's result.
    pub fn storable(&self) -> ToolCall {
        let mut call = self.clone();
        if !self.arguments_are_object() {
            call.function.arguments = "{}".into();
        }
        call
    }
}

fn function_type() -> String {
    "function".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// The raw JSON argument string (OpenAI's double encoding).
    #[serde(default)]
    pub arguments: String,
}

/// The request body for `/chat/completions`.
#[derive(Debug, Clone, Serialize)]
pub struct ChatRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [ChatMessage],
    /// Omitted entirely when empty: providers reject `"tools": []`.
    #[serde(skip_serializing_if = "<[ToolDefinition]>::is_empty")]
    pub tools: &'a [ToolDefinition],
    pub stream: bool,
}

/// The messages of one request: typed, or with their wire form kept beside
/// them (each message's JSON, comma-separated, as
/// [`crate::run::conversation::Conversation`] maintains it), so the OpenAI
/// dialect sends the history without serialising it again.
#[derive(Debug, Clone, Copy)]
pub enum Messages<'a> {
    Typed(&'a [ChatMessage]),
    Wire {
        messages: &'a [ChatMessage],
        /// `serde_json` of each of `messages`, joined with `,`.
        json: &'a str,
    },
}

impl<'a> Messages<'a> {
    /// The typed messages (for dialects that send another shape).
    pub fn typed(self) -> &'a [ChatMessage] {
        match self {
            Messages::Typed(m) | Messages::Wire { messages: m, .. } => m,
        }
    }
}

/// What a request asks for besides the conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestOptions {
    /// `max_tokens`: the most tokens one answer may use (omitted when None).
    pub max_tokens: Option<u32>,
    /// `stream_options: {"include_usage": true}` (streaming requests only):
    /// the stream then ends with a usage chunk.
    pub include_usage: bool,
}

/// The `/chat/completions` body: byte for byte what serialising a
/// [`ChatRequest`] gives (with the [`RequestOptions`] appended), with the
/// wire form of the messages copied in when there is one.
pub fn request_body(
    model: &str,
    messages: Messages<'_>,
    tools: &[ToolDefinition],
    stream: bool,
    options: RequestOptions,
) -> String {
    let typed;
    let json = match messages {
        Messages::Typed(messages) => {
            let parts: Vec<String> = messages
                .iter()
                .map(|m| serde_json::to_string(m).unwrap_or_default())
                .collect();
            typed = parts.join(",");
            typed.as_str()
        }
        Messages::Wire { json, .. } => json,
    };
    let model = serde_json::to_string(model).unwrap_or_default();
    let tools = if tools.is_empty() {
        String::new()
    } else {
        format!(
            ",\"tools\":{}",
            serde_json::to_string(tools).unwrap_or_default()
        )
    };
    let mut body = String::with_capacity(json.len() + model.len() + tools.len() + 96);
    body.push_str("{\"model\":");
    body.push_str(&model);
    body.push_str(",\"messages\":[");
    body.push_str(json);
    body.push(']');
    body.push_str(&tools);
    body.push_str(if stream {
        ",\"stream\":true"
    } else {
        ",\"stream\":false"
    });
    if let Some(max) = options.max_tokens {
        body.push_str(&format!(",\"max_tokens\":{max}"));
    }
    if stream && options.include_usage {
        body.push_str(",\"stream_options\":{\"include_usage\":true}");
    }
    body.push('}');
    body
}

/// A piece of a tool call's arguments, as the server streams it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallDelta {
    /// The call's place in the round (0-based).
    pub index: usize,
    /// The call's id, once the server has sent it.
    pub id: Option<String>,
    /// The tool's name as known so far.
    pub name: String,
    /// The new piece of the arguments (may be empty when only the name came).
    pub arguments: String,
}

/// Token counts, when the server reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
}

/// Everything one model round produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AssistantReply {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_omits_empty_tools_and_never_sends_null_content() {
        let msgs = vec![ChatMessage::assistant("", vec![])];
        let req = ChatRequest {
            model: "m",
            messages: &msgs,
            tools: &[],
            stream: true,
        };
        let v = serde_json::to_value(&req).unwrap();
        assert!(v.get("tools").is_none());
        assert_eq!(v["messages"][0]["content"], "");
    }

    #[test]
    fn the_wire_form_body_is_the_serialised_request() {
        let msgs = vec![
            ChatMessage::system("sys \"quoted\" ünïcode\n"),
            ChatMessage::assistant(
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    kind: "function".into(),
                    function: FunctionCall {
                        name: "time".into(),
                        arguments: "{\"a\":1}".into(),
                    },
                }],
            ),
            ChatMessage::tool("c1", "12:00"),
        ];
        let json: Vec<String> = msgs
            .iter()
            .map(|m| serde_json::to_string(m).unwrap())
            .collect();
        let json = json.join(",");
        let tools = [ToolDefinition::function(
            "time",
            "tell the time",
            serde_json::json!({"type": "object"}),
        )];
        for tools in [&tools[..], &[]] {
            for stream in [true, false] {
                let expected = serde_json::to_string(&ChatRequest {
                    model: "m\"x",
                    messages: &msgs,
                    tools,
                    stream,
                })
                .unwrap();
                let wire = Messages::Wire {
                    messages: &msgs,
                    json: &json,
                };
                let none = RequestOptions::default();
                assert_eq!(request_body("m\"x", wire, tools, stream, none), expected);
                let typed = Messages::Typed(&msgs);
                assert_eq!(request_body("m\"x", typed, tools, stream, none), expected);
            }
        }
    }

    #[test]
    fn options_add_max_tokens_and_usage_to_streaming_requests_only() {
        let msgs = vec![ChatMessage::user("hi")];
        let options = RequestOptions {
            max_tokens: Some(64),
            include_usage: true,
        };
        let streamed: serde_json::Value = serde_json::from_str(&request_body(
            "m",
            Messages::Typed(&msgs),
            &[],
            true,
            options,
        ))
        .unwrap();
        assert_eq!(streamed["max_tokens"], 64);
        assert_eq!(streamed["stream_options"]["include_usage"], true);
        let whole: serde_json::Value = serde_json::from_str(&request_body(
            "m",
            Messages::Typed(&msgs),
            &[],
            false,
            options,
        ))
        .unwrap();
        assert_eq!(whole["max_tokens"], 64);
        assert!(whole.get("stream_options").is_none());
    }

    #[test]
    fn calls_with_unusable_arguments_are_stored_with_an_empty_object() {
        let call = |args: &str| ToolCall {
            id: "c".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "time".into(),
                arguments: args.into(),
            },
        };
        for bad in ["UTC\"}", "[1]", "{\"a\":", "null"] {
            assert!(!call(bad).arguments_are_object(), "{bad}");
            assert_eq!(call(bad).storable().function.arguments, "{}");
        }
        for good in ["", "{}", "{\"tz\":\"UTC\"}"] {
            assert!(call(good).arguments_are_object(), "{good}");
            assert_eq!(call(good).storable(), call(good));
        }
    }

    #[test]
    fn null_content_deserialises_as_empty() {
        let m: ChatMessage =
            serde_json::from_str(r#"{"role":"assistant","content":null}"#).unwrap();
        assert_eq!(m.content, "");
    }
}
