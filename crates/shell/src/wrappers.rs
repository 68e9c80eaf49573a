//! What a wrapper program runs: for one simple command's words (program
//! first, by its base name), where the command it runs starts (`env`,
//! `timeout`, `sudo`, `xargs`, `find -exec` …), the shell text it runs
//! (`sh -c`, `su -c`, `eval`), or its words with program-specific global
//! options taken out (`git -C . push` is `git push`).
//!
//! It knows each wrapper's options well enough to find the program word:
//! which options take a value (`-u USER`, `--signal=KILL`), which take
//! positional operands first (`timeout DURATION`, `taskset MASK`). A word
//! that expands where an option or the program would be makes the command
//! unknown rather than guessed. Pure: it reads words, never runs anything.

/// One word, as the reader needs it.
#[derive(Debug, Clone)]
pub(crate) struct Tok {
    /// The literal text, or the text with quotes dropped.
    pub text: String,
    /// Whether the word is the same text whatever the shell's state.
    pub literal: bool,
    /// The word as written (for reasons).
    pub raw: String,
}

/// What a wrapper at the front of a command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Inner {
    /// A command whose words start at this index (into the words after
    /// the wrapper's program word).
    Argv(usize, usize),
    /// Shell text, read again (`sh -c TEXT`, `su -c TEXT`, `eval` words).
    Text(String),
    /// The command's words with global options taken out.
    Run(Vec<String>),
    /// It cannot be told, and why.
    Unknown(String),
}

/// How a wrapper's options read: short letters and long names that take
/// a value, whether `NAME=value` words may come before the program, and
/// how many operands come before it.
struct Spec {
    short: &'static str,
    long: &'static [&'static str],
    assignments: bool,
    operands: usize,
}

