//! The typed result of a preview ([`PreviewReport`]) and its plain-text
//! form (what `vigil policy check --preview` prints).
//!
//! Data only: nothing here runs, mounts or reads a file.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What happened to one path in the throwaway view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectKind {
    /// Not there before.
    Created,
    /// There before, changed (content, or metadata only: see `note`).
    Modified,
    /// There before, removed.
    Deleted,
    /// A directory removed and made again (everything it held is gone).
    Replaced,
}

impl EffectKind {
    /// One letter, as `git status --short` would put it.
    pub const fn letter(self) -> char {
        match self {
            EffectKind::Created => 'A',
            EffectKind::Modified => 'M',
            EffectKind::Deleted => 'D',
            EffectKind::Replaced => 'R',
        }
    }
}

/// Size and SHA-256 of a file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blob {
    pub size: u64,
    /// Lower-case hex; empty when the file was too large to hash.
    pub sha256: String,
}

/// One path the command changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEffect {
    /// Absolute path on the real machine.
    pub path: PathBuf,
    pub kind: EffectKind,
    /// The path is a directory (created, deleted or replaced).
    #[serde(default)]
    pub dir: bool,
    /// Unified diff of a text file (`---`/`+++` headers, hunks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The diff was cut at the size cap.
    #[serde(default)]
    pub diff_cut: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<Blob>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<Blob>,
    /// What a diff cannot say: binary, metadata only, a symlink's target,
    /// how many files a deleted directory held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A network attempt the view refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedConnection {
    /// `203.0.113.5:443`, `[::1]:22`, `unix:/run/docker.sock`.
    pub address: String,
    /// The system call (`connect`, `sendto`, `sendmsg`).
    pub call: String,
    /// The program that tried (its `comm`).
    pub program: String,
    /// How many times (the same call, address and program).
    #[serde(default = "one")]
    pub times: u32,
}

const fn one() -> u32 {
    1
}

/// A process still running when the command's own process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leftover {
    pub pid: i32,
    pub command: String,
}

/// Everything a preview saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PreviewReport {
    pub command: String,
    pub cwd: PathBuf,
    /// The directories the view made writable (copy-on-write).
    pub writable: Vec<PathBuf>,
    /// `None` when the command was killed (time limit or a signal).
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    pub duration_ms: u64,
    pub files: Vec<FileEffect>,
    /// More changes than the report lists.
    #[serde(default)]
    pub files_cut: usize,
    pub refused: Vec<RefusedConnection>,
    /// Places outside the view's writable roots the command tried to
    /// change (the write failed in the view; a real run would try it).
    #[serde(default)]
    pub writes_refused: Vec<String>,
    /// Masked secret places the command read or tried to change.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Places of the machine outside the view's readable world that the
    /// command tried to read (they did not exist for it; a real run would
    /// have read them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads_outside: Vec<String>,
    /// A bound of the view that stopped the command, in words ("memory
    /// past 1024 MB", "output past 64 MB", …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_hit: Option<String>,
    pub leftovers: Vec<Leftover>,
    pub hit_time_limit: bool,
    pub hit_size_limit: bool,
    /// The view's process or memory limit refused something (a fork or an
    /// allocation failed there).
    #[serde(default)]
    pub hit_task_limit: bool,
    /// Limits that could not be set on this machine, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unlimited: Vec<String>,
    pub time_limit_ms: u64,
    pub size_limit: u64,
    /// The first part of stdout and stderr together.
    pub output_head: String,
    /// The last part, when the output was longer than head and tail.
    #[serde(default)]
    pub output_tail: String,
    pub output_bytes: u64,
    /// What a preview cannot show (always said).
    pub limits: Vec<String>,
}

/// The C library's user and group lookup services: asked on every `ls -l`,
/// refused in the view, answered from `/etc` instead, with the same result
/// a real run gets. Not an effect.
const LOOKUP_SOCKETS: &[&str] = &["unix:/var/run/nscd/socket", "unix:/run/nscd/socket"];

/// Whether a refused connection was a name lookup (the resolver's local
/// sockets), not a reach outside.
pub fn is_lookup(address: &str) -> bool {
    !address.contains("/..")
        && (LOOKUP_SOCKETS.contains(&address) || address.starts_with("unix:/run/systemd/userdb/"))
}

