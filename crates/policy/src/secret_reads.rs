//! Whether a shell command reads a secret place ([`vigil_config::secrets`]):
//! the risk estimate rates such a command high (never low, never covered by
//! a prefix or policy `allow` rule), and the reason names the entry.
//!
//! The class it closes: any operand or redirection source that resolves
//! into a secret place, or a glob or variable that might. Operands are
//! resolved against the call's directory and every directory a `cd`/`pushd`
//! of the script names (tilde and `$HOME` expanded, `..` and symlinks
//! followed by [`resolve_local`]); a glob is compared with the places
//! component by component; a recursive reader (`grep -r`, `rg`, `tar`…)
//! given a folder that holds a secret place reads it too (the walk of that
//! folder is [`super::secret_walks`], kept off the decision path). What cannot be
//! known (`cd -`, a recursive read of a huge tree, or of a large one not
//! looked through yet) is reported as unknown:
//! the estimate then rates the command medium, never low.
//!
//! It reads directory entries and symlinks only (never a file's contents),
//! never runs anything and never decides: [`super::risk`] does.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;
use std::sync::{OnceLock, RwLock};

use super::resolve::{resolve_lexical, resolve_local};
use super::secret_operands::{
    after_colon, embedded_path, is_recursive, option_value, redirect_target,
    searches_here_by_default,
};
pub use super::secret_patterns::shell_glob;
use super::secret_patterns::{braces, names_of, opaque_entry, pattern_reaches};
use super::secret_walks::{self, SYNC_LIMIT, WALK_LIMIT, Walk};
use vigil_config::secrets::SecretPlaces;
use vigil_shell::{Redirect, Script, SimpleCommand};

/// Most directories a relative operand is resolved against (more `cd`s
/// than that: where it leads is not told).
const MAX_DIRS: usize = 32;

/// The places installed for this process (`None`: the defaults).
static INSTALLED: RwLock<Option<SecretPlaces>> = RwLock::new(None);

/// Use `places` for every later [`Scope::current`] (wired once at start-up
/// from the config: `[secrets]` and vigil's own directories).
pub fn install(places: SecretPlaces) {
    *INSTALLED.write().unwrap_or_else(|e| e.into_inner()) = Some(places);
    secret_walks::forget();
}

/// The places in force: the installed ones, else the default config's.
pub fn installed() -> SecretPlaces {
    static DEFAULT: OnceLock<SecretPlaces> = OnceLock::new();
    let got = INSTALLED.read().unwrap_or_else(|e| e.into_inner()).clone();
    got.unwrap_or_else(|| {
        DEFAULT
            .get_or_init(|| vigil_config::Config::default().secret_places())
            .clone()
    })
}

/// What a command is checked against.
#[derive(Debug, Clone)]
pub struct Scope {
    pub places: SecretPlaces,
    /// The directory the command starts in (`None`: unknown).
    pub cwd: Option<PathBuf>,
    /// The home directory `~` means.
    pub home: Option<PathBuf>,
}

impl Scope {
    /// The installed places, this process's working directory (where a
    /// local command runs) and `$HOME`.
    pub fn current() -> Scope {
        Scope {
            places: installed(),
            cwd: std::env::current_dir().ok(),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }
}

/// How sure the finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    /// An operand resolves into the place (or a recursive read holds it).
    Reads,
    /// A glob or a variable could name the place.
    MayRead,
    /// Where an operand leads cannot be told (`cd -`, a tree too big to
    /// look through).
    Unknown,
}

/// A secret place a command would (or might) read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The secret-place entry that matched (`~/.ssh`, `.env`…), or what
    /// could not be told.
    pub entry: String,
    /// The operand as written.
    pub operand: String,
    /// Where it leads (resolved path or pattern).
    pub target: String,
    pub certainty: Certainty,
}

impl Hit {
    /// The reason for the operator's card.
    pub fn reason(&self) -> String {
        let shown = if self.operand == self.target {
            format!("`{}`", self.operand)
        } else {
            format!("`{}` → {}", self.operand, self.target)
        };
        match self.certainty {
            Certainty::Reads => {
                format!("it reads a secret place: {shown} is in `{}`", self.entry)
            }
            Certainty::MayRead => format!(
                "it may read a secret place: {shown} could reach `{}`",
                self.entry
            ),
            Certainty::Unknown => format!(
                "vigil cannot tell whether it reads a secret place ({shown}: {})",
                self.entry
            ),
        }
    }
}

