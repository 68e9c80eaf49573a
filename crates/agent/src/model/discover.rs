//! Asking a model server what it serves: `GET {base_url}/models`, the
//! models it lists and the context window it publishes for the configured
//! one (llama.cpp: `data[].meta.n_ctx`; vLLM: `max_model_len`; LM Studio and
//! others: `context_length`). Both dialects ask the same way, each with its
//! own key header ([`KeyHeader`]).
//!
//! It never fails a session: a server that publishes nothing yields an
//! empty [`ServerModels`], one that cannot be reached [`Discovery::Unreachable`],
//! and the caller decides what to say. It never sends the API key anywhere
//! but the configured server.

use reqwest::header::AUTHORIZATION;
use serde_json::Value;

use super::http::{ANTHROPIC_VERSION, ModelClientConfig, error_chain, redact_key};

/// How the API key travels with the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    /// `Authorization: Bearer KEY` (OpenAI-compatible servers).
    Bearer,
    /// `x-api-key: KEY` with `anthropic-version` (Anthropic Messages).
    Anthropic,
}

/// What the server said about the models it serves.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerModels {
    /// The context window published for the configured model (or for the
    /// first model that publishes one), in tokens.
    pub window: Option<u64>,
    /// Every name the list offers (ids and aliases); empty when the server
    /// keeps no list.
    pub listed: Vec<String>,
}

impl ServerModels {
    /// Whether the server lists models and `model` is not among them.
    pub fn lacks(&self, model: &str) -> bool {
        !self.listed.is_empty() && !self.listed.iter().any(|m| m == model)
    }
}

/// The outcome of asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discovery {
    /// The server answered (possibly with nothing useful).
    Answered(ServerModels),
    /// The server could not be reached (the turn's own error will say so).
    Unreachable(String),
}

/// Asks `GET {base_url}/models`.
pub async fn ask(http: &reqwest::Client, config: &ModelClientConfig, key: KeyHeader) -> Discovery {
    let url = format!("{}/models", config.base_url.trim_end_matches('/'));
    let mut req = http.get(&url);
    if let Some(k) = &config.api_key {
        req = match key {
            KeyHeader::Bearer => req.header(AUTHORIZATION, format!("Bearer {k}")),
            KeyHeader::Anthropic => req
                .header("x-api-key", k)
                .header("anthropic-version", ANTHROPIC_VERSION),
        };
    }
    let resp = match tokio::time::timeout(config.request_timeout, req.send()).await {
        Err(_) => return Discovery::Unreachable(format!("{url}: timed out")),
        Ok(Err(e)) if e.is_connect() || e.is_timeout() => {
            return Discovery::Unreachable(redact_key(config, &error_chain(&e)));
        }
        Ok(Err(_)) => return Discovery::Answered(ServerModels::default()),
        Ok(Ok(resp)) => resp,
    };
    if !resp.status().is_success() {
        tracing::debug!(%url, status = %resp.status(), "no model list");
        return Discovery::Answered(ServerModels::default());
    }
    let text = tokio::time::timeout(config.request_timeout, resp.text())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let found = read_list(&text, &config.model);
    tracing::info!(%url, window = ?found.window, listed = found.listed.len(), "model list");
    Discovery::Answered(found)
}

/// The window and the names in a `/models` answer: the entry whose `id` (or
/// alias) is `model`, else the first entry that publishes a window.
pub fn read_list(body: &str, model: &str) -> ServerModels {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return ServerModels::default();
    };
    let Some(entries) = value.get("data").and_then(Value::as_array) else {
        return ServerModels::default();
    };
    let names = |e: &Value| -> Vec<String> {
        let aliases = e.get("aliases").and_then(Value::as_array);
        e.get("id")
            .into_iter()
            .chain(aliases.into_iter().flatten())
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let window = entries
        .iter()
        .find(|e| names(e).iter().any(|n| n == model))
        .and_then(published_window)
        .or_else(|| entries.iter().find_map(published_window));
    ServerModels {
        window,
        listed: entries.iter().flat_map(names).collect(),
    }
}

fn published_window(e: &Value) -> Option<u64> {
    let meta = e.get("meta");
    [
        meta.and_then(|m| m.get("n_ctx")),
        e.get("max_model_len"),
        e.get("context_length"),
        e.get("context_window"),
        meta.and_then(|m| m.get("n_ctx_train")),
    ]
    .into_iter()
    .flatten()
    .find_map(Value::as_u64)
    .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_publishes_n_ctx_in_meta() {
        let body = r#"{"object":"list","data":[{"id":"/m/smollm2.gguf","aliases":["smollm2"],"object":"model","meta":{"vocab_type":2,"n_ctx_train":8192,"n_ctx":4096,"n_params":134515008}}]}"#;
        let found = read_list(body, "anything");
        assert_eq!(found.window, Some(4096));
        assert!(found.lacks("anything"));
        assert!(!found.lacks("smollm2") && !found.lacks("/m/smollm2.gguf"));
    }

    #[test]
    fn the_named_model_wins_and_other_servers_fields_are_read() {
        let body = r#"{"data":[{"id":"a","max_model_len":1000},{"id":"b","context_length":2000}]}"#;
        assert_eq!(read_list(body, "b").window, Some(2000));
        assert_eq!(read_list(body, "zzz").window, Some(1000));
        assert_eq!(read_list(body, "zzz").listed, ["a", "b"]);
    }

    #[test]
    fn nothing_published_is_none_and_no_list_lacks_nothing() {
        assert_eq!(read_list(r#"{"data":[{"id":"m"}]}"#, "m").window, None);
        assert_eq!(read_list("not json", "m"), ServerModels::default());
        assert!(!read_list(r#"{"data":[]}"#, "m").lacks("m"));
    }
}
