//! [`CommandBackend`]: the [`Backend`] for any transport that
//! runs plain processes (no tmux).
//!
//! Commands go through the transport's `sh -c` and [`super::process`]. Files
//! use `tokio::fs` when the transport is local, and otherwise `cat` through
//! the same transport, so SSH and container targets need nothing extra. This
//! module must never run anything except through its transport, and never
//! pretend to support detached runs.

use std::time::Duration;

use async_trait::async_trait;

use super::transport::{self, Transport, sh_quote};
use super::{Backend, ExecError, OutputFn, RunOutcome, RunRequest};

/// Message for `wait=false` on a target without tmux.
const NO_DETACH: &str =
    "wait=false needs a tmux-backed target (start vigil with tmux available or --tmux)";

/// Longest a remote `cat` may take before it is killed.
const FILE_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs commands and file operations through a transport.
pub struct CommandBackend<T: Transport> {
    transport: T,
}

impl<T: Transport> CommandBackend<T> {
    pub fn new(transport: T) -> Self {
        CommandBackend { transport }
    }

    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Run a helper script (`cat ...`) with optional stdin and turn a non-zero
    /// exit into a clear file error.
    async fn file_command(
        &self,
        script: &str,
        input: Option<Vec<u8>>,
        verb: &str,
        path: &str,
    ) -> Result<RunOutcome, ExecError> {
        let out =
            match transport::run(&self.transport, script, input, Some(FILE_TIMEOUT), None).await {
                Ok(out) => out,
                Err(ExecError::Timeout { limit, .. }) => {
                    return Err(ExecError::Io(format!(
                        "cannot {verb} {path}: gave up after {}",
                        super::humanize(limit)
                    )));
                }
                Err(e) => return Err(e),
            };
        let missing = if verb == "write" {
            "no such file or directory (does the parent directory exist?)"
        } else {
            "no such file or directory"
        };
        match out.exit_code {
            Some(0) => {}
            Some(21) => {
                return Err(ExecError::Io(format!(
                    "cannot {verb} {path}: is a directory"
                )));
            }
            Some(66) => {
                return Err(ExecError::NotFound(format!(
                    "cannot {verb} {path}: {missing}"
                )));
            }
            Some(77) => {
                return Err(ExecError::PermissionDenied(format!(
                    "cannot {verb} {path}: permission denied"
                )));
            }
            _ => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                return Err(ExecError::Io(format!(
                    "cannot {verb} {path}: {}",
                    remote_reason(&stderr, verb)
                )));
            }
        }
        Ok(out)
    }
}

/// A short reason from an I/O error on this machine.
fn local_reason(e: &std::io::Error, verb: &str) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound if verb == "write" => {
            "no such file or directory (does the parent directory exist?)".into()
        }
        ErrorKind::NotFound => "no such file or directory".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::IsADirectory => "is a directory".into(),
        ErrorKind::NotADirectory => "a component of the path is not a directory".into(),
        _ => e.to_string(),
    }
}

/// A structured error from an I/O error on this machine.
fn local_error(e: &std::io::Error, verb: &str, path: &str) -> ExecError {
    use std::io::ErrorKind;
    let msg = format!("cannot {verb} {path}: {}", local_reason(e, verb));
    match e.kind() {
        ErrorKind::NotFound => ExecError::NotFound(msg),
        ErrorKind::PermissionDenied => ExecError::PermissionDenied(msg),
        _ => ExecError::Io(msg),
    }
}

/// A short reason from what `cat` or the shell printed on the target.
fn remote_reason(stderr: &str, verb: &str) -> String {
    let lower = stderr.to_ascii_lowercase();
    if lower.contains("no such file") || lower.contains("nonexistent") {
        if verb == "write" {
            "no such file or directory (does the parent directory exist?)".into()
        } else {
            "no such file or directory".into()
        }
    } else if lower.contains("permission denied") {
        "permission denied".into()
    } else if lower.contains("is a directory") {
        "is a directory".into()
    } else if lower.contains("not a directory") {
        "a component of the path is not a directory".into()
    } else if stderr.trim().is_empty() {
        "the command failed without saying why".into()
    } else {
        stderr.trim().to_string()
    }
}

#[async_trait]
impl<T: Transport> Backend for CommandBackend<T> {
    fn target(&self) -> String {
        self.transport.label()
    }

    fn is_local(&self) -> bool {
        self.transport.is_local()
    }

    fn can_sandbox(&self) -> bool {
        self.transport.is_local() && super::sandbox::available()
    }

