//! One MCP server's connection manager: starts the server (a child process
//! in its own process group, or a streamable-HTTP endpoint), lists its tools,
//! calls them with a timeout, and restarts the server on the next call after
//! it crashed or timed out. State changes are reported to the [`StateSink`].
//!
//! It never waits on the server without a timeout, never lets the child's
//! stderr reach the terminal (it is kept, briefly, for error messages), and
//! never leaves a child running after the connection is dropped.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool as ListedTool};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::{McpServerConfig, McpState, StateSink};
use crate::{FailureClass, ToolError};

/// Lines of the child's stderr kept for error messages.
const STDERR_LINES: usize = 8;

/// Why talking to an MCP server failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    #[error("MCP server `{server}` could not be started: {reason}")]
    Start { server: String, reason: String },
    #[error(
        "MCP server `{server}` did not answer within {secs} s; it was stopped and will be \
         restarted on the next call"
    )]
    Timeout { server: String, secs: u64 },
    #[error("MCP server `{server}` stopped ({reason}); it will be restarted on the next call")]
    Crashed { server: String, reason: String },
    /// The server answered with a JSON-RPC error (it is still running).
    #[error("MCP server `{server}` refused the request: {message}")]
    Refused {
        server: String,
        code: i32,
        message: String,
    },
}

impl From<McpError> for ToolError {
    fn from(e: McpError) -> Self {
        let class = match &e {
            McpError::Timeout { .. } => FailureClass::Timeout,
            // -32602: invalid params.
            McpError::Refused { code: -32602, .. } => FailureClass::InvalidArguments,
            _ => FailureClass::ExecutionFailed,
        };
        ToolError::failed(class, e.to_string())
    }
}

type Service = RunningService<RoleClient, ()>;

/// A live connection. Dropping it closes the transport and kills the
/// child's process group.
struct Connection {
    service: Service,
    pgid: Option<u32>,
}

impl Connection {
    fn alive(&self) -> bool {
        !self.service.is_closed() && !self.service.is_transport_closed()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: killpg only sends a signal; the group is the one the
            // child was made leader of at spawn.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

/// One configured server.
pub struct McpServer {
    name: String,
    config: McpServerConfig,
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
    sink: Option<StateSink>,
    tool_count: Mutex<usize>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl McpServer {
    pub fn new(name: &str, config: McpServerConfig, sink: Option<StateSink>) -> Self {
        McpServer {
            name: name.to_string(),
            config,
            conn: tokio::sync::Mutex::new(None),
            sink,
            tool_count: Mutex::new(0),
            stderr: Arc::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.config.timeout_secs.max(1))
    }

    fn startup_timeout(&self) -> Duration {
        Duration::from_secs(self.config.startup_timeout_secs.max(1))
    }

    fn report(&self, state: McpState) {
        let count = *lock(&self.tool_count);
        tracing::info!("mcp server {}: {state} ({count} tools)", self.name);
        if let Some(sink) = &self.sink {
            sink(&self.name, state, count);
        }
    }

    /// Start (if needed) and list every tool the server offers.
    pub async fn list_tools(&self) -> Result<Vec<ListedTool>, McpError> {
        let conn = self.connection(false).await?;
        match tokio::time::timeout(self.timeout(), conn.service.list_all_tools()).await {
            Err(_) => Err(self.timed_out(&conn).await),
            Ok(Err(e)) => Err(self.service_error(&conn, e).await),
            Ok(Ok(tools)) => {
                *lock(&self.tool_count) = tools.len();
                self.report(McpState::Running);
                Ok(tools)
            }
        }
    }

    /// Call `tool` (its server-side name) with `arguments`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, McpError> {
        let conn = self.connection(true).await?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        match tokio::time::timeout(self.timeout(), conn.service.call_tool(params)).await {
            Err(_) => Err(self.timed_out(&conn).await),
            Ok(Err(e)) => Err(self.service_error(&conn, e).await),
            Ok(Ok(result)) => Ok(result),
        }
    }

    /// The live connection, starting (or restarting) the server if there is
    /// none or it died; `announce`: report `Running` after a (re)start.
    async fn connection(&self, announce: bool) -> Result<Arc<Connection>, McpError> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            if c.alive() {
                return Ok(c.clone());
            }
            // The watcher may not have seen it yet.
            *slot = None;
        }
        self.report(McpState::Starting);
        let limit = self.startup_timeout();
        let started = tokio::time::timeout(limit, self.connect()).await;
        let conn = match started {
            Ok(Ok(conn)) => Arc::new(conn),
            Ok(Err(reason)) => {
                let reason = self.with_stderr(reason);
                self.report(McpState::Failed(reason.clone()));
                return Err(McpError::Start {
                    server: self.name.clone(),
                    reason,
                });
            }
            Err(_) => {
                let reason = format!("did not start within {} s", limit.as_secs());
                self.report(McpState::TimedOut(reason));
                return Err(McpError::Timeout {
                    server: self.name.clone(),
                    secs: limit.as_secs(),
                });
            }
        };
        self.watch(Arc::downgrade(&conn));
        *slot = Some(conn.clone());
        if announce {
            self.report(McpState::Running);
        }
        Ok(conn)
    }

