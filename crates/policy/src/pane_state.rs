//! What a command does to a managed pane's shell, read from its text, for
//! `approval = "by_effect"`: which shell-state changes still need the
//! operator ([`hook`]: they would run code later, outside any trial), and
//! whether a command does nothing but change that state ([`state_only`]),
//! and whether that change is quiet enough to make unasked
//! ([`quiet_state`]: after a clean trial it runs for real in the pane, so
//! the pane and the model agree; an alias, an export or an option, which
//! later commands there would run with, is asked).
//!
//! The trial itself replays the pane's captured state (variables,
//! functions, aliases, options, directory, umask), so reading that state
//! (`$VAR`, a function, an alias) is no reason to ask. Pure: reads a parsed
//! [`Script`], never runs anything. What cannot be read for sure is asked.

use super::pane_names::{GUARDED_NAMES, SHELL_VARS};
use vigil_shell::{Script, SimpleCommand};

/// Variables whose value the pane's shell runs or reads later, outside any
/// trial (prompts, hooks, start-up files, the loader, word splitting of
/// vigil's own wrapper), or that end the shell.
const HOOK_VARS: &[&str] = &[
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT",
    "PROMPT2",
    "RPROMPT",
    "RPS1",
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "FPATH",
    "fpath",
    "PATH",
    "path",
    "IFS",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "HISTFILE",
    "histfile",
    "TMOUT",
    "MAIL",
    "MAILPATH",
    "MAILCHECK",
    "BASH_XTRACEFD",
    "SHELLOPTS",
    "BASHOPTS",
    "BASH_FUNC",
    "HOME",
    "precmd_functions",
    "preexec_functions",
    "chpwd_functions",
    "periodic_functions",
    "zshexit_functions",
    "zshaddhistory_functions",
    "PERIOD",
    "NULLCMD",
    "READNULLCMD",
    "functions",
    "aliases",
    "galiases",
    "saliases",
    "commands",
    "dis_functions",
    "dis_aliases",
    "dis_galiases",
    "dis_saliases",
];

/// Built-ins that install code to run later (traps, key bindings,
/// completions, hooks), run a file or text in the pane's shell, replace or
/// end the shell, or change its limits.
const HOOK_BUILTINS: &[&str] = &[
    "trap",
    "exec",
    "exit",
    "logout",
    "enable",
    "bind",
    "bindkey",
    "zle",
    "complete",
    "compdef",
    "fc",
    "history",
    "source",
    ".",
    "eval",
    "add-zsh-hook",
    "autoload",
    "ulimit",
    "disable",
    "zmodload",
    "sched",
    "coproc",
];

/// Built-ins that change only the pane's shell (its directory,
/// variables, aliases, options), with nothing of their own outside it.
const STATE_BUILTINS: &[&str] = &[
    "cd", "pushd", "popd", "export", "unset", "alias", "unalias", "set", "shopt", "setopt",
    "unsetopt", "declare", "typeset", "readonly", "umask", "hash", "rehash", "local",
];

/// `set -o`/`shopt -s`/`setopt` options that may change unasked: they
/// change how later commands (all tried first) expand or fail, never run
/// code by themselves.
const SAFE_OPTIONS: &[&str] = &[
    "pipefail",
    "noclobber",
    "xtrace",
    "nounset",
    "noglob",
    "globstar",
    "dotglob",
    "extglob",
    "nullglob",
    "nocaseglob",
    "failglob",
    "extendedglob",
    "globdots",
    "-x",
    "+x",
    "-u",
    "+u",
    "-C",
    "+C",
    "-f",
    "+f",
    "-o",
    "+o",
    "-s",
    "-u",
    "--",
];

/// Why a command that changes the pane's shell still needs the operator.
pub fn hook(script: &Script) -> Option<String> {
    if script.error.is_some() {
        return None; // judged elsewhere: an unparsed text is asked anyway
    }
    for cmd in &script.commands {
        if let Some(why) = command_hook(cmd) {
            return Some(why);
        }
    }
    if script.features.function {
        let names = function_names(&script.text);
        if names.is_empty() {
            return Some("it defines a function whose name vigil cannot read".into());
        }
        if let Some(n) = names.iter().find(|n| guarded(n)) {
            return Some(format!(
                "it defines a function `{n}`, a name the pane's shell or vigil's own wrapper runs \
                 later outside any trial"
            ));
        }
    }
    None
}

