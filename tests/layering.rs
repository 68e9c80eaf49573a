//! Keeps `src/lib.rs`'s layering claim true: reads every `crate::…`,
//! `super::…` and `self::…` path in `src/` and fails when a module reaches a
//! layer above its own, or when two files of one layer import each other
//! (directly or around a longer loop).
//!
//! It reads source text only (no compiler, no dependencies): a path counts
//! wherever it appears outside `#[cfg(test)]` modules and comments, so a
//! fully qualified path in a function body counts as much as a `use`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use its own layer and any layer
/// listed before it, never one after it.
const LAYERS: &[&[&str]] = &[
    // Plain utilities and plain data: they know nothing of the product.
    &["http_date", "redact", "shell", "config"],
    // Approval policy: pure decisions over the parsed command and the config.
    &["policy"],
    // Where processes run.
    &["exec"],
    // The tool contract and the built-in tools.
    &["tools"],
    // The contract between the agent and its consoles.
    &["event"],
    // The model stand-in shared by the tests and `--demo`.
    &["scripted"],
    // The agent: model dialects, loop, approvals, session store.
    &["agent"],
    // The console: a client of the contract.
    &["console"],
    // The wiring and the run modes.
    &["cli", "main", "lib", "bin"],
];

/// Layers the console may read besides its own: the contract and plain data.
/// Everything else it needs must arrive through `event`.
const CONSOLE_MAY_USE: &[&str] = &["event", "config", "http_date", "redact", "console"];

fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top))
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/agent/turn.rs` → `[agent, turn]`,
/// `src/agent/mod.rs` → `[agent]`, `src/lib.rs` → `[]`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src_dir()).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("file name");
    match (last.as_str(), parts.is_empty()) {
        ("mod.rs", _) | ("lib.rs", true) => {}
        (name, _) => parts.push(name.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// The text without comments and without `#[cfg(test)]` items (a test may
