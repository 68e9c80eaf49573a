//! Guardrails for the shared shell: commands that would poison or end the
//! long-lived shell in the managed pane (`set -e`, `exit`, `exec …`) or
//! manage tmux behind vigil's back are refused with advice.
//!
//! [`guard_shared_shell`] is a pure function over the command text. It
//! reads the text with vigil's shell parser ([`vigil_shell`]) and never
//! runs anything. Anything inside a
//! subshell (`( … )`, `$( … )`, `bash -c '…'`) is allowed: that is the
//! advised form.

/// Why a command is refused in the shared shell, or `Ok` to run it.
/// `read`: the command as the call's decisions read it, when it is this
/// text (then it is not parsed again).
pub fn guard_shared_shell(cmd: &str, read: Option<&vigil_shell::Command>) -> Result<(), String> {
    for words in top_level_commands(cmd, read.filter(|r| r.text == cmd)) {
        check(&words)?;
    }
    Ok(())
}

const STRICT_ADVICE: &str = "it would make the shared shell exit on the first failing command \
(closing the pane). Run strict code in a subshell instead, e.g. bash -c 'set -e; …' or ( set -e; … )";

const TMUX_MANAGEMENT: &[&str] = &[
    "new-session",
    "new",
    "kill-session",
    "kill-server",
    "split-window",
    "splitw",
    "kill-pane",
    "killp",
    "new-window",
    "neww",
    "kill-window",
    "killw",
    "attach-session",
    "attach",
    "detach-client",
    "detach",
    "respawn-pane",
    "respawnp",
    "respawn-window",
    "respawnw",
];