    async fn workdir(&self, _session: Option<&str>, _pane: Option<&str>) -> Option<String> {
        // Plain runs on this machine inherit vigil's own directory.
        if !self.transport.is_local() {
            return None;
        }
        let dir = std::env::current_dir().ok()?;
        Some(dir.to_string_lossy().into_owned())
    }

    async fn trial_shell(
        &self,
        _session: Option<&str>,
        _pane: Option<&str>,
    ) -> Option<super::TrialShell> {
        // A plain run is `sh -c` with the tool environment, as in the view.
        self.can_sandbox().then(|| super::TrialShell {
            shell: "sh".into(),
            env: None,
            state: None,
        })
    }

    async fn path_kind(&self, path: &str) -> Result<super::PathKind, ExecError> {
        if !self.transport.is_local() {
            return super::shell_path_kind(self, path).await;
        }
        match tokio::fs::metadata(path).await {
            Ok(m) if m.is_dir() => Ok(super::PathKind::Dir),
            Ok(_) => Ok(super::PathKind::File),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(super::PathKind::Missing),
            Err(e) => Err(local_error(&e, "inspect", path)),
        }
    }

    async fn remove_file(&self, path: &str) -> Result<(), ExecError> {
        if !self.transport.is_local() {
            return super::shell_remove_file(self, path).await;
        }
        tokio::fs::remove_file(path)
            .await
            .map_err(|e| local_error(&e, "remove", path))
    }

    async fn run(
        &self,
        req: RunRequest,
        on_output: Option<OutputFn>,
    ) -> Result<RunOutcome, ExecError> {
        if req.detach {
            return Err(ExecError::NotSupported(NO_DETACH.into()));
        }
        if req.sandbox {
            if !self.transport.is_local() {
                return Err(ExecError::NotSupported(format!(
                    "sandboxed run refused: the kernel sandbox is only enforced on this machine, not on {}",
                    self.transport.label()
                )));
            }
            let retain = req.retain.as_ref();
            return super::sandbox::run_retaining(
                &req.command,
                None,
                req.timeout,
                on_output,
                retain,
                &req.grants,
            )
            .await;
        }
        transport::run_retaining(
            &self.transport,
            &req.command,
            None,
            req.timeout,
            on_output,
            req.retain.as_ref(),
        )
        .await
    }

    fn take_notices(&self) -> Vec<String> {
        self.transport.take_notices()
    }

    async fn read_file(&self, path: &str) -> Result<Vec<u8>, ExecError> {
        if path.is_empty() {
            return Err(ExecError::Io(
                "cannot read a file with an empty path".into(),
            ));
        }
        if self.transport.is_local() {
            return tokio::fs::read(path)
                .await
                .map_err(|e| local_error(&e, "read", path));
        }
        // Exit codes name the failure structurally (66 missing, 77 refused,
        // 21 a directory); other failures keep cat's own words.
        let q = sh_quote(path);
        let script = format!(
            "if [ -d {q} ]; then exit 21; elif [ ! -e {q} ]; then exit 66; \
             elif [ ! -r {q} ]; then exit 77; fi; exec cat -- {q}"
        );
        Ok(self.file_command(&script, None, "read", path).await?.stdout)
    }

