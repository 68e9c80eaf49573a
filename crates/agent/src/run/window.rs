//! The context window a session starts with: the configured one, else the
//! one the model server publishes (told to the operator), else
//! [`DEFAULT_CONTEXT_LIMIT`]. The server's model list also serves a warning
//! when it does not list the configured model.
//!
//! It never fails or holds up a start beyond [`DISCOVERY_TIMEOUT`]: a server
//! that cannot be reached gets no notice here (the turn's own error says so).

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::model::ChatModel;
use crate::model::discover::{Discovery, ServerModels};
use crate::run::runner::DEFAULT_CONTEXT_LIMIT;
use vigil_protocol::AgentEvent;

/// The longest wait for the server's model list at start-up.
const DISCOVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The configured context window, else the one the server publishes (told
/// to the operator), else [`DEFAULT_CONTEXT_LIMIT`]. The server is asked
/// either way: a model list without the configured model is warned about.
/// With the window configured the list only serves that warning, so it is
/// asked in the background and the start never waits on it (a silent server
/// cost up to [`DISCOVERY_TIMEOUT`]).
pub(crate) async fn context_limit(
    model: &Arc<dyn ChatModel>,
    configured: Option<u64>,
    events: &mpsc::UnboundedSender<AgentEvent>,
) -> u64 {
    if let Some(limit) = configured {
        let (model, events) = (model.clone(), events.clone());
        tokio::spawn(async move { discover(model.as_ref(), &events).await });
        return limit;
    }
    let Some(found) = discover(model.as_ref(), events).await else {
        return DEFAULT_CONTEXT_LIMIT;
    };
    let say = |text: String| {
        let _ = events.send(AgentEvent::Notice { text });
    };
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

/// Ask the server for its model list (at most [`DISCOVERY_TIMEOUT`]) and warn
/// when it does not list the configured model. `None`: no answer.
async fn discover(
    model: &dyn ChatModel,
    events: &mpsc::UnboundedSender<AgentEvent>,
) -> Option<ServerModels> {
    let found = match tokio::time::timeout(DISCOVERY_TIMEOUT, model.discover()).await {
        Ok(Discovery::Answered(found)) => found,
        Ok(Discovery::Unreachable(why)) => {
            tracing::info!("model list not asked: {why}");
            return None;
        }
        Err(_) => {
            tracing::info!("the model list did not come within {DISCOVERY_TIMEOUT:?}");
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
