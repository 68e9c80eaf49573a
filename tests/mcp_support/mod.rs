//! Shared by the MCP tests: the real `@modelcontextprotocol/server-everything`
//! from npm, installed into `tests/.mcp` (by `.ci/run`, or here on first use)
//! with `npm ci` from the committed lock, which pins every package by hash.
//! A failed install fails the test with npm's reason; it never skips.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

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
        .args(["ci", "--no-audit", "--no-fund", "--prefix"])
        .arg(&root)
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

#[allow(unused_imports)]
pub use crate::common::until;
