//! Which commands may run unasked inside their outputs
//! ([`super::build_outputs`]): a build or a test by a tool vigil knows,
//! run on the tree's sources. An allow-list of shapes, read from the text.
//!
//! Why the command matters and not only its effects: what a build leaves
//! in its outputs is code the operator's tools run later, unconfined —
//! cargo links and runs what `target/` holds when its fingerprints say it
//! is fresh, python loads `__pycache__/*.pyc` whose header names the
//! source's time and size. When the tool builds from the sources (which
//! change only on the operator's word), its outputs are theirs; an
//! arbitrary command (`python3 -c …`, a script writing a crafted `.pyc`,
//! a build pointed at a manifest or module inside the outputs, a variable
//! or `--config` that swaps the compiler) could leave anything there. Such
//! a command is asked with its trial's report.

use vigil_shell::{Redirect, Script, SimpleCommand};

/// Subcommands of cargo that build or test the tree's crates.
const CARGO: &[&str] = &[
    "build", "b", "check", "c", "test", "t", "bench", "doc", "clippy", "run", "r",
];

/// cargo options that would build something else or with something else.
const CARGO_REFUSED: &[&str] = &["--config", "-Z", "-C", "--manifest-path", "--target-dir"];

/// Python modules that test or compile the tree's sources.
const PYTHON_MODULES: &[&str] = &["unittest", "pytest", "compileall"];

