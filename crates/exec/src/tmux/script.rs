//! Pure text helpers for the managed pane: quoting for tmux's command
//! parser, the per-command wrapper script sourced by the pane's shell,
//! decoding control-mode `%output` payloads, and finding secret-tagged
//! completion markers in pane output.
//!
//! Nothing here performs I/O. The wrapper must stay valid for bash, dash and
//! zsh alike, and a marker is only recognised when it carries the exact
//! per-command token (session secret + command id), so output cannot forge
//! completion.

/// The OSC number our markers use. tmux ignores unknown OSC sequences, so a
/// marker never shows on the pane's screen, while control mode still
/// reports the raw bytes.
pub const OSC: &str = "5379";

/// Quote `s` as one tmux double-quoted argument: `\\`, `\"`, `\$` and
/// control bytes as octal escapes; everything else verbatim.
pub fn tq(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '$' => out.push_str("\\$"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\{:03o}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Decode a control-mode `%output` payload (`\ooo` octal escapes).
pub fn decode_output(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'\\'
            && i + 3 < raw.len()
            && raw[i + 1..i + 4].iter().all(|d| (b'0'..=b'7').contains(d))
        {
            let v = (u32::from(raw[i + 1] - b'0') << 6)
                | (u32::from(raw[i + 2] - b'0') << 3)
                | u32::from(raw[i + 3] - b'0');
            out.push((v & 0xff) as u8);
            i += 4;
        } else {
            out.push(b);
            i += 1;
        }
    }
    out
}

/// Paths of one command's files in the per-session directory on the target.
#[derive(Debug, Clone, PartialEq)]
pub struct CmdFiles {
    pub dir: String,
    pub id: u64,
}

impl CmdFiles {
    pub fn path(&self, ext: &str) -> String {
        format!("{}/{}.{ext}", self.dir, self.id)
    }
    /// Every file a command may leave behind.
    pub fn all(&self) -> Vec<String> {
        ["sh", "c", "o", "e", "of", "ef", "live", "rc", "st"]
            .iter()
            .map(|e| self.path(e))
            .collect()
    }
}

/// A marker the pane prints: `ESC ] 5379 ; token ; kind BEL`.
pub fn marker_printf(token: &str, kind: &str, to_stderr: bool) -> String {
    format!(
        "printf '\\033]{OSC};{token};{kind}\\007'{}",
        if to_stderr { " >&2" } else { "" }
    )
}

/// The zsh/POSIX branch that sources the command file with redirections.
fn source_line(files: &CmdFiles, out: &str, err: &str) -> String {
    let c = files.path("c");
    format!(
        "if [ -n \"${{ZSH_VERSION-}}\" ]; then {{ . {c}; }} >{out} 2>{err}; \
         else {{ command . {c}; }} >{out} 2>{err}; fi\n"
    )
}

/// Show the command where the pane showed the line vigil typed (` . N.sh`):
/// that line is cleared and the command's first line printed in its place
/// (control and bidi-formatting characters dropped, at most 200
/// characters), so the operator watching the pane reads what runs. The text
/// is baked into the wrapper, single-quoted: the shell forks nothing for it
/// (a `head | tr | cut` here cost four processes per command).
fn show_command(command: &str) -> String {
    let shown: String = command
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control() && !vigil_protocol::text::is_bidi_control(*c))
        .take(200)
        .collect();
    format!(
        "printf '\\033[1A\\r\\033[2K$ %s\\n' {}\n",
        crate::transport::sh_quote(&shown)
    )
}

/// The script the pane's shell sources for a command vigil waits for.
///
/// The command text lives in its own file (`N.c`) so a syntax error in it
/// cannot swallow the completion marker; dash needs `command .` for that,
/// zsh's `command` does not run builtins, hence the runtime branch. Output
/// goes straight to files (exact bytes, no extra process). Unless vigil
/// already showed it live (the `N.live` flag), the output (its last 64 KiB
/// per stream) is shown in the pane afterwards; the exit status also goes
/// to `N.rc` (for when flow control dropped the marker), and the exit marker
/// comes last, so when it arrives the shell is back at its prompt.
pub fn wrapper(files: &CmdFiles, token: &str, command: &str) -> String {
    let (o, e, live) = (files.path("o"), files.path("e"), files.path("live"));
    format!(
        "{claim}{show}{src}__vigil_rc=$?\n\
         if [ ! -e {live} ] && {{ [ -s {o} ] || [ -s {e} ]; }}; then tail -q -c 65536 -- {o} {e}; fi\n\
         printf '%s\\n' \"$__vigil_rc\" >{rc}\n\
         printf '\\033]{OSC};{token};rc;%s\\007' \"$__vigil_rc\"; unset __vigil_rc\n",
        claim = start_claim(files),
        show = show_command(command),
        src = source_line(files, &o, &e),
        rc = files.path("rc"),
    )
}

