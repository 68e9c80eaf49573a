//! `edit`: view, create and precisely edit text files on the execution
//! target, with multi-level undo (seed 002's editor, done right).
//!
//! Every file access goes through the [`ExecutionContext`] (so it works on any
//! backend) after the [`PathPolicy`] check. `str_replace` edits only when the
//! old text occurs exactly once; tabs and line endings are never rewritten.
//! Undo history is bounded per path and in paths. This module must never
//! touch the filesystem directly and never overwrite a file on `create`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use vigil_policy::call::ToolCall;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::paths::PathPolicy;
use super::truncate::{self, Keep};
use super::{FailureClass, Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use vigil_exec::{ExecutionContext, PathKind};
use vigil_protocol::approval::GateInfo;

/// Settings for [`Edit`].
#[derive(Debug, Clone, PartialEq)]
pub struct EditConfig {
    /// Ask the operator before every mutating command (create, str_replace,
    /// insert, undo_edit).
    pub confirm: bool,
    /// Undo levels kept per file.
    pub history_per_path: usize,
    /// Files with undo history kept (least recently edited dropped first).
    pub history_paths: usize,
    /// Chars of a `view` the model sees (the rest is spilled).
    pub view_limit: usize,
    /// Which paths may be touched.
    pub paths: PathPolicy,
}

impl Default for EditConfig {
    fn default() -> Self {
        EditConfig {
            confirm: true,
            history_per_path: 20,
            history_paths: 64,
            view_limit: 10_000,
            paths: PathPolicy::default(),
        }
    }
}

/// What a file was before an edit.
#[derive(Debug, Clone)]
enum Prior {
    Content(Vec<u8>),
    /// The edit created the file: undo removes it.
    Absent,
}

#[derive(Default)]
struct History {
    /// Paths, least recently edited first.
    order: VecDeque<String>,
    stacks: HashMap<String, Vec<Prior>>,
}

/// The `edit` tool.
pub struct Edit {
    ctx: ExecutionContext,
    config: EditConfig,
    history: Mutex<History>,
}

const COMMANDS: [&str; 5] = ["view", "create", "str_replace", "insert", "undo_edit"];

const DESCRIPTION: &str = "View, create and precisely edit text files on the execution target.
* view: a file is shown like `cat -n` (line number, tab, line); `view_range` [start, end] limits \
it (1-based, end -1 = to the end). A directory lists non-hidden entries two levels deep.
* create: write a new file with `file_text`; refuses to overwrite an existing path.
* str_replace: replace `old_str` with `new_str`; `old_str` must occur exactly once (include \
surrounding lines to make it unique) — otherwise nothing changes and the lines of all matches are \
listed.
* insert: insert `new_str` as whole lines after line `insert_line` (0 = at the top).
* undo_edit: revert the last change this tool made to `path` (repeatable; undoing a create \
removes the file).
Whitespace and tabs are kept exactly as given.

When to use: changing a few lines of an existing config or source file; adding a block at a known \
line; looking at a file with line numbers before editing it.

When NOT to use: replacing a whole file (use write_file); searching across many files (use \
run_shell with grep); binary files.

Disambiguation: edit changes part of a file and can undo it; write_file replaces the whole file; \
read_file returns raw content without line numbers.

Example: {\"command\": \"str_replace\", \"path\": \"/srv/app/config.yaml\", \"old_str\": \
\"workers: 2\", \"new_str\": \"workers: 4\"}";

fn bad(msg: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments(msg.into())
}

fn failed(msg: impl Into<String>) -> ToolError {
    ToolError::failed(FailureClass::ExecutionFailed, msg)
}

fn str_arg<'a>(v: &'a Value, name: &str, command: &str) -> Result<&'a str, ToolError> {
    v[name]
        .as_str()
        .ok_or_else(|| bad(format!("`{command}` needs `{name}` (a string)")))
}

/// `cat -n` style: right-aligned number, a tab, the line (tabs untouched).
fn numbered(lines: &[&str], first: usize) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        out.push_str(&format!("{:>6}\t{}\n", first + i, line));
    }
    out
}