/// Words that introduce a command without being it.
fn is_prefix_word(w: &str) -> bool {
    matches!(
        w,
        "if" | "then"
            | "else"
            | "elif"
            | "do"
            | "while"
            | "until"
            | "!"
            | "time"
            | "{"
            | "}"
            | "fi"
            | "done"
            | "esac"
            | "command"
            | "builtin"
            | "nohup"
            | "noglob"
    ) || is_assignment(w)
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

fn check(words: &[String]) -> Result<(), String> {
    let mut i = 0;
    while i < words.len() && is_prefix_word(&words[i]) {
        i += 1;
    }
    let Some(head) = words.get(i) else {
        return Ok(());
    };
    let args = &words[i + 1..];
    match head.as_str() {
        "exit" | "logout" => Err(format!(
            "refused: `{head}` would end the shared shell and close the managed pane. \
             To report a status use a subshell, e.g. ( exit 3 ), or `return` inside a function"
        )),
        "exec" => {
            if args.is_empty() {
                return Ok(());
            }
            Err(
                "refused: `exec …` would replace the shared shell and close the managed pane \
                 when the program ends. Run the program normally, or in a subshell: ( exec prog args )"
                    .into(),
            )
        }
        "set" => {
            let mut it = args.iter();
            while let Some(a) = it.next() {
                if a == "-o" {
                    if it.next().is_some_and(|o| o == "errexit") {
                        return Err(format!("refused: `set -o errexit`: {STRICT_ADVICE}"));
                    }
                } else if a.starts_with('-')
                    && !a.starts_with("--")
                    && a[1..].chars().all(|c| c.is_ascii_alphabetic())
                    && a.contains('e')
                {
                    return Err(format!("refused: `set {a}`: {STRICT_ADVICE}"));
                }
            }
            Ok(())
        }
        "setopt" => {
            for a in args {
                let norm: String = a
                    .to_ascii_lowercase()
                    .chars()
                    .filter(|c| *c != '_')
                    .collect();
                if norm == "errexit" {
                    return Err(format!("refused: `setopt {a}`: {STRICT_ADVICE}"));
                }
            }
            Ok(())
        }
        "tmux" => {
            let mut j = 0;
            while j < args.len() && args[j].starts_with('-') {
                // Options that take a value.
                if matches!(args[j].as_str(), "-L" | "-S" | "-f" | "-c" | "-T") {
                    j += 1;
                }
                j += 1;
            }
            match args.get(j) {
                Some(sub) if TMUX_MANAGEMENT.contains(&sub.as_str()) => Err(format!(
                    "refused: raw `tmux {sub}` in the shared shell; sessions and panes are managed \
                     by vigil: use the tmux-create-session, tmux-kill-session, tmux-create-pane and \
                     tmux-kill-pane tools (and capture-pane / send-keys to look and type)"
                )),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// The simple commands the shared shell itself would run (not those in a
/// subshell or substitution), each as its words with quotes removed, read
/// by the shell parser. A text the parser rejects is read up to the last
/// line that still parses: the shell runs what comes before a syntax error.
fn top_level_commands(cmd: &str, read: Option<&vigil_shell::Command>) -> Vec<Vec<String>> {
    let fresh;
    let mut script = match read {
        Some(r) => &r.script,
        None => {
            fresh = vigil_shell::parse(cmd);
            &fresh
        }
    };
    let partial;
    if script.error.is_some() {
        let lines: Vec<&str> = cmd.split('\n').collect();
        partial = (0..lines.len())
            .rev()
            .map(|n| vigil_shell::parse(&lines[..n].join("\n")))
            .find(|s| s.error.is_none());
        if let Some(p) = &partial {
            script = p;
        }
    }
    script
        .commands
        .iter()
        .filter(|c| c.place == vigil_shell::Place::CurrentShell)
        .map(|c| c.loose_words())
        .filter(|w| !w.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisoning_commands_are_refused_with_advice() {
        for (cmd, advice) in [
            ("set -e", "subshell"),
            ("set -euo pipefail", "subshell"),
            ("set -o errexit", "subshell"),
            ("setopt errexit", "subshell"),
            ("setopt ERR_EXIT", "subshell"),
            ("cd /tmp && set -e && make", "subshell"),
            ("exit", "( exit 3 )"),
            ("exit 1", "( exit 3 )"),
            ("false || exit 2", "( exit 3 )"),
            ("logout", "( exit 3 )"),
            ("exec bash", "( exec prog args )"),
            ("FOO=1 exec ./server", "( exec prog args )"),
            ("if true; then exit; fi", "( exit 3 )"),
            ("{ echo a; exit; }", "( exit 3 )"),
            ("echo hi\nexit 0", "( exit 3 )"),
            ("tmux new-session -d -s x", "tmux-create-session"),
            ("tmux -L foo kill-server", "tmux-create-session"),
            ("tmux split-window", "tmux-create-pane"),
            ("tmux kill-session -t x", "tmux-kill-session"),
            ("e\\xit", "( exit 3 )"),
            ("'exit'", "( exit 3 )"),
            ("exit\nif then", "( exit 3 )"),
            ("while true; do exit; done", "( exit 3 )"),
            ("case x in x) exit;; esac", "( exit 3 )"),
        ] {
            let e = guard_shared_shell(cmd, None).expect_err(cmd);
            assert!(e.starts_with("refused"), "{cmd}: {e}");
            assert!(e.contains(advice), "{cmd}: {e}");
        }
    }

    #[test]
    fn safe_forms_pass() {
        for cmd in [
            "ls -la",
            "set +e",
            "set -x",
            "set -o pipefail",
            "bash -c 'set -e; false'",
            "( set -e; false )",
            "(exit 3)",
            "x=$(exit 1; echo)",
            "echo exit",
            "echo 'set -e'",
            "echo \"exec\"",
            "grep -e exit file",
            "cat <<EOF\nexit\nset -e\nEOF\necho done",
            "cat <<-'END'\n\texec foo\n\tEND",
            "exec 3>/tmp/x",
            "exec >/dev/null 2>&1",
            "tmux ls",
            "tmux capture-pane -p",
            "# exit\necho hi",
            "f() { return 1; }",
            "( exec sleep 1 )",
            "if then fi fi",
        ] {
            assert_eq!(guard_shared_shell(cmd, None), Ok(()), "{cmd}");
        }
    }
}
