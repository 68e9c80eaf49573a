//! brush-parser's AST → vigil's [`Script`]: collects the simple commands
//! (recursing into compound commands and, to a bounded depth, into command
//! substitutions) and raises a [`Features`] flag for every construct the
//! view does not model. It never executes and never decides.

use brush_parser::ast::{
    self, AndOr, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList,
    IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, Pipeline, SeparatorOperator,
};
use brush_parser::{Parser, ParserOptions};

use super::{Features, Place, Redirect, Script, SimpleCommand, Word};

/// How deep command substitutions are read before giving up (`too_deep`).
const MAX_DEPTH: usize = 8;

/// Longest text read at all; longer is reported as a parse error (the
/// operator still sees it and decides).
const MAX_LEN: usize = 64 * 1024;

/// Deepest nesting of `(` read at all. brush-parser's arithmetic grammar
/// backtracks exponentially in the nesting depth (found by fuzzing: ~30
/// nested `((` kept the parser busy for minutes), so deeper text is
/// reported as a parse error, counted on the raw text (parentheses inside
/// quotes count too: that errs towards asking).
const MAX_PARENS: usize = 10;

/// Deepest nesting of `{` read at all: the parser and the walker recurse
/// per level (found by the red team: 500 nested `{ …; }` overflowed the
/// stack).
const MAX_BRACES: usize = 32;