/// What every preview says it cannot reproduce.
pub const HONEST_LIMITS: &[&str] = &[
    "a preview cannot reproduce network effects, time, randomness or remote state",
    "only the working tree, home and /tmp are writable in the view (home and /tmp start empty); \
     writes elsewhere fail there",
    "only the working tree, the system's program places, /etc as every user may read it and the \
     tool homes are readable; nothing else exists in the view",
    "the command runs without any capability (even as root), secret places masked",
    "a command can tell it runs in a preview and may act otherwise when approved",
];

impl PreviewReport {
    /// The one-line verdict for a card title.
    pub fn headline(&self) -> String {
        let status = match (self.exit_code, self.signal) {
            (_, _) if self.hit_time_limit => {
                format!("stopped at the {} s limit", self.time_limit_ms / 1000)
            }
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "no exit status".into(),
        };
        let mut parts = vec![status, plural(self.files.len() + self.files_cut, "change")];
        if !self.refused.is_empty() {
            let n = self.refused.iter().map(|r| r.times as usize).sum();
            parts.push(plural(n, "refused connection"));
        }
        if !self.leftovers.is_empty() {
            parts.push(plural(self.leftovers.len(), "leftover process"));
        }
        if self.hit_size_limit {
            parts.push("hit the size limit".into());
        }
        parts.join(" · ")
    }

    /// Everything the trial shows a real run would have done or met, in
    /// words for the card and the record; empty when the view saw no
    /// effect at all: no file changed, no write tried outside the
    /// writable places, no connection tried, no secret place read, nothing
    /// left running, no limit reached, no death by a signal.
    pub fn effects(&self) -> Vec<String> {
        let mut out = Vec::new();
        let changed = self.files.len() + self.files_cut;
        if changed > 0 {
            let first = self.files.first().map(|f| f.summary()).unwrap_or_default();
            out.push(format!("changes {}: {first}", plural(changed, "file")));
        }
        if let Some(w) = self.writes_refused.first() {
            out.push(format!(
                "writes outside the view's writable places ({}): {w}",
                self.writes_refused.len()
            ));
        }
        if let Some(r) = self.refused.iter().find(|r| !is_lookup(&r.address)) {
            out.push(format!(
                "tries the network: {} {} ({})",
                r.call, r.address, r.program
            ));
        }
        if let Some(s) = self.secrets.first() {
            out.push(format!("touches a secret place: {s}"));
        }
        if let Some(r) = self.reads_outside.first() {
            let more = match self.reads_outside.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            out.push(format!("reads outside the readable places: {r}{more}"));
        }
        if let Some(b) = &self.bound_hit {
            out.push(format!("reaches a bound of the view: {b}"));
        }
        if let Some(l) = self.leftovers.first() {
            out.push(format!("leaves a process running: {}", l.command));
        }
        if self.hit_time_limit {
            out.push(format!(
                "runs past the view's {} s limit",
                self.time_limit_ms / 1000
            ));
        }
        if self.hit_size_limit {
            out.push("fills the view's writable space".into());
        }
        if self.hit_task_limit {
            out.push("reaches the view's process or memory limit".into());
        }
        if let (None, Some(sig)) = (self.exit_code, self.signal) {
            out.push(format!("was killed by signal {sig}"));
        }
        out
    }

    /// Whether the command tried the network (then its effects are partial).
    pub fn needs_network(&self) -> bool {
        self.refused.iter().any(|r| !r.address.starts_with("unix:"))
    }

