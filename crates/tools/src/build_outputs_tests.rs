use super::*;
use vigil_protocol::preview::RefusedConnection;

/// A real repository ignoring `target/`, `__pycache__/` and `*.log`, with
/// one file force-added inside an ignored folder.
fn repo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().canonicalize().unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&tree)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(
        tree.join(".gitignore"),
        "target/\n__pycache__/\n*.log\nbuild/\ndist/\nnode_modules/\n.venv/\nsrc/gen/\n",
    )
    .unwrap();
    std::fs::create_dir_all(tree.join("dist")).unwrap();
    std::fs::create_dir_all(tree.join("src")).unwrap();
    std::fs::create_dir_all(tree.join("build")).unwrap();
    std::fs::write(tree.join("build/keep.txt"), "tracked\n").unwrap();
    git(&["add", "-f", "build/keep.txt"]);
    (dir, tree)
}

fn file(tree: &Path, rel: &str, kind: EffectKind) -> FileEffect {
    FileEffect {
        path: tree.join(rel),
        kind,
        dir: false,
        diff: None,
        diff_cut: false,
        old: None,
        new: None,
        note: None,
    }
}

fn report(files: Vec<FileEffect>) -> PreviewReport {
    PreviewReport {
        files,
        ..PreviewReport::default()
    }
}

#[test]
fn outputs_beneath_ignored_folders_give_their_top_most_folders() {
    let (_d, tree) = repo();
    let r = report(vec![
        file(&tree, "target/debug/deps/x", EffectKind::Created),
        file(&tree, "target/debug/x.d", EffectKind::Created),
        file(
            &tree,
            "src/__pycache__/a.cpython-311.pyc",
            EffectKind::Created,
        ),
        file(&tree, "dist/out.o", EffectKind::Created),
    ]);
    let set = write_set(&r, &tree).unwrap();
    assert_eq!(
        set.dirs,
        vec![
            tree.join("dist"),
            tree.join("src/__pycache__"),
            tree.join("target")
        ]
    );
    assert_eq!(
        set.missing,
        vec![tree.join("src/__pycache__"), tree.join("target")]
    );
    assert_eq!(set.names(&tree), "dist/, src/__pycache__/, target/");
    set.make_missing().unwrap();
    assert!(tree.join("target").is_dir() && tree.join("src/__pycache__").is_dir());
    // Made already: making them again is fine.
    set.make_missing().unwrap();
}

#[test]
fn anything_else_is_asked() {
    let (_d, tree) = repo();
    let asked = |files: Vec<FileEffect>| write_set(&report(files), &tree).unwrap_err();
    // A source file, a file git ignores beside the sources (no folder of
    // outputs to confine it to), a tracked file inside an ignored folder.
    assert!(asked(vec![file(&tree, "src/main.rs", EffectKind::Modified)]).contains("src/main.rs"));
    asked(vec![file(&tree, "run.log", EffectKind::Created)]);
    asked(vec![file(&tree, "build/keep.txt", EffectKind::Modified)]);
    // An ignored folder that holds a tracked file is no output folder: a
    // new file there is asked too (writing beneath it could change the
    // tracked one).
    asked(vec![file(&tree, "build/out.o", EffectKind::Created)]);
    // One outside among outputs.
    asked(vec![
        file(&tree, "target/a", EffectKind::Created),
        file(&tree, "Cargo.lock", EffectKind::Created),
    ]);
    // .git, outside the tree, the output folder itself removed.
    asked(vec![file(
        &tree,
        ".git/hooks/pre-commit",
        EffectKind::Created,
    )]);
    asked(vec![file(Path::new("/tmp"), "x", EffectKind::Created)]);
    let mut gone = file(&tree, "build", EffectKind::Deleted);
    gone.dir = true;
    asked(vec![gone]);
    // A symlink made inside an output folder.
    let mut link = file(&tree, "target/evil", EffectKind::Created);
    link.note = Some("symlink → /etc/passwd".into());
    asked(vec![link]);
    // An ignored folder not named as outputs are: dependencies the
    // operator's tools load later (a `.pth` file runs at every python
    // start), generated sources, an editor's tasks.
    asked(vec![file(
        &tree,
        "node_modules/left-pad/index.js",
        EffectKind::Modified,
    )]);
    asked(vec![file(
        &tree,
        ".venv/lib/python3/site-packages/x.pth",
        EffectKind::Created,
    )]);
    asked(vec![file(&tree, "src/gen/api.rs", EffectKind::Created)]);
    // Under a dependency folder, only `.cache/` is a build's; an output
    // name inside a dependency is the dependency's code.
    asked(vec![file(
        &tree,
        "node_modules/x/dist/index.js",
        EffectKind::Modified,
    )]);
    asked(vec![file(
        &tree,
        "node_modules/.cachex/a",
        EffectKind::Created,
    )]);
    // Nothing changed at all: not this rule's business.
    asked(vec![]);
}

#[test]
fn a_dependency_folder_gives_only_its_cache() {
    let (_d, tree) = repo();
    std::fs::create_dir_all(tree.join("node_modules/.cache")).unwrap();
    let r = report(vec![file(
        &tree,
        "node_modules/.cache/babel-loader/a.json",
        EffectKind::Created,
    )]);
    let set = write_set(&r, &tree).unwrap();
    assert_eq!(set.dirs, vec![tree.join("node_modules/.cache")]);
    assert!(set.missing.is_empty());
}

#[test]
fn a_trial_that_did_more_than_write_is_asked() {
    let (_d, tree) = repo();
    let outputs = vec![file(&tree, "target/a", EffectKind::Created)];
    let mut cut = report(outputs.clone());
    cut.files_cut = 3;
    assert!(write_set(&cut, &tree).is_err());
    let mut net = report(outputs.clone());
    net.refused.push(RefusedConnection {
        address: "203.0.113.5:443".into(),
        call: "connect".into(),
        program: "cargo".into(),
        times: 1,
    });
    assert!(write_set(&net, &tree).is_err());
    let mut lookup = report(outputs.clone());
    lookup.refused.push(RefusedConnection {
        address: "unix:/run/nscd/socket".into(),
        call: "connect".into(),
        program: "ls".into(),
        times: 1,
    });
    assert!(write_set(&lookup, &tree).is_ok());
    let mut left = report(outputs.clone());
    left.hit_time_limit = true;
    assert!(write_set(&left, &tree).is_err());
    let mut secret = report(outputs.clone());
    secret.secrets.push("/root/.ssh".into());
    assert!(write_set(&secret, &tree).is_err());
    // What the confined real run meets the same way: refused writes
    // outside, reads outside the readable world.
    let mut refused = report(outputs);
    refused
        .writes_refused
        .push("/root/.cargo/.package-cache".into());
    refused.reads_outside.push("/sys/fs/cgroup/cpu".into());
    assert!(write_set(&refused, &tree).is_ok());
}

#[test]
fn an_output_folder_that_is_a_symlink_or_outside_git_is_asked() {
    let (_d, tree) = repo();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), tree.join("target")).unwrap();
    let r = report(vec![file(&tree, "target/a", EffectKind::Created)]);
    // git itself refuses a path beyond a symlink.
    assert!(write_set(&r, &tree).is_err());
    let plain = tempfile::tempdir().unwrap();
    let plain = plain.path().canonicalize().unwrap();
    let r = report(vec![file(&plain, "target/a", EffectKind::Created)]);
    assert!(write_set(&r, &plain).is_err());
}
