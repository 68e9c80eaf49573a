//! Wiring of the hooks and the decision record into a starting agent
//! ([`super::start_agent_with`] calls it): the decide hooks handed
//! to the broker, the lifecycle hooks, the OpenTelemetry exporter and the
//! record's recorder put on the event stream before the session recorder, and the `session_end` hooks
//! run when the agent task ends. It builds and connects; it never decides
//! a call or renders.

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use crate::approval::ApprovalBroker;
use crate::hooks::DecideHooks;
use crate::hooks::lifecycle::Lifecycle;
use crate::record::answers::AnswerBook;
use crate::record::audit::chain::Chain;
use crate::record::audit::record::Recorder;
use crate::record::session::{MESSAGES_FILE, SessionWriter};
use crate::telemetry::notify::AgentLabel;
use crate::telemetry::otel::Exporter;
use vigil_config::Config;
use vigil_protocol::AgentEvent;

/// The event stream with the hooks and the record on it.
pub struct Hooked {
    pub events: UnboundedReceiver<AgentEvent>,
    pub lifecycle: Option<Arc<Lifecycle>>,
    pub exporter: Option<Arc<Exporter>>,
}

/// Who the agent is, as hooks and the `[notify] command` are told.
pub fn agent_label(config: &Config, model: &str, target: &str) -> AgentLabel {
    AgentLabel {
        name: config.agent.name.clone(),
        model: model.to_string(),
        target: target.to_string(),
        pid: std::process::id(),
    }
}

/// Give the broker its decide hooks, and put the lifecycle hooks and the
/// recorder on `events` (the recorder last: it stamps the console that
/// answered, as the session recorder does).
pub fn wire(
    config: &Config,
    label: AgentLabel,
    broker: &Arc<ApprovalBroker>,
    session: Option<&Arc<SessionWriter>>,
    answers: &Arc<AnswerBook>,
    events: UnboundedReceiver<AgentEvent>,
) -> Hooked {
    let id = session.map(|s| s.id().to_string());
    if let Some(hooks) = DecideHooks::from_config(&config.hooks) {
        let transcript = session.map(|s| s.dir().join(MESSAGES_FILE).display().to_string());
        broker.set_hooks(hooks.for_session(id.clone(), transcript));
    }
    let lifecycle = Lifecycle::new(&config.hooks, label, id.clone());
    let events = match &lifecycle {
        Some(l) => l.clone().relay(events),
        None => events,
    };
    let exporter = match (&config.telemetry.otlp_endpoint, &id) {
        (Some(endpoint), Some(id)) => {
            let t = &config.telemetry;
            let timeout = std::time::Duration::from_secs(t.timeout_secs);
            Some(Exporter::new(endpoint, &t.service_name, timeout, id))
        }
        _ => None,
    };
    let events = match &exporter {
        Some(e) => e.clone().relay(events),
        None => events,
    };
    let events = match session {
        Some(s) => {
            let chain = Chain::open(s.id(), s.dir(), &config.data_dir());
            Recorder::new(chain, broker.clone(), answers.clone()).relay(events)
        }
        None => events,
    };
    Hooked {
        events,
        lifecycle,
        exporter,
    }
}

/// The agent task, followed by the `session_end` hooks and the last
/// OpenTelemetry exports when it ends.
pub fn with_session_end(
    task: JoinHandle<()>,
    lifecycle: Option<Arc<Lifecycle>>,
    exporter: Option<Arc<Exporter>>,
) -> JoinHandle<()> {
    if lifecycle.is_none() && exporter.is_none() {
        return task;
    }
    tokio::spawn(async move {
        let _ = task.await;
        if let Some(lifecycle) = lifecycle {
            lifecycle.session_end().await;
        }
        if let Some(exporter) = exporter {
            exporter.flush().await;
        }
    })
}

/// For `vigil policy check`: the decide hooks a shell `command` would be
/// shown to at run time (they are not run here), in one line.
pub fn hooks_note(config: &Config, command: &str) -> Option<String> {
    let hooks = DecideHooks::from_config(&config.hooks)?;
    let script = vigil_shell::Command::read(command);
    let names = hooks.matching("run_shell", Some(&script));
    (!names.is_empty()).then(|| {
        format!(
            "hooks:     {} would be asked first at run time (not run here; a deny wins, an \
             allow never skips a deny or ask rule)",
            names.join(", ")
        )
    })
}