/// The first secret place `script` reads (a sure one before a possible
/// one before an unknown one), if any.
pub fn find(script: &Script, scope: &Scope) -> Option<Hit> {
    let mut dirs = Dirs::start(scope);
    let mut hits = Vec::new();
    for cmd in &script.commands {
        dirs.follow_cd(cmd, scope);
        hits.extend(command_hits(cmd, &dirs, scope));
    }
    hits.into_iter().min_by_key(|h| h.certainty as u8)
}

/// The directories a relative operand may be resolved against.
struct Dirs {
    known: Vec<PathBuf>,
    /// A `cd` went somewhere vigil cannot tell.
    lost: Option<String>,
    /// The folders walked so far for this command text.
    walks: Rc<Walks>,
}

impl Dirs {
    fn start(scope: &Scope) -> Dirs {
        Dirs {
            known: scope.cwd.iter().cloned().collect(),
            lost: scope.cwd.is_none().then(|| "the working directory".into()),
            walks: Rc::default(),
        }
    }

    /// A `cd`/`pushd` adds its target (the earlier ones stay: a subshell's
    /// `cd` ends with it, and being wrong here only asks more).
    fn follow_cd(&mut self, cmd: &SimpleCommand, scope: &Scope) {
        let words = cmd.loose_words();
        let Some(program) = words.first() else { return };
        if !matches!(program.as_str(), "cd" | "pushd" | "popd") {
            return;
        }
        let operand = words[1..].iter().find(|w| !w.starts_with('-') || *w == "-");
        let target = match operand.map(String::as_str) {
            None if program == "cd" => scope.home.clone(),
            None | Some("-") => None,
            Some(w) => match expand(w, scope.home.as_deref()) {
                Text::Plain(p) => self.resolve(&p).into_iter().next(),
                _ => None,
            },
        };
        match target {
            Some(t) if self.known.len() < MAX_DIRS => self.known.push(t),
            _ => self.lost = Some(format!("`{}`", words.join(" "))),
        }
    }

    /// These directories plus those one command changes into for itself
    /// (`tar -C DIR`, `git -C DIR`, `make --directory=DIR`, `env --chdir`).
    fn with_command_dirs(&self, words: &[String], scope: &Scope) -> Dirs {
        let mut out = Dirs {
            known: self.known.clone(),
            lost: self.lost.clone(),
            walks: self.walks.clone(),
        };
        for (i, w) in words.iter().enumerate() {
            let value = match w.as_str() {
                "-C" | "--directory" | "--chdir" => words.get(i + 1).map(String::as_str),
                _ => w
                    .strip_prefix("--directory=")
                    .or_else(|| w.strip_prefix("--chdir=")),
            };
            let Some(value) = value else { continue };
            match expand(value, scope.home.as_deref()) {
                Text::Plain(p) if out.known.len() < MAX_DIRS => {
                    out.known.extend(self.resolve(&p).into_iter().next())
                }
                _ => out.lost = Some(format!("`{w} {value}`")),
            }
        }
        out
    }

    /// `p` against every known directory (absolute: once), each with its
    /// symlinks followed first and then as written (`..` applied): the
    /// target may not be this machine, and being wrong here only asks more.
    fn resolve(&self, p: &str) -> Vec<PathBuf> {
        let bases: Vec<PathBuf> = if p.starts_with('/') {
            vec![PathBuf::from(p)]
        } else {
            self.known.iter().map(|d| d.join(p)).collect()
        };
        let mut out = Vec::new();
        for abs in bases {
            let lexical = resolve_lexical(&abs);
            if let Ok(real) = resolve_local(&abs)
                && real != lexical
            {
                out.push(real);
            }
            out.push(lexical);
        }
        out
    }
}

/// An operand after tilde and `$HOME` expansion.
enum Text {
    /// A path with nothing left to expand.
    Plain(String),
    /// A glob pattern (`*`, `?`, `[`).
    Glob(String),
    /// Something still expands (a variable, a substitution, `~user`).
    Opaque(String),
}

