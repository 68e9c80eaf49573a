//! The tool registry a configuration asks for: the built-in tools, MCP
//! servers (their state reported as events), the tmux tools.

use super::*;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use vigil_config::Config;
use vigil_exec::ExecutionContext;
use vigil_exec::tmux::manager::TmuxManager;
use vigil_protocol::AgentEvent;
use vigil_protocol::tool::McpState;
use vigil_tools::edit::{Edit, EditConfig};
use vigil_tools::fetch::{FetchConfig, FetchUrl};
use vigil_tools::files::{ReadFile, WriteFile};
use vigil_tools::mcp::{self, StateSink};
use vigil_tools::paths::PathPolicy;
use vigil_tools::request_tools::RequestTools;
use vigil_tools::search::{SearchConfig, WebSearch};
use vigil_tools::shell::{RunShell, ShellConfig};
use vigil_tools::time::TimeTool;
use vigil_tools::visibility::DomainPolicy;
use vigil_tools::{Approver, ToolRegistry};

/// Register the built-in tools the config enables.
pub fn build_registry(
    config: &Config,
    exec: &ExecutionContext,
    approver: Arc<dyn Approver>,
) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.set_approver(approver);
    let t = &config.tools;
    if t.shell_enabled {
        registry.register(RunShell::new(
            exec.clone(),
            ShellConfig {
                confirm: t.shell_confirm,
                denylist: vigil_policy::denylist::Denylist::read(&t.shell_denylist),
                always_sandboxed: t.shell_always_sandboxed,
                ..ShellConfig::default()
            },
        ));
    }
    // The one list of secret places, for the risk estimate and the file tools.
    let secrets = config.secret_places();
    vigil_policy::secret_reads::install(secrets.clone());
    let paths = PathPolicy {
        allowed_roots: t.files_allowed_paths.clone(),
        secrets,
        data_dir: Some(config.data_dir()),
    };
    if t.files_enabled {
        registry.register(ReadFile::new(exec.clone()).with_paths(paths.clone()));
        registry.register(WriteFile::new(exec.clone(), t.write_confirm).with_paths(paths.clone()));
    }
    if t.edit_enabled {
        registry.register(Edit::new(
            exec.clone(),
            EditConfig {
                confirm: t.edit_confirm,
                paths,
                ..EditConfig::default()
            },
        ));
    }
    if t.fetch_enabled {
        registry.register(FetchUrl::new(FetchConfig {
            allow_private: t.fetch_allow_private,
            allow_domains: t.fetch_allow_domains.clone(),
            deny_domains: t.fetch_deny_domains.clone(),
            timeout: Duration::from_secs(t.fetch_timeout_secs),
            max_bytes: t.fetch_max_bytes,
            confirm: t.fetch_confirm,
            unasked_hosts: t.fetch_unasked_hosts.clone(),
            ..FetchConfig::default()
        }));
    }
    if t.search_enabled {
        registry.register(WebSearch::new(SearchConfig {
            base_url: t.search_base_url.clone(),
            confirm: t.search_confirm,
            ..SearchConfig::default()
        }));
    }
    if t.time_enabled {
        registry.register(TimeTool);
    }
    registry
}

/// [`build_registry`] plus the configured MCP servers, started concurrently
/// (each within its `timeout_secs`); `sink` hears their state changes.
pub async fn build_registry_async(
    config: &Config,
    exec: &ExecutionContext,
    tmux: Option<&Arc<TmuxManager>>,
    approver: Arc<dyn Approver>,
    sink: Option<StateSink>,
) -> ToolRegistry {
    let mut registry = build_registry(config, exec, approver);
    if let Some(tmux) = tmux {
        register_tmux_tools(&mut registry, config, tmux);
    }
    let mut policy = DomainPolicy {
        hidden: config.tools.hidden_domains.iter().cloned().collect(),
        blocked: config
            .tools
            .blocked_domains
            .iter()
            .map(|d| (d.clone(), "blocked by the operator".to_string()))
            .collect(),
    };
    let offer_request_tools = !policy.is_empty() || config.mcp.servers.values().any(|s| s.hidden);
    for started in mcp::start_all(&config.mcp, sink).await {
        let domain = mcp::domain_of(started.server.name());
        if started.server.config().hidden {
            policy.hidden.insert(domain.clone());
        }
        match started.tools {
            Ok(tools) => tools.into_iter().for_each(|t| registry.register(t)),
            Err(e) => {
                policy.blocked.entry(domain).or_insert(e.to_string());
            }
        }
    }
    if offer_request_tools {
        registry.register(RequestTools::new(registry.domains(), policy.clone()));
    }
    registry.set_domain_policy(policy);
    registry
}

/// Report MCP server states as [`AgentEvent::McpServerState`].
pub fn mcp_events(events: mpsc::UnboundedSender<AgentEvent>) -> StateSink {
    Arc::new(move |name: &str, state: McpState, tools: usize| {
        let _ = events.send(AgentEvent::McpServerState {
            name: name.to_string(),
            state,
            tools,
        });
    })
}
