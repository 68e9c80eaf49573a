//! README.md's Layout section agrees with the tree: every folder of Rust
//! source (each crate and each module folder in it, and the root crate's)
//! is named there as `path/`, and every `path/` named there exists.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn layout() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let start = readme.find("\n## Layout\n").expect("a Layout section");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    rest[..end].to_string()
}

/// Folders under `dir` (relative to the root) that hold `.rs` files,
/// snapshot folders aside.
fn source_folders(dir: &Path, out: &mut Vec<String>) {
    let full = root().join(dir);
    let mut has_rs = false;
    for entry in std::fs::read_dir(&full).expect("read dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && name != "snapshots" {
            source_folders(&dir.join(&name), out);
        } else if name.ends_with(".rs") {
            has_rs = true;
        }
    }
    if has_rs {
        out.push(format!("{}/", dir.display()));
    }
}

#[test]
fn every_source_folder_is_in_the_readme_layout_and_nothing_else() {
    let layout = layout();
    let mut folders = Vec::new();
    source_folders(Path::new("src"), &mut folders);
    source_folders(Path::new("crates"), &mut folders);
    for folder in &folders {
        // A crate's own src/ is named by the crate (`crates/x/`).
        let named = folder
            .strip_suffix("src/")
            .filter(|c| c.starts_with("crates/"))
            .unwrap_or(folder);
        assert!(
            layout.contains(&format!("`{named}`")),
            "README.md's Layout does not name `{named}`"
        );
    }
    for piece in layout.split('`').skip(1).step_by(2) {
        let a_path = piece.starts_with("src/") || piece.starts_with("crates/");
        if a_path && piece.ends_with('/') {
            assert!(
                root().join(piece).is_dir(),
                "README names `{piece}`: no such folder"
            );
        }
    }
}