/// Line numbers (1-based) where each occurrence of `needle` starts.
fn match_lines(text: &str, needle: &str) -> Vec<usize> {
    text.match_indices(needle)
        .map(|(i, _)| text[..i].matches('\n').count() + 1)
        .collect()
}

impl Edit {
    pub fn new(ctx: ExecutionContext, config: EditConfig) -> Self {
        Edit {
            ctx,
            config,
            history: Mutex::default(),
        }
    }

    /// A call that would run ungated (a view; any edit with `edit_confirm =
    /// false`) is gated when its path lies outside the readable places or
    /// its (local) file holds what looks like a secret: every command shows
    /// the file's lines (a view, the lines around a change, where a text
    /// occurs). A secret place is refused when it runs (read_file asks for
    /// those).
    fn read_gate(&self, command: &str, args: &Value) -> Option<GateInfo> {
        let path = args["path"].as_str()?;
        let read = self
            .config
            .paths
            .check_read(path, self.ctx.is_local())
            .ok()?;
        if read.secret.is_some() {
            return None;
        }
        let why = match read.outside {
            true => "outside the readable places".to_string(),
            false => {
                let what = self
                    .ctx
                    .is_local()
                    .then(|| super::files::secret_shape(&read.real))??;
                format!("it holds what looks like a secret: {what}")
            }
        };
        Some(GateInfo {
            action: format!("edit {command} {} ({why})", read.real),
            model_risk: None,
            mutation: Some(command != "view"),
            privesc: None,
            why: None,
            editable_field: None,
        })
    }

    fn push_history(&self, path: &str, prior: Prior) {
        let Ok(mut h) = self.history.lock() else {
            return;
        };
        h.order.retain(|p| p != path);
        h.order.push_back(path.to_string());
        while h.order.len() > self.config.history_paths.max(1) {
            if let Some(old) = h.order.pop_front() {
                h.stacks.remove(&old);
            }
        }
        let stack = h.stacks.entry(path.to_string()).or_default();
        stack.push(prior);
        let keep = self.config.history_per_path.max(1);
        if stack.len() > keep {
            let extra = stack.len() - keep;
            stack.drain(..extra);
        }
    }

    fn pop_history(&self, path: &str) -> Option<Prior> {
        let mut h = self.history.lock().ok()?;
        let prior = h.stacks.get_mut(path)?.pop();
        if h.stacks.get(path).is_some_and(Vec::is_empty) {
            h.stacks.remove(path);
            h.order.retain(|p| p != path);
        }
        prior
    }

    async fn read_text(&self, path: &str, shown: &str) -> Result<(Vec<u8>, String), ToolError> {
        let bytes = self.ctx.read_file(path).await.map_err(ToolError::from)?;
        match String::from_utf8(bytes.clone()) {
            Ok(text) => Ok((bytes, text)),
            Err(_) => Err(failed(format!(
                "{shown} is not a UTF-8 text file ({} bytes); edit only works on text",
                bytes.len()
            ))),
        }
    }

    async fn write(&self, path: &str, text: &str) -> Result<(), ToolError> {
        self.ctx
            .write_file(path, text.as_bytes())
            .await
            .map(|_| ())
            .map_err(ToolError::from)
    }

    /// A few numbered lines around `line` of `text`, to show an edit.
    fn snippet(text: &str, line: usize, span: usize) -> String {
        let lines: Vec<&str> = text.lines().collect();
        let start = line.saturating_sub(4).max(1);
        let end = (line + span + 3).min(lines.len());
        if start > end {
            return String::new();
        }
        numbered(&lines[start - 1..end], start)
    }