fn expand(word: &str, home: Option<&Path>) -> Text {
    let mut w = word.to_string();
    let home_s = home.map(|h| h.display().to_string());
    if let Some(h) = &home_s {
        for prefix in ["${HOME}", "$HOME", "~"] {
            if let Some(rest) = w.strip_prefix(prefix)
                && (rest.is_empty() || rest.starts_with('/'))
            {
                w = format!("{h}{rest}");
                break;
            }
        }
    }
    if w.contains(['$', '`']) || w.starts_with('~') {
        Text::Opaque(w)
    } else if w.contains(['*', '?', '[']) {
        Text::Glob(w)
    } else {
        Text::Plain(w)
    }
}

/// Every finding of one simple command.
fn command_hits(cmd: &SimpleCommand, dirs: &Dirs, scope: &Scope) -> Vec<Hit> {
    let words = cmd.loose_words();
    let literal: Vec<bool> = cmd.words.iter().map(|w| w.literal().is_some()).collect();
    let recursive = is_recursive(&words);
    let dirs = &dirs.with_command_dirs(&words, scope);
    let mut hits = Vec::new();
    let mut operands: Vec<(String, bool)> = Vec::new();
    for (i, w) in words.iter().enumerate().skip(1) {
        if !w.starts_with('-') || w == "-" {
            operands.push((w.clone(), literal[i]));
        }
        let embedded = option_value(w)
            .into_iter()
            .chain(embedded_path(w))
            .chain(after_colon(w));
        operands.extend(embedded.map(|v| (v.to_string(), literal[i])));
    }
    for a in &cmd.assignments {
        if let Some(value) = option_value(a) {
            operands.push((value.to_string(), false));
        }
    }
    for r in &cmd.redirects {
        if let Redirect::Other(text) = r
            && let Some(target) = redirect_target(text)
        {
            operands.push((target, false));
        }
    }
    if recursive
        && searches_here_by_default(&words)
        && !operands.iter().any(|(o, _)| exists(o, dirs))
    {
        operands.push((".".into(), true));
    }
    for (operand, is_literal) in operands {
        hits.extend(operand_hit(&operand, is_literal, recursive, dirs, scope));
    }
    hits
}

/// Whether a literal operand names something that exists.
fn exists(operand: &str, dirs: &Dirs) -> bool {
    dirs.resolve(operand).iter().any(|p| p.exists())
}

/// The finding for one operand, if any.
fn operand_hit(
    operand: &str,
    is_literal: bool,
    recursive: bool,
    dirs: &Dirs,
    scope: &Scope,
) -> Option<Hit> {
    if is_literal {
        return text_hit(operand, Text::Plain(operand.into()), recursive, dirs, scope);
    }
    let hits = braces(operand).into_iter().filter_map(|word| {
        let text = expand(&word, scope.home.as_deref());
        text_hit(operand, text, recursive, dirs, scope)
    });
    hits.min_by_key(|h| h.certainty as u8)
}

/// The finding for one operand (`shown` as written), once expanded.
fn text_hit(shown: &str, text: Text, recursive: bool, dirs: &Dirs, scope: &Scope) -> Option<Hit> {
    let hit = |entry: &str, target: String, certainty| Hit {
        entry: entry.to_string(),
        operand: shown.to_string(),
        target,
        certainty,
    };
    let opaque = |word: &str| {
        opaque_entry(word, &scope.places, scope.home.as_deref()).map(|(entry, sure)| {
            let certainty = if sure {
                Certainty::Reads
            } else {
                Certainty::MayRead
            };
            hit(&entry, word.to_string(), certainty)
        })
    };
    match text {
        Text::Plain(p) => {
            for real in dirs.resolve(&p) {
                if let Some(h) = path_hit(&real, recursive, scope, &dirs.walks, &hit) {
                    return Some(h);
                }
            }
            let lost = dirs.lost.as_ref().filter(|_| !p.starts_with('/'))?;
            let unknown = hit(
                &format!("relative to {lost}"),
                p.clone(),
                Certainty::Unknown,
            );
            Some(opaque(&p).unwrap_or(unknown))
        }
        Text::Glob(g) => glob_hit(&g, dirs, scope)
            .map(|(entry, target)| hit(&entry, target, Certainty::MayRead))
            .or_else(|| opaque(&g)),
        Text::Opaque(o) => opaque(&o),
    }
}

