//! The tmux management tools: `tmux-create-session`, `tmux-kill-session`,
//! `tmux-create-pane`, `tmux-kill-pane`.
//!
//! They act only on vigil-managed sessions and panes (names canonicalised
//! to the owner prefix, limits enforced by [`TmuxManager`]), require the
//! safety metadata and go through the approval gate. They never kill the
//! default session or the shared pane, and never touch unmanaged ones.

use std::sync::Arc;
use vigil_policy::call::ToolCall;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::tmux_keys::{check_metadata, failed, gate_info, metadata_properties, object, opt_str};
use super::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use vigil_exec::tmux::TmuxManager;
use vigil_protocol::approval::GateInfo;

/// Which management action a [`TmuxManage`] tool performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManageAction {
    CreateSession,
    KillSession,
    CreatePane,
    KillPane,
}

impl ManageAction {
    pub fn tool_name(self) -> &'static str {
        match self {
            ManageAction::CreateSession => "tmux-create-session",
            ManageAction::KillSession => "tmux-kill-session",
            ManageAction::CreatePane => "tmux-create-pane",
            ManageAction::KillPane => "tmux-kill-pane",
        }
    }

    fn description(self) -> &'static str {
        match self {
            ManageAction::CreateSession => "Create or reuse a vigil-managed tmux session and make sure its `shared` pane is ready. Names are canonicalised to the owner prefix (vigil-<agent>-...) and bounded by [tmux].max_sessions.

When to use: you need a second, independent terminal (e.g. a long-running server in one session while you work in another).

When NOT to use: for one more command (use run_shell in the shared session); for a second terminal in the same session (use tmux-create-pane).

Disambiguation: run_shell, capture-pane and send-keys select the new session with their `session` argument. Raw `tmux new-session` inside run_shell is refused.

Example: {\"session\": \"build\", \"risk\": \"low\", \"mutation\": true, \"privesc\": false, \"why\": \"Separate terminal for the build server\"}",
            ManageAction::KillSession => "Kill one vigil-managed tmux session (everything running in it stops).

When to use: a session created with tmux-create-session is no longer needed.

When NOT to use: to stop one command (send-keys C-c); the default shared session cannot be killed; sessions vigil does not manage are refused.

Disambiguation: raw `tmux kill-session` inside run_shell is refused; use this tool.

Example: {\"session\": \"build\", \"risk\": \"medium\", \"mutation\": true, \"privesc\": false, \"why\": \"The build server is no longer needed\"}",
            ManageAction::CreatePane => "Create or reuse a vigil-managed pane (its own window) in a managed session. Pane names are canonicalised (vigil-<name>; `shared` is reserved) and bounded by [tmux].max_panes.

When to use: a second terminal next to the shared pane, e.g. to follow logs while commands run in `shared`.

When NOT to use: for one more command in the same shell (run_shell); for a separate set of terminals (tmux-create-session).

Disambiguation: run_shell, capture-pane and send-keys select it with their `pane` argument. Raw `tmux split-window` inside run_shell is refused.

Example: {\"pane\": \"logs\", \"risk\": \"low\", \"mutation\": true, \"privesc\": false, \"why\": \"Follow the service log\"}",
            ManageAction::KillPane => "Kill one vigil-managed pane (what runs in it stops). The `shared` pane is protected; unmanaged panes are refused.

When to use: a pane created with tmux-create-pane is no longer needed.

When NOT to use: to stop one command (send-keys C-c); to kill a whole session (tmux-kill-session).

Disambiguation: raw `tmux kill-pane` inside run_shell is refused; use this tool.

Example: {\"pane\": \"logs\", \"risk\": \"low\", \"mutation\": true, \"privesc\": false, \"why\": \"Done following the log\"}",
        }
    }
}

/// One of the four management tools.
pub struct TmuxManage {
    tmux: Arc<TmuxManager>,
    action: ManageAction,
    confirm: bool,
}

impl TmuxManage {
    pub fn new(tmux: Arc<TmuxManager>, action: ManageAction) -> Self {
        TmuxManage {
            tmux,
            action,
            confirm: true,
        }
    }

    /// All four tools for one manager.
    pub fn all(tmux: &Arc<TmuxManager>) -> Vec<TmuxManage> {
        [
            ManageAction::CreateSession,
            ManageAction::KillSession,
            ManageAction::CreatePane,
            ManageAction::KillPane,
        ]
        .into_iter()
        .map(|a| TmuxManage::new(tmux.clone(), a))
        .collect()
    }

    /// `false`: run without asking.
    pub fn with_confirm(mut self, confirm: bool) -> Self {
        self.confirm = confirm;
        self
    }

    fn is_pane_tool(&self) -> bool {
        matches!(
            self.action,
            ManageAction::CreatePane | ManageAction::KillPane
        )
    }
}

fn required(v: &Value, name: &str) -> Result<String, ToolError> {
    opt_str(v, name)?.ok_or_else(|| ToolError::InvalidArguments(format!("`{name}` is required")))
}

#[async_trait]
impl Tool for TmuxManage {
    fn name(&self) -> &str {
        self.action.tool_name()
    }

    fn definition(&self) -> ToolDefinition {
        let mut props = metadata_properties();
        let mut required = vec!["risk", "mutation", "privesc", "why"];
        props.insert(
            "session".into(),
            json!({"type": "string", "description": "Managed session name (canonicalised to the owner prefix)."}),
        );
        if self.is_pane_tool() {
            props.insert(
                "pane".into(),
                json!({"type": "string", "description": "Managed pane name (canonicalised; `shared` is reserved)."}),
            );
            required.insert(0, "pane");
        } else {
            required.insert(0, "session");
        }
        ToolDefinition::function(
            self.action.tool_name(),
            self.action.description(),
            json!({
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": false
            }),
        )
    }

    fn gate(&self, args: &Value) -> Option<GateInfo> {
        if !self.confirm {
            return None;
        }
        let what = if self.is_pane_tool() {
            format!(
                "{} pane {} in session {}",
                self.action.tool_name(),
                args["pane"].as_str().unwrap_or("?"),
                args["session"]
                    .as_str()
                    .unwrap_or(self.tmux.default_session())
            )
        } else {
            format!(
                "{} {}",
                self.action.tool_name(),
                args["session"].as_str().unwrap_or("?")
            )
        };
        Some(gate_info(what, args))
    }

    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        ctx.refuse_unsandboxable(self.name())?;
        let work = async {
            let v = object(call)?;
            let (session, pane) = if self.is_pane_tool() {
                (opt_str(v, "session")?, Some(required(v, "pane")?))
            } else {
                (Some(required(v, "session")?), None)
            };
            check_metadata(v)?;
            let pane = pane.unwrap_or_default();
            let session_name = session.clone().unwrap_or_default();
            let msg = match self.action {
                ManageAction::CreateSession => self.tmux.create_session(&session_name).await,
                ManageAction::KillSession => self.tmux.kill_session(&session_name).await,
                ManageAction::CreatePane => self.tmux.create_pane(session.as_deref(), &pane).await,
                ManageAction::KillPane => self.tmux.kill_pane(session.as_deref(), &pane).await,
            }
            .map_err(failed)?;
            Ok(ToolOutput::text(msg))
        };
        ctx.with_target_notices(&*self.tmux, work).await
    }
}
