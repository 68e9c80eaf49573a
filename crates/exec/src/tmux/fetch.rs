//! [`Fetcher`]: reads and removes a command's output files on a remote
//! target through one long-lived `sh` over the transport, instead of one
//! `ssh`/`podman exec` process per file operation (each of which costs a
//! whole transport round trip: ≈20 ms over ssh, ≈200 ms with podman).
//!
//! Protocol (one request per line on the helper's stdin; paths are vigil's
//! own command files, never containing a newline): `r OFFSET PATH` answers
//! a decimal byte count on a line, then exactly that many bytes from OFFSET
//! (`-1` when the file is missing); `x PATH…` removes files and answers
//! `0`. The helper exits when its stdin closes. Any failure (dead
//! connection, timeout, garbage) drops the helper and the caller falls back
//! to a one-off process; the next request starts a fresh helper. This
//! module must never be used for anything but vigil's own command files.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::transport::Transport;

/// The helper's loop (`sh -c`); `wc -c` may pad with spaces, `$((n))`
/// normalises it.
const HELPER: &str = r#"while IFS= read -r l; do
case "$l" in
"r "*) l=${l#r }; o=${l%% *}; p=${l#* };
  if [ -f "$p" ]; then n=$(wc -c <"$p"); n=$((n - o)); [ "$n" -lt 0 ] && n=0;
    echo "$n"; tail -c +$((o + 1)) "$p" | head -c "$n";
  else echo -1; fi;;
"x "*) rm -f -- ${l#x }; echo 0;;
*) echo -2;;
esac
done"#;

/// Longest one request may take before the helper is dropped.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

struct Helper {
    /// The transport's epoch it was started in.
    epoch: u64,
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// One helper per managed tmux layer on a remote target, one request at a
/// time.
pub struct Fetcher {
    transport: Arc<dyn Transport>,
    helper: tokio::sync::Mutex<Option<Helper>>,
}

impl Fetcher {
    pub fn new(transport: Arc<dyn Transport>) -> Fetcher {
        Fetcher {
            transport,
            helper: tokio::sync::Mutex::new(None),
        }
    }

    async fn start(&self) -> Option<Helper> {
        self.transport.prepare().await.ok()?;
        let epoch = self.transport.epoch();
        let mut cmd = self.transport.shell(HELPER, true);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn().ok()?;
        let stdin = child.stdin.take()?;
        let stdout = BufReader::new(child.stdout.take()?);
        Some(Helper {
            epoch,
            _child: child,
            stdin,
            stdout,
        })
    }

    /// Send `line`, read the count line and (for reads) the bytes. `None`:
    /// the helper failed and was dropped.
    async fn request(&self, line: &str, with_bytes: bool) -> Option<(i64, Vec<u8>)> {
        let mut slot = self.helper.lock().await;
        if slot
            .as_ref()
            .is_some_and(|h| h.epoch != self.transport.epoch())
        {
            *slot = None;
        }
        if slot.is_none() {
            *slot = self.start().await;
        }
        let h = slot.as_mut()?;
        let exchange = async {
            h.stdin.write_all(line.as_bytes()).await.ok()?;
            h.stdin.write_all(b"\n").await.ok()?;
            h.stdin.flush().await.ok()?;
            let mut head = String::new();
            if h.stdout.read_line(&mut head).await.ok()? == 0 {
                return None;
            }
            let n: i64 = head.trim().parse().ok()?;
            let mut bytes = Vec::new();
            if with_bytes && n > 0 {
                bytes.resize(usize::try_from(n).ok()?, 0);
                h.stdout.read_exact(&mut bytes).await.ok()?;
            }
            Some((n, bytes))
        };
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .ok()
            .flatten();
        if answer.is_none() || answer.as_ref().is_some_and(|(n, _)| *n < -1) {
            *slot = None;
            return None;
        }
        answer
    }

    /// The bytes of `path` from `offset` (empty when it does not exist);
    /// `None`: fall back to a process.
    pub async fn read_from(&self, path: &str, offset: u64) -> Option<Vec<u8>> {
        if path.contains('\n') {
            return None;
        }
        let (n, bytes) = self.request(&format!("r {offset} {path}"), true).await?;
        Some(if n < 0 { Vec::new() } else { bytes })
    }

    /// Remove files; `false`: fall back to a process.
    pub async fn remove(&self, paths: &[String]) -> bool {
        if paths
            .iter()
            .any(|p| p.is_empty() || p.contains(['\n', ' ', '\t', '*', '?', '[']))
        {
            return false;
        }
        self.request(&format!("x {}", paths.join(" ")), false)
            .await
            .is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport that runs the helper here but claims a foreign
    /// filesystem (what matters is the protocol).
    struct Here;
    impl Transport for Here {
        fn label(&self) -> String {
            "here".into()
        }
        fn shell(&self, script: &str, _stdin: bool) -> tokio::process::Command {
            let mut c = tokio::process::Command::new("sh");
            c.arg("-c").arg(script);
            c
        }
    }

    #[tokio::test]
    async fn reads_exact_bytes_from_offsets_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("1.o");
        let bin: Vec<u8> = (0..=255u8).chain(*b"\n\n\r\0end").collect();
        std::fs::write(&p, &bin).unwrap();
        let f = Fetcher::new(Arc::new(Here));
        let path = p.to_str().unwrap();
        assert_eq!(f.read_from(path, 0).await.unwrap(), bin);
        assert_eq!(f.read_from(path, 250).await.unwrap(), &bin[250..]);
        assert_eq!(f.read_from(path, 9999).await.unwrap(), b"");
        let missing = dir.path().join("none");
        assert_eq!(
            f.read_from(missing.to_str().unwrap(), 0).await.unwrap(),
            b""
        );
        let q = dir.path().join("2.e");
        std::fs::write(&q, b"").unwrap();
        assert_eq!(f.read_from(q.to_str().unwrap(), 0).await.unwrap(), b"");
        assert!(f.remove(&[path.to_string(), q.display().to_string()]).await);
        assert!(!p.exists() && !q.exists());
        // Paths that need quoting are left to the fallback.
        assert!(!f.remove(&["/tmp/a b".to_string()]).await);
        assert!(f.read_from("/tmp/a\nb", 0).await.is_none());
    }
}
