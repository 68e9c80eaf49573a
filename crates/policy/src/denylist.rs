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
//! whenever a denylist is set ([`Denylist::unresolved`]).
//!
//! A text the parser rejects is matched on its words split at spaces and
//! shell operators (with quotes dropped), so an unparseable command cannot
//! slip past. It only compares words; refusing is `run_shell`'s job.

use vigil_shell as shell;

/// The denylist, each entry read once (when the configuration is loaded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Denylist {
    entries: Vec<(String, Vec<String>)>,
}

impl Denylist {
    /// Read the entries as written in `[tools] shell_denylist`.
    pub fn read(entries: &[String]) -> Denylist {
        Denylist {
            entries: entries
                .iter()
                .map(|e| (e.clone(), entry_words(e)))
                .filter(|(_, words)| !words.is_empty())
                .collect(),
        }
    }

    /// Whether no entry can match anything.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry `command` matches, if any.
    pub fn denied_by(&self, command: &shell::Command) -> Option<&str> {
        let runs = &command.runs.runs;
        self.entries
            .iter()
            .find(|(_, pattern)| {
                runs.iter()
                    .any(|words| contains_run(words, pattern) || same_flags(words, pattern))
            })
            .map(|(entry, _)| entry.as_str())
    }

    /// Why this denylist cannot judge `command`: some program it runs
    /// cannot be told before it runs ("cannot tell which program runs: …").
    pub fn unresolved(&self, command: &shell::Command) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        crate::blind::blind_spot(command)
    }
}

/// An entry's words, as written (quote-removed; see
/// [`shell::command_runs`]).
fn entry_words(entry: &str) -> Vec<String> {
    shell::command_runs(&shell::parse(entry), entry)
        .into_iter()
        .flatten()
        .collect()
}

/// An entry of a program and short flags (`rm -rf`, `chmod -R`) matches
/// that program given those flags in any order or grouping (`rm -fr`,
/// `rm -r -f x`, `rm -v -rf`): the first word of the run is the program,
/// every flag letter of the entry is among its short flags.
fn same_flags(words: &[String], pattern: &[String]) -> bool {
    let short = |w: &&String| w.len() > 1 && w.starts_with('-') && !w.starts_with("--");
    let (Some(program), Some(flags)) = (pattern.first(), pattern.get(1..)) else {
        return false;
    };
    if flags.is_empty() || !flags.iter().all(|f| short(&f)) || words.first() != Some(program) {
        return false;
    }
    let given: String = words[1..]
        .iter()
        .take_while(|w| *w != "--")
        .filter(short)
        .map(|w| &w[1..])
        .collect();
    flags
        .iter()
        .flat_map(|f| f[1..].chars())
        .all(|c| given.contains(c))
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

    fn read(text: &str) -> std::sync::Arc<shell::Command> {
        shell::Command::read(text)
    }

    #[test]
    fn denylist_survives_spacing_quotes_and_escapes() {
        let list = Denylist::read(&["rm -rf /".to_string(), "mkfs".to_string()]);
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
            assert_eq!(list.denied_by(&read(cmd)), Some("rm -rf /"), "{cmd}");
        }
        assert_eq!(list.denied_by(&read("mkfs.ext4 /dev/sdz")), Some("mkfs"));
        for cmd in [
            "rm -rf /tmp/build",
            "ls /",
            "echo farm -rf /x",
            "lsmkfs",
            "echo 'rm -rf /'",
        ] {
            assert_eq!(list.denied_by(&read(cmd)), None, "{cmd}");
        }
        assert_eq!(
            Denylist::read(&[String::new()]).denied_by(&read("anything")),
            None
        );
        assert!(list.unresolved(&read("$CMD -rf /")).is_some());
        assert!(list.unresolved(&read("eval \"$X\"")).is_some());
        assert_eq!(Denylist::default().unresolved(&read("$CMD -rf /")), None);
        assert_eq!(list.unresolved(&read("rm -rf /tmp/x")), None);
    }

    #[test]
    fn flag_entries_match_in_any_order_or_grouping() {
        let list = Denylist::read(&["rm -rf".to_string(), "chmod -R".to_string()]);
        for cmd in [
            "rm -rf x",
            "rm -fr x",
            "rm -r -f x",
            "rm -v -rf x",
            "rm -Rrf x",
            "sudo rm -f -r x",
        ] {
            assert_eq!(list.denied_by(&read(cmd)), Some("rm -rf"), "{cmd}");
        }
        assert_eq!(list.denied_by(&read("chmod -vR 700 d")), Some("chmod -R"));
        for cmd in ["rm -f x", "rm -r x", "rm x -- -rf", "chmod 700 d"] {
            assert_eq!(list.denied_by(&read(cmd)), None, "{cmd}");
        }
    }
}
