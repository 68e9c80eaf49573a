//! The replay of a managed pane's shell state in a trial's shell: from the
//! dumps the pane's shell printed of itself (variables, functions,
//! aliases, options, umask; see [`crate::tmux::shell_state`]), the text a
//! trial runs before the command so that `$VAR`, functions and aliases
//! read what the pane has.
//!
//! Pure text: never runs anything. Variables are replayed from an
//! allow-list only — the environment's allow-list and the names vigil's own
//! commands in the pane assigned ([`assigned_names`]); every other variable
//! of the pane (an rc file's `export API=…`, one the operator typed) and
//! any whose name looks like a secret is named in [`Replay::withheld`], so
//! a command expanding it is asked. Functions and aliases likewise: only
//! those vigil's own commands in the pane defined ([`defined_names`]) are
//! captured at all. It never replays what the trial's
//! shell cannot take (read-only and special variables, interactive
//! options).

/// The shells whose state vigil can read and replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellKind {
    Bash,
    Zsh,
    Dash,
}

impl ShellKind {
    /// The kind of the shell at `exe` (`/usr/bin/bash`), by its name.
    pub fn of(exe: &std::path::Path) -> Option<Self> {
        let name = exe.file_name()?.to_str()?;
        match name.trim_start_matches('-') {
            "bash" => Some(Self::Bash),
            "zsh" => Some(Self::Zsh),
            "dash" | "sh" => Some(Self::Dash),
            _ => None,
        }
    }

    /// Whether the dumps include the shell's functions (dash cannot list
    /// them): only then does exit 127 in a trial mean what it means in the
    /// pane.
    pub fn lists_functions(self) -> bool {
        self != Self::Dash
    }
}

/// What the pane's shell printed of itself, one dump per part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dumps {
    /// Variables (`declare -p`, zsh `typeset -p` of each plain parameter,
    /// dash `set`).
    pub vars: String,
    /// Exported names (dash `export -p`; empty for bash and zsh, whose
    /// variable dumps carry the flag).
    pub exports: String,
    /// Read-only names (dash `readonly -p`).
    pub readonly: String,
    /// Function definitions.
    pub functions: String,
    /// Alias definitions.
    pub aliases: String,
    /// Options (`set +o` and `shopt -p`, zsh `setopt`).
    pub options: String,
    /// The umask (`0022`).
    pub umask: String,
}

/// The text a trial runs first, and what was kept out of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replay {
    pub prelude: String,
    /// Variables of the pane not replayed because their names look like
    /// secrets.
    pub withheld: Vec<String>,
    /// The pane's exported variables, replayed or not: assigning one
    /// changes what every later program in the pane sees.
    pub exported: Vec<String>,
}

/// Variables a shell sets itself, read-only or changing on every read.
const SPECIAL: &[&str] = &[
    "_",
    "BASHOPTS",
    "SHELLOPTS",
    "BASH_VERSINFO",
    "BASH_VERSION",
    "EUID",
    "UID",
    "PPID",
    "BASHPID",
    "BASH_ARGC",
    "BASH_ARGV",
    "BASH_ARGV0",
    "BASH_LINENO",
    "BASH_SOURCE",
    "FUNCNAME",
    "GROUPS",
    "PIPESTATUS",
    "DIRSTACK",
    "HISTCMD",
    "LINENO",
    "RANDOM",
    "SRANDOM",
    "SECONDS",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "BASH_COMMAND",
    "BASH_SUBSHELL",
    "SHLVL",
    "BASH_ALIASES",
    "BASH_CMDS",
    "BASH_REMATCH",
    "BASH_EXECUTION_STRING",
    "BASH_LOADABLES_PATH",
    "BASH",
    "COMP_WORDBREAKS",
    "OPTIND",
    "PWD",
    "OLDPWD",
    "SHELL",
    "HISTFILE",
];

