//! End-to-end: previewing a waiting command through the real binary in
//! tmux. `v` on the approval runs the command in a throwaway view (the
//! real file is not made), the card shows what it would do, `y` then runs
//! it for real, and the session's record says a preview was seen.

use super::common;
use super::console_support as support;

use std::time::Duration;

use support::{BASE_CONFIG, Console};

#[test]
fn v_previews_the_command_then_y_runs_it_for_real() {
    let c = Console::start("preview", BASE_CONFIG, "", "");
    c.send("gate-me");
    c.wait("approvals (1)");
    c.answer("v");
    c.wait_for("the preview's verdict", |s| s.contains("exit 0 · 1 change"));
    // The view made the file; the machine did not.
    assert!(!c.work().join("gated-ran").exists(), "the preview leaked");
    c.keys(&["z"]);
    // Zoomed, the card is the whole screen: no conversation pane beside it.
    let zoomed = c.wait_for("the zoomed card", |s| {
        !s.contains("┌ conversation")
            && s.contains("original-cmd")
            && s.contains("cannot reproduce network effects")
    });
    let work = c.work().canonicalize().unwrap();
    let line = format!("A {}/gated-ran (empty)", work.display());
    assert!(zoomed.contains(&line), "{line}\n{zoomed}");
    c.keys(&["Escape"]);
    // `y` only once the zoom is gone: sent together, Escape and `y` arrive
    // as one Alt-y on a busy machine.
    c.wait_for("the card back in its pane", |s| {
        s.contains("┌ conversation") && s.contains("z zoom")
    });
    c.answer("y");
    c.wait("TOOL SAID");
    let ran = common::eventually(Duration::from_secs(60), || {
        c.work().join("gated-ran").exists().then_some(())
    });
    assert!(ran.is_some(), "the approved command ran");
    let sessions = c.dir.path().join("data/sessions");
    let record = common::eventually(Duration::from_secs(60), || {
        let dir = std::fs::read_dir(&sessions).ok()?.flatten().next()?.path();
        let text = std::fs::read_to_string(dir.join("events.jsonl")).ok()?;
        text.lines()
            .find(|l| l.contains("\"approval_resolved\""))
            .map(str::to_string)
    })
    .expect("the decision is recorded");
    assert!(record.contains("\"previewed\":true"), "{record}");
}
