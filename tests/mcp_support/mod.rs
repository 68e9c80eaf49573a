//! Shared by the MCP tests: the real `@modelcontextprotocol/server-everything`
//! from npm, installed into `tests/.mcp` (by `.ci/run`, or here on first use).
//! A failed install fails the test with npm's reason; it never skips.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use vigil::event::AgentEvent;

static INSTALL: Mutex<()> = Mutex::new(());

/// The server's entry point (`node <path> stdio`), installing it if needed.
pub fn everything_js() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/.mcp");
    let js = root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    if js.exists() {
        return js;
    }
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&root)
        .arg("@modelcontextprotocol/server-everything")
        .output()
        .unwrap_or_else(|e| panic!("cannot run npm to install the MCP test server: {e}"));
    assert!(
        out.status.success() && js.exists(),
        "installing @modelcontextprotocol/server-everything from npm failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    js
}

/// A `[mcp.servers.everything]` table running the server with node.
pub fn everything_toml(extra: &str) -> String {
    format!(
        "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n{extra}\n",
        everything_js().display().to_string()
    )
}

/// Collect events until `stop` matches (inclusive); fail after 60 s.
pub async fn until(
    rx: &mut UnboundedReceiver<AgentEvent>,
    stop: impl Fn(&AgentEvent) -> bool,
) -> Vec<AgentEvent> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let ev = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out; events so far: {seen:#?}"))
            .expect("agent alive");
        let done = stop(&ev);
        seen.push(ev);
        if done {
            return seen;
        }
    }
}