/// Options a trial's shell must not take (it is not interactive).
const NOT_REPLAYED: &[&str] = &[
    "history",
    "monitor",
    "emacs",
    "vi",
    "interactive",
    "shinstdin",
    "zle",
    "login",
    "login_shell",
    "privileged",
    "restricted",
    "singlecommand",
    "nolog",
    "interactive_comments",
    "errexit",
    "onecmd",
    "stdin",
];

/// Parts of a variable's name that make it look like a secret (matched
/// inside each `_`-separated part).
const SECRET_PARTS: &[&str] = &["PASSW", "SECRET", "TOKEN", "CREDENTIAL", "PRIVATE"];

/// Whole `_`-separated parts (or endings of one) that make a name look
/// like a secret's.
const SECRET_WORDS: &[&str] = &["KEY", "AUTH", "COOKIE", "PASS", "SESSION", "PWD"];

/// Whether a variable's name looks like a secret's.
pub fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.split('_').any(|part| {
        SECRET_PARTS.iter().any(|w| part.contains(w))
            || SECRET_WORDS
                .iter()
                .any(|w| part.ends_with(w) && part != "PWD" && part != "OLDPWD")
    })
}

/// The variables a command assigns in the shell that runs it, each a
/// value written in the text: `NAME=value` alone, and `export`/`declare`/
/// `typeset`/`readonly NAME=value`, the value literal (no `$`, no
/// substitution: nothing the pane holds and the trial may not have). An
/// allow-list: only simple commands the pane's own shell runs at top level
/// whatever happens ([`vigil_shell::SimpleCommand::top_level`]: not a
/// pipeline's member, which runs in a subshell; not after `&&`/`||`, not
/// `&`, `coproc`, a compound command or a function body, which may not run
/// or not run here).
/// What it cannot tell is simply not named: a name alone (`export X`
/// exports the pane's own `X`), a reference (`declare -n`), a value read
/// from elsewhere (`read`, `printf -v`, `X=$(cat f)`, `X=${!N}`). Such a
/// variable is not replayed, and a command expanding it is asked.
pub fn assigned_names(read: &vigil_shell::Command) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let literal = |a: &String| {
        a.split_once('=')
            .filter(|(_, v)| literal_value(v))
            .map(|(n, _)| n.to_string())
    };
    for cmd in &read.script.commands {
        if !cmd.top_level {
            continue;
        }
        if cmd.words.is_empty() {
            out.extend(cmd.assignments.iter().filter_map(literal));
            continue;
        }
        let words = cmd.loose_words();
        let Some((program, args)) = words.split_first() else {
            continue;
        };
        // The parser keeps a declaration's `NAME=value` words apart.
        let reference = args.iter().any(|a| a.starts_with('-') && a.contains('n'));
        // `local` outside a function assigns nothing (an error).
        if DECLARE.contains(&program.as_str()) && program != "local" && !reference {
            out.extend(cmd.assignments.iter().filter_map(literal));
        }
    }
    out.retain(|n| is_name(n));
    out.sort();
    out.dedup();
    out
}

/// The functions and aliases a command defines in the shell that runs
/// it, at top level whatever happens (see [`assigned_names`]): with them
/// the only functions and aliases of the pane a capture reads
/// ([`crate::tmux::shell_state`]). An rc file's, or one the operator
/// typed, is the operator's text (`alias prod='PGPASSWORD=… psql'`): it
/// does not exist for a trial, and a command naming it is asked (exit 127).
pub fn defined_names(read: &vigil_shell::Command) -> Vec<String> {
    let mut out = read.script.functions.clone();
    for cmd in read.script.commands.iter().filter(|c| c.top_level) {
        if cmd.program().map(vigil_shell::program_name) != Some("alias") {
            continue;
        }
        let words = cmd.loose_words();
        let defs = cmd.assignments.iter().chain(words.iter().skip(1));
        out.extend(defs.filter_map(|d| d.split_once('=').map(|(n, _)| n.to_string())));
    }
    out.retain(|n| {
        !n.is_empty()
            && !n.starts_with('-')
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.:+@".contains(&b))
    });
    out.sort();
    out.dedup();
    out
}

