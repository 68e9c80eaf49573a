//! Notifications as the operator's terminal sees them, the real binary in
//! tmux: while an approval waits the title (`#{pane_title}`) carries the
//! count, and it goes back to "vigil" once answered; quitting leaves no
//! stale count behind.

use super::common;

use std::time::Duration;

use common::{Tmux, eventually, vigil_bin};

const WAIT: Duration = Duration::from_secs(30);

/// The demo console in tmux session `demo`, with `env` (`NAME=value …`)
/// before it; the data folder outlives the tmux server (dropped after it).
fn demo(tag: &str, env: &str) -> (tempfile::TempDir, Tmux) {
    let data = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(tag);
    let cmd = format!(
        "VIGIL_DATA_DIR={} {env} {} --demo --no-tmux",
        data.path().display(),
        vigil_bin().display()
    );
    tmux.start("demo", 120, 36, &cmd);
    (data, tmux)
}

#[test]
fn the_title_shows_how_many_approvals_wait() {
    let (_data, tmux) = demo("notify-title", "");
    let title = |want: &str| {
        eventually(WAIT, || {
            let t = tmux.display("demo", "#{pane_title}");
            (t == want).then_some(t)
        })
        .unwrap_or_else(|| {
            panic!(
                "title never became {want:?} (is {:?}); screen:\n{}",
                tmux.display("demo", "#{pane_title}"),
                tmux.screen("demo")
            )
        })
    };
    tmux.wait_text("demo", "approvals (1)", WAIT);
    title("vigil: 1 waiting");
    let _demo_dir = common::demo::DemoDir::take();
    tmux.answer("demo", "y");
    tmux.wait_text("demo", "All done.", WAIT);
    title("vigil");
    tmux.keys("demo", &["C-c"]);
    assert_eq!(tmux.wait_exit("demo", WAIT), "0/");
    assert!(!tmux.display("demo", "#{pane_title}").contains("waiting"));
}

/// A console that crashes while an approval waits leaves no "1 waiting" in
/// the title: the panic's terminal restore puts the title back too (the
/// test-only render fault of debug builds, `VIGIL_TEST_PANIC_RENDER`).
#[test]
fn a_crash_leaves_no_waiting_count_in_the_title() {
    let (_data, tmux) = demo(
        "notify-crash",
        "VIGIL_TEST_PANIC_RENDER=kaboom-title RUST_BACKTRACE=0",
    );
    tmux.wait_text("demo", "approvals (1)", WAIT);
    eventually(WAIT, || {
        (tmux.display("demo", "#{pane_title}") == "vigil: 1 waiting").then_some(())
    })
    .expect("the title counts the waiting approval");
    // Type into the message box; the message's render panics.
    tmux.to_message_box("demo");
    tmux.type_text("demo", "kaboom-title");
    tmux.keys("demo", &["Enter"]);
    let code = tmux.wait_exit("demo", WAIT);
    assert!(!code.starts_with("0/"), "the console crashed: {code}");
    // Back to the title from before vigil (tmux keeps a title stack), or
    // at least no count.
    let title = tmux.display("demo", "#{pane_title}");
    assert!(!title.contains("waiting"), "{title}");
}
