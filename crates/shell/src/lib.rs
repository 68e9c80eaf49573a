//! vigil's one reader of shell text. Every safety decision about a command
//! (the risk estimate and "low", prefix rules, the policy file, the denylist,
//! the shared tmux shell's guard) reads the [`Command`] (a [`Script`] and
//! its [`Runs`]) this crate makes once per call.
//!
//! It wraps brush-parser (the parser of the brush shell) rather than
//! tree-sitter-bash: brush-parser is pure Rust (no C build step), parses the
//! bash grammar a real shell runs with, and yields an AST whose words are
//! split into typed pieces (quoted text, escapes, parameter expansions,
//! command and arithmetic substitutions), which is exactly what telling a
//! literal word from an expanding one needs. tree-sitter-bash is an editor
//! grammar (error-tolerant, not a shell's) behind a C library.
//!
//! The view is deliberately small: the simple commands of the script (with
//! their assignments, words and redirections) and a flag for every construct
//! the rest of vigil does not reason about. A word is *literal* only when it
//! has no expansion or substitution of any kind after quote removal.
//!
//! This module sits at the bottom of the crate: it imports nothing else from
//! vigil, never runs anything, and never decides; readers decide.

mod command;
mod convert;
mod runs;
mod word;
mod wrappers;

pub use command::{Command, parses};
pub use runs::{Runs, command_programs, program_runs};
pub use word::Word;

/// Where a simple command runs relative to the shell that reads the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the reading shell itself (top level, `{ … }`, `if`/loops, a
    /// function body).
    CurrentShell,
    /// In a child shell: `( … )`, `$( … )`, `` `…` ``, `<( … )`.
    Subshell,
}

/// A redirection of a simple command, as vigil classifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// Output to (or input from) `/dev/null`.
    DevNull,
    /// A descriptor copied onto another (`2>&1`, `>&2`).
    DupFd,
    /// Anything else, with its text (a file, a here-string, `>&FILE`…).
    Other(String),
}

/// One simple command: `NAME=value … word … redirections`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `NAME=value` prefixes, as written.
    pub assignments: Vec<String>,
    /// The command's words (program first).
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    pub place: Place,
    /// Run by the reading shell itself, whatever else happens: a command
    /// of the text's own list, alone in its pipeline, not in the
    /// background, not after `&&`/`||`, not inside a compound command, a
    /// function body or a substitution.
    pub top_level: bool,
}

impl SimpleCommand {
    /// The program word's literal text, if it has one.
    pub fn program(&self) -> Option<&str> {
        self.words.first().and_then(|w| w.literal())
    }

    /// Every word's literal text, or `None` when any word expands.
    pub fn literal_words(&self) -> Option<Vec<&str>> {
        self.words.iter().map(|w| w.literal()).collect()
    }

    /// Every word's text after quote removal (expanding pieces kept as
    /// written): for readers that look for names, never for approval.
    pub fn loose_words(&self) -> Vec<String> {
        self.words.iter().map(|w| w.loose()).collect()
    }
}

/// Constructs that make a script more than a list of simple commands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// `if`, `while`, `until`, `for`, `case`, `{ … }`, `[[ … ]]`, `(( … ))`,
    /// `coproc`.
    pub compound: bool,
    /// A function definition.
    pub function: bool,
    /// `( … )`.
    pub subshell: bool,
    /// A command ended by `&`.
    pub background: bool,
    /// `<<` here-documents and `<<<` here-strings.
    pub here_doc: bool,
    /// `<( … )` / `>( … )`.
    pub process_substitution: bool,
    /// `$(( … ))` or `(( … ))`.
    pub arithmetic: bool,
    /// `$( … )` or `` `…` ``.
    pub command_substitution: bool,
    /// `$VAR`, `${…}`, `~`, globs, braces, ANSI-C quoting: any word that is
    /// not literal.
    pub expansion: bool,
    /// A pipeline (`a | b`).
    pub pipeline: bool,
    /// A list (`a; b`, `a && b`, `a || b`, several lines).
    pub list: bool,
    /// `!` or `time` in front of a pipeline.
    pub pipeline_prefix: bool,
    /// Substitutions nested deeper than vigil reads.
    pub too_deep: bool,
    /// A substitution where the walk does not read it (inside `${…}`,
    /// `$((…))`, a `case`/`for` word, `[[ … ]]`, a here-document).
    pub unread_substitution: bool,
}