    async fn view(
        &self,
        v: &Value,
        real: &str,
        shown: &str,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let kind = self.ctx.path_kind(real).await.map_err(ToolError::from)?;
        if kind == PathKind::Dir {
            if !v["view_range"].is_null() {
                return Err(bad("`view_range` only applies to files, not directories"));
            }
            let entries = self.ctx.list_dir(real, 2).await.map_err(ToolError::from)?;
            let body = format!(
                "Non-hidden files and directories in {shown}, up to 2 levels deep:\n{}",
                entries.join("\n")
            );
            return Ok(ToolOutput::text(body)
                .with_timeline(format!("listed {shown} ({} entries)", entries.len())));
        }
        let (_, text) = self.read_text(real, shown).await?;
        let lines: Vec<&str> = text.lines().collect();
        let (start, end) = match v["view_range"].as_array() {
            None => (1, lines.len()),
            Some(r) => {
                let nums: Vec<i64> = r.iter().filter_map(Value::as_i64).collect();
                let [s, e] = nums.as_slice() else {
                    return Err(bad(
                        "`view_range` must be two integers: [start, end] (end -1 = to the end)",
                    ));
                };
                let n = lines.len() as i64;
                let e = if *e == -1 { n } else { *e };
                if *s < 1 || *s > n.max(1) || e < *s || e > n {
                    return Err(bad(format!(
                        "`view_range` [{s}, {e}] is outside the file's lines 1..{n} (or end < start)"
                    )));
                }
                (*s as usize, e as usize)
            }
        };
        let body = if lines.is_empty() {
            String::new()
        } else {
            numbered(&lines[start - 1..end], start)
        };
        let (cut, spill) = truncate::cut_with_spill(
            &body,
            self.config.view_limit,
            Keep::Head,
            ctx.spill_dir.as_deref(),
            "edit-view",
        );
        Ok(ToolOutput {
            truncated: cut.truncated(),
            result: Value::String(cut.text),
            spill: spill.into_iter().collect(),
            timeline: Some(format!("viewed {shown} lines {start}-{end}")),
            ..Default::default()
        })
    }

    async fn create(&self, v: &Value, real: &str, shown: &str) -> Result<ToolOutput, ToolError> {
        let text = str_arg(v, "file_text", "create")?;
        match self.ctx.path_kind(real).await.map_err(ToolError::from)? {
            PathKind::Missing => {}
            PathKind::Dir => return Err(failed(format!("{shown} is a directory"))),
            PathKind::File => {
                return Err(failed(format!(
                    "{shown} already exists; create never overwrites (use str_replace/insert, or write_file to replace it)"
                )));
            }
        }
        self.write(real, text).await?;
        self.push_history(real, Prior::Absent);
        Ok(
            ToolOutput::text(format!("Created {shown} ({} bytes)", text.len()))
                .with_timeline(format!("created {shown} ({} bytes)", text.len())),
        )
    }

    async fn str_replace(
        &self,
        v: &Value,
        real: &str,
        shown: &str,
    ) -> Result<ToolOutput, ToolError> {
        let old = str_arg(v, "old_str", "str_replace")?;
        if old.is_empty() {
            return Err(bad("`old_str` must not be empty"));
        }
        let new = v["new_str"].as_str().unwrap_or("");
        let (bytes, text) = self.read_text(real, shown).await?;
        let (updated, lines) = replaced(&text, old, new, shown)?;
        self.write(real, &updated).await?;
        self.push_history(real, Prior::Content(bytes));
        let span = new.matches('\n').count();
        Ok(ToolOutput::text(format!(
            "Edited {shown}. Lines around the change:\n{}",
            Edit::snippet(&updated, lines[0], span)
        ))
        .with_timeline(format!("edited {shown} at line {}", lines[0])))
    }

    async fn insert(&self, v: &Value, real: &str, shown: &str) -> Result<ToolOutput, ToolError> {
        let after = v["insert_line"]
            .as_i64()
            .ok_or_else(|| bad("`insert` needs `insert_line` (an integer; 0 = top)"))?;
        let new = str_arg(v, "new_str", "insert")?;
        let (bytes, text) = self.read_text(real, shown).await?;
        let (updated, block) = inserted(&text, after, new)?;
        let after = after as usize;
        self.write(real, &updated).await?;
        self.push_history(real, Prior::Content(bytes));
        Ok(ToolOutput::text(format!(
            "Inserted {} line(s) after line {after} of {shown}:\n{}",
            block.lines().count(),
            Edit::snippet(&updated, after + 1, block.lines().count())
        ))
        .with_timeline(format!("inserted into {shown} after line {after}")))
    }