/// Why `text` is not even handed to the parser, if it is not.
fn too_hard(text: &str) -> Option<String> {
    let (mut parens, mut braces) = (0usize, 0usize);
    for ch in text.chars() {
        match ch {
            '(' => {
                parens += 1;
                if parens > MAX_PARENS {
                    return Some(format!(
                        "parentheses nested deeper than {MAX_PARENS}, more than vigil reads"
                    ));
                }
            }
            ')' => parens = parens.saturating_sub(1),
            '{' => {
                braces += 1;
                if braces > MAX_BRACES {
                    return Some(format!(
                        "braces nested deeper than {MAX_BRACES}, more than vigil reads"
                    ));
                }
            }
            '}' => braces = braces.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// How many substitutions (`$( … )`, `` `…` ``, `<( … )`, `>( … )`) the
/// text opens, counted on the raw text: outside single quotes, not
/// escaped. Comments and quoted here-documents count too (that errs
/// towards asking).
fn substitutions_opened(text: &str) -> usize {
    let chars: Vec<char> = text.chars().collect();
    let (mut n, mut ticks, mut i) = (0usize, 0usize, 0usize);
    let (mut single, mut double) = (false, false);
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\\' if !single => i += 1,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '$' | '<' | '>' if !single && next == Some('(') => {
                let arithmetic = c == '$' && chars.get(i + 2) == Some(&'(');
                if !arithmetic {
                    n += 1;
                }
            }
            '`' if !single => ticks += 1,
            _ => {}
        }
        i += 1;
    }
    n + ticks / 2
}

pub(super) fn parse(text: &str) -> Script {
    let mut script = Script {
        text: text.to_string(),
        commands: Vec::new(),
        features: Features::default(),
        functions: Vec::new(),
        error: None,
    };
    if let Some(why) = too_hard(text) {
        script.error = Some(why);
        return script;
    }
    let mut walker = Walker {
        options: ParserOptions::default(),
        commands: Vec::new(),
        features: Features::default(),
        read: 0,
        top_next: false,
        functions: Vec::new(),
    };
    match walker.program(text, Place::CurrentShell, 0) {
        Ok(()) => {
            script.commands = walker.commands;
            script.features = walker.features;
            script.functions = walker.functions;
            // A substitution the walk did not reach (inside `${…}`,
            // `$((…))`, a `case`/`for` word, `[[ … ]]`, a here-document)
            // runs a command vigil has not read.
            script.features.unread_substitution = substitutions_opened(text) > walker.read;
        }
        Err(e) => script.error = Some(e),
    }
    script
}

struct Walker {
    options: ParserOptions,
    commands: Vec<SimpleCommand>,
    features: Features,
    /// Substitutions read (their commands are in `commands`).
    read: usize,
    /// The next simple command is one the reading shell runs itself,
    /// unconditionally (taken by the first [`Self::simple`]).
    top_next: bool,
    /// Functions the text's own list defines ([`Script::functions`]).
    functions: Vec<String>,
}

impl Walker {
    fn program(&mut self, text: &str, place: Place, depth: usize) -> Result<(), String> {
        if text.len() > MAX_LEN {
            return Err(format!("the text is longer than {MAX_LEN} bytes"));
        }
        if text.contains('\0') {
            return Err("the text contains a NUL byte".into());
        }
        let mut parser = Parser::new(std::io::BufReader::new(text.as_bytes()), &self.options);
        let program = parser.parse_program().map_err(|e| e.to_string())?;
        let mut items = 0;
        for list in &program.complete_commands {
            items += list.0.len();
            if depth == 0 && place == Place::CurrentShell {
                self.top_list(list);
            } else {
                self.list(list, place, depth);
            }
        }
        if items > 1 {
            self.features.list = true;
        }
        Ok(())
    }

    fn list(&mut self, list: &CompoundList, place: Place, depth: usize) {
        if list.0.len() > 1 {
            self.features.list = true;
        }
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            self.list_item(and_or, sep, place, depth);
        }
    }

    /// The text's own list: [`Self::list`], marking the simple commands
    /// the reading shell runs itself, unconditionally
    /// ([`SimpleCommand::top_level`]).
    fn top_list(&mut self, list: &CompoundList) {
        if list.0.len() > 1 {
            self.features.list = true;
        }
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            let first = &and_or.first;
            self.top_next = !matches!(sep, SeparatorOperator::Async)
                && !first.bang
                && first.timed.is_none()
                && matches!(first.seq.as_slice(), [Command::Simple(_)]);
            if let ([Command::Function(def)], false) = (
                first.seq.as_slice(),
                matches!(sep, SeparatorOperator::Async) || first.bang,
            ) {
                self.functions.push(def.fname.value.clone());
            }
            self.list_item(and_or, sep, Place::CurrentShell, 0);
            self.top_next = false;
        }
    }

    fn list_item(
        &mut self,
        and_or: &ast::AndOrList,
        sep: &SeparatorOperator,
        place: Place,
        depth: usize,
    ) {
        if matches!(sep, SeparatorOperator::Async) {
            self.features.background = true;
        }
        self.pipeline(&and_or.first, place, depth);
        if !and_or.additional.is_empty() {
            self.features.list = true;
        }
        for next in &and_or.additional {
            let (AndOr::And(p) | AndOr::Or(p)) = next;
            self.pipeline(p, place, depth);
        }
    }

    fn pipeline(&mut self, pipeline: &Pipeline, place: Place, depth: usize) {
        if pipeline.bang || pipeline.timed.is_some() {
            self.features.pipeline_prefix = true;
        }
        if pipeline.seq.len() > 1 {
            self.features.pipeline = true;
        }
        for command in &pipeline.seq {
            self.command(command, place, depth);
        }
    }

    fn command(&mut self, command: &Command, place: Place, depth: usize) {
        match command {
            Command::Simple(simple) => self.simple(simple, place, depth),
            Command::Compound(compound, redirects) => {
                self.compound(compound, place, depth);
                if let Some(list) = redirects {
                    for r in &list.0 {
                        self.redirect(r, depth);
                    }
                }
            }
            Command::Function(def) => {
                self.features.function = true;
                self.compound(&def.body.0, place, depth);
            }
            Command::ExtendedTest(..) => self.features.compound = true,
        }
    }

    fn compound(&mut self, compound: &CompoundCommand, place: Place, depth: usize) {
        use CompoundCommand as C;
        match compound {
            C::Subshell(sub) => {
                self.features.subshell = true;
                self.list(&sub.list, Place::Subshell, depth);
            }
            C::BraceGroup(group) => {
                self.features.compound = true;
                self.list(&group.list, place, depth);
            }
            C::IfClause(clause) => {
                self.features.compound = true;
                self.list(&clause.condition, place, depth);
                self.list(&clause.then, place, depth);
                for e in clause.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c, place, depth);
                    }
                    self.list(&e.body, place, depth);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.features.compound = true;
                self.list(&w.0, place, depth);
                self.list(&w.1.list, place, depth);
            }
            C::ForClause(f) => {
                self.features.compound = true;
                self.list(&f.body.list, place, depth);
            }
            C::ArithmeticForClause(f) => {
                self.features.compound = true;
                self.features.arithmetic = true;
                self.list(&f.body.list, place, depth);
            }
            C::CaseClause(c) => {
                self.features.compound = true;
                for item in &c.cases {
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd, place, depth);
                    }
                }
            }
            C::Arithmetic(_) => {
                self.features.compound = true;
                self.features.arithmetic = true;
            }
            C::Coprocess(co) => {
                self.features.compound = true;
                self.features.background = true;
                self.command(&co.body, Place::Subshell, depth);
            }
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, place: Place, depth: usize) {
        let mut cmd = SimpleCommand {
            assignments: Vec::new(),
            words: Vec::new(),
            redirects: Vec::new(),
            place,
            top_level: std::mem::take(&mut self.top_next),
        };
        let prefix = simple.prefix.iter().flat_map(|p| p.0.iter());
        let suffix = simple.suffix.iter().flat_map(|s| s.0.iter());
        let name = simple
            .word_or_name
            .iter()
            .map(|w| CommandPrefixOrSuffixItem::Word(w.clone()));
        let items: Vec<CommandPrefixOrSuffixItem> =
            prefix.cloned().chain(name).chain(suffix.cloned()).collect();
        for item in &items {
            match item {
                CommandPrefixOrSuffixItem::Word(w) => {
                    let word = self.word(&w.value, depth);
                    cmd.words.push(word);
                }
                CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
                    // The value may substitute: read it like a word.
                    self.word(&w.value, depth);
                    cmd.assignments.push(w.value.clone());
                }
                CommandPrefixOrSuffixItem::IoRedirect(r) => {
                    let r = self.redirect(r, depth);
                    cmd.redirects.push(r);
                }
                CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    self.features.process_substitution = true;
                    self.read += 1;
                    self.list(&sub.list, Place::Subshell, depth);
                }
            }
        }
        self.commands.push(cmd);
    }

    /// Read a word; its command substitutions are read as scripts of their
    /// own (in a subshell place).
    fn word(&mut self, raw: &str, depth: usize) -> Word {
        let word = Word::read(raw, &self.options);
        if word.literal().is_none() {
            self.features.expansion = true;
        }
        if word.arithmetic {
            self.features.arithmetic = true;
        }
        for inner in &word.substitutions {
            self.features.command_substitution = true;
            self.nested(inner, depth);
        }
        word
    }

    fn nested(&mut self, text: &str, depth: usize) {
        self.read += 1;
        if depth + 1 >= MAX_DEPTH {
            self.features.too_deep = true;
            return;
        }
        if self.program(text, Place::Subshell, depth + 1).is_err() {
            // The outer text parsed; an inner piece that does not is still
            // not understood.
            self.features.too_deep = true;
        }
    }

    fn redirect(&mut self, r: &IoRedirect, depth: usize) -> Redirect {
        match r {
            IoRedirect::File(fd, kind, target) => self.file_redirect(*fd, kind, target, depth),
            IoRedirect::HereDocument(..) => {
                self.features.here_doc = true;
                Redirect::Other(r.to_string())
            }
            IoRedirect::HereString(_, w) => {
                self.features.here_doc = true;
                self.word(&w.value, depth);
                Redirect::Other(r.to_string())
            }
            IoRedirect::OutputAndError(w, _) => {
                let word = self.word(&w.value, depth);
                match word.literal() {
                    Some("/dev/null") => Redirect::DevNull,
                    _ => Redirect::Other(r.to_string()),
                }
            }
        }
    }

    fn file_redirect(
        &mut self,
        fd: Option<i32>,
        kind: &IoFileRedirectKind,
        target: &IoFileRedirectTarget,
        depth: usize,
    ) -> Redirect {
        let text = format!(
            "{}{kind}{target}",
            fd.map(|f| f.to_string()).unwrap_or_default()
        );
        match target {
            IoFileRedirectTarget::Filename(w) => match self.word(&w.value, depth).literal() {
                Some("/dev/null") => Redirect::DevNull,
                _ => Redirect::Other(text),
            },
            IoFileRedirectTarget::Fd(_) => Redirect::DupFd,
            IoFileRedirectTarget::Duplicate(w) => {
                let word = self.word(&w.value, depth);
                match word.literal() {
                    Some(d) if !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()) => {
                        Redirect::DupFd
                    }
                    _ => Redirect::Other(text),
                }
            }
            IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                self.features.process_substitution = true;
                self.read += 1;
                self.list(&sub.list, Place::Subshell, depth);
                Redirect::Other(text)
            }
        }
    }
}