    /// Notes on limits hit, in words an operator can act on.
    pub fn limit_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.hit_time_limit {
            notes.push(format!(
                "time limit: stopped after {} ms; effects up to then are shown",
                self.time_limit_ms
            ));
        }
        if self.hit_size_limit {
            notes.push(format!(
                "size limit: the view's {} MB of writable space filled up; writes past it failed \
                 (no space left on device) and the effects are partial",
                self.size_limit / (1024 * 1024)
            ));
        }
        if self.hit_task_limit {
            notes.push(
                "process limit: a fork or an allocation was refused in the view \
                 (at most 512 processes, 1 GB of memory)"
                    .into(),
            );
        }
        for u in &self.unlimited {
            notes.push(format!("unlimited: {u}"));
        }
        if self.needs_network() {
            notes.push("needs network: its network effects were not previewed".into());
        }
        notes
    }

    /// The whole report as plain text (the command line's form).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "preview:   {}", self.headline());
        let _ = writeln!(s, "command:   {}", self.command);
        let _ = writeln!(s, "in:        {}", self.cwd.display());
        for note in self.limit_notes() {
            let _ = writeln!(s, "LIMIT      {note}");
        }
        let _ = writeln!(s, "\nfiles ({}):", self.files.len() + self.files_cut);
        if self.files.is_empty() {
            let _ = writeln!(s, "  (no file changed)");
        }
        for f in &self.files {
            let _ = writeln!(s, "  {}", f.summary());
        }
        for f in self.files.iter().filter(|f| f.diff.is_some()) {
            let _ = writeln!(s, "\n{}", f.diff.as_deref().unwrap_or_default().trim_end());
            if f.diff_cut {
                let _ = writeln!(s, "… diff cut");
            }
        }
        if self.files_cut > 0 {
            let _ = writeln!(s, "  … {} more not listed", self.files_cut);
        }
        self.write_processes(&mut s);
        self.write_output(&mut s);
        let _ = writeln!(s, "\nlimits of a preview:");
        for l in &self.limits {
            let _ = writeln!(s, "  - {l}");
        }
        s
    }

    fn write_processes(&self, s: &mut String) {
        for r in &self.refused {
            let times = if r.times > 1 {
                format!(", {}×", r.times)
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "refused:   {} {} ({}{times})",
                r.call, r.address, r.program
            );
        }
        for l in &self.leftovers {
            let _ = writeln!(s, "left behind (killed): pid {} {}", l.pid, l.command);
        }
        for r in &self.reads_outside {
            let _ = writeln!(s, "not readable in the view: {r}");
        }
        for w in &self.writes_refused {
            let _ = writeln!(s, "write refused: {w}");
        }
        for sec in &self.secrets {
            let _ = writeln!(s, "secret place: {sec}");
        }
        if let Some(b) = &self.bound_hit {
            let _ = writeln!(s, "stopped:   {b}");
        }
    }

    fn write_output(&self, s: &mut String) {
        let _ = writeln!(s, "\noutput ({} bytes):", self.output_bytes);
        let _ = write!(s, "{}", self.output_head);
        if !self.output_tail.is_empty() {
            let _ = writeln!(s, "\n…");
            let _ = write!(s, "{}", self.output_tail);
        }
        if !s.ends_with('\n') {
            s.push('\n');
        }
    }
}

impl FileEffect {
    /// `M /repo/f (+1 -1)`, `D /repo/dir/ (3 files)`.
    pub fn summary(&self) -> String {
        let slash = if self.dir { "/" } else { "" };
        let mut line = format!("{} {}{slash}", self.kind.letter(), self.path.display());
        if let Some(d) = &self.diff {
            let (add, del) = count_changes(d);
            let _ = write!(line, " (+{add} -{del})");
        }
        if let Some(n) = &self.note {
            let _ = write!(line, " ({n})");
        }
        line
    }
}

/// Added and removed lines of a unified diff.
pub fn count_changes(diff: &str) -> (usize, usize) {
    let body = diff
        .lines()
        .filter(|l| !l.starts_with("+++") && !l.starts_with("---"));
    body.fold((0, 0), |(a, d), l| match l.as_bytes().first() {
        Some(b'+') => (a + 1, d),
        Some(b'-') => (a, d + 1),
        _ => (a, d),
    })
}

/// `1 change`, `2 changes`: a count with its noun.
pub fn plural(n: usize, word: &str) -> String {
    match n {
        1 => format!("1 {word}"),
        _ if word.ends_with('s') => format!("{n} {word}es"),
        _ => format!("{n} {word}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_of_words_ending_in_s() {
        assert_eq!(plural(2, "leftover process"), "2 leftover processes");
        assert_eq!(plural(1, "leftover process"), "1 leftover process");
        assert_eq!(plural(3, "change"), "3 changes");
    }

    #[test]
    fn the_headline_and_notes_say_what_was_hit() {
        let mut r = PreviewReport {
            exit_code: Some(0),
            time_limit_ms: 10_000,
            size_limit: 8 << 20,
            ..PreviewReport::default()
        };
        assert_eq!(r.headline(), "exit 0 · 0 changes");
        r.hit_time_limit = true;
        r.hit_size_limit = true;
        r.refused.push(RefusedConnection {
            address: "127.0.0.1:9".into(),
            call: "connect".into(),
            program: "curl".into(),
            times: 1,
        });
        assert!(r.headline().starts_with("stopped at the 10 s limit"));
        let notes = r.limit_notes().join("\n");
        assert!(notes.contains("8 MB"), "{notes}");
        assert!(notes.contains("needs network"), "{notes}");
    }

    #[test]
    fn changes_are_counted_without_headers() {
        let d = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(count_changes(d), (1, 1));
    }
}
