//! End to end through the real binary in tmux: under `approval =
//! "by_effect"` a build or a test whose trial changed only outputs git
//! ignores runs for real, unasked, in the kernel sandbox writing only
//! beneath them: `cargo test` in a real crate leaves its target/ and
//! nothing else, `python3 -m unittest` its `__pycache__/`; a test that also
//! writes beside the sources is asked, and what it wrote is not there.
//! In a plain process and in a managed pane.

use super::console_support::Console;

use std::process::Command;

fn config() -> String {
    "[agent]\napproval = \"by_effect\"\n[console]\nbell = false\n".into()
}

use super::by_effect::scenario;

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@e"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A committed crate with one test and a Python module with one test; the
/// repository ignores target/ and __pycache__/.
fn repository(work: &std::path::Path) {
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(
        work.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        work.join("src/lib.rs"),
        "pub fn two() -> u32 { 2 }\n#[test]\nfn adds() { assert_eq!(two(), 2); }\n",
    )
    .unwrap();
    std::fs::write(
        work.join("Cargo.lock"),
        "version = 3\n\n[[package]]\nname = \"tiny\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    std::fs::write(work.join("calc.py"), "def two():\n    return 2\n").unwrap();
    std::fs::write(
        work.join("test_calc.py"),
        "import unittest, calc\n\nclass T(unittest.TestCase):\n    def test_two(self):\n        \
         self.assertEqual(calc.two(), 2)\n",
    )
    .unwrap();
    std::fs::write(
        work.join("test_stray.py"),
        "import unittest\n\nclass S(unittest.TestCase):\n    def test_stray(self):\n        \
         open('stray-report.txt', 'w').write('x')\n",
    )
    .unwrap();
    std::fs::write(work.join(".gitignore"), "target/\n__pycache__/\n").unwrap();
    let locked = Command::new("cargo")
        .args(["generate-lockfile", "--offline", "-q"])
        .current_dir(work)
        .status()
        .expect("cargo")
        .success();
    assert!(locked, "cargo generate-lockfile");
    git(work, &["init", "-q"]);
    git(work, &["add", "."]);
    git(work, &["commit", "-qm", "init"]);
}

fn builds_run_unasked_inside_their_outputs(tag: &str, flags: &str) {
    let scenario = scenario(&[
        ("cargo-cmd", "cargo test -q --offline"),
        ("unittest-cmd", "python3 -m unittest -q test_calc"),
        ("stray-cmd", "python3 -m unittest -q test_stray"),
    ]);
    let c = Console::start_scenario(tag, &scenario, &config(), flags, "");
    let work = c.work();
    repository(&work);
    c.wait("policy: by effect");

    // Nobody answers: the results reach the model only if not asked.
    c.send("cargo-cmd");
    let screen = c.wait_for("cargo test's result reaching the model", |s| {
        s.contains("TOOL SAID") && s.contains("test result: ok. 1 passed")
    });
    assert!(!screen.contains("approvals (1)"), "{screen}");
    assert!(
        work.join("target/debug").is_dir(),
        "the real run's outputs are in the tree: {}\n{:?}",
        c.screen(),
        std::fs::read_dir(&work)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<Vec<_>>()
    );
    c.wait_for("the tools pane saying where it ran", |s| {
        s.contains("outputs git ignores")
    });

    c.send("unittest-cmd");
    // Only a screen after the second real run can show two runs in the
    // outputs (the trial's live lines come first) and the turn over.
    c.wait_for("unittest run in its outputs, the turn over", |s| {
        s.matches("(it changed only outputs git ignor").count() >= 2 && s.contains("│ idle │")
    });
    assert!(work.join("__pycache__").is_dir(), "{}", c.screen());
    // The sources and the index are as they were: only ignored outputs.
    assert_eq!(git(&work, &["status", "--porcelain"]), "");

    // A test that writes beside the sources is asked; denied, nothing of
    // the trial is left.
    c.send("stray-cmd");
    let card = c.wait_for("the stray test's card", |s| {
        s.contains("approvals (1)") && s.contains("$ python3 -m unittest -q test_stray")
    });
    assert!(card.contains("changes"), "{card}");
    c.answer("n");
    c.wait_for("the denial", |s| {
        s.contains("denied by operator") && !s.contains("approvals (1)")
    });
    assert!(!work.join("stray-report.txt").exists());
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
}

#[test]
fn in_a_plain_process() {
    builds_run_unasked_inside_their_outputs("outputs-plain", "--no-tmux");
}

#[test]
fn in_a_managed_pane() {
    builds_run_unasked_inside_their_outputs("outputs-pane", "");
}