/// An option a tool may be given: its spelling and what value it takes.
/// The lists below are
/// allow-lists: any other word that starts with `-` is not a build of the
/// sources (make and unittest take any unambiguous abbreviation of a long
/// option, `--eva` for `--eval`, so no list of refused spellings is ever
/// complete).
type Opt = (&'static str, Takes);

/// The value an option takes.
#[derive(Clone, Copy)]
enum Takes {
    Nothing,
    /// The next word, or attached: `-kEXPR`, `--tb=short`.
    Value,
    /// An optional value, only ever attached (make's `-j4`, `--jobs=4`,
    /// `-Oline`), that must pass the check.
    Attached(fn(&str) -> bool),
}

use Takes::{Attached, Nothing, Value};

fn number(v: &str) -> bool {
    !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')
}

fn sync_mode(v: &str) -> bool {
    ["none", "line", "target", "recurse"].contains(&v)
}

/// make options that change nothing but how the sources are built and how
/// much is said (no other makefile, directory, definitions or include
/// path). `-j 4`: the `4` is read as a target, which is harmless.
const MAKE_OPTS: &[Opt] = &[
    ("-j", Attached(number)),
    ("--jobs", Attached(number)),
    ("-k", Nothing),
    ("--keep-going", Nothing),
    ("-S", Nothing),
    ("--no-keep-going", Nothing),
    ("-s", Nothing),
    ("--silent", Nothing),
    ("--quiet", Nothing),
    ("-B", Nothing),
    ("--always-make", Nothing),
    ("-w", Nothing),
    ("--print-directory", Nothing),
    ("--no-print-directory", Nothing),
    ("-O", Attached(sync_mode)),
    ("--output-sync", Attached(sync_mode)),
    ("-l", Attached(number)),
    ("--load-average", Attached(number)),
];

/// pytest options that select and report tests (no plugin, configuration,
/// root folder or warning filter, which may import a module by name).
const PYTEST_OPTS: &[Opt] = &[
    ("-q", Nothing),
    ("-qq", Nothing),
    ("--quiet", Nothing),
    ("-v", Nothing),
    ("-vv", Nothing),
    ("--verbose", Nothing),
    ("-x", Nothing),
    ("--exitfirst", Nothing),
    ("-s", Nothing),
    ("-l", Nothing),
    ("--showlocals", Nothing),
    ("--lf", Nothing),
    ("--last-failed", Nothing),
    ("--ff", Nothing),
    ("--failed-first", Nothing),
    ("--co", Nothing),
    ("--collect-only", Nothing),
    ("--no-header", Nothing),
    ("--disable-warnings", Nothing),
    ("--strict-markers", Nothing),
    ("-k", Value),
    ("-m", Value),
    ("--tb", Value),
    ("-r", Value),
    ("--maxfail", Value),
    ("--durations", Value),
    ("-n", Value),
];

/// unittest options (its `discover` folders are checked like any path).
const UNITTEST_OPTS: &[Opt] = &[
    ("-q", Nothing),
    ("--quiet", Nothing),
    ("-v", Nothing),
    ("--verbose", Nothing),
    ("-f", Nothing),
    ("--failfast", Nothing),
    ("-b", Nothing),
    ("--buffer", Nothing),
    ("-c", Nothing),
    ("--catch", Nothing),
    ("--locals", Nothing),
    ("-k", Value),
    ("--durations", Value),
    ("-s", Value),
    ("--start-directory", Value),
    ("-p", Value),
    ("--pattern", Value),
    ("-t", Value),
    ("--top-level-directory", Value),
];

/// compileall options that write only the usual `__pycache__` files.
const COMPILEALL_OPTS: &[Opt] = &[
    ("-q", Nothing),
    ("-f", Nothing),
    ("-l", Nothing),
    ("-j", Value),
    ("-r", Value),
];

/// Programs that may read a build's output in a pipeline: they write
/// nothing.
const FILTERS: &[&str] = &["head", "tail", "grep", "wc"];

/// Folder names a build must not take its input from: outputs (written
/// unasked) and dependency folders.
fn output_named(part: &str) -> bool {
    super::build_outputs::OUTPUT_NAMES.contains(&part) || part == "node_modules"
}

/// Whether an argument names something beneath an output folder: a path
/// (`target/x/Cargo.toml`) or a dotted module (`build.evil`).
fn names_outputs(arg: &str) -> bool {
    arg.split(['/', '.', '=', ':']).any(output_named)
}

/// `Ok` when `script` is a build or a test by a known tool on the tree's
/// sources (see the module doc); else why not, for the log.
pub(super) fn from_sources(script: &Script) -> Result<(), String> {
    if !script.is_plain() {
        return Err("not a plain command (an expansion, a substitution…)".into());
    }
    if script.commands.is_empty() {
        return Err("no command".into());
    }
    script.commands.iter().try_for_each(command)
}

fn command(c: &SimpleCommand) -> Result<(), String> {
    if !c.assignments.is_empty() {
        return Err("it sets a variable for the build".into());
    }
    if c.redirects
        .iter()
        .any(|r| !matches!(r, Redirect::DevNull | Redirect::DupFd))
    {
        return Err("it redirects to a file".into());
    }
    let words = c.literal_words().ok_or("a word is not literal")?;
    let (program, args) = words.split_first().ok_or("no program")?;
    let name = vigil_shell::program_name(program);
    let refused = |list: &[&str]| {
        args.iter().find(|a| {
            list.iter().any(|r| {
                *a == r || a.starts_with(&format!("{r}=")) || (r.len() == 2 && a.starts_with(r))
            })
        })
    };
    let ok = match name {
        "cd" => !args.iter().any(|a| names_outputs(a) || leaves_tree(a)),
        n if FILTERS.contains(&n) => filter_args(n, args),
        "cargo" => {
            let sub = args.iter().find(|a| !a.starts_with(['-', '+']));
            sub.is_some_and(|s| CARGO.contains(s))
                && refused(CARGO_REFUSED).is_none()
                && (sub != Some(&"clippy") || clippy_driver_args(args))
                && !args.iter().any(|a| a.starts_with('+') && a.contains('/'))
                && !args.iter().any(|a| a.contains('/') && names_outputs(a))
        }
        "pytest" | "py.test" => only(args, PYTEST_OPTS, source),
        n if n == "python" || n.starts_with("python3") => {
            args.first().is_some_and(|a| *a == "-m")
                && args.get(1).is_some_and(|m| PYTHON_MODULES.contains(m))
                && only(&args[2..], python_opts(args[1]), source)
        }
        "make" | "gmake" => only(args, MAKE_OPTS, make_target),
        _ => return Err(format!("`{name}` is not a build or test tool vigil knows")),
    };
    match ok {
        true => Ok(()),
        false => Err(format!(
            "`{}` is not a build of the tree's sources",
            words.join(" ")
        )),
    }
}

fn python_opts(module: &str) -> &'static [Opt] {
    match module {
        "pytest" => PYTEST_OPTS,
        "unittest" => UNITTEST_OPTS,
        _ => COMPILEALL_OPTS,
    }
}

/// Whether every option in `args` is one of `opts` (with its value: the
/// next word, or attached as `-kEXPR` / `--name=VALUE`) whose value names
/// nothing beneath an output folder, and every other argument passes
/// `operand`.
fn only(args: &[&str], opts: &[Opt], operand: fn(&str) -> bool) -> bool {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if *word == "--" {
            return words.all(|a| operand(a));
        }
        if !word.starts_with('-') || *word == "-" {
            if !operand(word) {
                return false;
            }
            continue;
        }
        let Some(value) = option_value(word, opts) else {
            return false;
        };
        let value = match value {
            Some(v) => Some(v),
            None if takes_value(word, opts) => words.next().copied(),
            None => None,
        };
        if value.is_some_and(|v| names_outputs(v) || leaves_tree(v)) {
            return false;
        }
    }
    true
}