const fn spec(short: &'static str, long: &'static [&'static str], operands: usize) -> Spec {
    Spec {
        short,
        long,
        assignments: false,
        operands,
    }
}

/// The wrappers that run the command after their options and operands.
fn argv_spec(name: &str) -> Option<Spec> {
    Some(match name {
        "env" => Spec {
            assignments: true,
            ..spec("uCS", &["--unset", "--chdir", "--split-string"], 0)
        },
        "timeout" => spec("sk", &["--signal", "--kill-after"], 1),
        "nice" => spec("n", &["--adjustment"], 0),
        "nohup" | "setsid" | "unbuffer" | "builtin" => spec("", &[], 0),
        "exec" => spec("a", &[], 0),
        "stdbuf" => spec("ioe", &["--input", "--output", "--error"], 0),
        "ionice" => spec(
            "cnpPu",
            &["--class", "--classdata", "--pid", "--pgid", "--uid"],
            0,
        ),
        "chrt" => spec(
            "TPD",
            &["--sched-runtime", "--sched-period", "--sched-deadline"],
            1,
        ),
        "taskset" => spec("", &[], 1),
        "time" => spec("fo", &["--format", "--output"], 0),
        "sudo" => Spec {
            assignments: true,
            ..spec(
                "CDghpRrtTUu",
                &[
                    "--close-from",
                    "--chdir",
                    "--group",
                    "--host",
                    "--prompt",
                    "--chroot",
                    "--role",
                    "--type",
                    "--command-timeout",
                    "--other-user",
                    "--user",
                ],
                0,
            )
        },
        "doas" => spec("uC", &[], 0),
        "xargs" => spec(
            "adEILnPs",
            &[
                "--arg-file",
                "--delimiter",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            0,
        ),
        "caffeinate" => spec("tw", &[], 0),
        "flock" => spec(
            "wEc",
            &["--timeout", "--conflict-exit-code", "--command"],
            1,
        ),
        "systemd-run" => spec(
            "pEuMHs",
            &[
                "--property",
                "--setenv",
                "--unit",
                "--machine",
                "--host",
                "--slice",
            ],
            0,
        ),
        "busybox" | "toybox" => spec("", &[], 0),
        _ => return None,
    })
}

/// Shells whose `-c` runs the text of their first operand.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "yash"];

/// What `name` (a program's base name) runs, given the words after it.
pub(crate) fn inner(name: &str, rest: &[Tok]) -> Vec<Inner> {
    if name == "command" {
        return command_builtin(rest);
    }
    if let Some(spec) = argv_spec(name) {
        return argv_after(name, &spec, rest);
    }
    if SHELLS.contains(&name) {
        return shell_c(name, rest);
    }
    match name {
        "su" | "runuser" => su_c(rest),
        "eval" => eval(rest),
        "find" => find_exec(rest),
        "git" => global_options(name, rest, GIT_VALUED, GIT_FLAGS, "-C")
            .into_iter()
            .collect(),
        "cargo" => global_options(name, rest, CARGO_VALUED, CARGO_FLAGS, "-C")
            .into_iter()
            .collect(),
        "make" | "gmake" => make_dir(rest).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// Where the options end: the index of the first operand, or why that
/// cannot be told. `--` ends the options.
fn skip_options(name: &str, spec: &Spec, rest: &[Tok], from: usize) -> Result<usize, String> {
    let mut i = from;
    while let Some(t) = rest.get(i) {
        if !t.literal && !option_shaped(t) {
            return Err(unknowable(name, t));
        }
        let w = t.text.as_str();
        if w == "--" {
            return Ok(i + 1);
        }
        if let Some(long) = w.strip_prefix("--") {
            let takes = !long.contains('=') && spec.long.contains(&w);
            i += if takes { 2 } else { 1 };
            continue;
        }
        if w.len() > 1 && w.starts_with('-') {
            i += 1 + short_takes_value(&w[1..], spec.short) as usize;
            continue;
        }
        if spec.assignments && is_assignment(w) {
            i += 1;
            continue;
        }
        return Ok(i);
    }
    Ok(i)
}

/// Whether a cluster of short options (`-oL`, `-n5`, `-u`) ends in one
/// that takes the next word as its value.
fn short_takes_value(cluster: &str, valued: &str) -> bool {
    let chars: Vec<char> = cluster.chars().collect();
    for (k, c) in chars.iter().enumerate() {
        if valued.contains(*c) {
            return k + 1 == chars.len();
        }
    }
    false
}

/// A word that expands but is an option whatever it expands to: `-`
/// and a letter written plainly (`-I{}`).
fn option_shaped(t: &Tok) -> bool {
    let mut c = t.raw.chars();
    c.next() == Some('-') && c.next().is_some_and(|c| c.is_ascii_alphabetic())
}

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(n, _)| {
        !n.is_empty()
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !n.starts_with(|c: char| c.is_ascii_digit())
    })
}

fn unknowable(name: &str, t: &Tok) -> String {
    format!(
        "`{}` may name the program `{name}` runs, and its text is known only when it runs",
        t.raw
    )
}

/// The command after a wrapper's options and operands.
fn argv_after(name: &str, spec: &Spec, rest: &[Tok]) -> Vec<Inner> {
    if matches!(name, "busybox" | "toybox") && rest.first().is_some_and(|t| t.text.starts_with('-'))
    {
        return Vec::new();
    }
    let mut found = Vec::new();
    if name == "env" || name == "flock" {
        found.extend(option_text(
            rest,
            &["-S", "--split-string", "-c", "--command"],
        ));
    }
    let mut at = match skip_options(name, spec, rest, 0) {
        Ok(i) => i,
        Err(why) => return vec![Inner::Unknown(why)],
    };
    for _ in 0..spec.operands {
        if rest.get(at).is_some_and(|t| !t.literal) {
            return vec![Inner::Unknown(unknowable(name, &rest[at]))];
        }
        at += 1;
    }
    if at < rest.len() {
        found.push(Inner::Argv(at, rest.len()));
    }
    found
}

/// The text given to one of `options` (`-S TEXT`, `--split-string=TEXT`):
/// read as shell text.
fn option_text(rest: &[Tok], options: &[&str]) -> Vec<Inner> {
    let mut out = Vec::new();
    for (i, t) in rest.iter().enumerate() {
        let value = if options.contains(&t.text.as_str()) {
            rest.get(i + 1)
        } else {
            None
        };
        let attached = options
            .iter()
            .filter(|o| o.starts_with("--"))
            .find_map(|o| t.text.strip_prefix(&format!("{o}=")));
        // A short option inside a cluster: `-S'rm x'`, `-vS'rm x'` (its
        // value the rest of the word, or the next word).
        let clustered = options
            .iter()
            .filter(|o| o.len() == 2 && o.starts_with('-'))
            .filter_map(|o| o.chars().nth(1))
            .find_map(|letter| {
                let w = t.text.strip_prefix('-').filter(|w| !w.starts_with('-'))?;
                let at = w.find(letter)?;
                (w.len() > 1).then(|| w[at + letter.len_utf8()..].to_string())
            });
        match (value, attached, clustered) {
            (Some(v), _, _) => out.push(text_of(v)),
            (None, Some(a), _) if t.literal => out.push(Inner::Text(a.to_string())),
            (None, None, Some(_)) if !t.literal => out.push(text_of(t)),
            (None, None, Some(rest_of_word)) if rest_of_word.is_empty() => {
                if let Some(v) = rest.get(i + 1) {
                    out.push(text_of(v));
                }
            }
            (None, None, Some(rest_of_word)) => out.push(Inner::Text(rest_of_word)),
            _ => {}
        }
    }
    out
}

fn text_of(t: &Tok) -> Inner {
    if t.literal {
        Inner::Text(t.text.clone())
    } else {
        Inner::Unknown(format!("`{}` is shell text known only when it runs", t.raw))
    }
}

/// `command [-pVv] NAME …`: runs NAME, unless it only describes it.
fn command_builtin(rest: &[Tok]) -> Vec<Inner> {
    let spec = spec("", &[], 0);
    let at = match skip_options("command", &spec, rest, 0) {
        Ok(i) => i,
        Err(why) => return vec![Inner::Unknown(why)],
    };
    let describes = rest[..at]
        .iter()
        .any(|t| t.text.starts_with('-') && t.text.contains(['v', 'V']));
    if describes || at >= rest.len() {
        return Vec::new();
    }
    vec![Inner::Argv(at, rest.len())]
}

/// `sh -c TEXT`, `bash -lc TEXT`, …: the text; a shell with no operand
/// reads its commands from its input, which cannot be told.
fn shell_c(name: &str, rest: &[Tok]) -> Vec<Inner> {
    let mut c = false;
    let mut i = 0;
    while let Some(t) = rest.get(i) {
        if !t.literal {
            return vec![Inner::Unknown(unknowable(name, t))];
        }
        let w = t.text.as_str();
        if w == "--" || w == "-" {
            i += 1;
            break;
        }
        if matches!(w, "--rcfile" | "--init-file" | "-o" | "+o" | "-O" | "+O") {
            i += 2;
            continue;
        }
        if w.starts_with("--") {
            i += 1;
            continue;
        }
        if w.len() > 1 && (w.starts_with('-') || w.starts_with('+')) {
            c |= w.starts_with('-') && w.contains('c');
            i += 1;
            continue;
        }
        break;
    }
    match (c, rest.get(i)) {
        (true, Some(t)) => vec![text_of(t)],
        (true, None) => Vec::new(),
        (false, Some(_)) => Vec::new(),
        (false, None) => vec![Inner::Unknown(format!(
            "`{name}` runs the commands it reads from its input"
        ))],
    }
}

/// `su [-] [user] -c TEXT` (also `--command=TEXT`, `-lc TEXT`).
fn su_c(rest: &[Tok]) -> Vec<Inner> {
    let mut out = option_text(rest, &["-c", "--command", "--session-command"]);
    for (i, t) in rest.iter().enumerate() {
        let w = t.text.as_str();
        if w.len() > 2
            && w.starts_with('-')
            && !w.starts_with("--")
            && w.ends_with('c')
            && let Some(v) = rest.get(i + 1)
        {
            out.push(text_of(v));
        }
    }
    out
}

/// `eval WORDS`: their text, joined by spaces, when every one is literal.
fn eval(rest: &[Tok]) -> Vec<Inner> {
    let words = match rest.first() {
        Some(t) if t.text == "--" => &rest[1..],
        _ => rest,
    };
    if let Some(t) = words.iter().find(|t| !t.literal) {
        return vec![Inner::Unknown(format!(
            "`eval` runs `{}`, text known only when it runs",
            t.raw
        ))];
    }
    if words.is_empty() {
        return Vec::new();
    }
    let text: Vec<&str> = words.iter().map(|t| t.text.as_str()).collect();
    vec![Inner::Text(text.join(" "))]
}

/// `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`, ended by `;`
/// or `+`): each command.
fn find_exec(rest: &[Tok]) -> Vec<Inner> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        if matches!(
            rest[i].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let start = i + 1;
            let end = (start..rest.len())
                .find(|&k| rest[k].text == ";" || rest[k].text == "+")
                .unwrap_or(rest.len());
            if start < end {
                out.push(Inner::Argv(start, end));
            }
            i = end;
        }
        i += 1;
    }
    out
}

