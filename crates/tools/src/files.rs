//! `read_file` and `write_file`: whole-file transfer on the execution target.
//!
//! Both go through the [`ExecutionContext`], so they work the same locally,
//! in containers and over SSH. They must never touch the filesystem directly
//! and never hand the model more than the read limit (the rest is spilled).
//! A read of a secret place ([`vigil_config::secrets`]) is gated in every
//! approval mode and returns bytes only on the operator's answer to that
//! very call ([`ToolContext::asked`]); a write there is refused.

use async_trait::async_trait;
use serde_json::{Value, json};
use vigil_policy::call::ToolCall;

use super::paths::{PathPolicy, secret_refusal};
use super::truncate::{self, Keep};
use super::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use vigil_exec::ExecutionContext;
use vigil_protocol::approval::GateInfo;

/// Chars of a file the model sees.
pub const READ_LIMIT: usize = 8000;

/// A required, non-empty string argument.
fn required_str<'a>(v: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    match &v[name] {
        Value::String(s) if !s.trim().is_empty() || name == "content" => Ok(s),
        Value::String(_) | Value::Null => Err(ToolError::InvalidArguments(format!(
            "`{name}` is required and must not be empty"
        ))),
        other => Err(ToolError::InvalidArguments(format!(
            "`{name}` must be a string, got {other}"
        ))),
    }
}

const READ_DESCRIPTION: &str = "Read a text file on the execution target and return its content. \
Files longer than 8000 characters are cut (the beginning is kept) and the full text is saved to a \
file named in the result. Binary (non-UTF-8) files are not returned; the result says so and gives \
the size. System places (/etc, /boot, /proc/*/environ) and paths outside the operator's allowed \
roots are refused; reading a secret place (.ssh, .aws, .env, .netrc, credentials, tokens, vigil's \
own config) asks the operator every time, and so does a file outside the working tree and the \
system's program places (the files named in your tool results for full outputs are read without \
asking). Symlinks are resolved before these checks.

When to use: looking at a config file, script, log or any text file whose path you know.

When NOT to use: searching or filtering (use run_shell with grep, find, tail); listing \
directories (run_shell with ls); inspecting binary files (run_shell with file, xxd or strings).

Disambiguation: read_file returns the file exactly, without shell quoting concerns; run_shell \
`cat` would mix the content with command output handling and risk approval prompts.