    async fn write_file(&self, path: &str, content: &[u8]) -> Result<u64, ExecError> {
        if path.is_empty() {
            return Err(ExecError::Io(
                "cannot write a file with an empty path".into(),
            ));
        }
        if self.transport.is_local() {
            // Exactly there: no symlink followed on the way, a regular file.
            use super::exact_write::{ExactWriteError, write_exact};
            let (p, bytes) = (std::path::PathBuf::from(path), content.to_vec());
            let written = tokio::task::spawn_blocking(move || write_exact(&p, &bytes))
                .await
                .map_err(|e| ExecError::Io(format!("cannot write {path}: {e}")))?;
            return written.map_err(|e| match e {
                ExactWriteError::Io(e) => local_error(&e, "write", path),
                other => ExecError::PermissionDenied(format!("cannot write {path}: {other}")),
            });
        }
        let q = sh_quote(path);
        let script = format!(
            "if [ -d {q} ]; then exit 21; fi; d=$(dirname -- {q}); \
             if [ ! -d \"$d\" ]; then exit 66; fi; \
             if [ -e {q} ] && [ ! -w {q} ]; then exit 77; fi; exec cat > {q}"
        );
        self.file_command(&script, Some(content.to_vec()), "write", path)
            .await?;
        Ok(content.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ExecutionContext;
    use std::sync::{Arc, Mutex};
    use tokio::process::Command;
    use vigil_protocol::tool::OutputStream;

    /// A real `sh -c` transport that claims a foreign filesystem, so file
    /// operations take the `cat` path.
    struct Remoteish;
    impl Transport for Remoteish {
        fn label(&self) -> String {
            "remoteish".into()
        }
        fn shell(&self, script: &str, _stdin: bool) -> Command {
            let mut c = Command::new("sh");
            c.arg("-c").arg(script);
            c
        }
    }

    fn backends() -> Vec<ExecutionContext> {
        vec![
            ExecutionContext::local(),
            ExecutionContext::new(CommandBackend::new(Remoteish)),
        ]
    }

    #[tokio::test]
    async fn run_streams_and_reports_target() {
        let ctx = ExecutionContext::local();
        assert_eq!(ctx.target(), "local");
        let seen: Arc<Mutex<String>> = Arc::default();
        let s = seen.clone();
        let f: OutputFn = Arc::new(move |which, t: &str| {
            if which == OutputStream::Stdout {
                s.lock().unwrap().push_str(t);
            }
        });
        let out = ctx
            .run(
                RunRequest {
                    command: "echo hi; exit 4".into(),
                    ..Default::default()
                },
                Some(f),
            )
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(4));
        assert_eq!(out.stdout, b"hi\n");
        assert_eq!(*seen.lock().unwrap(), "hi\n");
    }

    #[tokio::test]
    async fn detach_is_refused_with_a_hint() {
        let err = ExecutionContext::local()
            .run(
                RunRequest {
                    command: "true".into(),
                    detach: true,
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ExecError::NotSupported(_)));
        assert!(err.to_string().contains("tmux"));
    }

    #[tokio::test]
    async fn files_round_trip_on_both_paths() {
        let dir = tempfile::tempdir().unwrap();
        for (i, ctx) in backends().into_iter().enumerate() {
            let path = dir.path().join(format!("it's a file {i}.txt"));
            let p = path.to_str().unwrap();
            let content = "héllo\n$HOME `x`\n".as_bytes();
            assert_eq!(
                ctx.write_file(p, content).await.unwrap(),
                content.len() as u64
            );
            assert_eq!(std::fs::read(&path).unwrap(), content);
            assert_eq!(ctx.read_file(p).await.unwrap(), content);
            // Overwrite, not append.
            ctx.write_file(p, b"x").await.unwrap();
            assert_eq!(ctx.read_file(p).await.unwrap(), b"x");
            // Binary content survives.
            let bin: Vec<u8> = (0..=255).collect();
            ctx.write_file(p, &bin).await.unwrap();
            assert_eq!(ctx.read_file(p).await.unwrap(), bin);
        }
    }

    #[tokio::test]
    async fn file_errors_are_clear_on_both_paths() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap().to_string();
        for ctx in backends() {
            let missing = format!("{d}/missing");
            let e = ctx.read_file(&missing).await.unwrap_err().to_string();
            assert!(e.contains(&missing) && e.contains("no such file"), "{e}");

            let e = ctx.read_file(&d).await.unwrap_err().to_string();
            assert!(e.contains("is a directory"), "{e}");

            let e = ctx.write_file(&d, b"x").await.unwrap_err().to_string();
            assert!(e.contains("is a directory"), "{e}");

            let e = ctx
                .write_file(&format!("{d}/no/such/dir/f"), b"x")
                .await
                .unwrap_err()
                .to_string();
            assert!(e.contains("parent directory"), "{e}");
        }
    }

    #[test]
    fn reasons_are_named_from_errors_and_stderr() {
        use std::io::{Error, ErrorKind};
        let denied = Error::from(ErrorKind::PermissionDenied);
        assert_eq!(local_reason(&denied, "read"), "permission denied");
        assert_eq!(
            remote_reason("cat: /etc/shadow: Permission denied\n", "read"),
            "permission denied"
        );
        assert_eq!(
            remote_reason(
                "sh: 1: cannot create /x/y: Directory nonexistent\n",
                "write"
            ),
            "no such file or directory (does the parent directory exist?)"
        );
        assert_eq!(remote_reason("weird failure\n", "read"), "weird failure");
        assert!(remote_reason("", "read").contains("without saying why"));
    }

    #[tokio::test]
    async fn permission_denied_is_named() {
        use std::os::unix::fs::PermissionsExt;
        // Root ignores file modes; nothing to check there.
        if unsafe { libc::geteuid() } == 0 {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "s").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
        for ctx in backends() {
            let e = ctx
                .read_file(path.to_str().unwrap())
                .await
                .unwrap_err()
                .to_string();
            assert!(e.contains("permission denied"), "{e}");
        }
    }
}
