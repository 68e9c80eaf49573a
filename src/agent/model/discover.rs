//! Asking an OpenAI-compatible server what it serves: `GET {base_url}/models`
//! and the context window it publishes for the model (llama.cpp:
//! `data[].meta.n_ctx`; vLLM: `max_model_len`; LM Studio and others:
//! `context_length`). Used when no `context_limit` is configured.
//!
//! It never fails a session: a server that publishes nothing (or cannot be
//! reached) yields `None` and the caller keeps its default. It never sends
//! the API key anywhere but the configured server.

use reqwest::header::AUTHORIZATION;
use serde_json::Value;

use super::http::ModelClientConfig;

/// The context window the server publishes for the configured model (or
/// for its only model), in tokens.
pub async fn context_window(http: &reqwest::Client, config: &ModelClientConfig) -> Option<u64> {
    let url = format!("{}/models", config.base_url.trim_end_matches('/'));
    let mut req = http.get(&url);
    if let Some(key) = &config.api_key {
        req = req.header(AUTHORIZATION, format!("Bearer {key}"));
    }
    let resp = tokio::time::timeout(config.request_timeout, req.send())
        .await
        .ok()?
        .ok()?;
    if !resp.status().is_success() {
        tracing::debug!(%url, status = %resp.status(), "no model list");
        return None;
    }
    let text = tokio::time::timeout(config.request_timeout, resp.text())
        .await
        .ok()?
        .ok()?;
    let found = published_window(&text, &config.model);
    tracing::info!(%url, ?found, "context window published by the server");
    found
}

/// The window in a `/models` answer: the entry whose `id` is `model`, else
/// the first entry that publishes one.
pub fn published_window(body: &str, model: &str) -> Option<u64> {
    let value: Value = serde_json::from_str(body).ok()?;
    let entries = value.get("data").and_then(Value::as_array)?;
    let window = |e: &Value| {
        let meta = e.get("meta");
        [
            meta.and_then(|m| m.get("n_ctx")),
            e.get("max_model_len"),
            e.get("context_length"),
            meta.and_then(|m| m.get("n_ctx_train")),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_u64)
        .filter(|n| *n > 0)
    };
    entries
        .iter()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(model))
        .and_then(window)
        .or_else(|| entries.iter().find_map(window))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_publishes_n_ctx_in_meta() {
        let body = r#"{"object":"list","data":[{"id":"smollm2","object":"model","meta":{"vocab_type":2,"n_ctx_train":8192,"n_ctx":4096,"n_params":134515008}}]}"#;
        assert_eq!(published_window(body, "anything"), Some(4096));
    }

    #[test]
    fn the_named_model_wins_and_other_servers_fields_are_read() {
        let body = r#"{"data":[{"id":"a","max_model_len":1000},{"id":"b","context_length":2000}]}"#;
        assert_eq!(published_window(body, "b"), Some(2000));
        assert_eq!(published_window(body, "zzz"), Some(1000));
    }

    #[test]
    fn nothing_published_is_none() {
        assert_eq!(published_window(r#"{"data":[{"id":"m"}]}"#, "m"), None);
        assert_eq!(published_window("not json", "m"), None);
        assert_eq!(published_window(r#"{"data":[]}"#, "m"), None);
    }
}
