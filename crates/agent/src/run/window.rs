//! The context window a session starts with: the configured one, else the
//! one the model server publishes (told to the operator), else
//! [`DEFAULT_CONTEXT_LIMIT`]. The server's model list also serves a warning
//! when it does not list the configured model. What the server published is
//! remembered per server and model ([`DiscoverCache`]): a later start uses
//! it without asking.
//!
//! It never fails a start and never holds one up beyond [`START_TIMEOUT`]: a
//! server that cannot be reached gets no notice here (the turn's own error
//! says so) and nothing is remembered about it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::model::ChatModel;
use crate::model::discover::{Discovery, ServerModels};
use crate::model::discover_cache::DiscoverCache;
use crate::run::runner::DEFAULT_CONTEXT_LIMIT;
use vigil_protocol::AgentEvent;

/// The longest wait for the server's model list in the background (the
/// window configured: the list only serves the warning).
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest a start waits for the server's model list (the window neither
/// configured nor remembered).
const START_TIMEOUT: Duration = Duration::from_secs(3);

/// The configured context window, else the one the server published (a
/// remembered answer, else asked now; told to the operator), else
/// [`DEFAULT_CONTEXT_LIMIT`]. With the window configured the list only
/// serves the warning about an unlisted model, so it is asked in the
/// background and the start never waits on it.
pub(crate) async fn context_limit(
    model: &Arc<dyn ChatModel>,
    configured: Option<u64>,
    cache: Option<&DiscoverCache>,
    events: &mpsc::UnboundedSender<AgentEvent>,
) -> u64 {
    context_limit_within(model, configured, cache, START_TIMEOUT, events).await
}

/// [`context_limit`], the start waiting at most `wait` for the list.
async fn context_limit_within(
    model: &Arc<dyn ChatModel>,
    configured: Option<u64>,
    cache: Option<&DiscoverCache>,
    wait: Duration,
    events: &mpsc::UnboundedSender<AgentEvent>,
) -> u64 {
    if let Some(limit) = configured {
        let (model, events) = (model.clone(), events.clone());
        tokio::spawn(async move { discover(model.as_ref(), DISCOVERY_TIMEOUT, &events).await });
        return limit;
    }
    let say = |text: String| {
        let _ = events.send(AgentEvent::Notice { text });
    };
    let name = model.model_name();
    let remembered_at = cache.zip(model.base_url());
    if let Some((cache, url)) = remembered_at
        && let Some(known) = cache.get(url, name)
    {
        let ago = ago(known.age);
        say(match known.window {
            Some(n) => format!(
                "context window: {n} tokens, as the model server published it {ago} ([model] \
                 context_limit is unset)"
            ),
            None => format!(
                "the model server published no context window {ago}; assuming \
                 {DEFAULT_CONTEXT_LIMIT} tokens (set [model] context_limit)"
            ),
        });
        return known.window.unwrap_or(DEFAULT_CONTEXT_LIMIT);
    }
    let Some(found) = discover(model.as_ref(), wait, events).await else {
        return DEFAULT_CONTEXT_LIMIT;
    };
    // A list without the model is asked again next time (and warned about).
    if let Some((cache, url)) = remembered_at
        && !found.lacks(name)
    {
        cache.put(url, name, found.window);
    }
    say(match found.window {
        Some(n) => format!(
            "context window: {n} tokens, as the model server publishes it ([model] \
             context_limit is unset)"
        ),
        None => format!(
            "the model server publishes no context window; assuming {DEFAULT_CONTEXT_LIMIT} \
             tokens (set [model] context_limit)"
        ),
    });
    found.window.unwrap_or(DEFAULT_CONTEXT_LIMIT)
}

/// "5 min ago", "3 h ago".
fn ago(age: Duration) -> String {
    match age.as_secs() {
        s if s < 60 => "just now".to_string(),
        s if s < 3600 => format!("{} min ago", s / 60),
        s => format!("{} h ago", s / 3600),
    }
}

/// Ask the server for its model list (at most `wait`) and warn when it does
/// not list the configured model. `None`: no answer.
async fn discover(
    model: &dyn ChatModel,
    wait: Duration,
    events: &mpsc::UnboundedSender<AgentEvent>,
) -> Option<ServerModels> {
    let found = match tokio::time::timeout(wait, model.discover()).await {
        Ok(Discovery::Answered(found)) => found,
        Ok(Discovery::Unreachable(why)) => {
            tracing::info!("model list not asked: {why}");
            return None;
        }
        Err(_) => {
            tracing::info!("the model list did not come within {wait:?}");
            return None;
        }
    };
    let name = model.model_name();
    if found.lacks(name) {
        let text = format!(
            "the model server does not list the model `{name}` (it lists: {}); check [model] \
             model",
            shown_list(&found.listed)
        );
        let _ = events.send(AgentEvent::Notice { text });
    }
    Some(found)
}

