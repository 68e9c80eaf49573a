//! Which shell commands may be decided by what they do in the throwaway
//! view (`approval = "by_effect"`), read from the command's text before
//! it is tried.
//!
//! The view is this machine with a few things changed: its own process
//! list, no network interfaces, no capability, no terminal. For a managed
//! pane the trial's shell replays the pane's captured state; what a
//! command would leave in the pane's shell to run later, outside any
//! trial (a hook, a trap, a prompt), is asked ([`super::pane_state`]). A command whose
//! result depends on one of those would give the model a result the real
//! run would not give, so it is not tried; it is asked, and the card names
//! the rule ([`Ineligible::rule`]). What the view shows after the trial
//! (files, network, leftovers, limits) is judged elsewhere
//! ([`vigil_protocol::preview::PreviewReport::effects`]).
//!
//! Pure: reads a parsed [`Script`], never runs anything.

use vigil_shell::{Script, SimpleCommand};

use super::secret_reads::{self, Scope};

/// Why a command is not tried in the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ineligible {
    /// The rule's short name (`processes`, `network`, `shell-state`,
    /// `shell-hook`,
    /// `terminal`, `privilege`, `secret`).
    pub rule: &'static str,
    /// The reason, for the card and `vigil policy check`.
    pub why: String,
}

impl std::fmt::Display for Ineligible {
    /// What the card, the record and `vigil policy check --preview` say.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not tried in the view (rule `{}`): {}",
            self.rule, self.why
        )
    }
}

/// Programs whose output is the process list or that act on other
/// processes (the view has its own PID namespace).
const PROCESSES: &[&str] = &[
    "ps", "pgrep", "pkill", "pidof", "pstree", "top", "htop", "btop", "atop", "kill", "killall",
    "lsof", "fuser", "w", "who", "users", "jobs", "fg", "bg", "wait", "disown", "pidstat", "pmap",
    "prtstat", "pwdx", "renice", "ionice", "taskset", "strace", "ltrace", "gdb",
];

/// Programs that read or change network interfaces, routes and sockets
/// (the view has its own, empty, network namespace).
const NETWORK: &[&str] = &[
    "ip",
    "ifconfig",
    "ss",
    "netstat",
    "route",
    "arp",
    "iw",
    "iwconfig",
    "nmcli",
    "iptables",
    "ip6tables",
    "nft",
    "tc",
    "ethtool",
    "brctl",
    "bridge",
    "ifup",
    "ifdown",
    "tcpdump",
    "networkctl",
    "resolvectl",
];

/// Programs that need a terminal or wait for a person.
const TERMINAL: &[&str] = &[
    "vim", "vi", "nvim", "nano", "emacs", "pico", "less", "more", "most", "man", "info", "watch",
    "tmux", "screen", "ssh", "mosh", "telnet", "ftp", "sftp", "mc", "ranger", "nnn", "tig", "fzf",
    "dialog", "whiptail", "read",
];

/// Programs that change user or ask for a password (the view runs with
/// no privilege at all).
const PRIVILEGE: &[&str] = &[
    "sudo", "su", "doas", "pkexec", "runuser", "passwd", "chsh", "newgrp",
];

/// REPLs that wait on stdin when started without a script.
const REPLS: &[&str] = &[
    "python",
    "python3",
    "node",
    "irb",
    "ghci",
    "lua",
    "bc",
    "sqlite3",
    "psql",
    "mysql",
    "redis-cli",
];

/// Whether `script` may be tried in the view. `pane`: it would run in a
/// managed pane's shell. `scope`: the secret places and where the command
/// runs.
pub fn check(script: &Script, pane: bool, scope: &Scope) -> Result<(), Ineligible> {
    if let Some(hit) = secret_reads::find(script, scope) {
        let rule = match hit.entry == secret_reads::PROC_ENTRY {
            true => "processes",
            false => "secret",
        };
        return Err(no(rule, hit.reason()));
    }
    for cmd in &script.commands {
        by_program(cmd)?;
    }
    if pane {
        if let Some(why) = super::pane_state::hook(script) {
            return Err(no("shell-hook", why));
        }
        if script.features.function {
            return Err(no(
                "shell-state",
                "it defines a function in the pane's shell: asked so that `y` runs it there \
                 (a trial would leave the pane without it)"
                    .into(),
            ));
        }
    }
    Ok(())
}

fn no(rule: &'static str, why: String) -> Ineligible {
    Ineligible { rule, why }
}