fn command_hook(cmd: &SimpleCommand) -> Option<String> {
    let name = cmd.program().map(vigil_shell::program_name);
    for a in &cmd.assignments {
        // `alias NAME=…` is read as an assignment by the parser.
        if name == Some("alias") {
            continue;
        }
        if let Some(why) = hook_var(assigned_name(a)) {
            return Some(why);
        }
    }
    let name = name?;
    let mut words = cmd.loose_words();
    if name == "alias" {
        words.extend(cmd.assignments.iter().cloned());
    }
    let args = &words[1..];
    if HOOK_BUILTINS.contains(&name) {
        return Some(format!(
            "`{name}` installs or runs code in the pane's shell that would run later, outside \
             any trial"
        ));
    }
    match name {
        "export" | "unset" | "declare" | "typeset" | "readonly" | "local" => args
            .iter()
            .filter(|w| !w.starts_with('-'))
            .find_map(|w| hook_var(assigned_name(w))),
        "alias" => alias_hook(args),
        "set" | "shopt" | "setopt" | "unsetopt" => option_hook(name, args),
        "hash" if !args.is_empty() => Some(
            "`hash` with arguments changes where the pane's \
             shell finds programs later"
                .into(),
        ),
        _ => None,
    }
}

fn assigned_name(word: &str) -> &str {
    let name = word.split_once('=').map_or(word, |(n, _)| n);
    name.trim_end_matches('+').split('[').next().unwrap_or(name)
}

fn hook_var(name: &str) -> Option<String> {
    let hooked = HOOK_VARS.contains(&name)
        || name.starts_with("BASH_FUNC")
        || name.starts_with("__vigil")
        || name.starts_with("TRAP");
    hooked.then(|| format!("`{name}` is read or run by the pane's shell later, outside any trial"))
}

fn alias_hook(args: &[String]) -> Option<String> {
    for a in args {
        if a.starts_with('-') {
            return Some(format!(
                "`alias {a}` makes an alias that expands anywhere on a line, outside any trial"
            ));
        }
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        if a.contains('=') && guarded(name) {
            return Some(format!(
                "it defines an alias `{name}`, a name the pane's shell or vigil's own wrapper \
                 runs later outside any trial"
            ));
        }
    }
    None
}

fn option_hook(name: &str, args: &[String]) -> Option<String> {
    if name == "set" && args.first().is_some_and(|a| a == "--") {
        return None; // positional parameters only
    }
    let bad = args.iter().find(|a| {
        let o = a.to_ascii_lowercase().replace('_', "");
        !SAFE_OPTIONS.contains(&o.as_str()) && !SAFE_OPTIONS.contains(&a.as_str())
    })?;
    Some(format!(
        "`{name} {bad}` changes how the pane's shell runs vigil's own commands later; only a \
         few options may change unasked"
    ))
}

fn guarded(name: &str) -> bool {
    GUARDED_NAMES.contains(&name) || name.starts_with("TRAP") || name.starts_with("__vigil")
}

/// The names a script's function definitions give (`f() …`, `function f
/// …`), read from its text.
fn function_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let words: Vec<&str> = text.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        if *w == "function"
            && let Some(next) = words.get(i + 1)
        {
            out.push(
                next.trim_end_matches("()")
                    .trim_end_matches('{')
                    .to_string(),
            );
        }
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(pos) = text[i..].find('(') {
        let at = i + pos;
        let after = text[at + 1..].trim_start();
        if after.starts_with(')') {
            let before = text[..at].trim_end();
            let start = before
                .rfind(|c: char| c.is_whitespace() || ";&|(){}".contains(c))
                .map_or(0, |p| p + 1);
            let name = &before[start..];
            if !name.is_empty() && !name.starts_with('$') {
                out.push(name.to_string());
            }
        }
        i = at + 1;
        if i >= bytes.len() {
            break;
        }
    }
    out
}

