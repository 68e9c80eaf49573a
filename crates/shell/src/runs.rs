//! The one answer to "which programs does this command run": every
//! simple command of a script, and through wrappers ([`super::wrappers`]:
//! `env`, `timeout`, `sudo -u x`, `xargs`, `find -exec`, `busybox`…), the
//! shell text of `sh -c`, `su -c` and `eval` (read again, to a bounded
//! depth) and program-specific global options (`git -C . push`), each
//! program run with its words after the wrapper. Deny, ask and allow
//! rules, hook matchers, the denylist and the view's eligibility all read
//! this answer.
//!
//! What it cannot tell (a program named by an expansion, `eval "$X"`,
//! `sh -c "$X"`, a shell reading its input) is listed in
//! [`Runs::unresolved`]; readers that guard must then treat the command as
//! matching every rule they hold. It never runs anything and never decides.

use super::wrappers::{Inner, Tok, inner};
use super::{Script, SimpleCommand, fallback_words, program_name};

/// How deep `sh -c` / `eval` text and wrappers are followed.
const MAX_DEPTH: usize = 8;

/// Most runs listed for one text (a text built to blow up is unresolved
/// beyond that).
const MAX_RUNS: usize = 512;

/// The programs a command runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Runs {
    /// Each program run with its words (the program by its base name),
    /// the wrapper's own run first, then what it runs.
    pub runs: Vec<Vec<String>>,
    /// Why some program it runs cannot be told, one reason each.
    pub unresolved: Vec<String>,
    /// The `NAME=value` assignments of every command read (also inside
    /// `sh -c` and `eval` text), as written.
    pub assignments: Vec<String>,
}

impl Runs {
    /// Whether every program the command runs is known.
    pub fn resolved(&self) -> bool {
        self.unresolved.is_empty()
    }

    /// "cannot tell which program runs: …", when something is unknown.
    pub fn why_unknown(&self) -> Option<String> {
        let first = self.unresolved.first()?;
        Some(format!("cannot tell which program runs: {first}"))
    }

    /// The program names, in order, each once.
    pub fn programs(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for run in &self.runs {
            if let Some(p) = run.first()
                && !out.contains(&p.as_str())
            {
                out.push(p);
            }
        }
        out
    }
}

/// Every program `script` (the text `text`) runs. For a text the parser
/// rejects: every run of its [`fallback_words`], each word taken as a
/// possible start of a command (by its base name).
pub fn program_runs(script: &Script, text: &str) -> Runs {
    let mut walk = Walk::default();
    walk.script(script, text, 0);
    walk.out
}

/// The programs one simple command runs (its own, then through wrappers).
pub fn command_programs(command: &SimpleCommand) -> Runs {
    let mut walk = Walk::default();
    walk.command(&toks(command), 0);
    walk.out
}

#[derive(Default)]
struct Walk {
    out: Runs,
}

fn toks(command: &SimpleCommand) -> Vec<Tok> {
    command
        .words
        .iter()
        .map(|w| Tok {
            text: w.loose(),
            literal: w.literal().is_some(),
            raw: w.raw.clone(),
        })
        .collect()
}

impl Walk {
    fn unknown(&mut self, why: String) {
        if !self.out.unresolved.contains(&why) {
            self.out.unresolved.push(why);
        }
    }

    fn push(&mut self, run: Vec<String>) {
        if self.out.runs.len() >= MAX_RUNS {
            self.unknown("it runs more commands than vigil reads".into());
        } else if !run.is_empty() {
            self.out.runs.push(run);
        }
    }

    fn script(&mut self, script: &Script, text: &str, depth: usize) {
        if script.error.is_some() {
            let words = fallback_words(text);
            for i in 0..words.len() {
                let mut run = words[i..].to_vec();
                run[0] = program_name(&run[0]).to_string();
                self.push(run);
            }
            return;
        }
        if script.features.unread_substitution {
            self.unknown(
                "a command substitution where vigil does not read it (inside `${…}`, `$((…))`, \
                 a `case` or `for` word, `[[ … ]]` or a here-document)"
                    .into(),
            );
        }
        for c in &script.commands {
            self.out.assignments.extend(c.assignments.iter().cloned());
            self.command(&toks(c), depth);
        }
    }

    fn text(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.unknown("shell text nested deeper than vigil reads".into());
            return;
        }
        let script = super::parse(text);
        self.script(&script, text, depth);
    }

    fn command(&mut self, words: &[Tok], depth: usize) {
        let Some(first) = words.first() else {
            return;
        };
        if depth > MAX_DEPTH {
            self.unknown("wrappers nested deeper than vigil reads".into());
            return;
        }
        let name = known_name(first);
        let mut run = vec![name.clone().unwrap_or_else(|| first.text.clone())];
        run.extend(words[1..].iter().map(|t| t.text.clone()));
        self.push(run);
        let Some(name) = name else {
            self.unknown(format!(
                "the program `{}` is named only when it runs",
                first.raw
            ));
            return;
        };
        let rest = &words[1..];
        for found in inner(&name, rest) {
            match found {
                Inner::Argv(start, end) => self.command(&rest[start..end], depth + 1),
                Inner::Text(text) => self.text(&text, depth + 1),
                Inner::Run(run) => self.push(run),
                Inner::Unknown(why) => self.unknown(why),
            }
        }
    }
}

/// A program word's base name, when it is known before the command runs:
/// a literal word, or one whose expanding part is only its directory
/// (`~/bin/tool`, `$HOME/bin/tool`).
fn known_name(word: &Tok) -> Option<String> {
    if word.literal {
        return Some(program_name(&word.text).to_string());
    }
    let (_, base) = word.raw.rsplit_once('/')?;
    let plain = !base.is_empty()
        && !base.contains([
            '$', '`', '*', '?', '[', ']', '{', '}', '(', ')', '\'', '"', '\\', '!', '~',
        ]);
    plain.then(|| base.to_string())
}