    async fn connect(&self) -> Result<Connection, String> {
        lock(&self.stderr).clear();
        if let Some(url) = &self.config.url {
            crate::http::ensure_tls_provider();
            let transport = StreamableHttpClientTransport::from_uri(url.as_str());
            let service = ().serve(transport).await.map_err(|e| e.to_string())?;
            return Ok(Connection {
                service,
                pgid: None,
            });
        }
        let program = self.config.command.as_deref().unwrap_or_default();
        let mut std_cmd = std::process::Command::new(program);
        // vigil's keys and secret-looking names stay out; the server's own
        // configured variables are deliberate and come after.
        vigil_exec::env::apply_tool_env(&mut std_cmd);
        let mut cmd = tokio::process::Command::from(std_cmd);
        cmd.args(&self.config.args)
            .envs(&self.config.env)
            .kill_on_drop(true)
            .process_group(0);
        if let Some(cwd) = &self.config.cwd {
            cmd.current_dir(cwd);
        }
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run `{program}`: {e}"))?;
        let pgid = transport.id();
        if let Some(stderr) = stderr {
            let keep = self.stderr.clone();
            let name = self.name.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!("mcp server {name} stderr: {line}");
                    let mut keep = lock(&keep);
                    if keep.len() >= STDERR_LINES {
                        keep.pop_front();
                    }
                    keep.push_back(line);
                }
            });
        }
        // If the handshake fails the transport is dropped, which kills the child.
        let service = ().serve(transport).await.map_err(|e| e.to_string())?;
        Ok(Connection { service, pgid })
    }

    /// Report a crash as soon as the connection closes on its own.
    fn watch(self: &McpServer, conn: Weak<Connection>) {
        let name = self.name.clone();
        let sink = self.sink.clone();
        let count = *lock(&self.tool_count);
        let stderr = self.stderr.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let Some(c) = conn.upgrade() else { return };
                if c.alive() {
                    continue;
                }
                let reason = tail(&stderr)
                    .map(|t| format!("the connection closed; last stderr: {t}"))
                    .unwrap_or_else(|| "the connection closed".into());
                tracing::warn!("mcp server {name} crashed: {reason}");
                if let Some(sink) = &sink {
                    sink(&name, McpState::Crashed(reason), count);
                }
                return;
            }
        });
    }

    /// Forget `conn` (if it is still the current one), which stops it.
    async fn discard(&self, conn: &Arc<Connection>) {
        let mut slot = self.conn.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *slot = None;
        }
    }

    async fn timed_out(&self, conn: &Arc<Connection>) -> McpError {
        self.discard(conn).await;
        let secs = self.timeout().as_secs();
        self.report(McpState::TimedOut(format!("no answer within {secs} s")));
        McpError::Timeout {
            server: self.name.clone(),
            secs,
        }
    }

    async fn service_error(&self, conn: &Arc<Connection>, e: ServiceError) -> McpError {
        if let ServiceError::McpError(data) = &e {
            return McpError::Refused {
                server: self.name.clone(),
                code: data.code.0,
                message: data.message.to_string(),
            };
        }
        // Anything else means the connection is unusable.
        self.discard(conn).await;
        let reason = self.with_stderr(e.to_string());
        if conn.alive() {
            self.report(McpState::Crashed(reason.clone()));
        }
        McpError::Crashed {
            server: self.name.clone(),
            reason,
        }
    }

    fn with_stderr(&self, reason: String) -> String {
        match tail(&self.stderr) {
            Some(t) => format!("{reason}; last stderr: {t}"),
            None => reason,
        }
    }
}

fn tail(stderr: &Mutex<VecDeque<String>>) -> Option<String> {
    let lines = lock(stderr);
    let text = lines
        .iter()
        .rev()
        .take(3)
        .rev()
        .cloned()
        .collect::<Vec<_>>()
        .join(" | ");
    (!text.trim().is_empty()).then_some(text)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