/// The wrapper's first line: create its `st` file exclusively (noclobber is
/// `O_EXCL`) or do nothing at all. Whoever creates it first owns the run:
/// the wrapper (the command starts) or vigil, which claims it when the
/// typed line never started (a shell that discarded it), so a late start
/// can never run the command after vigil reported that nothing ran.
///
/// No subshell (a fork per command): noclobber is set for the one
/// redirection and put back as the operator had it.
fn start_claim(files: &CmdFiles) -> String {
    format!(
        "case $- in *C*) __vigil_nc= ;; *) __vigil_nc=1; set -C ;; esac\n\
         {{ true >{st}; }} 2>/dev/null; __vigil_st=$?\n\
         [ -n \"$__vigil_nc\" ] && set +C\n\
         if [ \"$__vigil_st\" != 0 ]; then unset __vigil_nc __vigil_st; return 0; fi\n\
         unset __vigil_nc __vigil_st\n",
        st = files.path("st")
    )
}

/// The script for a detached command: output goes through FIFOs to two
/// background `tee`s that keep the bytes in files and show them in the pane
/// live (so capture-pane can poll it).
pub fn wrapper_detached(files: &CmdFiles, token: &str) -> String {
    let p = |e: &str| files.path(e);
    format!(
        "[ -p {of} ] || mkfifo {of} {ef}\n\
         ( tee {o} <{of} & tee {e} <{ef} >&2 & )\n\
         {src}\
         printf '\\033]{OSC};{token};rc;%s\\007' \"$?\"\n",
        of = p("of"),
        ef = p("ef"),
        o = p("o"),
        e = p("e"),
        src = source_line(files, &p("of"), &p("ef")),
    )
}

/// The script a probe sources: erases the line vigil typed to source it
/// (the operator sees no plumbing), leaves `ok` (for when flow control
/// dropped the marker) and prints a marker.
pub fn probe(token: &str, ok: &str) -> String {
    format!(
        "printf '\\033[1A\\r\\033[2K'\nprintf 1 >{}\n{}\n",
        tq(ok),
        marker_printf(token, "probe", false)
    )
}

/// What a marker said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// The command finished with this status.
    Exit(i32),
    /// The stdout / stderr copier saw the end of its stream.
    StdoutDone,
    StderrDone,
    /// A probe came back: the shell is at its prompt.
    Probe,
}

/// Longest marker body (`rc;-2147483648` and friends fit easily).
const MAX_BODY: usize = 64;

/// Finds the markers of one token in a pane's output stream, across
/// arbitrary chunk boundaries.
#[derive(Debug)]
pub struct MarkerScanner {
    prefix: Vec<u8>,
    buf: Vec<u8>,
}

impl MarkerScanner {
    pub fn new(token: &str) -> Self {
        MarkerScanner {
            prefix: format!("\x1b]{OSC};{token};").into_bytes(),
            buf: Vec::new(),
        }
    }

    /// Feed output bytes; returns the markers completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Marker> {
        self.buf.extend_from_slice(bytes);
        let mut found = Vec::new();
        loop {
            let Some(start) = find(&self.buf, &self.prefix) else {
                // Keep only what could still be the start of a marker.
                let keep = self.prefix.len().saturating_sub(1);
                if self.buf.len() > keep {
                    self.buf.drain(..self.buf.len() - keep);
                }
                return found;
            };
            let body_start = start + self.prefix.len();
            // A body is short: a BEL further away than MAX_BODY bytes does
            // not end a marker, whether it came in this chunk or a later one.
            let window = self.buf[body_start..].iter().take(MAX_BODY + 1);
            let Some(len) = window.clone().position(|&b| b == 0x07) else {
                self.buf.drain(..start);
                if self.buf.len() > self.prefix.len() + MAX_BODY {
                    // Not a marker of ours after all: drop the prefix.
                    self.buf.drain(..self.prefix.len());
                    continue;
                }
                return found;
            };
            let body =
                String::from_utf8_lossy(&self.buf[body_start..body_start + len]).into_owned();
            self.buf.drain(..body_start + len + 1);
            if let Some(m) = parse_body(&body) {
                found.push(m);
            }
        }
    }
}