const GIT_VALUED: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--attr-source",
    "--exec-path",
];
const GIT_FLAGS: &[&str] = &[
    "-p",
    "-P",
    "--paginate",
    "--no-pager",
    "--bare",
    "--no-replace-objects",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--no-lazy-fetch",
    "--no-advice",
];
const CARGO_VALUED: &[&str] = &["-C", "--config", "-Z", "--color"];
const CARGO_FLAGS: &[&str] = &[
    "-v",
    "-vv",
    "-q",
    "--verbose",
    "--quiet",
    "--locked",
    "--offline",
    "--frozen",
];

/// The command's words without the program's global options (`git -C .
/// -c x=y push` is `git push`; `cargo +nightly -C d build` is `cargo
/// build`), when it has any. A `-c alias.NAME=!TEXT` for git also runs
/// TEXT as shell text.
fn global_options(
    name: &str,
    rest: &[Tok],
    valued: &[&str],
    flags: &[&str],
    dir: &str,
) -> Vec<Inner> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(t) = rest.get(i) {
        let w = t.text.as_str();
        if !t.literal {
            return vec![Inner::Unknown(unknowable(name, t))];
        }
        let attached = valued
            .iter()
            .any(|v| v.starts_with("--") && w.starts_with(&format!("{v}=")));
        if valued.contains(&w) {
            if name == "git" && w == "-c" {
                out.extend(git_alias(rest.get(i + 1)));
            }
            i += 2;
        } else if attached
            || flags.contains(&w)
            || (name == "cargo" && w.starts_with('+'))
            || (w.len() > 2 && w.starts_with(dir))
        {
            i += 1;
        } else {
            break;
        }
    }
    if i > 0 {
        let mut run = vec![name.to_string()];
        run.extend(rest[i.min(rest.len())..].iter().map(|t| t.text.clone()));
        out.push(Inner::Run(run));
    }
    out
}

