//! What a command guard cannot see. A `deny` or `ask` rule on commands,
//! the denylist and a decide hook's command matcher judge the programs a
//! command's text runs ([`vigil_shell::Runs`]). A program that can run
//! other programs from its arguments or its own configuration (an
//! interpreter, a build tool, `watch`, `git -c …`, `trap`, an unknown
//! program) hides what it runs from them, so while such a guard is in
//! force a command is judged only when every program it runs is known not
//! to: the programs below, the wrappers vigil looks through, shells given
//! `-c` text, `git` with a known subcommand and no option that runs a
//! program. Anything else is asked, saying which program and why.
//!
//! The list allows; it never denies: a program missing from it is asked,
//! not run. It never runs anything.

use vigil_shell::Command;

/// Programs that run no other program, whatever their arguments (checked
/// with the flags below where a flag would).
const LEAF: &[&str] = &[
    // files and text (coreutils and friends)
    "ls",
    "cat",
    "cp",
    "mv",
    "rm",
    "mkdir",
    "rmdir",
    "touch",
    "chmod",
    "chown",
    "chgrp",
    "ln",
    "head",
    "tail",
    "wc",
    "cut",
    "tr",
    "uniq",
    "comm",
    "join",
    "paste",
    "nl",
    "fold",
    "fmt",
    "column",
    "rev",
    "tac",
    "shuf",
    "seq",
    "yes",
    "expr",
    "test",
    "[",
    "true",
    "false",
    "echo",
    "printf",
    "pwd",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "stat",
    "file",
    "du",
    "df",
    "free",
    "uptime",
    "id",
    "whoami",
    "groups",
    "uname",
    "hostname",
    "nproc",
    "arch",
    "date",
    "cal",
    "sleep",
    "which",
    "whereis",
    "mktemp",
    "install",
    "truncate",
    "sync",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "base64",
    "base32",
    "od",
    "hexdump",
    "xxd",
    "strings",
    "split",
    "csplit",
    "shred",
    "unlink",
    "tree",
    "diff",
    "cmp",
    "tee",
    "dd",
    "numfmt",
    "tsort",
    "factor",
    "bc",
    "printenv",
    "getent",
    "tput",
    "clear",
    "grep",
    "egrep",
    "fgrep",
    "ag",
    "jq",
    "sort",
    // processes and network
    "ps",
    "pgrep",
    "kill",
    "pkill",
    "killall",
    "lsof",
    "ss",
    "netstat",
    "ip",
    "ping",
    "dig",
    "host",
    "nslookup",
    "curl",
    "wget",
    // archives that run nothing
    "gzip",
    "gunzip",
    "zcat",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "zstd",
    "unzstd",
    "unzip",
    // shell builtins that run nothing
    "cd",
    "pushd",
    "popd",
    "dirs",
    "unset",
    "shift",
    "read",
    "wait",
    "jobs",
    "umask",
    "exit",
    "return",
    "break",
    "continue",
    ":",
    "type",
    "export",
    "local",
    "declare",
    "typeset",
    "readonly",
    "let",
    "set",
];

/// Options of a [`LEAF`] program that make it run one: `sort
/// --compress-program`, `rg --pre`, `grep`'s none…
const RUNS_A_PROGRAM: &[(&str, &str)] = &[("sort", "--compress-program"), ("rg", "--pre")];

/// Wrappers whose inner program [`vigil_shell::program_runs`] lists as a run
/// of its own.
const LOOK_THROUGH: &[&str] = &[
    "builtin", "chrt", "doas", "env", "exec", "ionice", "nice", "nohup", "setsid", "stdbuf",
    "sudo", "taskset", "time", "timeout", "unbuffer", "xargs", "command", "find", "eval",
    "busybox", "toybox",
];

/// Shells whose `-c` text vigil reads.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "yash"];

/// git subcommands that run no program named by their own options.
const GIT_KNOWN: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "add",
    "commit",
    "checkout",
    "switch",
    "branch",
    "tag",
    "fetch",
    "pull",
    "push",
    "merge",
    "rebase",
    "reset",
    "restore",
    "stash",
    "remote",
    "clone",
    "init",
    "rm",
    "mv",
    "blame",
    "grep",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "rev-list",
    "describe",
    "shortlog",
    "reflog",
    "cherry-pick",
    "revert",
    "apply",
    "format-patch",
    "clean",
    "worktree",
    "cat-file",
    "show-ref",
    "symbolic-ref",
    "merge-base",
    "version",
    "help",
    "whatchanged",
    "range-diff",
    "notes",
    "archive",
];