/// What a filter after a build may be given: options on what it keeps of
/// the pipe, never a file (the real run reads the machine's files, not the
/// view's: a file there may differ from the trial's, `/proc` above all).
const FILTER_OPTS: &[Opt] = &[
    ("-n", Value),
    ("-c", Value),
    ("-q", Nothing),
    ("-l", Nothing),
    ("-w", Nothing),
    ("-m", Nothing),
    ("-L", Nothing),
];

/// What grep may be given there: how it matches and what it prints.
const GREP_OPTS: &[Opt] = &[
    ("-i", Nothing),
    ("-v", Nothing),
    ("-c", Nothing),
    ("-n", Nothing),
    ("-E", Nothing),
    ("-F", Nothing),
    ("-w", Nothing),
    ("-x", Nothing),
    ("-o", Nothing),
    ("-q", Nothing),
    ("-a", Nothing),
    ("-e", Value),
    ("-m", Value),
    ("-A", Value),
    ("-B", Value),
    ("-C", Value),
];

/// `head`, `tail`, `wc` take no operand (a count: `-n 20`); `grep` one
/// pattern, or its `-e` patterns and none besides.
fn filter_args(name: &str, args: &[&str]) -> bool {
    match name {
        "grep" => {
            // Words that are no option's value: the pattern, unless `-e`
            // gave them; any more would be files.
            let mut words = args.iter();
            let mut plain = 0;
            while let Some(w) = words.next() {
                if takes_value(w, GREP_OPTS) {
                    words.next();
                } else if !w.starts_with('-') {
                    plain += 1;
                }
            }
            let by_e = args.iter().any(|a| a.starts_with("-e"));
            only(args, GREP_OPTS, |_| true) && plain <= usize::from(!by_e)
        }
        _ => {
            // `tail -5`: a count written as an option.
            let count = |a: &&str| {
                a.len() > 1 && a.starts_with('-') && a[1..].bytes().all(|b| b.is_ascii_digit())
            };
            let rest: Vec<&str> = args.iter().copied().filter(|a| !count(a)).collect();
            only(&rest, FILTER_OPTS, |_| false)
        }
    }
}

/// What `cargo clippy -- …` passes to the compiler: lint levels only (no
/// `-C linker=…`, `--extern`, `-Z`…).
const CLIPPY_DRIVER_OPTS: &[Opt] = &[
    ("-D", Value),
    ("-W", Value),
    ("-A", Value),
    ("-F", Value),
    ("--deny", Value),
    ("--warn", Value),
    ("--allow", Value),
    ("--forbid", Value),
    ("--cap-lints", Value),
];

fn clippy_driver_args(args: &[&str]) -> bool {
    match args.iter().position(|a| *a == "--") {
        Some(at) => only(&args[at + 1..], CLIPPY_DRIVER_OPTS, |_| false),
        None => true,
    }
}

/// A test path or module: in the tree, not beneath an output folder.
fn source(arg: &str) -> bool {
    !names_outputs(arg) && !leaves_tree(arg)
}

/// Whether a path leaves the working tree (absolute, or through `..`):
/// what is tested or compiled there is not the tree's sources
/// (`unittest discover -s /usr/lib/python3/dist-packages` imports all).
fn leaves_tree(arg: &str) -> bool {
    arg.starts_with('/') || arg.starts_with('~') || arg.split('/').any(|p| p == "..")
}

/// A make target (`build` is a target, not the folder): no variable
/// definition, and no path beneath an output folder.
fn make_target(arg: &str) -> bool {
    !(arg.contains('=') || arg.contains('/') && names_outputs(arg))
}

/// `None`: `word` is not one of `opts`; `Some(None)`: it is, with no value
/// attached; `Some(Some(v))`: with `v` attached.
fn option_value<'a>(word: &'a str, opts: &[Opt]) -> Option<Option<&'a str>> {
    opts.iter().find_map(|&(name, takes)| {
        if word == name {
            return Some(None);
        }
        let rest = word.strip_prefix(name)?;
        let value = match name.starts_with("--") {
            true => rest.strip_prefix('=')?,
            false => rest,
        };
        let fits = match takes {
            Nothing => false,
            Value => !value.is_empty(),
            Attached(check) => check(value),
        };
        fits.then_some(Some(value))
    })
}

