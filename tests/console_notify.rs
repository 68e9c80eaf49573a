//! Notifications as the operator's terminal sees them, the real binary in
//! tmux: while an approval waits the title (`#{pane_title}`) carries the
//! count, and it goes back to "vigil" once answered; quitting leaves no
//! stale count behind.

mod common;

use std::time::Duration;

use common::{Tmux, eventually, vigil_bin};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn the_title_shows_how_many_approvals_wait() {
    let data = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("notify-title");
    let cmd = format!(
        "VIGIL_DATA_DIR={} {} --demo --no-tmux",
        data.path().display(),
        vigil_bin().display()
    );
    tmux.start("demo", 120, 36, &cmd);
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
    tmux.keys("demo", &["y"]);
    tmux.wait_text("demo", "All done.", WAIT);
    title("vigil");
    tmux.keys("demo", &["C-c"]);
    assert_eq!(tmux.wait_exit("demo", WAIT), "0/");
    assert!(!tmux.display("demo", "#{pane_title}").contains("waiting"));
}