    async fn undo(&self, real: &str, shown: &str) -> Result<ToolOutput, ToolError> {
        let Some(prior) = self.pop_history(real) else {
            return Err(failed(format!("no edit to undo for {shown}")));
        };
        let restored = match prior {
            Prior::Absent => {
                self.ctx.remove_file(real).await.map_err(ToolError::from)?;
                format!("Undid the creation of {shown}: the file was removed")
            }
            Prior::Content(bytes) => {
                self.ctx
                    .write_file(real, &bytes)
                    .await
                    .map_err(ToolError::from)?;
                format!(
                    "Undid the last edit of {shown} ({} bytes restored)",
                    bytes.len()
                )
            }
        };
        Ok(ToolOutput::text(restored).with_timeline(format!("undid an edit of {shown}")))
    }
}

/// `text` with the one occurrence of `old` replaced; the lines it starts on.
fn replaced(
    text: &str,
    old: &str,
    new: &str,
    shown: &str,
) -> Result<(String, Vec<usize>), ToolError> {
    if old.is_empty() {
        return Err(bad("`old_str` must not be empty"));
    }
    let lines = match_lines(text, old);
    match lines.len() {
        0 => Err(failed(format!(
            "no match for `old_str` in {shown}; nothing changed (view the file and copy the text exactly, whitespace included)"
        ))),
        1 => Ok((text.replacen(old, new, 1), lines)),
        n => {
            let list: Vec<String> = lines.iter().map(usize::to_string).collect();
            Err(failed(format!(
                "`old_str` occurs {n} times in {shown} (starting on lines {}); nothing changed. Include more surrounding text to make it unique",
                list.join(", ")
            )))
        }
    }
}

/// `text` with `new` inserted after line `after` (0 = top); the block added.
fn inserted(text: &str, after: i64, new: &str) -> Result<(String, String), ToolError> {
    let count = text.lines().count();
    if after < 0 || after as usize > count {
        return Err(bad(format!(
            "`insert_line` {after} is outside 0..{count} (the file has {count} lines)"
        )));
    }
    // Byte offset just past line `after` (its newline included).
    let mut offset = 0;
    for _ in 0..after {
        offset += text[offset..]
            .find('\n')
            .map(|i| i + 1)
            .unwrap_or(text.len() - offset);
    }
    let mut block = new.to_string();
    if !block.ends_with('\n') {
        block.push('\n');
    }
    let mut updated = String::with_capacity(text.len() + block.len() + 1);
    updated.push_str(&text[..offset]);
    if offset > 0 && !updated.ends_with('\n') {
        updated.push('\n');
    }
    updated.push_str(&block);
    updated.push_str(&text[offset..]);
    Ok((updated, block))
}

