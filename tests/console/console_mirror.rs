//! The mirror pane and key passthrough as an operator uses them: the real
//! binary with `--demo` inside a detached tmux session. The demo's first
//! command runs in vigil's managed pane (on its own private tmux server) and
//! must show up in the console's mirror; then the operator focuses the
//! mirror, types a command into the pane, and it runs there, shows in the
//! mirror and is marked as operator typing in the tools pane.

use super::common;

use std::time::{Duration, Instant};

use common::{Tmux, mirror_region, vigil_bin};

const WAIT: Duration = Duration::from_secs(30);

/// CPU time (user + system, in clock ticks) the process and the children
/// it has reaped (a `tmux capture-pane` it ran) have used so far.
fn cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the `(comm)`: state is field 3; utime and stime are 14,
    // 15; cutime and cstime (reaped children) 16, 17.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    n(11) + n(12) + n(13) + n(14)
}

#[test]
fn mirror_shows_the_managed_pane_and_the_operator_can_type_into_it() {
    let data = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("mirror");
    let agent_tmux = common::Server {
        socket: common::socket(),
    };
    let cmd = format!(
        "exec env VIGIL_DATA_DIR={} VIGIL_TMUX_SOCKET={} {} --demo",
        data.path().display(),
        agent_tmux.socket,
        vigil_bin().display()
    );
    tmux.start("demo", 130, 40, &cmd);

    // The demo's first command ran in the managed pane: its output is in the
    // mirror (not only in the tools pane).
    tmux.wait_for("demo", "the demo's output in the mirror", WAIT, |s| {
        mirror_region(s).contains("Linux")
    });
    tmux.wait_text("demo", "approvals (1)", WAIT);

    // Idle (a pending approval, nothing printing): the mirror does not poll.
    // At rest it costs ~1 tick a second (a 1 Hz fleet look and the lock
    // hand-offs of the runtime); on a loaded machine the same work costs up
    // to ~12 ticks in these 2 s. A mirror that polled the pane (a
    // `capture-pane` of ~4 ms per frame, counted with the reaped children)
    // costs more than 30 ticks (15 % of a core): the line between the two,
    // not a speed target.
    std::thread::sleep(Duration::from_millis(500));
    let pid = tmux.display("demo", "#{pane_pid}");
    let before = cpu_ticks(&pid);
    std::thread::sleep(Duration::from_secs(2));
    let idle = cpu_ticks(&pid) - before;
    eprintln!("CPU over 2 s idle: {idle} ticks");
    assert!(idle <= 30, "vigil used {idle} ticks of CPU in 2 s idle");

    // Focus the mirror (Tab until its border is thick) and start typing.
    let mut focused = false;
    for _ in 0..6 {
        if tmux.screen("demo").contains("┏ mirror") {
            focused = true;
            break;
        }
        tmux.keys("demo", &["Tab"]);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(focused, "the mirror takes focus:\n{}", tmux.screen("demo"));
    // `i` always means the message box, never the root shell.
    tmux.keys("demo", &["i"]);
    tmux.wait_for("demo", "the message box to take focus", WAIT, |s| {
        s.contains("┏ message") && !s.contains("TYPING INTO PANE")
    });
    tmux.keys("demo", &["Escape"]);
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..6 {
        if tmux.screen("demo").contains("┏ mirror") {
            break;
        }
        tmux.keys("demo", &["Tab"]);
        std::thread::sleep(Duration::from_millis(100));
    }
    // Enter on the mirror starts typing into the pane.
    tmux.keys("demo", &["Enter"]);
    tmux.wait_text("demo", "TYPING INTO PANE", WAIT);

    tmux.type_text("demo", "echo typed-by-operator");
    tmux.keys("demo", &["Enter"]);
    let sent = Instant::now();
    let screen = tmux.wait_for("demo", "the echo's output in the mirror", WAIT, |s| {
        mirror_region(s)
            .lines()
            .any(|l| l.trim() == "typed-by-operator")
    });
    let shown_after = sent.elapsed();
    eprintln!("operator Enter → echo output in the mirror: {shown_after:?}");

    // It really ran in the managed pane.
    let session = agent_tmux.tmux(&["list-sessions", "-F", "#{session_name}"]);
    let session = session
        .lines()
        .next()
        .expect("a managed session")
        .to_string();
    let pane = agent_tmux.tmux(&["capture-pane", "-p", "-t", &session]);
    assert!(
        pane.lines().any(|l| l.trim() == "typed-by-operator"),
        "the managed pane ran the typed command:\n{pane}"
    );

    // The tool stream marks it as the operator's typing.
    let screen = if screen.contains("operator typed: echo typed-by-operator") {
        screen
    } else {
        tmux.wait_text("demo", "operator typed: echo typed-by-operator", WAIT)
    };
    assert!(screen.contains("⌨ operator typed"), "{screen}");

    // Ctrl-] hands the keyboard back; `q` then quits the console.
    tmux.keys("demo", &["C-]"]);
    tmux.wait_for("demo", "passthrough off", WAIT, |s| {
        !s.contains("TYPING INTO PANE")
    });

    // Watching never recreates: the operator kills the shared pane (another
    // pane keeps the session alive, so tmux reports a layout change); the
    // mirror says it is gone and leaves it dead (the agent's next command
    // recreates it and tells the model).
    let shared = agent_tmux.tmux(&["display", "-p", "-t", &session, "#{pane_id}"]);
    agent_tmux.tmux(&["split-window", "-d", "-t", &session]);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!mirror_region(&tmux.screen("demo")).contains("managed pane is gone"));
    agent_tmux.tmux(&["kill-pane", "-t", shared.trim()]);
    let killed = Instant::now();
    tmux.wait_for("demo", "the mirror saying the pane is gone", WAIT, |s| {
        mirror_region(s).contains("managed pane is gone")
    });
    eprintln!("pane killed → mirror says so: {:?}", killed.elapsed());
    std::thread::sleep(Duration::from_millis(300));
    let panes = agent_tmux.tmux(&["list-panes", "-s", "-t", &session, "-F", "#{pane_id}"]);
    assert_eq!(panes.lines().count(), 1, "nothing recreated: {panes}");

    tmux.keys("demo", &["q"]);
    tmux.wait_text("demo", "leave this console", WAIT);
    tmux.keys("demo", &["s"]);
    assert_eq!(tmux.wait_exit("demo", WAIT), "0/", "exit status/signal");
}

#[test]
fn mirror_region_reads_inside_the_border() {
    let screen = "┌ tools ─┐┌ mirror %1 ─┐\n│Linux   ││$ ls        │\n└────────┘│a b         │\n          └────────────┘\n";
    assert_eq!(mirror_region(screen), "$ ls\na b\n");
}
