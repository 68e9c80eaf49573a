//! `[model]`: which server and model the agent talks to, in which wire
//! dialect and tool protocol, with what timeouts and retries. Settings only:
//! nothing here opens a connection.

use serde::Deserialize;

/// How tools are offered to the model (`[model] tool_protocol`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolProtocol {
    /// The API's own `tools` / `tool_calls`.
    #[default]
    Native,
    /// `<json>` blocks in the text.
    JsonTags,
}

/// Which wire dialect the model server speaks.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ApiDialect {
    /// OpenAI Chat Completions (OpenAI, Ollama, llama.cpp, vLLM, OpenRouter).
    #[default]
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Base URL of an OpenAI-compatible API (ends in `/v1` for most servers).
    pub base_url: String,
    /// Model name sent in every request.
    pub model: String,
    /// API key; prefer `api_key_env` or `VIGIL_API_KEY` over writing it here.
    pub api_key: Option<String>,
    /// Name of an environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Seconds to wait for a connection.
    pub connect_timeout_secs: u64,
    /// Seconds a response may stay silent before the request is abandoned.
    pub idle_timeout_secs: u64,
    /// `native` tool calls, or `json-tags` (`<json>` blocks in the text) for
    /// models without native tool calls.
    pub tool_protocol: ToolProtocol,
    /// json-tags: allow several calls in one reply (default: one).
    pub json_tags_multiple_calls: bool,
    /// The wire dialect: "openai" or "anthropic".
    pub api: ApiDialect,
    /// The model's context window in tokens; vigil compacts near it. Unset:
    /// the window the server publishes (llama.cpp, vLLM), else 32768.
    pub context_limit: Option<u64>,
    /// Most tokens one answer may use (sent where the dialect requires it).
    pub max_tokens: u32,
    /// Attempts per model round (1 = never retry).
    pub retry_attempts: u32,
    /// First retry backoff in milliseconds (doubled each time, jittered).
    pub retry_base_ms: u64,
    /// Longest wait between attempts, also the cap on Retry-After (seconds).
    pub retry_max_secs: u64,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            base_url: "http://127.0.0.1:11434/v1".into(),
            model: "qwen2.5".into(),
            api_key: None,
            api_key_env: None,
            connect_timeout_secs: 10,
            idle_timeout_secs: 300,
            tool_protocol: Default::default(),
            json_tags_multiple_calls: false,
            api: ApiDialect::Openai,
            context_limit: None,
            max_tokens: 4096,
            retry_attempts: 5,
            retry_base_ms: 500,
            retry_max_secs: 60,
        }
    }
}
