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
const CARGO_REFUSED: &[&str] = &["--config", "-Z", "--manifest-path", "--target-dir"];

/// Python modules that test or compile the tree's sources.
const PYTHON_MODULES: &[&str] = &["unittest", "pytest", "compileall"];

/// pytest/unittest options that load a plugin or a configuration by name.
const PYTHON_REFUSED: &[&str] = &[
    "-p",
    "-c",
    "--config-file",
    "-o",
    "--override-ini",
    "--rootdir",
    "--confcutdir",
];

/// make options that read another makefile, directory or definitions.
const MAKE_REFUSED: &[&str] = &[
    "-f",
    "--file",
    "--makefile",
    "-C",
    "--directory",
    "-e",
    "--environment-overrides",
    "--eval",
    "-I",
    "--include-dir",
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
        "cd" => !args.iter().any(|a| names_outputs(a)),
        n if FILTERS.contains(&n) => true,
        "cargo" => {
            let sub = args.iter().find(|a| !a.starts_with(['-', '+']));
            sub.is_some_and(|s| CARGO.contains(s))
                && refused(CARGO_REFUSED).is_none()
                && !args.iter().any(|a| a.starts_with('+') && a.contains('/'))
                && !args.iter().any(|a| a.contains('/') && names_outputs(a))
        }
        "pytest" | "py.test" => python_args(args),
        n if n == "python" || n.starts_with("python3") => {
            args.first().is_some_and(|a| *a == "-m")
                && args.get(1).is_some_and(|m| PYTHON_MODULES.contains(m))
                && python_args(&args[2..])
        }
        "make" | "gmake" => {
            refused(MAKE_REFUSED).is_none()
                && !args
                    .iter()
                    .any(|a| a.contains('=') || (a.contains('/') && names_outputs(a)))
        }
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

fn python_args(args: &[&str]) -> bool {
    !args.iter().any(|a| {
        PYTHON_REFUSED
            .iter()
            .any(|r| a == r || a.starts_with(&format!("{r}=")))
            || names_outputs(a)
    })
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
            "cargo test 2>&1 | tail -n 20",
            "cd sub && cargo check",
            "python3 -m unittest -q test_calc",
            "python3 -m pytest -q tests/test_x.py -k fast",
            "pytest -x",
            "make",
            "make -j4 test",
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
            "cd target && cargo build",
            "cargo test > out.txt",
            "cargo $CMD",
            "cargo test | sort -o x",
        ] {
            assert!(!build(t), "{t}");
        }
    }
}