/// At most five names, then how many more.
fn shown_list(names: &[String]) -> String {
    let mut shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
    let more = names.len().saturating_sub(5);
    let more_text = format!("and {more} more");
    if more > 0 {
        shown.push(&more_text);
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelClient, ModelClientConfig};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// A local model server that answers `GET /v1/models` (llama.cpp's
    /// shape, publishing `n_ctx`) and counts how often it was asked; with
    /// `n_ctx` None it takes the connection and never answers.
    struct ModelsServer {
        base_url: String,
        asked: Arc<AtomicUsize>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for ModelsServer {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    impl ModelsServer {
        async fn start(n_ctx: Option<u64>) -> Self {
            let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
            let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
            let asked = Arc::new(AtomicUsize::new(0));
            let counter = asked.clone();
            let task = tokio::spawn(async move {
                let mut held = Vec::new();
                while let Ok((stream, _)) = listener.accept().await {
                    let head = read_head(stream).await;
                    let Some((mut stream, head)) = head else {
                        continue;
                    };
                    if head.starts_with("GET /v1/models ") {
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                    let Some(n) = n_ctx else {
                        held.push(stream);
                        continue;
                    };
                    let body = format!(
                        r#"{{"object":"list","data":[{{"id":"m","meta":{{"n_ctx":{n}}}}}]}}"#
                    );
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                    let _ = stream.shutdown().await;
                }
            });
            ModelsServer {
                base_url,
                asked,
                task,
            }
        }

        fn asked(&self) -> usize {
            self.asked.load(Ordering::SeqCst)
        }
    }

    async fn read_head(mut stream: TcpStream) -> Option<(TcpStream, String)> {
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            got.extend_from_slice(&buf[..n]);
        }
        Some((stream, String::from_utf8_lossy(&got).into_owned()))
    }

    /// A new client for the model `m` at `base_url`, as a new start makes.
    fn client(base_url: &str) -> Arc<dyn ChatModel> {
        Arc::new(
            ModelClient::new(ModelClientConfig {
                base_url: base_url.to_string(),
                model: "m".to_string(),
                api_key: None,
                request_timeout: Duration::from_secs(5),
                connect_timeout: Duration::from_secs(5),
            })
            .unwrap(),
        )
    }

    /// One start's context window and what the operator was told.
    async fn start(base_url: &str, cache: &DiscoverCache, wait: Duration) -> (u64, Vec<String>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let limit = context_limit_within(&client(base_url), None, Some(cache), wait, &tx).await;
        drop(tx);
        let mut told = Vec::new();
        while let Some(event) = rx.recv().await {
            if let AgentEvent::Notice { text } = event {
                told.push(text);
            }
        }
        (limit, told)
    }

    #[tokio::test]
    async fn the_model_list_is_asked_once_per_server() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiscoverCache::in_data_dir(dir.path());
        let a = ModelsServer::start(Some(4096)).await;

        let (limit, told) = start(&a.base_url, &cache, START_TIMEOUT).await;
        assert_eq!(
            (limit, a.asked()),
            (4096, 1),
            "first start asks once: {told:?}"
        );
        assert!(
            told[0].starts_with("context window: 4096 tokens"),
            "{told:?}"
        );

        let (limit, told) = start(&a.base_url, &cache, START_TIMEOUT).await;
        assert_eq!(
            (limit, a.asked()),
            (4096, 1),
            "second start asks nothing: {told:?}"
        );
        assert!(
            told[0].starts_with("context window: 4096 tokens"),
            "{told:?}"
        );

        let b = ModelsServer::start(Some(2048)).await;
        let (limit, _) = start(&b.base_url, &cache, START_TIMEOUT).await;
        assert_eq!(
            (limit, b.asked(), a.asked()),
            (2048, 1, 1),
            "another server is asked"
        );
        let (limit, _) = start(&a.base_url, &cache, START_TIMEOUT).await;
        assert_eq!((limit, a.asked()), (4096, 1), "both are remembered");
    }

    #[tokio::test]
    async fn a_corrupt_cache_is_ignored_and_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiscoverCache::in_data_dir(dir.path());
        std::fs::write(cache.file(), "\u{0}garbage{").unwrap();
        let a = ModelsServer::start(Some(1000)).await;
        assert_eq!(start(&a.base_url, &cache, START_TIMEOUT).await.0, 1000);
        assert_eq!(start(&a.base_url, &cache, START_TIMEOUT).await.0, 1000);
        assert_eq!(a.asked(), 1);
    }

    #[tokio::test]
    async fn a_silent_server_holds_the_start_no_longer_than_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiscoverCache::in_data_dir(dir.path());
        let silent = ModelsServer::start(None).await;
        let wait = Duration::from_millis(300);
        let began = std::time::Instant::now();
        let (limit, _) = start(&silent.base_url, &cache, wait).await;
        assert_eq!(limit, DEFAULT_CONTEXT_LIMIT);
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "{:?}",
            began.elapsed()
        );
        // Nothing remembered: the next start asks again.
        start(&silent.base_url, &cache, wait).await;
        assert_eq!(silent.asked(), 2);
    }

    #[tokio::test]
    async fn without_a_cache_every_start_asks() {
        let a = ModelsServer::start(Some(4096)).await;
        let (tx, _rx) = mpsc::unbounded_channel();
        for _ in 0..2 {
            context_limit_within(&client(&a.base_url), None, None, START_TIMEOUT, &tx).await;
        }
        assert_eq!(a.asked(), 2);
    }
}