/// build whatever it needs).
fn production_text(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut skip_depth: Option<i32> = None;
    let mut depth = 0i32;
    let mut pending_test_attr = false;
    for line in src.lines() {
        let code = line.split("//").next().unwrap_or("");
        let trimmed = code.trim();
        if skip_depth.is_none() && trimmed.starts_with("#[cfg(test)]") {
            pending_test_attr = true;
            continue;
        }
        let opens = code.matches('{').count() as i32;
        let closes = code.matches('}').count() as i32;
        if pending_test_attr && !trimmed.is_empty() {
            pending_test_attr = false;
            if opens > closes {
                skip_depth = Some(depth);
            }
            depth += opens - closes;
            continue;
        }
        depth += opens - closes;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every module path a file's code names, resolved against `module`.
fn referenced_paths(module: &[String], is_mod_file: bool, text: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = text[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            if at > 1 && &text[at - 2..at] == "::" {
                continue;
            }
            let tail: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut segs: Vec<&str> = tail.split("::").filter(|s| !s.is_empty()).collect();
            // The directory the path is relative to.
            let mut base: Vec<String> = if is_mod_file {
                module.to_vec()
            } else {
                module[..module.len().saturating_sub(1)].to_vec()
            };
            match segs.first().copied() {
                Some("crate") => base.clear(),
                Some("self") => {
                    base = module.to_vec();
                }
                _ => {}
            }
            let mut resolved = base;
            // Leading `super`s (after the first, each climbs once more);
            // `self` keeps the module.
            if segs.first() == Some(&"super") || segs.first() == Some(&"self") {
                let first = segs.remove(0);
                if first == "super" && !is_mod_file {
                    // `super` from a leaf file is its parent directory: the base.
                } else if first == "super" {
                    resolved.pop();
                }
                while segs.first() == Some(&"super") {
                    segs.remove(0);
                    resolved.pop();
                }
            } else {
                segs.remove(0);
            }
            resolved.extend(segs.iter().map(|s| s.to_string()));
            found.push(resolved);
        }
    }
    found
}

/// The longest prefix of `path` that names a known module.
fn known_module(path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

struct Graph {
    /// file module → modules it names (resolved to known modules).
    edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    mod_files: BTreeSet<Vec<String>>,
}

/// Modules declared `#[cfg(test)] mod name;`: whole files of tests.
fn test_only_modules(files: &[PathBuf]) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for f in files {
        let text = fs::read_to_string(f).expect("read source");
        let mut lines = text.lines().map(str::trim).peekable();
        while let Some(line) = lines.next() {
            if line != "#[cfg(test)]" {
                continue;
            }
            let Some(next) = lines.peek() else { break };
            let name = next
                .strip_prefix("mod ")
                .or_else(|| next.strip_prefix("pub mod "))
                .and_then(|r| r.strip_suffix(';'));
            if let Some(name) = name {
                let mut m = module_of(f);
                m.push(name.to_string());
                out.insert(m);
            }
        }
    }
    out
}

fn graph() -> Graph {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let tests = test_only_modules(&files);
    files.retain(|f| !tests.contains(&module_of(f)));
    let mut modules = BTreeSet::new();
    let mut mod_files = BTreeSet::new();
    for f in &files {
        let m = module_of(f);
        if f.file_name().is_some_and(|n| n == "mod.rs") {
            mod_files.insert(m.clone());
        }
        modules.insert(m);
    }
    let mut edges = BTreeMap::new();
    for f in &files {
        let module = module_of(f);
        let is_mod = f
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
        let text = production_text(&fs::read_to_string(f).expect("read source"));
        let targets: BTreeSet<Vec<String>> = referenced_paths(&module, is_mod, &text)
            .iter()
            .filter_map(|p| known_module(p, &modules))
            .filter(|t| *t != module)
            .collect();
        edges.insert(module, targets);
    }
    Graph { edges, mod_files }
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let g = graph();
    let mut wrong = Vec::new();
    for (from, tos) in &g.edges {
        let Some(top) = from.first() else { continue };
        let Some(own) = layer_of(top) else {
            wrong.push(format!("{}: top-level module not in LAYERS", show(from)));
            continue;
        };
        for to in tos {
            let Some(their) = to.first().and_then(|t| layer_of(t)) else {
                continue;
            };
            let console_reach = top == "console" && !CONSOLE_MAY_USE.contains(&to[0].as_str());
            if their > own || console_reach {
                wrong.push(format!("{} uses {}", show(from), show(to)));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that break the layering of src/lib.rs:\n  {}",
        wrong.join("\n  ")
    );
}

/// Import loops between files of one layer: `a` names `b` and `b` names
/// `a`, directly or around a longer cycle. A `mod.rs` declares and
/// re-exports its children, so edges into or out of it don't count.
#[test]
fn no_import_loops_between_files() {
    let g = graph();
    let leaf = |m: &Vec<String>| !g.mod_files.contains(m) && !m.is_empty();
    let adj: BTreeMap<&Vec<String>, Vec<&Vec<String>>> = g
        .edges
        .iter()
        .filter(|(f, _)| leaf(f))
        .map(|(f, tos)| (f, tos.iter().filter(|t| leaf(t)).collect()))
        .collect();
    let mut loops = BTreeSet::new();
    for start in adj.keys() {
        // Depth-first search for a path back to `start`.
        let mut stack = vec![(*start, vec![*start])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in adj.get(at).into_iter().flatten() {
                if *next == *start {
                    let mut names: Vec<String> = path.iter().map(|m| show(m)).collect();
                    let min = names
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, n)| *n)
                        .map(|(i, _)| i);
                    names.rotate_left(min.unwrap_or(0));
                    loops.insert(names.join(" -> "));
                } else if seen.insert(*next) {
                    let mut p = path.clone();
                    p.push(next);
                    stack.push((next, p));
                }
            }
        }
    }
    assert!(
        loops.is_empty(),
        "import loops between files:\n  {}",
        loops.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}

#[test]
fn the_reader_resolves_paths_as_rustc_does() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    // From a leaf file, `super::x` is a sibling.
    let p = referenced_paths(&m("agent::turn"), false, "use super::runner::Shared;");
    assert_eq!(p, vec![m("agent::runner::Shared")]);
    // From a mod.rs, `super::x` is a sibling of the directory.
    let p = referenced_paths(&m("exec::tmux"), true, "use super::backend::Backend;");
    assert_eq!(p, vec![m("exec::backend::Backend")]);
    // `crate::` is absolute, `self::` is the module itself.
    let p = referenced_paths(
        &m("console"),
        true,
        "x = crate::exec::leave::OnExit; self::keys",
    );
    assert_eq!(p, vec![m("exec::leave::OnExit"), m("console::keys")]);
    // Test modules and comments do not count.
    let text = production_text(
        "use a; // crate::agent\nfn f() {}\n#[cfg(test)]\nmod tests {\n use crate::agent;\n}\nuse crate::tools;\n",
    );
    assert!(
        !text.contains("agent") && text.contains("crate::tools"),
        "{text}"
    );
}