Example: {\"path\": \"/var/log/nginx/error.log\"}";

const WRITE_DESCRIPTION: &str = "Write text to a file on the execution target, creating it if \
needed and replacing it entirely if it exists. The parent directory must already exist. Returns \
\"Wrote N bytes to /path\".

When to use: creating or replacing a whole config file, script or note with content you have \
composed.

When NOT to use: small edits inside a large file you have not read (read it first, or use \
run_shell with sed); appending to a log (run_shell with >>); creating directories (run_shell with \
mkdir -p).

Disambiguation: write_file replaces the whole file with `content` exactly as given; it never runs \
a shell on the content, so quotes, `$` and backticks are safe.

Example: {\"path\": \"/tmp/notes.txt\", \"content\": \"disk check done\\n\"}";

/// Most bytes of a file the gate reads to look for secrets; a larger file
/// is asked as one that could not be checked.
const SHAPE_SCAN_LIMIT: u64 = 64 * 1024 * 1024;

/// What in a local file looks like a secret (a key block, a token, a
/// password in a URL or assignment: `secret_content`), read whole: a file
/// in the readable world is no secret place, but may hold one (a token in
/// `.git/config`'s remote URL). `None`: nothing, or it cannot be opened
/// (the read then fails on its own).
pub(crate) fn secret_shape(real: &str) -> Option<String> {
    let meta = std::fs::metadata(real).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.len() > SHAPE_SCAN_LIMIT {
        return Some(format!(
            "a file of {} MB, too large to check",
            meta.len() / (1024 * 1024)
        ));
    }
    super::shell_trial::secret_in_file(std::path::Path::new(real))
        .ok()
        .flatten()
}

/// The `read_file` tool.
pub struct ReadFile {
    ctx: ExecutionContext,
    paths: PathPolicy,
}

impl ReadFile {
    /// With the default [`PathPolicy`] (sensitive places refused).
    pub fn new(ctx: ExecutionContext) -> Self {
        ReadFile {
            ctx,
            paths: PathPolicy::default(),
        }
    }

    pub fn with_paths(mut self, paths: PathPolicy) -> Self {
        self.paths = paths;
        self
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(
            "read_file",
            READ_DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Path of the file on the target (absolute paths are clearest)."
                    }
                },
                "required": ["path"],
                "additionalProperties": false,
                "examples": [{"path": "/var/log/nginx/error.log"}]
            }),
        )
    }

    /// When a read is gated: the canonical path, for the card and `path`
    /// rules.
    async fn facts(&self, args: &Value) -> vigil_protocol::approval::CallFacts {
        let path = args["path"].as_str().unwrap_or_default();
        super::file_target::read_facts(&self.paths, path, self.ctx.is_local())
    }

    /// Gated when the path (resolved) lies in a secret place — then every
    /// read asks, in every approval mode, and the card names the entry —
    /// or outside the readable places (decided like any gated call: asked,
    /// unless the operator approved all or a rule of theirs covers it).
    fn gate(&self, args: &Value) -> Option<GateInfo> {
        let path = args["path"].as_str()?;
        let read = self.paths.check_read(path, self.ctx.is_local()).ok()?;
        let why = match (&read.secret, read.outside) {
            (Some(entry), _) => format!("secret place `{entry}`"),
            (None, true) => "outside the readable places".to_string(),
            (None, false) => match self.ctx.is_local().then(|| secret_shape(&read.real)) {
                Some(Some(what)) => format!("it holds what looks like a secret: {what}"),
                _ => return None,
            },
        };
        let shown = if read.real == path {
            path.to_string()
        } else {
            format!("{path} → {}", read.real)
        };
        Some(GateInfo {
            action: format!("read {shown} ({why})"),
            model_risk: None,
            mutation: Some(false),
            privesc: None,
            why: None,
            editable_field: None,
        })
    }

    fn summary(&self, args: &Value) -> Option<String> {
        Some(format!("read {}", args["path"].as_str()?))
    }

    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let v: &Value = super::object_args(call)?;
        let path = required_str(v, "path")?;
        let read = self.paths.check_read(path, self.ctx.is_local())?;
        if let Some(entry) = &read.secret
            && !ctx.asked
        {
            let how = if ctx.sandboxed {
                "a session or policy rule approved this call, and rules never approve a secret \
                 read: tell the operator why you need it"
            } else {
                "the path became a secret place after the approval check; call read_file again \
                 and the operator will be asked"
            };
            return Err(secret_refusal(path, entry, how));
        }
        if read.outside && ctx.ungated {
            let how = "the path came to lie there after the approval check; call read_file again \
                       and the operator will be asked";
            return Err(super::paths::outside_refusal(path, how));
        }
        let real = read.real;
        let bytes = self.ctx.read_file(&real).await;
        ctx.forward_target_notices(&self.ctx);
        let bytes = bytes.map_err(ToolError::from)?;
        // What the gate saw is what is read: content that looks like a
        // secret reaches the model only on the operator's word.
        if !ctx.asked
            && let Some(what) = vigil_policy::secret_content::find(&String::from_utf8_lossy(&bytes))
        {
            return Err(ToolError::failed(
                super::FailureClass::PermissionDenied,
                format!(
                    "refused: {path} holds what looks like a secret ({what}) and reading it \
                     needs the operator's approval of this very call; call read_file again and \
                     the operator will be asked (say why you need it)"
                ),
            ));
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return Ok(ToolOutput::text(format!(
                "{path} is not a UTF-8 text file ({} bytes); it looks binary. Use run_shell with \
                 `file`, `xxd` or `strings` to inspect it.",
                bytes.len()
            ))
            .with_timeline(format!("read {path} ({} bytes, binary)", bytes.len())));
        };
        let (cut, spill) = truncate::cut_with_spill(
            text,
            READ_LIMIT,
            Keep::Head,
            ctx.spill_dir.as_deref(),
            "read_file",
        );
        Ok(ToolOutput {
            truncated: cut.truncated(),
            result: Value::String(cut.text),
            exit_code: None,
            seen: spill
                .iter()
                .map(|_| truncate::model_saw(READ_LIMIT, Keep::Head))
                .collect(),
            spill: spill.into_iter().collect(),
            timeline: Some(format!("read {path} ({} bytes)", bytes.len())),
        })
    }
}