/// A command text, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub text: String,
    /// Every simple command found, including those inside compound commands
    /// and (read recursively, listed before the command whose word holds
    /// them) command substitutions.
    pub commands: Vec<SimpleCommand>,
    pub features: Features,
    /// The names of the functions the text's own list defines, whatever
    /// happens (each definition alone in its pipeline, not after
    /// `&&`/`||`, not in the background, not nested).
    pub functions: Vec<String>,
    /// Why the text could not be parsed (then `commands` is empty).
    pub error: Option<String>,
}

impl Script {
    /// Whether the text is nothing but simple commands joined by pipes and
    /// lists, every word literal, nothing in a subshell: the only shape a
    /// reader may approve without the operator.
    pub fn is_plain(&self) -> bool {
        let f = &self.features;
        self.error.is_none()
            && !(f.compound
                || f.function
                || f.subshell
                || f.background
                || f.here_doc
                || f.process_substitution
                || f.arithmetic
                || f.command_substitution
                || f.expansion
                || f.pipeline_prefix
                || f.too_deep
                || f.unread_substitution)
            && self.commands.iter().all(|c| c.place == Place::CurrentShell)
    }

    /// The one simple command the text is, when it is exactly one plain
    /// command (no pipe, no list).
    pub fn single(&self) -> Option<&SimpleCommand> {
        let f = &self.features;
        (self.is_plain() && !f.pipeline && !f.list && self.commands.len() == 1)
            .then(|| &self.commands[0])
    }

    /// Why the script is not plain, in words, or `None` when it is.
    pub fn not_plain_reason(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(format!("the shell parser rejects it: {e}"));
        }
        let f = &self.features;
        let found = [
            (f.command_substitution, "a command substitution"),
            (
                f.expansion,
                "an expansion (variable, glob, brace, tilde or $'…')",
            ),
            (f.process_substitution, "a process substitution"),
            (f.arithmetic, "arithmetic"),
            (f.background, "a background job (&)"),
            (f.function, "a function definition"),
            (f.subshell, "a subshell"),
            (f.compound, "a compound command"),
            (f.here_doc, "a here-document or here-string"),
            (f.pipeline_prefix, "`!` or `time` before a pipeline"),
            (f.too_deep, "nesting deeper than vigil reads"),
            (
                f.unread_substitution,
                "a command substitution where vigil does not read it",
            ),
        ];
        found
            .iter()
            .find(|(on, _)| *on)
            .map(|(_, what)| format!("it contains {what}"))
    }
}

/// Read `text` as bash would. Never panics; a text the parser rejects comes
/// back with [`Script::error`] set and no commands.
///
/// A tool call's command is read once, by [`Command::read`], and every
/// check reads that value; this is for texts that are not a call (a rule's
/// prefix, a denylist entry, `vigil policy check`).
pub fn parse(text: &str) -> Script {
    command::count();
    convert::parse(text)
}

/// A program word by its base name: `/bin/rm` is `rm`; a word with nothing
/// after its last `/` stays whole.
pub fn program_name(word: &str) -> &str {
    match word.rsplit_once('/') {
        Some((_, base)) if !base.is_empty() => base,
        _ => word,
    }
}

/// The words of a text the parser rejects: quotes and escapes dropped,
/// split at spaces and shell operators. Every check that must not let an
/// unparseable command slip past reads it this one way.
pub fn fallback_words(text: &str) -> Vec<String> {
    let stripped: String = text
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '`' | '\\'))
        .collect();
    stripped
        .split(|c: char| c.is_whitespace() || ";|&()<>$".contains(c))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The words of every simple command of `script` (the text of `text`),
/// quotes removed and the program by its [`program_name`]. For a text the
/// parser rejects: every run of its [`fallback_words`], each word taken as a
/// possible start of a command (by its base name).
pub fn command_runs(script: &Script, text: &str) -> Vec<Vec<String>> {
    if script.error.is_some() {
        let words = fallback_words(text);
        return (0..words.len())
            .map(|i| {
                let mut run = words[i..].to_vec();
                run[0] = program_name(&run[0]).to_string();
                run
            })
            .collect();
    }
    script
        .commands
        .iter()
        .map(|c| {
            let mut words = c.loose_words();
            if let Some(first) = words.first_mut() {
                *first = program_name(first).to_string();
            }
            words
        })
        .collect()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod runs_tests;
