//! Session prefix rules ("approve `git status` and what follows it for the
//! session"), on parsed argument lists (see [`vigil_shell`]).
//!
//! A rule is the literal words of one plain simple command. It covers a
//! command only when the command is one plain simple command (no pipe,
//! list, substitution, expansion, assignment, or redirection other than to
//! `/dev/null` / `2>&1`) whose literal words start with the rule's words,
//! and the words after the prefix are themselves allowed for unasked
//! running: for a program on the allow-list or one that can run code, the
//! whole command must pass [`allow_list::check`]; for any other program
//! they must be plain operands (no word starting with `-` or `+`).
//! A rule on a bare program that can run code (`git`, `find`, `sed`, `awk`,
//! `xargs`, `env`, shells, interpreters, `make`…) is refused with a sentence
//! that says why. An exactly approved command is matched elsewhere, by
//! equality.
//!
//! It only compares words; it never decides on its own (the approval
//! broker also asks for anything vigil rates high) and never runs anything.

use super::allow_list;
use vigil_protocol::{PrefixChoice, PrefixChoices};
use vigil_shell::{self as shell, Redirect, Script, SimpleCommand};

/// Programs whose arguments can make them run other code (or that run
/// another program given as an argument).
const CODE_RUNNERS: &[&str] = &[
    "git",
    "find",
    "sed",
    "awk",
    "gawk",
    "mawk",
    "xargs",
    "env",
    "timeout",
    "nice",
    "nohup",
    "command",
    "exec",
    "builtin",
    "eval",
    "source",
    ".",
    "sudo",
    "su",
    "doas",
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "python",
    "python3",
    "perl",
    "ruby",
    "node",
    "php",
    "lua",
    "make",
    "cargo",
    "npm",
    "npx",
    "yarn",
    "pip",
    "go",
    "docker",
    "podman",
    "kubectl",
    "ssh",
    "tmux",
    "screen",
    "watch",
    "strace",
    "gdb",
    "busybox",
    "vi",
    "vim",
    "nvim",
    "emacs",
    "less",
    "more",
    "man",
    "tar",
    "rsync",
    "zip",
    "unzip",
    "parallel",
    "stdbuf",
    "setsid",
    "flock",
    "chroot",
    "unshare",
    "nsenter",
    "script",
    "expect",
    "jq",
    "rg",
    "osascript",
    "systemd-run",
];

/// Whether `program` can run other code through its arguments.
pub fn runs_code(program: &str) -> bool {
    let base = vigil_shell::program_name(program);
    CODE_RUNNERS.contains(&base)
}

/// The one plain simple command `text` is, with nothing assigned and
/// nothing redirected except to /dev/null or onto a descriptor.
fn plain_command(text: &str) -> Option<(SimpleCommand, Vec<String>)> {
    plain_of(&shell::parse(text))
}

/// [`plain_command`] of an already parsed script.
fn plain_of(script: &Script) -> Option<(SimpleCommand, Vec<String>)> {
    let cmd = script.single()?.clone();
    let clean = cmd.assignments.is_empty()
        && cmd
            .redirects
            .iter()
            .all(|r| matches!(r, Redirect::DevNull | Redirect::DupFd));
    let words: Vec<String> = cmd.literal_words()?.iter().map(|w| w.to_string()).collect();
    (clean && !words.is_empty()).then_some((cmd, words))
}

/// Whether the prefix rule `prefix` covers `command`.
pub fn covers(prefix: &str, command: &str) -> bool {
    match rule_words(prefix) {
        Ok(rule) => covers_words(&rule, command),
        Err(_) => false,
    }
}

/// Whether a rule of these literal words covers `command`.
pub fn covers_words(rule: &[String], command: &str) -> bool {
    plain_words(&shell::parse(command)).is_some_and(|words| covers_plain(rule, &words))
}

/// Whether a rule of these literal words covers a command whose
/// [`plain_words`] are `words` (parse once, try many rules).
pub fn covers_plain(rule: &[String], words: &[String]) -> bool {
    words.starts_with(rule) && rest_allowed(words, rule.len()).is_ok()
}

/// The literal words of the parsed command when it is one plain simple
/// command with nothing assigned and nothing redirected except to /dev/null.
pub fn plain_words(script: &Script) -> Option<Vec<String>> {
    plain_of(script).map(|(_, w)| w)
}

/// Why the words after the prefix are not allowed for unasked running.
fn rest_allowed(words: &[String], prefix_len: usize) -> Result<(), String> {
    let rest = &words[prefix_len..];
    if rest.is_empty() {
        return Ok(());
    }
    let program = words[0].as_str();
    if runs_code(program) || allow_list::is_listed(program) {
        let all: Vec<&str> = words.iter().map(String::as_str).collect();
        return allow_list::check(&all);
    }
    if let Some(why) = rest.iter().find_map(|w| allow_list::special_file(w)) {
        return Err(why);
    }
    match rest.iter().find(|w| w.starts_with(['-', '+'])) {
        Some(flag) => Err(format!("`{flag}` after the prefix is a flag")),
        None => Ok(()),
    }
}