/// Whether the script does nothing but change the pane's shell: every
/// command a state built-in (`cd`, `export`, `alias`, `set -o`…) or a bare
/// assignment, function definitions, no command substitution, nothing in
/// a subshell or pipeline, no word expanding more than a plain parameter,
/// no form that prints the shell's state. After a clean trial such a
/// script runs for real in the pane when it is also [`quiet_state`], and
/// is asked otherwise: built-ins with these words only change the shell.
pub fn state_only(script: &Script) -> bool {
    let f = &script.features;
    if script.error.is_some()
        || script.commands.is_empty()
        || f.command_substitution
        || f.process_substitution
        || f.subshell
        || f.background
        || f.pipeline
        || f.here_doc
        || f.too_deep
    {
        return false;
    }
    script.commands.iter().all(|c| {
        c.redirects.is_empty()
            && c.words.iter().all(|w| plain_expansions(&w.raw))
            && c.assignments.iter().all(|a| plain_expansions(a))
            && match c.program().map(vigil_shell::program_name) {
                None => c.words.is_empty() && !c.assignments.is_empty(),
                Some(p) => STATE_BUILTINS.contains(&p) && changes_only(p, c),
            }
    })
}

/// Options a declaration may carry and still only set what it names
/// (not `-p`/`-f`/`-m`, which print; not `-n`, a reference to another
/// variable; not zsh's `-T`, a tie).
const DECLARE_OPTIONS: &[&str] = &["-x", "-g", "-i", "-a", "-A", "-l", "-u", "-r"];

/// Whether a state built-in's words only change the shell, printing
/// none of it (an allow-list of shapes): a declaration or `alias` sets
/// every name it is given a value (with no name, or a name alone, it
/// prints the shell's variables or aliases into the pane, and the pane's
/// output is the model's); `unset` and the option built-ins name what
/// they change.
fn changes_only(program: &str, cmd: &SimpleCommand) -> bool {
    let words = cmd.loose_words();
    let args = &words[1.min(words.len())..];
    match program {
        "export" | "declare" | "typeset" | "readonly" | "local" => {
            let (opts, names): (Vec<&String>, Vec<&String>) =
                args.iter().partition(|w| w.starts_with(['-', '+']));
            opts.iter().all(|o| DECLARE_OPTIONS.contains(&o.as_str()))
                && !(names.is_empty() && cmd.assignments.is_empty())
                && names.iter().all(|w| w.contains('='))
        }
        "alias" => {
            !(args.is_empty() && cmd.assignments.is_empty()) && args.iter().all(|w| w.contains('='))
        }
        "set" => !args.is_empty() && args != ["-o"] && args != ["+o"],
        "unset" | "shopt" | "setopt" | "unsetopt" => {
            args.iter().any(|w| !w.starts_with(['-', '+']))
        }
        _ => true,
    }
}