/// The built-ins that declare variables.
const DECLARE: &[&str] = &["export", "declare", "typeset", "readonly", "local"];

/// Whether an assignment's value as written expands no parameter and
/// runs nothing (`$` and `` ` `` only inside single quotes).
fn literal_value(v: &str) -> bool {
    let mut single = false;
    let mut double = false;
    let mut escaped = false;
    for c in v.chars() {
        match c {
            _ if escaped => escaped = false,
            '\'' if !double => single = !single,
            _ if single => {}
            '"' => double = !double,
            '\\' => escaped = true,
            '$' | '`' => return false,
            _ => {}
        }
    }
    !single && !double
}

fn is_name(n: &str) -> bool {
    !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !n.as_bytes()[0].is_ascii_digit()
}

/// Build the replay of `dumps` for a `kind` shell. `replayed(name)`: whether
/// a variable of the pane may reach the trial — an allow-list (the
/// environment's, and what vigil's own commands in the pane assigned):
/// whatever else the pane holds (set by its start-up files, or typed by
/// the operator) is withheld, and a command expanding it is asked. Names
/// that look like a secret's are withheld even when allowed. `None`: a
/// dump could not be read for sure (an unbalanced quote), and nothing is
/// replayed.
pub fn replay(kind: ShellKind, dumps: &Dumps, replayed: &dyn Fn(&str) -> bool) -> Option<Replay> {
    let mut out = Replay::default();
    let readonly: Vec<String> = statements(&dumps.readonly)?
        .iter()
        .filter_map(|s| statement_name(s).map(|(n, _)| n))
        .collect();
    let mut text = String::new();
    for part in [&dumps.vars, &dumps.exports] {
        for s in statements(part)? {
            let Some((name, flags)) = statement_name(s) else {
                continue;
            };
            if flags.contains('x') && !out.exported.contains(&name) {
                out.exported.push(name.clone());
            }
            if flags.contains('r') || readonly.contains(&name) || skipped(&name) {
                continue;
            }
            if secret_name(&name) || !replayed(&name) {
                if !out.withheld.contains(&name) {
                    out.withheld.push(name);
                }
                continue;
            }
            text.push_str(s);
            text.push('\n');
        }
    }
    statements(&dumps.functions)?;
    text.push_str(&dumps.functions);
    text.push('\n');
    for s in statements(&dumps.aliases)? {
        let s = s.trim();
        let s = s.strip_prefix("alias ").unwrap_or(s);
        if !s.is_empty() {
            text.push_str("alias ");
            text.push_str(s.strip_prefix("-- ").unwrap_or(s));
            text.push('\n');
        }
    }
    text.push_str(&options(kind, &dumps.options));
    let umask = dumps.umask.trim();
    if !umask.is_empty() && umask.len() <= 4 && umask.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        text.push_str(&format!("umask {umask}\n"));
    }
    out.prelude = wrap(kind, &text);
    Some(out)
}

/// The replay in a group whose complaints go nowhere; bash reads aliases
/// in a `-c` script only after `expand_aliases`.
fn wrap(kind: ShellKind, text: &str) -> String {
    let aliases = if kind == ShellKind::Bash {
        "shopt -s expand_aliases\n"
    } else {
        ""
    };
    format!("{{\n{text}\n}} >/dev/null 2>&1\n{aliases}")
}

/// What a trial's stderr says when the replay itself could not be read by
/// the shell (the trial is then asked: its result is not the pane's).
pub const REPLAY_FAILED: &str = "vigil: the pane's shell state could not be replayed";