/// The `write_file` tool.
pub struct WriteFile {
    ctx: ExecutionContext,
    confirm_writes: bool,
    paths: PathPolicy,
}

impl WriteFile {
    /// `confirm_writes`: ask the operator before every write.
    pub fn new(ctx: ExecutionContext, confirm_writes: bool) -> Self {
        WriteFile {
            ctx,
            confirm_writes,
            paths: PathPolicy::default(),
        }
    }

    pub fn with_paths(mut self, paths: PathPolicy) -> Self {
        self.paths = paths;
        self
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(
            "write_file",
            WRITE_DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Path of the file to create or replace on the target."
                    },
                    "content": {
                        "type": "string",
                        "description": "The complete new content of the file (may be empty).",
                        "minLength": 0
                    }
                },
                "required": ["path", "content"],
                "additionalProperties": false,
                "examples": [{"path": "/tmp/notes.txt", "content": "disk check done\n"}]
            }),
        )
    }

    fn gate(&self, args: &Value) -> Option<GateInfo> {
        if !self.confirm_writes {
            return None;
        }
        let path = args["path"].as_str().unwrap_or_default();
        let n = args["content"].as_str().map(str::len).unwrap_or(0);
        Some(GateInfo {
            action: format!("write {path} ({n} bytes)"),
            model_risk: None,
            mutation: Some(true),
            privesc: None,
            why: None,
            editable_field: None,
        })
    }

    async fn preview(&self, args: &Value) -> Option<vigil_protocol::approval::FileChange> {
        let path = args["path"].as_str()?;
        let content = args["content"].as_str()?;
        Some(preview_write(&self.ctx, &self.paths, path, content).await)
    }

    async fn facts(&self, args: &Value) -> vigil_protocol::approval::CallFacts {
        let path = args["path"].as_str().unwrap_or_default();
        super::file_target::facts(&self.paths, path, self.ctx.is_local())
    }

    fn summary(&self, args: &Value) -> Option<String> {
        let n = args["content"].as_str().map(str::len).unwrap_or(0);
        Some(format!("write {} ({n} bytes)", args["path"].as_str()?))
    }

    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let v: &Value = super::object_args(call)?;
        let path = required_str(v, "path")?;
        let content = required_str(v, "content")?;
        let real = self.paths.check(path, self.ctx.is_local())?;
        super::file_target::check_bound(ctx, path, &real, self.ctx.is_local())?;
        let n = self.ctx.write_file(&real, content.as_bytes()).await;
        ctx.forward_target_notices(&self.ctx);
        let n = n.map_err(ToolError::from)?;
        Ok(ToolOutput::text(format!("Wrote {n} bytes to {path}"))
            .with_timeline(format!("wrote {path} ({n} bytes)")))
    }
}