/// A resolved path inside a secret place, or (for a recursive reader) a
/// folder holding one.
fn path_hit(
    real: &Path,
    recursive: bool,
    scope: &Scope,
    walks: &Walks,
    hit: &dyn Fn(&str, String, Certainty) -> Hit,
) -> Option<Hit> {
    let shown = real.display().to_string();
    if let Some(entry) = scope.places.matches(real) {
        return Some(hit(entry, shown, Certainty::Reads));
    }
    if other_processes(real) {
        return Some(hit(PROC_ENTRY, shown, Certainty::Reads));
    }
    if !recursive || !real.is_dir() {
        return None;
    }
    for (entry, root) in scope.places.roots() {
        if let Some(root) = root
            && root.starts_with(real)
            && root != real
            && std::fs::symlink_metadata(root).is_ok()
        {
            return Some(hit(
                entry,
                format!("{shown} (holds {})", root.display()),
                Certainty::Reads,
            ));
        }
    }
    match walks.walk(real, &scope.places) {
        Some(Walk::Found(entry, at)) => Some(hit(
            &entry,
            format!("{shown} (holds {})", at.display()),
            Certainty::Reads,
        )),
        Some(Walk::TooBig) => Some(hit(
            &format!("more than {WALK_LIMIT} entries to look through"),
            shown,
            Certainty::Unknown,
        )),
        None => Some(hit(
            "a large tree still being looked through",
            shown,
            Certainty::Unknown,
        )),
        Some(Walk::Clean) => None,
    }
}

/// The entry a read of other processes' details is reported under.
pub const PROC_ENTRY: &str = "/proc (other processes' details)";

/// Whether a resolved path lies in `/proc` beyond the machine's figures
/// (a symlink in the tree, `link -> /proc`, leads there as well as the
/// text does; [`super::allow_list`] judges the text). `/proc/self`
/// resolves here to vigil's own process, whose status the reader's stands
/// for.
fn other_processes(real: &Path) -> bool {
    let Ok(rest) = real.strip_prefix("/proc") else {
        return false;
    };
    let own = Path::new(&std::process::id().to_string()).to_path_buf();
    let as_self = rest
        .strip_prefix(&own)
        .map(|r| Path::new("/proc/self").join(r));
    let shown = as_self.unwrap_or_else(|_| real.to_path_buf());
    !super::allow_list::PROC_READABLE.contains(&shown.to_string_lossy().as_ref())
}

/// The walks of one command text: each folder once, and at most
/// [`SYNC_LIMIT`] entries listed now for all of them together (a text
/// naming the same big tree a thousand times costs one look).
struct Walks {
    done: RefCell<HashMap<PathBuf, Option<Walk>>>,
    budget: Cell<usize>,
}

impl Default for Walks {
    fn default() -> Self {
        Walks {
            done: RefCell::default(),
            budget: Cell::new(SYNC_LIMIT),
        }
    }
}

impl Walks {
    fn walk(&self, dir: &Path, places: &SecretPlaces) -> Option<Walk> {
        if let Some(w) = self.done.borrow().get(dir) {
            return w.clone();
        }
        let w = secret_walks::walk(dir, places, &self.budget);
        self.done.borrow_mut().insert(dir.to_path_buf(), w.clone());
        w
    }
}

/// A glob that could reach a secret place: `(entry, pattern)`.
fn glob_hit(glob: &str, dirs: &Dirs, scope: &Scope) -> Option<(String, String)> {
    let bases: Vec<PathBuf> = if glob.starts_with('/') {
        vec![PathBuf::from("/")]
    } else {
        dirs.known.clone()
    };
    for base in bases {
        let pattern = literal_prefix_resolved(&base.join(glob));
        let comps: Vec<String> = names_of(&pattern);
        for (entry, root) in scope.places.roots() {
            let reaches = match root {
                Some(root) => pattern_reaches(&comps, &names_of(root)),
                None => comps
                    .iter()
                    .any(|c| shell_glob(c, entry) || shell_glob(entry, c)),
            };
            if reaches {
                return Some((entry.to_string(), pattern.display().to_string()));
            }
        }
    }
    None
}

/// The pattern with its leading glob-free components resolved (symlinks
/// and `..`), the rest kept as written.
fn literal_prefix_resolved(pattern: &Path) -> PathBuf {
    let comps: Vec<Component> = pattern.components().collect();
    let split = comps
        .iter()
        .position(|c| c.as_os_str().to_string_lossy().contains(['*', '?', '[']))
        .unwrap_or(comps.len());
    let head: PathBuf = comps[..split].iter().collect();
    let mut out = resolve_local(&head).unwrap_or_else(|_| resolve_lexical(&head));
    for c in &comps[split..] {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "secret_reads_tests.rs"]
mod tests;