/// The script a trial's `kind` shell runs: the replay, then `command`.
/// zsh parses a whole `-c` text before running any of it, and expands its
/// own built-in aliases (`run-help`) in a function's name while parsing:
/// there the replay is read by `eval` after every alias is removed (the
/// pane's own come back with the replay), and the command by another
/// `eval` after the replay (its aliases apply). A replay zsh cannot parse
/// says [`REPLAY_FAILED`] on stderr, so the trial is asked.
pub fn script(kind: ShellKind, replay: &Replay, command: &str) -> String {
    let q = crate::transport::sh_quote;
    match kind {
        ShellKind::Zsh => format!(
            "builtin unalias -m '*' 2>/dev/null\n\
             builtin eval {} || builtin print -u2 {}\n\
             builtin eval {}\n",
            q(&replay.prelude),
            q(REPLAY_FAILED),
            q(command)
        ),
        _ => format!("{}{command}\n", replay.prelude),
    }
}

fn skipped(name: &str) -> bool {
    SPECIAL.contains(&name) || name.starts_with("__vigil") || name.starts_with("BASH_FUNC")
}

/// The option lines to replay.
fn options(kind: ShellKind, dump: &str) -> String {
    let mut out = String::new();
    for line in dump.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let ok_name = |n: &str| {
            !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !NOT_REPLAYED.contains(&n.to_ascii_lowercase().as_str())
        };
        let keep = match (kind, words.as_slice()) {
            (ShellKind::Zsh, [name]) => ok_name(name).then(|| format!("setopt {name}")),
            (_, ["set", flag @ ("-o" | "+o"), name]) if ok_name(name) => {
                Some(format!("set {flag} {name}"))
            }
            (ShellKind::Bash, ["shopt", flag @ ("-s" | "-u"), name]) if ok_name(name) => {
                Some(format!("shopt {flag} {name}"))
            }
            _ => None,
        };
        if let Some(k) = keep {
            out.push_str(&k);
            out.push('\n');
        }
    }
    out
}

/// The variable a dump statement sets, and its flags: `declare -x N=…`,
/// `typeset -a N=(…)`, `export N=…`, `readonly N`, `N='…'`.
fn statement_name(s: &str) -> Option<(String, String)> {
    let mut words = s.split_whitespace().peekable();
    let first = *words.peek()?;
    let mut flags = String::new();
    if matches!(first, "declare" | "typeset" | "export" | "readonly") {
        words.next();
        if first == "export" {
            flags.push('x');
        }
        while let Some(w) = words.peek() {
            if w.starts_with('-') || w.starts_with('+') {
                flags.push_str(&w[1..]);
                words.next();
            } else {
                break;
            }
        }
    }
    let word = words.next()?;
    let name = word.split(['=', '[']).next()?;
    let valid = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    valid.then(|| (name.to_string(), flags))
}

/// Split a dump into statements at newlines outside quotes (`'…'`,
/// `"…"`, `$'…'`, backslash escapes). `None`: a quote is left open.
pub fn statements(text: &str) -> Option<Vec<&str>> {
    #[derive(PartialEq)]
    enum Q {
        No,
        Single,
        Double,
        Ansi,
    }
    let mut out = Vec::new();
    let (mut q, mut start, mut escaped) = (Q::No, 0, false);
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if escaped {
            escaped = false;
            continue;
        }
        match (&q, b) {
            (Q::Single, b'\'') | (Q::Double, b'"') | (Q::Ansi, b'\'') => q = Q::No,
            (Q::Single, _) => {}
            (Q::Double | Q::Ansi | Q::No, b'\\') => escaped = true,
            (Q::No, b'\'') if i > 0 && bytes[i - 1] == b'$' => q = Q::Ansi,
            (Q::No, b'\'') => q = Q::Single,
            (Q::No, b'"') => q = Q::Double,
            (Q::No, b'\n') => {
                if !text[start..i].trim().is_empty() {
                    out.push(&text[start..i]);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    if q != Q::No || escaped {
        return None;
    }
    if !text[start..].trim().is_empty() {
        out.push(&text[start..]);
    }
    Some(out)
}

#[cfg(test)]
#[path = "shell_replay_tests.rs"]
mod tests;