fn parse_body(body: &str) -> Option<Marker> {
    match body {
        "o" => Some(Marker::StdoutDone),
        "e" => Some(Marker::StderrDone),
        "probe" => Some(Marker::Probe),
        _ => body
            .strip_prefix("rc;")
            .and_then(|n| n.trim().parse().ok())
            .map(Marker::Exit),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Names of programs that count as "the shell is at its prompt" when they
/// are the pane's foreground process.
pub fn is_shell(name: &str) -> bool {
    let n = name.trim().trim_start_matches('-');
    let n = vigil_shell::program_name(n);
    matches!(
        n,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "busybox" | "fish" | "yash"
    )
}

/// Keep only `[A-Za-z0-9_-]`, mapping anything else to `-`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzzer: a prefix whose BEL is far away swallowed the
    /// next real marker when it all came in one chunk, not when chunked.
    #[test]
    fn a_long_unterminated_body_does_not_swallow_the_next_marker() {
        let stream = format!("\x1b]{OSC};tok;{}\x1b]{OSC};tok;o\x07", "x".repeat(80));
        let mut whole = MarkerScanner::new("tok");
        assert_eq!(whole.push(stream.as_bytes()), vec![Marker::StdoutDone]);
        let mut chunked = MarkerScanner::new("tok");
        let found: Vec<Marker> = stream
            .as_bytes()
            .chunks(5)
            .flat_map(|c| chunked.push(c))
            .collect();
        assert_eq!(found, vec![Marker::StdoutDone]);
    }

    #[test]
    fn tmux_quoting_escapes_what_tmux_interprets() {
        assert_eq!(tq("a b"), "\"a b\"");
        assert_eq!(tq("$HOME\\\"x"), "\"\\$HOME\\\\\\\"x\"");
        assert_eq!(tq("a\nb\tc\u{1}"), "\"a\\nb\\tc\\001\"");
        assert_eq!(tq("é ~ #{x} ;"), "\"é ~ #{x} ;\"");
    }

    #[test]
    fn output_payloads_decode_octal() {
        assert_eq!(decode_output(br"a\011b\015\012\134x"), b"a\tb\r\n\\x");
        assert_eq!(decode_output(br"\033]5379;t;o\007"), b"\x1b]5379;t;o\x07");
        assert_eq!(decode_output(br"end\01"), br"end\01");
    }

    #[test]
    fn markers_are_found_across_chunks_and_need_the_token() {
        let mut s = MarkerScanner::new("sec:7");
        let full = b"junk\x1b]5379;sec:7;rc;3\x07more\x1b]5379;sec:7;o\x07";
        let mut got = Vec::new();
        for chunk in full.chunks(3) {
            got.extend(s.push(chunk));
        }
        assert_eq!(got, vec![Marker::Exit(3), Marker::StdoutDone]);
        // A forged marker with another token is ignored.
        assert!(s.push(b"\x1b]5379;sec:8;rc;0\x07").is_empty());
        assert!(s.push(b"\x1b]5379;bad;rc;0\x07").is_empty());
        // An unterminated prefix followed by garbage does not wedge it.
        assert!(s.push(b"\x1b]5379;sec:7;").is_empty());
        assert!(s.push(&[b'x'; 200]).is_empty());
        assert_eq!(s.push(b"\x1b]5379;sec:7;probe\x07"), vec![Marker::Probe]);
    }

    #[test]
    fn wrapper_mentions_every_file_and_both_shell_branches() {
        let f = CmdFiles {
            dir: "/tmp/d".into(),
            id: 4,
        };
        let w = wrapper(&f, "s:4", "ls -la");
        for p in ["/tmp/d/4.c", "/tmp/d/4.o", "/tmp/d/4.e", "/tmp/d/4.live"] {
            assert!(w.contains(p), "{p}");
        }
        assert!(w.contains("command . /tmp/d/4.c"));
        assert!(w.contains("ZSH_VERSION"));
        assert!(w.contains("5379;s:4;rc;%s"));
        let d = wrapper_detached(&f, "s:4");
        for p in ["/tmp/d/4.of", "/tmp/d/4.ef", "tee /tmp/d/4.o"] {
            assert!(d.contains(p), "{p}");
        }
    }

    /// The shown line is the command's first line, inert, printed by the
    /// shell with no process started: run for real in sh, dash-like and bash.
    #[test]
    fn the_shown_command_is_inert_and_costs_no_process() {
        let hostile = "echo 'it''s' $(id) `id` \x1b[31m\u{202E}red\u{7}\nsecond line";
        let line = show_command(hostile);
        assert!(!line.contains("$(head") && !line.contains("| tr"), "{line}");
        for shell in ["sh", "bash"] {
            let out = std::process::Command::new(shell)
                .args(["-c", &line])
                .output()
                .expect("run the shell");
            let shown = String::from_utf8_lossy(&out.stdout).into_owned();
            assert_eq!(
                shown, "\x1b[1A\r\x1b[2K$ echo 'it''s' $(id) `id` [31mred\n",
                "{shell}"
            );
        }
        let long = "x".repeat(300);
        assert!(show_command(&long).contains(&"x".repeat(200)));
        assert!(!show_command(&long).contains(&"x".repeat(201)));
    }

    #[test]
    fn shells_are_recognised() {
        for s in ["bash", "-bash", "zsh", "dash", "sh", "/bin/sh"] {
            assert!(is_shell(s), "{s}");
        }
        for s in ["sleep", "vim", "less", ""] {
            assert!(!is_shell(s), "{s}");
        }
    }

    #[test]
    fn names_are_sanitized() {
        assert_eq!(sanitize("a b:c.d"), "a-b-c-d");
        assert_eq!(sanitize("ok_1-x"), "ok_1-x");
    }
}
