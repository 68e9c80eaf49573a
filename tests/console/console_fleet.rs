//! End-to-end: one console over several agents. The real binary in tmux,
//! two agents on one runtime directory: agent B asks an approval while
//! nobody is attached to it; the console attached to agent A shows B's
//! call in its queue labelled with B; approving it there makes B run the
//! command, and B's record says this console answered; the agents overlay
//! lists both and switching to B shows B's conversation while A keeps
//! running. Every agent the test starts is stopped when its tmux server
//! goes (`common::Tmux`).

use super::console_support as support;

use std::time::{Duration, Instant};

use support::{BASE_CONFIG, Console};

const WAIT: Duration = Duration::from_secs(30);

fn short(id: &str) -> &str {
    &id[id.len().saturating_sub(6)..]
}

/// Wait until `path` exists.
fn wait_file(path: &std::path::Path) -> bool {
    let until = Instant::now() + WAIT;
    while Instant::now() < until {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn another_agents_call_is_approved_from_this_console_and_the_overlay_switches_to_it() {
    let c = Console::start("fleet", BASE_CONFIG, "", "");
    c.send("hello-a");
    c.wait("echo: hello-a");

    // Agent B, started by a second console that asks and then detaches:
    // nobody is attached to B when its call waits.
    c.open("b", "");
    c.tmux.wait_text("b", "e2e", WAIT);
    c.tmux.type_text("b", "gate-me");
    c.tmux.keys("b", &["Enter"]);
    c.tmux.wait_text("b", "approvals (1)", WAIT);
    c.tmux.keys("b", &["C-d"]);
    c.tmux.wait_exit("b", WAIT);
    let ids = c.live_ids();
    assert_eq!(ids.len(), 2, "two agents run: {ids:?}");
    let b = ids
        .iter()
        .find(|id| {
            let (_, log, _) = c.run(&["ps"]);
            log.lines()
                .any(|l| l.starts_with(id.as_str()) && l.contains("waiting"))
        })
        .expect("agent B waits")
        .clone();

    // A's console shows B's call, labelled with B.
    let label = format!("[{} e2e]", short(&b));
    let screen = c.wait_for("B's call in A's queue", |s| {
        s.contains(&label) && s.contains("approvals (1)")
    });
    assert!(screen.contains("run_shell"), "{screen}");
    assert!(!c.work().join("gated-ran").exists(), "ran before approval");
    // A's fleet view watches B, but it is not one of B's consoles.
    let (_, ps, _) = c.run(&["ps", "--json"]);
    let ps: serde_json::Value = serde_json::from_str(&ps).expect("ps --json");
    let b_info = ps["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["id"] == b.as_str()))
        .expect("B listed")
        .clone();
    assert_eq!(b_info["consoles"], 0, "{b_info}");
    c.answer("y");
    assert!(
        wait_file(&c.work().join("gated-ran")),
        "B did not run the call approved from A's console"
    );
    c.wait_for("the call leaves the queue", |s| !s.contains(&label));

    // The overlay lists both agents; switching shows B's conversation.
    c.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    c.keys(&["g"]);
    let overlay = c.wait("agents · 2 running");
    assert!(
        overlay
            .lines()
            .any(|l| l.contains("* ") && !l.contains(short(&b)))
            && overlay.contains(short(&b)),
        "{overlay}"
    );
    c.keys(&["Down"]);
    std::thread::sleep(Duration::from_millis(200));
    // B is the other one: pick it wherever it is listed.
    if !c
        .screen()
        .lines()
        .any(|l| l.contains('›') && l.contains(short(&b)))
    {
        c.keys(&["Up"]);
    }
    c.keys(&["Enter"]);
    let screen = c.wait_for("B's conversation", |s| {
        s.contains("gate-me") && s.contains("TOOL SAID") && s.contains("original-cmd")
    });
    assert!(
        !screen.contains("hello-a"),
        "still A's conversation:\n{screen}"
    );
    // B's record of the call says a console of the fleet view answered it.
    c.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    c.keys(&["Tab"]);
    c.keys(&["z"]);
    let tools = c.wait_for("who answered", |s| s.contains("at console"));
    assert!(tools.contains("approved by operator"), "{tools}");
    // Named by the peer the kernel reported, the fleet view's own name
    // beside it as a label.
    assert!(
        tools.contains("(uid ") && tools.contains("says \"fleet vi"),
        "answered_by names A's console:\n{tools}"
    );
    // A kept running: switching is a detach.
    assert_eq!(c.live_ids().len(), 2, "switching stopped agent A");
}
