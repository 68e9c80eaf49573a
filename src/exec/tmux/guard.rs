//! Guardrails for the shared shell: commands that would poison or end the
//! long-lived shell in the managed pane (`set -e`, `exit`, `exec …`) or
//! manage tmux behind vigil's back are refused with advice.
//!
//! [`guard_shared_shell`] is a pure function over the command text. It
//! reads the text with a small shell-aware lexer (quotes, comments,
//! heredocs, subshell depth) and never runs anything. Anything inside a
//! subshell (`( … )`, `$( … )`, `bash -c '…'`) is allowed: that is the
//! advised form.

/// Why a command is refused in the shared shell, or `Ok` to run it.
pub fn guard_shared_shell(cmd: &str) -> Result<(), String> {
    for words in top_level_commands(cmd) {
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

fn is_redirection(w: &str) -> bool {
    let rest = w.trim_start_matches(|c: char| c.is_ascii_digit());
    rest.starts_with('>') || rest.starts_with('<')
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
            if args.iter().all(|a| is_redirection(a)) {
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

/// Split `cmd` into the simple commands the shared shell itself would run
/// (depth 0), each as its list of words with quotes removed.
fn top_level_commands(cmd: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = cmd.chars().collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut depth: usize = 0;
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut pending_heredoc: Option<bool> = None;
    let mut i = 0;

    let end_word = |words: &mut Vec<String>,
                    word: &mut String,
                    in_word: &mut bool,
                    pend: &mut Option<bool>,
                    heredocs: &mut Vec<(String, bool)>| {
        if *in_word {
            if let Some(strip) = pend.take() {
                heredocs.push((word.clone(), strip));
            }
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };

    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                if let Some(&n) = chars.get(i + 1) {
                    if n != '\n' {
                        word.push(n);
                        in_word = true;
                    }
                }
                i += 2;
                continue;
            }
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
                i += 1;
                continue;
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    word.push(chars[i]);
                    i += 1;
                }
                i += 1;
                continue;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                // Command substitution: a subshell.
                in_word = true;
                word.push_str("$(");
                depth += 1;
                i += 2;
                continue;
            }
            '(' => {
                end_word(
                    &mut words,
                    &mut word,
                    &mut in_word,
                    &mut pending_heredoc,
                    &mut heredocs,
                );
                if depth == 0 && !words.is_empty() {
                    // `name() {` function definitions: keep scanning the body
                    // at this depth after the parentheses.
                    if chars.get(i + 1) == Some(&')') {
                        words.clear();
                        i += 2;
                        continue;
                    }
                }
                if depth == 0 {
                    out.push(std::mem::take(&mut words));
                }
                depth += 1;
                i += 1;
                continue;
            }
            ')' => {
                end_word(
                    &mut words,
                    &mut word,
                    &mut in_word,
                    &mut pending_heredoc,
                    &mut heredocs,
                );
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    words.clear();
                }
                i += 1;
                continue;
            }
            '<' if chars.get(i + 1) == Some(&'<') && chars.get(i + 2) != Some(&'<') => {
                end_word(
                    &mut words,
                    &mut word,
                    &mut in_word,
                    &mut pending_heredoc,
                    &mut heredocs,
                );
                i += 2;
                let strip = chars.get(i) == Some(&'-');
                if strip {
                    i += 1;
                }
                while chars.get(i) == Some(&' ') || chars.get(i) == Some(&'\t') {
                    i += 1;
                }
                pending_heredoc = Some(strip);
                continue;
            }
            '\n' | ';' | '&' | '|' => {
                end_word(
                    &mut words,
                    &mut word,
                    &mut in_word,
                    &mut pending_heredoc,
                    &mut heredocs,
                );
                if depth == 0 {
                    out.push(std::mem::take(&mut words));
                }
                i += 1;
                if c == '\n' && !heredocs.is_empty() {
                    // Skip heredoc bodies.
                    for (delim, strip) in std::mem::take(&mut heredocs) {
                        loop {
                            let start = i;
                            while i < chars.len() && chars[i] != '\n' {
                                i += 1;
                            }
                            let line: String = chars[start..i].iter().collect();
                            i += 1;
                            let line = if strip {
                                line.trim_start_matches('\t').to_string()
                            } else {
                                line
                            };
                            if line == delim || i >= chars.len() {
                                break;
                            }
                        }
                    }
                }
                continue;
            }
            c if c.is_whitespace() => {
                end_word(
                    &mut words,
                    &mut word,
                    &mut in_word,
                    &mut pending_heredoc,
                    &mut heredocs,
                );
                i += 1;
                continue;
            }
            _ => {
                word.push(c);
                in_word = true;
                i += 1;
            }
        }
    }
    end_word(
        &mut words,
        &mut word,
        &mut in_word,
        &mut pending_heredoc,
        &mut heredocs,
    );
    if depth == 0 {
        out.push(words);
    }
    out.retain(|w| !w.is_empty());
    out
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
        ] {
            let e = guard_shared_shell(cmd).expect_err(cmd);
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
        ] {
            assert_eq!(guard_shared_shell(cmd), Ok(()), "{cmd}");
        }
    }
}