fn takes_value(word: &str, opts: &[Opt]) -> bool {
    opts.iter()
        .any(|&(name, takes)| matches!(takes, Value) && word == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(text: &str) -> bool {
        from_sources(&vigil_shell::parse(text)).is_ok()
    }

    #[test]
    fn known_builds_of_the_sources_only() {
        for t in [
            "cargo test -q --offline",
            "cargo build --release && cargo test",
            "cargo +nightly clippy --all-targets -- -D warnings",
            "cargo clippy -- -Dclippy::all -W clippy::pedantic --cap-lints=warn",
            "cargo test -- --nocapture --test-threads=1",
            "cargo test 2>&1 | tail -n 20",
            "cargo test 2>&1 | grep -v -e warning | head -n 40 | wc -l",
            "make 2>&1 | grep -i error",
            "make 2>&1 | grep -m 5 -A 2 error",
            "make 2>&1 | grep -e a -e b",
            "cargo build 2>&1 | tail -5",
            "cd sub && cargo check",
            "python3 -m unittest -q test_calc",
            "python3 -m pytest -q tests/test_x.py -k fast",
            "pytest -x",
            "make",
            "make -j4 test",
            "make -j 4 -k --no-print-directory all",
            "make --jobs=2 -Oline check",
            "make build",
            "make -- test",
            "python3 -m pytest -q -k 'fast and not slow' --tb=short tests",
            "python3 -m unittest discover -s tests -p 'test_*.py' -v",
            "python3 -m compileall -q -j 0 src",
        ] {
            assert!(build(t), "{t}");
        }
        for t in [
            // Anything else may write anything into the outputs.
            "python3 -c 'open(\"__pycache__/calc.cpython-311.pyc\",\"wb\")'",
            "python3 write_pyc.py",
            "cp evil target/debug/app",
            "sh build.sh",
            "touch target/x",
            // A build taking its input from the outputs, or another
            // compiler, configuration or makefile.
            "cargo build --manifest-path target/x/Cargo.toml",
            "cargo --config build.rustc-wrapper=./w build",
            "cargo -Zunstable-options build",
            "cargo +/tmp/toolchain build",
            "RUSTC_WRAPPER=./w cargo build",
            "env RUSTC_WRAPPER=./w cargo build",
            "python3 -m unittest target.evil",
            "python3 -m unittest discover -s build",
            "python3 -m pytest -p evil",
            "pytest -c target/pytest.ini",
            "python3 -m http.server",
            "make -f build/Makefile",
            "make CC=./cc",
            // An abbreviation of a long option (GNU make and argparse take
            // any unambiguous one), or an option no list names.
            "make --eva 'x:;touch build/app' x",
            "make --ev=x",
            "make --fil=build/Makefile",
            "make --dir build",
            "make --incl build",
            "make --env",
            "make -sf build/Makefile",
            "make -j4x",
            "make -- CC=./cc",
            "pytest -pevil",
            "pytest -ptarget.evil",
            "pytest -cbuild/pytest.ini",
            "pytest -oaddopts=-pevil",
            "pytest -W error::evil.Warn",
            "python3 -m pytest --confc build",
            "python3 -m unittest --buf target.evil",
            "python3 -m unittest -k x --locals -q -s build",
            "python3 -m compileall -b .",
            // Another folder's code, or a build pointed at another folder.
            "python3 -m unittest discover -s /usr/lib/python3/dist-packages -p '*.py'",
            "python3 -m compileall -q /usr/lib/python3",
            "pytest ../other",
            "python3 -m pytest --rootdir=/tmp",
            "cargo -C build build",
            "cargo -Cdoc build",
            // A filter reading a file (the real run's, not the view's).
            "python3 -m compileall -q . | grep -a zq7 /usr/../proc/1/cmdline",
            "make -s | grep -f /proc/1/oom_score_adj .git/config",
            "cargo test | head /etc/hostname",
            "cargo test | wc -l README",
            "cargo test | grep -r x .",
            "cargo test | head 55",
            "cargo test | grep -ex README",
            "cargo test | grep -m 5 x README",
            "cd /srv/other && make",
            "cd .. && cargo build",
            "cd target && cargo build",
            "cargo test > out.txt",
            "cargo $CMD",
            "cargo test | sort -o x",
            "cargo clippy -- -C linker=./ld",
            "cargo clippy --all-targets -- -D warnings --extern x=target/libx.rlib",
        ] {
            assert!(!build(t), "{t}");
        }
    }
}