/// `-c alias.x=!TEXT`: git runs TEXT with the shell.
fn git_alias(value: Option<&Tok>) -> Option<Inner> {
    let t = value?;
    if !t.literal {
        return Some(Inner::Unknown(unknowable("git", t)));
    }
    let (key, val) = t.text.split_once('=')?;
    let text = val.strip_prefix('!')?;
    key.to_ascii_lowercase()
        .starts_with("alias.")
        .then(|| Inner::Text(text.to_string()))
}

/// `make -C DIR …` / `-f FILE`: the words without them.
fn make_dir(rest: &[Tok]) -> Option<Inner> {
    let mut run = vec!["make".to_string()];
    let mut i = 0;
    let mut dropped = false;
    while let Some(t) = rest.get(i) {
        let w = t.text.as_str();
        if matches!(w, "-C" | "-f" | "--directory" | "--file" | "--makefile") {
            i += 2;
            dropped = true;
            continue;
        }
        let attached = ["--directory=", "--file=", "--makefile="]
            .iter()
            .any(|p| w.starts_with(p))
            || (w.len() > 2 && (w.starts_with("-C") || w.starts_with("-f")));
        if attached {
            dropped = true;
        } else {
            run.push(t.text.clone());
        }
        i += 1;
    }
    dropped.then_some(Inner::Run(run))
}