/// Whether a word as written expands nothing but plain parameters
/// (`$NAME`, `${NAME}`) and `~`: an allow-list. The trial had those of the
/// pane's variables it may have and names the others (a command expanding
/// a withheld one is asked); an indirection (`${!N}`, zsh's `${(P)N}`), a
/// substitution or arithmetic could read a variable the text does not
/// name, withheld from the trial but there in the pane.
fn plain_expansions(raw: &str) -> bool {
    let b = raw.as_bytes();
    let mut i = 0;
    let (mut single, mut double) = (false, false);
    while i < b.len() {
        match (single, b[i]) {
            (true, b'\'') => single = false,
            (true, _) => {}
            (false, b'\'') if !double => single = true,
            (false, b'"') => double = !double,
            (false, b'\\') => i += 1,
            (false, b'`') => return false,
            (false, b'$') => {
                let rest = &raw[i + 1..];
                let name = match rest.strip_prefix('{') {
                    Some(inner) => match inner.find('}') {
                        Some(end) => {
                            i += end + 2;
                            &inner[..end]
                        }
                        None => return false,
                    },
                    None => {
                        let len = rest
                            .bytes()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                            .count();
                        i += len;
                        &rest[..len]
                    }
                };
                let plain = name.bytes().next().is_some_and(|c| !c.is_ascii_digit())
                    && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
                if !plain {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    true
}

/// Options that may change in the pane unasked: they only make later
/// commands fail sooner, never change what they run or expand to
/// (`dotglob` would make an approved `rm -r build/*` take the dotfiles
/// too) nor print them (`xtrace` would put the operator's own commands,
/// expanded — `mysql -p"$DB_PASS"` — on the screen `capture-pane` reads).
const QUIET_OPTIONS: &[&str] = &[
    "pipefail",
    "nounset",
    "noclobber",
    "+x",
    "-u",
    "+u",
    "-C",
    "+C",
    "-o",
    "+o",
];

/// Whether a [`state_only`] script may change the pane unasked: it changes
/// only the directory (`cd`, `pushd`, `popd`), shell variables (`X=1`;
/// whether `X` is exported there is the caller's to check), `unset`, the
/// program cache (`hash -r`) or a quiet option ([`QUIET_OPTIONS`]). An
/// alias, an export, a declaration, `umask` or another option changes what
/// later commands in the pane run or see — the operator's own and the ones
/// they approve, which run there unconfined (`alias make=…`, `export
/// NODE_OPTIONS=…`, `umask 000`): asked, so that `y` makes it there.
pub fn quiet_state(script: &Script) -> bool {
    state_only(script)
        && script.commands.iter().all(|c| {
            let words = c.loose_words();
            let args: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
            match c.program().map(vigil_shell::program_name) {
                // A plain name (no subscript, no `+=`) no shell reads.
                None => c.assignments.iter().all(|a| {
                    let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
                    !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                        && !name.as_bytes()[0].is_ascii_digit()
                        && !SHELL_VARS.contains(&name)
                        && !name.starts_with("LC_")
                }),
                Some("cd" | "pushd" | "popd" | "rehash") => true,
                Some("unset") => args.iter().all(|a| match a.starts_with('-') {
                    true => !a.contains('f'),
                    false => !(SHELL_VARS.contains(a) || a.starts_with("LC_")),
                }),
                Some("hash") => args == ["-r"],
                Some("set") if args.first() == Some(&"--") => true,
                Some("set" | "setopt" | "unsetopt") => args.iter().all(|a| {
                    let o = a.to_ascii_lowercase().replace('_', "");
                    QUIET_OPTIONS.contains(&o.as_str()) || QUIET_OPTIONS.contains(a)
                }),
                _ => false,
            }
        })
}

/// The variables a script assigns with a bare `NAME=value` or unsets:
/// whether one of them is exported in the pane is the caller's to check
/// (changing it changes what every later program there sees).
pub fn bare_assignments(script: &Script) -> Vec<String> {
    let mut out: Vec<String> = script
        .commands
        .iter()
        .filter(|c| c.words.is_empty())
        .flat_map(|c| &c.assignments)
        .filter_map(|a| a.split_once('=').map(|(n, _)| assigned_name(n).to_string()))
        .collect();
    for c in &script.commands {
        if c.program().map(vigil_shell::program_name) == Some("unset") {
            out.extend(
                c.loose_words()
                    .into_iter()
                    .skip(1)
                    .filter(|w| !w.starts_with('-')),
            );
        }
    }
    out
}

/// Whether the script changes the pane's shell anywhere (a state built-in,
/// a bare assignment, a function definition): a clean trial of a script
/// that does more than that leaves the pane as it was, and the model is
/// told so.
pub fn changes_state(script: &Script) -> bool {
    script.features.function
        || script
            .commands
            .iter()
            .any(|c| match c.program().map(vigil_shell::program_name) {
                None => c.words.is_empty() && !c.assignments.is_empty(),
                Some(p) => STATE_BUILTINS.contains(&p),
            })
}

#[cfg(test)]
#[path = "pane_state_tests.rs"]
mod tests;
