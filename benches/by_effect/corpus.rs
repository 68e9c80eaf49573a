//! The by_effect bench's corpora and the questions it asks of a command
//! without running it: which corpus (tldr-pages' examples, or the
//! agent-command corpus whose edits are marked `# writes`), and whether the
//! program a command runs is installed on this machine.

use std::path::Path;

/// One command of a corpus.
pub struct Cmd {
    /// The text run (the `# writes` label taken off).
    pub text: String,
    /// Labelled `# writes`: it changes the tree outside git-ignored
    /// outputs, so it must be asked.
    pub writes: bool,
}

/// Which corpus.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Corpus {
    Tldr,
    Agent,
}

impl Corpus {
    pub fn name(self) -> &'static str {
        match self {
            Corpus::Tldr => "tldr",
            Corpus::Agent => "agent",
        }
    }

    /// `VIGIL_BENCH_CORPUS=tldr|agent|both` (default both).
    pub fn selected() -> Vec<Corpus> {
        match std::env::var("VIGIL_BENCH_CORPUS").as_deref() {
            Ok("tldr") => vec![Corpus::Tldr],
            Ok("agent") => vec![Corpus::Agent],
            Ok("both") | Err(_) => vec![Corpus::Tldr, Corpus::Agent],
            Ok(other) => panic!("VIGIL_BENCH_CORPUS={other}: expected tldr, agent or both"),
        }
    }

    /// The corpus's commands: for tldr `n` evenly spread (all when `n` is
    /// 0), the agent corpus whole.
    pub fn commands(self, n: usize) -> Vec<Cmd> {
        match self {
            Corpus::Tldr => {
                let all: Vec<&str> = include_str!("../corpus/commands.txt").lines().collect();
                let picked: Vec<&str> = if n == 0 || n >= all.len() {
                    all
                } else {
                    (0..n).map(|i| all[i * all.len() / n]).collect()
                };
                picked
                    .into_iter()
                    .map(|c| Cmd {
                        text: c.to_string(),
                        writes: false,
                    })
                    .collect()
            }
            Corpus::Agent => include_str!("../corpus/agent_commands.txt")
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| match l.strip_suffix("# writes") {
                    Some(text) => Cmd {
                        text: text.trim_end().to_string(),
                        writes: true,
                    },
                    None => Cmd {
                        text: l.to_string(),
                        writes: false,
                    },
                })
                .collect(),
        }
    }
}

/// Shell built-ins the corpora use: always "installed".
const BUILTINS: &[&str] = &[
    "cd", "export", "echo", "printf", "pwd", "set", "unset", "alias", "source", ".", "type",
    "command", "true", "false", "test", "[", "read", "exit", "umask", "ulimit", "hash",
];

/// Whether the program `command` runs (the first word, after `sudo` and
/// its options) is installed on this machine.
pub fn installed(command: &str) -> bool {
    let script = vigil::shell::parse(command);
    let Some(first) = script.commands.first() else {
        return false;
    };
    let words = first.loose_words();
    let mut it = words
        .iter()
        .skip_while(|w| *w == "sudo" || w.starts_with('-'));
    let Some(program) = it.next() else {
        return false;
    };
    if BUILTINS.contains(&program.as_str()) {
        return true;
    }
    if program.contains('/') {
        return Path::new(program).exists();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}