/// The literal words of a rule, or why `prefix` cannot be one.
pub fn rule_words(prefix: &str) -> Result<Vec<String>, String> {
    if prefix.trim().is_empty() {
        return Err("the prefix is empty".into());
    }
    if prefix != prefix.trim() {
        return Err("the prefix must not start or end with a space".into());
    }
    let plain = plain_command(prefix).filter(|(cmd, _)| {
        // Nothing but the words: `ls;` or `ls >/dev/null` is not a prefix.
        let raw: Vec<&str> = cmd.words.iter().map(|w| w.raw.as_str()).collect();
        raw.join(" ") == prefix.split_whitespace().collect::<Vec<_>>().join(" ")
    });
    let Some((_, words)) = plain else {
        let script = shell::parse(prefix);
        return Err(match script.not_plain_reason() {
            Some(why) => format!("a prefix must be plain words: {why}"),
            None => "a prefix must be one command's plain words (no ; & | < > or =)".into(),
        });
    };
    bare_runner(&words)?;
    Ok(words)
}

/// A rule of one word that names a program running any code is refused.
fn bare_runner(words: &[String]) -> Result<(), String> {
    if words.len() == 1 && runs_code(&words[0]) {
        return Err(format!(
            "a rule on bare `{}` is refused: its arguments can make it run any code \
             (aliases, -c/-e options, scripts, wrapped programs), so no prefix of it is safe; \
             approve a longer prefix (e.g. `{} status`) or the exact command",
            words[0], words[0]
        ));
    }
    Ok(())
}

/// Why `prefix` cannot be a session rule for `command`, or `None` when it
/// can (it must be a word prefix of the command, the command must be one
/// plain command, and the rule must not be a bare program that runs code).
pub fn rule_error(prefix: &str, command: &str) -> Option<String> {
    rule_error_of(prefix, &shell::parse(command))
}

/// [`rule_error`] for a command already read.
pub fn rule_error_of(prefix: &str, script: &Script) -> Option<String> {
    let rule = match rule_words(prefix) {
        Ok(r) => r,
        Err(e) => return Some(e),
    };
    let Some((_, words)) = plain_of(script) else {
        let why = script
            .not_plain_reason()
            .unwrap_or_else(|| "it assigns or redirects".into());
        return Some(format!("no rule can cover this command: {why}"));
    };
    if !words.starts_with(&rule) {
        return Some("the prefix is not the start of the command's words".into());
    }
    None
}

/// Every shorter prefix of `command`'s words as written (shortest first)
/// with why it cannot be a rule: what the card offers
/// ([`PrefixChoices`]), judged here so no console needs a parser.
pub fn choices(command: &str) -> PrefixChoices {
    choices_of(&shell::parse(command))
}

/// [`choices`] for a command already read (the call's one read).
pub fn choices_of(script: &Script) -> PrefixChoices {
    let Some((cmd, words)) = plain_of(script) else {
        let why = script
            .not_plain_reason()
            .unwrap_or_else(|| "it assigns or redirects".into());
        return PrefixChoices {
            prefixes: Vec::new(),
            none_because: Some(format!("no rule can cover this command: {why}")),
        };
    };
    let raw: Vec<&str> = cmd.words.iter().map(|w| w.raw.as_str()).collect();
    // Each prefix is the command's own first words: its rule words are
    // those words (already read), so only the bare-runner refusal applies.
    let prefixes = (1..raw.len())
        .map(|n| PrefixChoice {
            prefix: raw[..n].join(" "),
            refused: bare_runner(&words[..n]).err(),
        })
        .collect();
    PrefixChoices {
        prefixes,
        none_because: None,
    }
}

/// The prefixes of `command` that can be rules, then the command itself.
pub fn candidates(command: &str) -> Vec<String> {
    choices(command).candidates(command)
}

/// Why a rule `prefix` does not cover `command` (for `vigil policy check`).
pub fn why_not_covered(prefix: &str, command: &str) -> Option<String> {
    let rule = match rule_words(prefix) {
        Ok(r) => r,
        Err(e) => return Some(e),
    };
    let Some((_, words)) = plain_command(command) else {
        return Some("the command is not one plain command".into());
    };
    if !words.starts_with(&rule) {
        return Some("the command does not start with the rule's words".into());
    }
    rest_allowed(&words, rule.len()).err()
}

#[cfg(test)]
mod tests;