/// Options of a git subcommand that run a program: `rebase --exec`,
/// `fetch --upload-pack`, `clone -u`…
const GIT_RUNS: &[&str] = &[
    "-x",
    "--exec",
    "--upload-pack",
    "--receive-pack",
    "-u",
    "--extcmd",
    "--tool",
    "-O",
    "--open-files-in-pager",
];

/// Variables a program reads to run another (or the shell reads later):
/// an assignment to any upper-case name not known to be inert is asked.
const INERT_VARS: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "NO_COLOR",
    "CI",
    "TERM",
    "COLUMNS",
    "LINES",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "HOME",
    "USER",
    "DEBUG",
    "VERBOSE",
];

/// Why a command guard cannot judge `command`, or `None` when every program
/// it runs is one the guard sees through.
pub fn blind_spot(command: &Command) -> Option<String> {
    if let Some(why) = command.runs.why_unknown() {
        return Some(why);
    }
    if let Some(why) = command.runs.assignments.iter().find_map(|a| assignment(a)) {
        return Some(why);
    }
    command.runs.runs.iter().find_map(|run| program(run))
}

fn hidden(what: &str, why: &str) -> Option<String> {
    Some(format!("cannot tell which program runs: {what} {why}"))
}

/// Why one program run hides what it runs.
fn program(run: &[String]) -> Option<String> {
    let name = run.first()?.as_str();
    let args = &run[1..];
    if matches!(
        name,
        "export" | "declare" | "typeset" | "local" | "readonly" | "env"
    ) {
        if let Some(why) = args.iter().find_map(|a| assignment(a)) {
            return Some(why);
        }
    }
    if LOOK_THROUGH.contains(&name) {
        return None;
    }
    if LEAF.contains(&name) {
        let runs = RUNS_A_PROGRAM
            .iter()
            .find(|(p, opt)| *p == name && args.iter().any(|a| a.starts_with(opt)));
        return match runs {
            Some((_, opt)) => hidden(&format!("`{name} {opt}`"), "runs a program"),
            None => None,
        };
    }
    if SHELLS.contains(&name) {
        let reads_c = args
            .iter()
            .take_while(|a| a.starts_with('-') || a.starts_with('+'))
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'));
        return (!reads_c).then(|| {
            format!("cannot tell which program runs: `{name}` runs a script or its input")
        });
    }
    if name == "git" {
        return git(args);
    }
    hidden(
        &format!("`{name}`"),
        "can run other programs that vigil does not see (a command guard is in force)",
    )
}

/// `git [global options] SUBCOMMAND [options]`: a known subcommand with no
/// option that runs a program, and no `-c` (configuration can name one).
fn git(args: &[String]) -> Option<String> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-c" | "--config-env" | "--exec-path" => {
                return hidden(&format!("`git {a}`"), "can make git run another program");
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
            w if w.starts_with("--exec-path=") || w.starts_with("--config-env=") => {
                return hidden("`git --exec-path`", "can make git run another program");
            }
            w if w.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let sub = args.get(i)?;
    if !GIT_KNOWN.contains(&sub.as_str()) {
        return hidden(
            &format!("`git {sub}`"),
            "is not a git command vigil knows (an alias can run anything)",
        );
    }
    let opt = args[i + 1..]
        .iter()
        .find(|a| GIT_RUNS.iter().any(|o| runs_option(a, o)))?;
    hidden(&format!("`git {sub} {opt}`"), "runs a program")
}

/// Whether the word `a` is the option `o`: alone, with `=value`, or (a
/// short option) with its value attached (`-Orm`, `-xcmd`).
fn runs_option(a: &str, o: &str) -> bool {
    let short = o.len() == 2 && !o.starts_with("--");
    a == o || a.starts_with(&format!("{o}=")) || (short && a.starts_with(o))
}

/// Why an assignment (`NAME=value`) hides a program: an upper-case name
/// not known to be inert (`GIT_SSH_COMMAND`, `PS4`, `BASH_ENV`, `PAGER`…).
fn assignment(word: &str) -> Option<String> {
    let (name, _) = word.split_once('=')?;
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        return None;
    }
    let inert = name.chars().any(|c| c.is_ascii_lowercase())
        || INERT_VARS.contains(&name)
        || name.starts_with("LC_");
    (!inert).then(|| {
        format!(
            "cannot tell which program runs: it sets `{name}`, which a program or the shell \
             may read to run another (a command guard is in force)"
        )
    })
}

#[cfg(test)]
#[path = "blind_tests.rs"]
mod tests;
