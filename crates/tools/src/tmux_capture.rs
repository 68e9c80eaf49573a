//! `capture-pane`: a snapshot of a tmux pane's text, read-only.
//!
//! Every option of the seed's table maps to a `capture-pane` flag; the
//! result keeps the tail (8000 chars). A missing managed selector falls back
//! once to the shared pane with a notice, and an absent alternate screen
//! falls back to the main screen with a notice. This tool never types.

use std::sync::Arc;
use vigil_policy::call::ToolCall;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::tmux_keys::{failed, object, opt_bool, opt_str, parse_delay};
use super::truncate::{Keep, cut_with_spill};
use super::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use vigil_exec::tmux::{TmuxError, TmuxManager};

/// Chars of pane text the model sees (the tail is kept).
pub const CAPTURE_LIMIT: usize = 8000;

const DESCRIPTION: &str = "Capture a snapshot of a tmux pane's text (the managed shared pane by \
default). Output keeps the most recent 8000 characters.

When to use: polling a command started with run_shell wait=false; looking at an interactive or \
full-screen program (include_alternate_screen); seeing what the operator did in the pane.

When NOT to use: to get a command's output (run_shell returns it exactly, with stderr and the \
exit code, and beyond the pane's history); to read a file (read_file).

Disambiguation: capture-pane only reads the screen and scrollback as tmux renders it (tabs become \
spaces, long lines wrap); it never types. Use send-keys to type. If the selected managed \
session/pane does not exist, the shared pane is captured instead with a notice.

Example: {\"delay\": \"5s\", \"start\": \"-\", \"join_wrapped_lines\": true}";

/// The `capture-pane` tool.
pub struct CapturePane {
    tmux: Arc<TmuxManager>,
}

impl CapturePane {
    pub fn new(tmux: Arc<TmuxManager>) -> Self {
        CapturePane { tmux }
    }
}

fn line_arg(v: &Value, name: &str) -> Result<Option<String>, ToolError> {
    match &v[name] {
        Value::Null => Ok(None),
        Value::Number(n) if n.is_i64() => Ok(Some(n.to_string())),
        Value::String(s) if s.trim() == "-" => Ok(Some("-".into())),
        Value::String(s) if s.trim().parse::<i64>().is_ok() => Ok(Some(s.trim().to_string())),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        other => Err(ToolError::InvalidArguments(format!(
            "`{name}` must be a line number (negative: into the history) or \"-\", got {other}"
        ))),
    }
}

#[async_trait]
impl Tool for CapturePane {
    fn name(&self) -> &str {
        "capture-pane"
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(
            "capture-pane",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "target": {"type": "string", "description": "Raw tmux target (-t syntax) on vigil's tmux server; default: the managed pane."},
                    "session": {"type": "string", "description": "Managed tmux session (default: the shared session)."},
                    "pane": {"type": "string", "description": "Managed pane (default: shared)."},
                    "start": {"type": ["string", "integer"], "description": "Start line (-S); negative numbers reach into the history; \"-\" = beginning of history."},
                    "end": {"type": ["string", "integer"], "description": "End line (-E); \"-\" = end of the visible area."},
                    "join_wrapped_lines": {"type": "boolean", "description": "Join soft-wrapped lines (-J). Default true."},
                    "preserve_trailing_spaces": {"type": "boolean", "description": "Keep trailing spaces (-N). Default false."},
                    "include_escape_sequences": {"type": "boolean", "description": "Include colour/attribute escape sequences (-e). Default false."},
                    "escape_non_printable": {"type": "boolean", "description": "Octal-escape non-printable characters (-C). Default false."},
                    "include_alternate_screen": {"type": "boolean", "description": "Capture the alternate screen of a full-screen program (-a); falls back to the main screen with a notice. Default false."},
                    "delay": {"type": ["string", "integer"], "description": "Wait this long before capturing (\"500ms\", \"5s\"; at most 60s)."}
                },
                "additionalProperties": false
            }),
        )
    }

    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let work = async {
            let v = object(call)?;
            let join = opt_bool(v, "join_wrapped_lines", true)?;
            let trailing = opt_bool(v, "preserve_trailing_spaces", false)?;
            let escapes = opt_bool(v, "include_escape_sequences", false)?;
            let octal = opt_bool(v, "escape_non_printable", false)?;
            let alternate = opt_bool(v, "include_alternate_screen", false)?;
            let start = line_arg(v, "start")?;
            let end = line_arg(v, "end")?;
            let delay = parse_delay(&v["delay"])?;
            let raw_target = opt_str(v, "target")?;
            let session = opt_str(v, "session")?;
            let pane = opt_str(v, "pane")?;

            let mut before = Vec::new();
            let mut after = Vec::new();
            let target = match raw_target {
                Some(t) => t,
                None => match self.tmux.resolve(session.as_deref(), pane.as_deref()).await {
                    Ok(p) => p.id,
                    Err(TmuxError::Missing(why)) => {
                        let p = self.tmux.resolve(None, None).await.map_err(failed)?;
                        before.push(format!(
                            "[notice: {why}; captured the default shared pane ({}) instead]",
                            p.id
                        ));
                        p.id
                    }
                    Err(e) => return Err(failed(e)),
                },
            };
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            let mut flags = Vec::new();
            if join {
                flags.push("-J".to_string());
            }
            if trailing {
                flags.push("-N".into());
            }
            if escapes {
                flags.push("-e".into());
            }
            if octal {
                flags.push("-C".into());
            }
            if alternate {
                if self.tmux.alternate_on(&target).await.map_err(failed)? {
                    flags.push("-a".into());
                } else {
                    after.push(
                        "[notice: no alternate screen is active; captured the main screen instead]"
                            .to_string(),
                    );
                }
            }
            if let Some(s) = start {
                flags.push("-S".into());
                flags.push(s);
            }
            if let Some(e) = end {
                flags.push("-E".into());
                flags.push(e);
            }
            let text = self.tmux.capture(&target, &flags).await.map_err(failed)?;
            // The pane holds what ran there, also output withheld from the
            // model (a run nobody asked for) and what the operator typed:
            // what looks like a secret leaves it only on the operator's word.
            if !ctx.asked
                && let Some(what) = vigil_policy::secret_content::find(&text)
            {
                return Err(ToolError::failed(
                    crate::FailureClass::PermissionDenied,
                    format!(
                        "refused: the pane shows what looks like a secret ({what}); nothing of \
                         it reached you. Capture a range without it, clear the pane, or ask the \
                         operator (say why you need it)"
                    ),
                ));
            }
            let (c, spilled) = cut_with_spill(
                &text,
                CAPTURE_LIMIT,
                Keep::Tail,
                ctx.spill_dir.as_deref(),
                "capture-pane",
            );
            let mut out = String::new();
            for n in &before {
                out.push_str(n);
                out.push('\n');
            }
            out.push_str(&c.text);
            for n in &after {
                out.push('\n');
                out.push_str(n);
            }
            Ok(ToolOutput {
                result: Value::String(out),
                exit_code: None,
                truncated: c.truncated(),
                spill: spilled.into_iter().collect(),
                seen: Vec::new(),
                timeline: None,
            })
        };
        ctx.with_target_notices(&*self.tmux, work).await
    }
}
