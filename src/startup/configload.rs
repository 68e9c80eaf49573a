//! Loading the configuration for a run: the file's own checks, then each
//! layer's ([`super::check_config`]), with the mistakes a first error would
//! hide reported together: a bad `[console.keys]` binding is named (with
//! its line) beside the file's other mistakes, not after they are fixed.
//!
//! It reads the config file and decides nothing else.

use std::path::Path;

use crate::config::{Config, ConfigError, default_config_path};
use crate::console::keys::Keymap;

/// The configuration for this run, or every mistake found in it.
pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
    let path = explicit
        .map(Path::to_path_buf)
        .or_else(|| default_config_path().filter(|p| p.exists()));
    let keys = path.as_deref().and_then(key_mistake);
    match (Config::load(explicit), keys, path) {
        (Err(ConfigError::Parse { path, message }), Some(keys), _) => Err(ConfigError::Parse {
            path,
            message: merged(&message, keys),
        }),
        (Ok(_), Some((_, message)), Some(path)) => Err(ConfigError::Parse { path, message }),
        (Ok(config), _, _) => super::check_config(&config).map(|()| config),
        (Err(e), _, _) => Err(e),
    }
}

/// A `[console.keys]` binding the console would refuse, as
/// `(line, "line L: console.keys.ACTION: why")`, read from the file even
/// when other settings in it are wrong.
fn key_mistake(path: &Path) -> Option<(usize, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let table: toml::Table = toml::from_str(&text).ok()?;
    let keys = table.get("console")?.get("keys")?.as_table()?;
    let bindings = keys
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    let e = Keymap::from_config(&bindings).err()?;
    let line = key_line(&text, &e.action).unwrap_or(0);
    let at = if line > 0 {
        format!("line {line}: ")
    } else {
        String::new()
    };
    Some((
        line,
        format!("{at}console.keys.{}: {}", e.action, e.message),
    ))
}

/// The line of `action = …` in the `[console.keys]` table.
fn key_line(text: &str, action: &str) -> Option<usize> {
    let mut in_keys = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            in_keys = t.trim_matches(['[', ']', ' ']).replace(' ', "") == "console.keys";
            continue;
        }
        let name = t.split('=').next().unwrap_or("").trim().trim_matches('"');
        if in_keys && name == action {
            return Some(i + 1);
        }
    }
    None
}

/// The file's mistakes (one, or `N mistakes:` and a list) with the key
/// binding's, in line order.
fn merged(message: &str, (line, keys): (usize, String)) -> String {
    let mut all: Vec<(usize, String)> = match message.split_once(" mistakes:\n  ") {
        Some((_, list)) => list.split("\n  ").map(|m| (line_of(m), m.into())).collect(),
        None => vec![(line_of(message), message.into())],
    };
    all.push((line, keys));
    all.sort_by_key(|(l, _)| *l);
    let list: Vec<String> = all.into_iter().map(|(_, m)| m).collect();
    format!("{} mistakes:\n  {}", list.len(), list.join("\n  "))
}

/// The `N` of a message starting `line N`.
fn line_of(message: &str) -> usize {
    message
        .strip_prefix("line ")
        .and_then(|r| r.split([',', ':']).next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn an_unknown_key_and_a_bad_binding_are_reported_together_with_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path: PathBuf = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "colour = 1\n[console]\nbell = false\n[console.keys]\nzoomm = \"z\"\n",
        )
        .unwrap();
        let e = load(Some(&path)).unwrap_err().to_string();
        assert!(e.contains("2 mistakes"), "{e}");
        let first = e.find("line 1").expect("the unknown key's line");
        let second = e
            .find("line 5: console.keys.zoomm")
            .expect("the binding's line");
        assert!(first < second && e.contains("colour"), "{e}");
        // Alone, the bad binding still names its line.
        std::fs::write(&path, "[console.keys]\nzoom = \"nope-key\"\n").unwrap();
        let e = load(Some(&path)).unwrap_err().to_string();
        assert!(e.contains("line 2: console.keys.zoom"), "{e}");
    }
}
