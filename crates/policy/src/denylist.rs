//! The operator's shell denylist (`[tools] shell_denylist`): which entry a
//! command matches. Both the command and the entries are read by the shell
//! parser, so quoting, escapes, spacing and line continuations change
//! nothing: `r\m -rf '/'` is `rm -rf /`. An entry matches a run of words of
//! any simple command in the text (chained, piped, inside `$( … )`); its last
//! word may be the start of a longer word when it ends in a letter or digit
//! (`mkfs` matches `mkfs.ext4`). The program word is also compared by its
//! base name (`/bin/rm` is `rm`).
//!
//! A text the parser rejects is matched on its words split at spaces and
//! shell operators (with quotes dropped), so an unparseable command cannot
//! slip past. It only compares words; refusing is `run_shell`'s job.

use vigil_shell as shell;

/// The denylist entry `command` matches, if any.
pub fn denied_by<'a>(command: &str, denylist: &'a [String]) -> Option<&'a str> {
    let commands = word_runs(command);
    denylist.iter().map(String::as_str).find(|entry| {
        let pattern: Vec<String> = word_runs(entry).into_iter().flatten().collect();
        !pattern.is_empty() && commands.iter().any(|words| contains_run(words, &pattern))
    })
}

/// The words of every simple command in `text` (quote-removed; see
/// [`shell::command_runs`]).
fn word_runs(text: &str) -> Vec<Vec<String>> {
    shell::command_runs(&shell::parse(text), text)
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
    }
}