/// What writing `content` to `path` would change, read on the target (a
/// missing file is a new one; a path the policy refuses says so).
pub(crate) async fn preview_write(
    ctx: &ExecutionContext,
    paths: &PathPolicy,
    path: &str,
    content: &str,
) -> vigil_protocol::approval::FileChange {
    use vigil_protocol::approval::FileChange;
    let real = match paths.check(path, ctx.is_local()) {
        Ok(real) => real,
        Err(e) => {
            return FileChange::Opaque {
                path: path.into(),
                why: e.to_string(),
            };
        }
    };
    match ctx.path_kind(&real).await {
        Ok(vigil_exec::PathKind::Missing) => FileChange::of_write(path, None, content),
        Ok(vigil_exec::PathKind::Dir) => FileChange::Opaque {
            path: path.into(),
            why: "it is a directory".into(),
        },
        Ok(vigil_exec::PathKind::File) => match ctx.read_file(&real).await {
            Ok(bytes) => FileChange::of_write(path, Some(&bytes), content),
            Err(e) => FileChange::Opaque {
                path: path.into(),
                why: format!("cannot read it: {e}"),
            },
        },
        Err(e) => FileChange::Opaque {
            path: path.into(),
            why: format!("cannot look at it: {e}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ExecutionContext {
        ExecutionContext::local()
    }

    #[tokio::test]
    async fn reads_text_and_cuts_long_files_with_spill() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.txt");
        std::fs::write(&small, "héllo\n").unwrap();
        let t = ReadFile::new(ctx());
        let args = json!({"path": small}).to_string();
        let out = t
            .execute(&crate::test_call(&args), &ToolContext::default())
            .await
            .unwrap();
        assert_eq!(out.result, json!("héllo\n"));
        assert!(!out.truncated);

        let big = dir.path().join("big.txt");
        let text = "é".repeat(READ_LIMIT + 10);
        std::fs::write(&big, &text).unwrap();
        let spill = dir.path().join("spill");
        let tc = ToolContext::default().with_spill_dir(spill.clone());
        let out = t
            .execute(&crate::test_call(&json!({"path": big}).to_string()), &tc)
            .await
            .unwrap();
        assert!(out.truncated);
        let shown = out.result.as_str().unwrap();
        assert!(shown.starts_with(&"é".repeat(READ_LIMIT)));
        assert!(shown.contains("...[truncated]"));
        assert_eq!(out.spill.len(), 1);
        assert_eq!(std::fs::read_to_string(&out.spill[0]).unwrap(), text);
    }

    #[tokio::test]
    async fn binary_files_get_a_notice_not_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("blob");
        std::fs::write(&p, [0u8, 159, 146, 150, 255]).unwrap();
        let out = ReadFile::new(ctx())
            .execute(
                &crate::test_call(&json!({"path": p}).to_string()),
                &ToolContext::default(),
            )
            .await
            .unwrap();
        let s = out.result.as_str().unwrap();
        assert!(
            s.contains("not a UTF-8 text file") && s.contains("5 bytes"),
            "{s}"
        );
    }

    #[tokio::test]
    async fn read_errors_and_bad_arguments_are_clear() {
        let t = ReadFile::new(ctx());
        let e = t
            .execute(
                &crate::test_call(r#"{"path":"/nonexistent/vigil"}"#),
                &ToolContext::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.class(), crate::FailureClass::NotFound);
        assert!(e.to_string().contains("no such file"), "{e}");
        for bad in [r#"{}"#, r#"{"path":""}"#, r#"{"path":3}"#, "nope"] {
            let e = t
                .execute(&crate::test_call(bad), &ToolContext::default())
                .await
                .unwrap_err();
            assert!(matches!(e, ToolError::InvalidArguments(_)), "{bad}");
        }
    }

    #[tokio::test]
    async fn path_policy_applies_to_reads_and_writes() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("hostname-link");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        let e = ReadFile::new(ctx())
            .execute(
                &crate::test_call(&json!({"path": link}).to_string()),
                &ToolContext::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.class(), crate::FailureClass::PermissionDenied);
        assert!(e.to_string().contains("resolves to /etc/hostname"), "{e}");
        let outside = dir.path().join("x.txt");
        let confined = PathPolicy::allowing(&["/nonexistent-root"]);
        let e = WriteFile::new(ctx(), false)
            .with_paths(confined)
            .execute(
                &crate::test_call(&json!({"path": outside, "content": "x"}).to_string()),
                &ToolContext::default(),
            )
            .await
            .unwrap_err();
        assert!(e.to_string().contains("outside the allowed paths"), "{e}");
        assert!(!outside.exists());
    }

    #[tokio::test]
    async fn writes_report_bytes_and_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.txt");
        let t = WriteFile::new(ctx(), false);
        let args = json!({"path": p, "content": "héllo"}).to_string();
        let out = t
            .execute(&crate::test_call(&args), &ToolContext::default())
            .await
            .unwrap();
        assert_eq!(
            out.result,
            json!(format!("Wrote 6 bytes to {}", p.display()))
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "héllo");
        // Empty content is a valid write.
        let args = json!({"path": p, "content": ""}).to_string();
        t.execute(&crate::test_call(&args), &ToolContext::default())
            .await
            .unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"");
        let e = t
            .execute(
                &crate::test_call(r#"{"path":"/x"}"#),
                &ToolContext::default(),
            )
            .await
            .unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments(ref m) if m.contains("content")));
    }

    #[test]
    fn writes_are_gated_only_when_asked() {
        let args = json!({"path": "/etc/motd", "content": "hi there"});
        assert!(WriteFile::new(ctx(), false).gate(&args).is_none());
        let g = WriteFile::new(ctx(), true).gate(&args).expect("gated");
        assert_eq!(g.action, "write /etc/motd (8 bytes)");
        assert_eq!(g.editable_field, None);
        assert!(ReadFile::new(ctx()).gate(&args).is_none());
    }

    #[tokio::test]
    async fn a_secret_read_is_gated_and_runs_only_on_the_operators_word() {
        let dir = tempfile::tempdir().unwrap();
        let base = crate::paths::resolve_local(dir.path()).unwrap();
        std::fs::create_dir(base.join(".ssh")).unwrap();
        std::fs::write(base.join(".ssh/id_ed25519"), "KEY-BYTES").unwrap();
        std::os::unix::fs::symlink(base.join(".ssh"), base.join("k")).unwrap();
        std::fs::write(base.join("plain.txt"), "plain").unwrap();
        let t = ReadFile::new(ctx());
        let via_link = base.join("k/id_ed25519");
        let g = t.gate(&json!({"path": via_link})).expect("gated");
        assert!(g.action.contains("secret place `.ssh`"), "{}", g.action);
        assert!(
            g.action.contains("→"),
            "the resolved path is shown: {}",
            g.action
        );
        // A plain file of the working tree is read unasked; one outside the
        // readable places (this temporary folder) is gated, and refused
        // when it reaches the tool ungated (it moved there after the check).
        assert!(t.gate(&json!({"path": "Cargo.toml"})).is_none());
        let plain = base.join("plain.txt");
        let g = t.gate(&json!({"path": plain})).expect("gated");
        assert!(
            g.action.contains("outside the readable places"),
            "{}",
            g.action
        );
        let plain_args = json!({"path": plain}).to_string();
        let ungated = ToolContext {
            ungated: true,
            ..Default::default()
        };
        let e = t.execute(&crate::test_call(&plain_args), &ungated).await;
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("outside the readable places")
        );
        let (call, tc) = (crate::test_call(&plain_args), ToolContext::default());
        let out = t.execute(&call, &tc).await.unwrap();
        assert_eq!(out.result, json!("plain"));
        let args = json!({"path": via_link}).to_string();
        // Without a fresh decision (a rule, or a path swapped after the gate):
        // refused, nothing read.
        for tc in [
            ToolContext::default(),
            ToolContext {
                sandboxed: true,
                ..Default::default()
            },
        ] {
            let e = t.execute(&crate::test_call(&args), &tc).await.unwrap_err();
            assert_eq!(e.class(), crate::FailureClass::PermissionDenied);
            assert!(!e.to_string().contains("KEY-BYTES"), "{e}");
            assert!(e.to_string().contains("`.ssh`"), "{e}");
        }
        let asked = ToolContext {
            asked: true,
            ..Default::default()
        };
        let out = t.execute(&crate::test_call(&args), &asked).await.unwrap();
        assert_eq!(out.result, json!("KEY-BYTES"));
    }

    #[test]
    fn definitions_have_routing_sections() {
        for d in [
            ReadFile::new(ctx()).definition(),
            WriteFile::new(ctx(), true).definition(),
        ] {
            for s in [
                "When to use:",
                "When NOT to use:",
                "Disambiguation:",
                "Example:",
            ] {
                assert!(
                    d.function.description.contains(s),
                    "{} {s}",
                    d.function.name
                );
            }
            let p = &d.function.parameters;
            for (name, prop) in p["properties"].as_object().unwrap() {
                assert_eq!(prop["type"], "string", "{name}");
                assert!(prop["description"].is_string(), "{name}");
            }
        }
        assert_eq!(
            WriteFile::new(ctx(), false)
                .definition()
                .function
                .parameters["required"],
            json!(["path", "content"])
        );
    }
}