/// The programs a simple command runs: its first word and, through
/// wrappers (`env ps`, `timeout 5 top`, `xargs kill`, `sh -c 'ps'`), the
/// program each wrapper runs: the shell crate's one answer
/// ([`vigil_shell::command_programs`]).
fn programs(cmd: &SimpleCommand) -> Vec<String> {
    let runs = vigil_shell::command_programs(cmd);
    runs.programs().into_iter().map(str::to_string).collect()
}

fn by_program(cmd: &SimpleCommand) -> Result<(), Ineligible> {
    let words = cmd.loose_words();
    for name in programs(cmd) {
        let name = name.as_str();
        let listed = |list: &[&str]| list.contains(&name);
        if listed(PRIVILEGE) {
            return Err(no(
                "privilege",
                format!("`{name}` runs as another user; the view has no privilege at all"),
            ));
        }
        if listed(PROCESSES) {
            return Err(no(
                "processes",
                format!("`{name}` reads or acts on other processes; the view sees only its own"),
            ));
        }
        if listed(NETWORK) {
            return Err(no(
                "network",
                format!("`{name}` reads the network setup; the view has no interfaces"),
            ));
        }
        if listed(TERMINAL) || (words.len() == 1 && REPLS.contains(&name)) {
            return Err(no(
                "terminal",
                format!("`{name}` needs a terminal or a person; the view has neither"),
            ));
        }
    }
    if let Some(w) = words.iter().find(|w| *w == "/proc" || is_other_process(w)) {
        return Err(no(
            "processes",
            format!("`{w}` is another process's; the view sees only its own"),
        ));
    }
    Ok(())
}

/// `/proc/<pid>…` (another process), `/proc/*`.
fn is_other_process(word: &str) -> bool {
    word.strip_prefix("/proc/")
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '*' || c == '['))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_shell::parse;

    fn scope() -> Scope {
        Scope {
            places: Default::default(),
            cwd: Some("/nonexistent-vigil-dir".into()),
            home: Some("/home/u".into()),
        }
    }

    fn rule(text: &str, pane: bool) -> Option<&'static str> {
        check(&parse(text), pane, &scope()).err().map(|e| e.rule)
    }

    #[test]
    fn ordinary_commands_are_tried() {
        for c in [
            "ls -la",
            "git status",
            "cat README.md | wc -l",
            "grep -rn foo src",
            "cargo --version",
        ] {
            assert_eq!(rule(c, true), None, "{c}");
        }
        assert_eq!(rule("echo $HOME", false), None);
    }

    #[test]
    fn what_the_view_changes_is_named() {
        assert_eq!(rule("ps aux", false), Some("processes"));
        assert_eq!(rule("ls /proc/1/", false), Some("processes"));
        assert_eq!(rule("cat /proc/cpuinfo", false), None);
        assert_eq!(rule("ip addr", false), Some("network"));
        assert_eq!(rule("sudo ls", false), Some("privilege"));
        assert_eq!(rule("vim x", false), Some("terminal"));
        assert_eq!(rule("python3", false), Some("terminal"));
        assert_eq!(rule("python3 -c 'print(1)'", false), None);
        assert_eq!(rule("xargs kill < pids", false), Some("processes"));
        assert_eq!(rule("timeout 5 top", false), Some("processes"));
        assert_eq!(rule("sudo -u x env nice -n 5 ps", false), Some("privilege"));
        assert_eq!(rule("env -i A=1 nice -n 5 ps", false), Some("processes"));
        assert_eq!(rule("sh -c 'ip addr'", false), Some("network"));
        assert_eq!(rule("find . -exec kill {} \\;", false), Some("processes"));
        assert_eq!(rule("grep -w ps notes.txt", false), None);
    }

    #[test]
    fn the_pane_shell_state_counts_only_in_a_pane() {
        // The trial replays the pane's state: reading it is no reason.
        assert_eq!(rule("cd src", true), None);
        assert_eq!(rule("echo $PATH", true), None);
        assert_eq!(rule("X=1", true), None);
        assert_eq!(rule("f() { ls; }", true), Some("shell-state"));
        assert_eq!(rule("f() { ls; }", false), None);
        assert_eq!(rule("PROMPT_COMMAND='id'", true), Some("shell-hook"));
        assert_eq!(rule("trap 'id' EXIT", true), Some("shell-hook"));
        assert_eq!(rule("trap 'id' EXIT", false), None);
    }
}
