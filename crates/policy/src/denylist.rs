//! The operator's shell denylist (`[tools] shell_denylist`): which entry a
//! command matches. Both the command and the entries are read by the shell
//! parser, so quoting, escapes, spacing and line continuations change
//! nothing: `r\m -rf '/'` is `rm -rf /`. An entry matches a run of words of
//! any simple command in the text (chained, piped, inside `$( … )`); its last
//! word may be the start of a longer word when it ends in a letter or digit
//! (`mkfs` matches `mkfs.ext4`). The program word is also compared by its
//! base name (`/bin/rm` is `rm`). The command's runs are the shell crate's
//! one answer to which programs it runs ([`shell::program_runs`]): through
//! wrappers, `xargs`, `find -exec`, `sh -c` and `eval` text, so `env rm -rf
//! /` and `sh -c 'rm -rf /'` match `rm -rf /` too. A command whose programs
//! cannot all be told matches no entry here; the approval broker asks it
//! whenever a denylist is set ([`unresolved`]).
//!
//! A text the parser rejects is matched on its words split at spaces and
//! shell operators (with quotes dropped), so an unparseable command cannot
//! slip past. It only compares words; refusing is `run_shell`'s job.

use vigil_shell as shell;

/// The denylist entry `command` matches, if any.
pub fn denied_by<'a>(command: &str, denylist: &'a [String]) -> Option<&'a str> {
    let commands = shell::program_runs(&shell::parse(command), command).runs;
    denylist.iter().map(String::as_str).find(|entry| {
        let pattern: Vec<String> = entry_words(entry);
        !pattern.is_empty() && commands.iter().any(|words| contains_run(words, &pattern))
    })
}

/// Why a non-empty `denylist` cannot judge `command`: some program it runs
/// cannot be told before it runs ("cannot tell which program runs: …").
pub fn unresolved(command: &str, denylist: &[String]) -> Option<String> {
    if denylist.iter().all(|e| entry_words(e).is_empty()) {
        return None;
    }
    shell::program_runs(&shell::parse(command), command).why_unknown()
}

/// An entry's words, as written (quote-removed; see
/// [`shell::command_runs`]).
fn entry_words(entry: &str) -> Vec<String> {
    shell::command_runs(&shell::parse(entry), entry)
        .into_iter()
        .flatten()
        .collect()
}

fn contains_run(words: &[String], pattern: &[String]) -> bool {
    let n = pattern.len();
    if words.len() < n {
        return false;
    }
    (0..=words.len() - n).any(|start| {
        pattern.iter().enumerate().all(|(k, p)| {
            let w = &words[start + k];
            let last = k + 1 == n;
            w == p
                || (last && p.ends_with(|c: char| c.is_alphanumeric()) && w.starts_with(p.as_str()))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denylist_survives_spacing_quotes_and_escapes() {
        let list = vec!["rm -rf /".to_string(), "mkfs".to_string()];
        for cmd in [
            "rm -rf /",
            "rm   -rf    /",
            "sudo rm -rf \"/\"",
            "r\\m -rf '/'",
            "echo hi; rm -rf /",
            "true&&rm -rf /",
            "rm\t-rf \\\n/ # gone",
            "/bin/rm -rf /",
            "echo $(rm -rf /)",
            "ls | xargs rm -rf /",
            "rm -rf / 'unclosed",
            "env rm -rf /",
            "timeout 5 rm -rf /",
            "sudo -u x rm -rf /",
            "busybox rm -rf /",
            "find / -exec rm -rf / \\;",
            "sh -c 'rm -rf /'",
            "eval 'rm -rf /'",
            "sudo env timeout 5 sh -c 'xargs rm -rf /'",
        ] {
            assert_eq!(denied_by(cmd, &list), Some("rm -rf /"), "{cmd}");
        }
        assert_eq!(denied_by("mkfs.ext4 /dev/sdz", &list), Some("mkfs"));
        for cmd in [
            "rm -rf /tmp/build",
            "ls /",
            "echo farm -rf /x",
            "lsmkfs",
            "echo 'rm -rf /'",
        ] {
            assert_eq!(denied_by(cmd, &list), None, "{cmd}");
        }
        assert_eq!(denied_by("anything", &[String::new()]), None);
        assert!(unresolved("$CMD -rf /", &list).is_some());
        assert!(unresolved("eval \"$X\"", &list).is_some());
        assert_eq!(unresolved("$CMD -rf /", &[]), None);
        assert_eq!(unresolved("rm -rf /tmp/x", &list), None);
    }
}
