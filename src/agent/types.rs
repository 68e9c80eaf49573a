//! Wire types of the OpenAI-compatible Chat Completions dialect: messages,
//! tool calls, and what one model round returns.

use serde::{Deserialize, Serialize};

use crate::tools::ToolDefinition;

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
/// [`super::conversation::Conversation`] maintains it), so the OpenAI
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

/// The `/chat/completions` body: byte for byte what serialising a
/// [`ChatRequest`] gives, with the wire form of the messages copied in when
/// there is one.
pub fn request_body(
    model: &str,
    messages: Messages<'_>,
    tools: &[ToolDefinition],
    stream: bool,
) -> String {
    let json = match messages {
        Messages::Typed(messages) => {
            return serde_json::to_string(&ChatRequest {
                model,
                messages,
                tools,
                stream,
            })
            .unwrap_or_default();
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
    let mut body = String::with_capacity(json.len() + model.len() + tools.len() + 48);
    body.push_str("{\"model\":");
    body.push_str(&model);
    body.push_str(",\"messages\":[");
    body.push_str(json);
    body.push(']');
    body.push_str(&tools);
    body.push_str(if stream {
        ",\"stream\":true}"
    } else {
        ",\"stream\":false}"
    });
    body
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
                assert_eq!(request_body("m\"x", wire, tools, stream), expected);
                let typed = Messages::Typed(&msgs);
                assert_eq!(request_body("m\"x", typed, tools, stream), expected);
            }
        }
    }

    #[test]
    fn null_content_deserialises_as_empty() {
        let m: ChatMessage =
            serde_json::from_str(r#"{"role":"assistant","content":null}"#).unwrap();
        assert_eq!(m.content, "");
    }
}