#[async_trait]
impl Tool for Edit {
    fn name(&self) -> &str {
        "edit"
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(
            "edit",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "enum": COMMANDS,
                        "description": "view, create, str_replace, insert or undo_edit."},
                    "path": {"type": "string",
                        "description": "Absolute path of the file (or directory, for view)."},
                    "file_text": {"type": "string", "minLength": 0,
                        "description": "Content of the new file (create)."},
                    "old_str": {"type": "string",
                        "description": "Exact text to replace, occurring once (str_replace)."},
                    "new_str": {"type": "string", "minLength": 0,
                        "description": "Replacement text (str_replace; empty deletes) or the lines to insert (insert)."},
                    "insert_line": {"type": "integer",
                        "description": "Insert after this line; 0 = at the top (insert)."},
                    "view_range": {"type": "array", "items": {"type": "integer"},
                        "description": "[start, end] lines to view, 1-based; end -1 = to the end (view)."}
                },
                "required": ["command", "path"],
                "additionalProperties": false,
                "examples": [{"command": "view", "path": "/srv/app/config.yaml", "view_range": [1, 40]}]
            }),
        )
    }

    fn gate(&self, args: &Value) -> Option<GateInfo> {
        let command = args["command"].as_str().unwrap_or_default();
        if command == "view" || !self.config.confirm {
            return self.read_gate(command, args);
        }
        Some(GateInfo {
            action: format!(
                "edit {command} {}",
                args["path"].as_str().unwrap_or_default()
            ),
            model_risk: None,
            mutation: Some(true),
            privesc: None,
            why: None,
            editable_field: None,
        })
    }

    async fn preview(&self, args: &Value) -> Option<vigil_protocol::approval::FileChange> {
        use vigil_protocol::approval::FileChange;
        let path = args["path"].as_str()?;
        let command = args["command"].as_str()?;
        if command == "create" {
            let text = args["file_text"].as_str().unwrap_or("");
            return Some(
                super::files::preview_write(&self.ctx, &self.config.paths, path, text).await,
            );
        }
        let opaque = |why: String| {
            Some(FileChange::Opaque {
                path: path.into(),
                why,
            })
        };
        let real = match self.config.paths.check(path, self.ctx.is_local()) {
            Ok(real) => real,
            Err(e) => return opaque(e.to_string()),
        };
        let text = match self.read_text(&real, path).await {
            Ok((_, text)) => text,
            Err(e) => return opaque(e.to_string()),
        };
        let updated = match command {
            "str_replace" => {
                let old = args["old_str"].as_str().unwrap_or("");
                let new = args["new_str"].as_str().unwrap_or("");
                replaced(&text, old, new, path).map(|(u, _)| u)
            }
            "insert" => {
                let after = args["insert_line"].as_i64().unwrap_or(-1);
                let new = args["new_str"].as_str().unwrap_or("");
                inserted(&text, after, new).map(|(u, _)| u)
            }
            "undo_edit" => return opaque("undo restores the previous version".into()),
            _ => return None,
        };
        match updated {
            Ok(after) => Some(FileChange::of_write(path, Some(text.as_bytes()), &after)),
            Err(e) => opaque(format!("the edit would fail: {e}")),
        }
    }

    async fn facts(&self, args: &Value) -> vigil_protocol::approval::CallFacts {
        let path = args["path"].as_str().unwrap_or_default();
        super::file_target::facts(&self.config.paths, path, self.ctx.is_local())
    }

    fn summary(&self, args: &Value) -> Option<String> {
        Some(format!(
            "edit {} {}",
            args["command"].as_str()?,
            args["path"].as_str()?
        ))
    }

    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let v: &Value = super::object_args(call)?;
        let command = v["command"].as_str().unwrap_or_default();
        let shown = v["path"].as_str().unwrap_or_default();
        if shown.trim().is_empty() {
            return Err(bad("`path` is required"));
        }
        if command == "view"
            && let Some(entry) = self
                .config
                .paths
                .check_read(shown, self.ctx.is_local())?
                .secret
        {
            let how = "read it with read_file, which asks the operator";
            return Err(super::paths::secret_refusal(shown, &entry, how));
        }
        if ctx.ungated
            && self
                .config
                .paths
                .check_read(shown, self.ctx.is_local())?
                .outside
        {
            let how = "the path came to lie there after the approval check; call edit again \
                       and the operator will be asked";
            return Err(super::paths::outside_refusal(shown, how));
        }
        let real = self.config.paths.check(shown, self.ctx.is_local())?;
        // Every command shows the file's lines (a view, the lines around a
        // change): content that looks like a secret, only on the
        // operator's word for this very call.
        if !ctx.asked
            && self.ctx.is_local()
            && let Some(what) = super::files::secret_shape(&real)
        {
            return Err(ToolError::failed(
                super::FailureClass::PermissionDenied,
                format!(
                    "refused: {shown} holds what looks like a secret ({what}); showing its lines \
                     needs the operator's approval of this very call: call edit again and the \
                     operator will be asked (say why you need it)"
                ),
            ));
        }
        if command != "view" {
            super::file_target::check_bound(ctx, shown, &real, self.ctx.is_local())?;
        }
        let work = async {
            match command {
                "view" => self.view(v, &real, shown, ctx).await,
                "create" => self.create(v, &real, shown).await,
                "str_replace" => self.str_replace(v, &real, shown).await,
                "insert" => self.insert(v, &real, shown).await,
                "undo_edit" => self.undo(&real, shown).await,
                other => Err(bad(format!(
                    "unknown command {other:?}; use one of {}",
                    COMMANDS.join(", ")
                ))),
            }
        };
        ctx.with_target_notices(&self.ctx, work).await
    }
}
