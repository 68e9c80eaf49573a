//! The tmux control client under a flood, against a real tmux server: a
//! subscriber that does not read holds at most its channel's capacity (the
//! rest is one `Lagged`), commands keep being answered, a pane tmux pauses
//! is continued at once and reported as `Lagged`, and a client the server
//! had to pause by itself (its reader stopped with SIGSTOP) is resumed and
//! sees new output again.

use super::common;

use std::time::{Duration, Instant};

use tokio::sync::watch;
use vigil::exec::tmux::control::{Control, Event, SUBSCRIBER_CAPACITY};

/// A control client on a fresh session `f`; `relay`: its output passes
/// through a `cat` the test can stop (tmux writes a control client's
/// output straight to the pipe it was given, so stopping the `tmux -C`
/// process itself would not slow anything).
async fn attach(server: &common::Server, relay: bool) -> std::sync::Arc<Control> {
    server.tmux(&[
        "new-session",
        "-d",
        "-s",
        "f",
        "-x",
        "80",
        "-y",
        "24",
        &common::shell_cmd("bash"),
    ]);
    let mut cmd = if relay {
        let mut c = tokio::process::Command::new("sh");
        c.arg("-c")
            .arg(format!("tmux -L {} -C attach -t f | cat", server.socket));
        c
    } else {
        let mut c = tokio::process::Command::new("tmux");
        c.args(["-L", &server.socket, "-C", "attach", "-t", "f"]);
        c
    };
    cmd.env_remove("TMUX");
    let (changes, _) = watch::channel(0u64);
    let control = Control::start(cmd, changes).await.expect("control client");
    control.cmd("display -p ok").await.expect("answers");
    // The client asks for flow control once it is attached: wait until the
    // server has it, so the test never races it.
    let start = Instant::now();
    while !server
        .tmux(&["list-clients", "-F", "#{client_flags}"])
        .contains("pause-after")
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the control client never asked for pause-after"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    control
}

/// Wait until the pane's shell is back in the foreground, asking through
/// the control client itself (so its answers must keep flowing).
async fn until_idle(control: &Control) {
    let start = Instant::now();
    loop {
        let fg = control
            .cmd("display -p -t f '#{pane_current_command}'")
            .await
            .expect("answered during the flood");
        if fg.first().is_some_and(|c| c == "bash") {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "flood never ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Another control client on session `f` that reads everything and
/// throws it away (ended when dropped: `kill_on_drop`, and its stdin closes).
async fn reader(server: &common::Server) -> tokio::process::Child {
    let before = server.tmux(&["list-clients", "-F", "#{client_name}"]);
    let child = tokio::process::Command::new("tmux")
        .args(["-L", &server.socket, "-C", "attach", "-t", "f"])
        .env_remove("TMUX")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("a second control client");
    let start = Instant::now();
    while server
        .tmux(&["list-clients", "-F", "#{client_name}"])
        .lines()
        .count()
        <= before.lines().count()
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the second control client never attached"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child
}

/// Collect events already queued, without waiting.
fn drain(rx: &mut tokio::sync::mpsc::Receiver<Event>) -> Vec<Event> {
    let mut out = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        out.push(ev);
    }
    out
}

/// Wait up to `limit` for output containing `text`.
async fn sees(rx: &mut tokio::sync::mpsc::Receiver<Event>, text: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_millis(100), rx.recv()).await {
            Ok(Some(Event::Output { data, .. })) => {
                seen.extend_from_slice(&data);
                if seen.windows(text.len()).any(|w| w == text.as_bytes()) {
                    return true;
                }
            }
            Ok(None) => return false,
            _ => {}
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_does_not_read_holds_a_bounded_queue() {
    let server = common::Server {
        socket: common::socket(),
    };
    let control = attach(&server, false).await;
    let mut idle = control.subscribe();
    // The pane signals the end itself: asking for its foreground command
    // could see the shell before `seq` even started.
    let line = format!(
        "seq 1 300000; tmux -L {} wait-for -S flood-done",
        server.socket
    );
    control
        .cmd(&format!("send-keys -t f '{line}' Enter"))
        .await
        .unwrap();
    let socket = server.socket.clone();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new("tmux")
            .args(["-L", &socket, "wait-for", "flood-done"])
            .env_remove("TMUX")
            .status()
    })
    .await
    .unwrap()
    .expect("tmux wait-for");
    // What the channel holds now (draining it would count events that
    // arrive while it drains).
    let queued = idle.len();
    assert!(queued <= SUBSCRIBER_CAPACITY, "{queued} events queued");
    // Once the channel has room again, the lag notice comes before any
    // newer output (it may arrive while the queue drains).
    let drained = drain(&mut idle);
    let lag_at = drained.iter().position(|e| *e == Event::Lagged);
    control
        .cmd("send-keys -t f 'echo after-flood' Enter")
        .await
        .unwrap();
    if lag_at.is_none() {
        let next = tokio::time::timeout(Duration::from_secs(30), idle.recv())
            .await
            .expect("an event")
            .expect("open");
        assert_eq!(next, Event::Lagged);
    }
    assert!(sees(&mut idle, "after-flood", Duration::from_secs(30)).await);
}

fn ppid(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')')
        .next()
        .and_then(|r| r.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

fn cmdline(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw).replace('\0', " ")
}

/// The relay `cat` of this test's control client: a child of the `sh` this
/// test process started for `socket`.
fn relay_pid(socket: &str) -> i32 {
    let me = std::process::id() as i32;
    let pids: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let sh = *pids
        .iter()
        .find(|&&p| ppid(p) == me && cmdline(p).contains(socket))
        .expect("our relay shell");
    *pids
        .iter()
        .find(|&&p| ppid(p) == sh && cmdline(p).trim() == "cat")
        .expect("its cat")
}

/// What the client does with a `%pause`, every run: another tmux client
/// pauses the pane for ours (`refresh-client -t CLIENT -A %N:pause`), which
/// makes tmux send ours the same `%pause`, outside any command's block, that
/// it sends a client that fell `pause-after` seconds behind (the test
/// below waits for tmux to decide that by itself). While paused tmux
/// sends nothing of the pane, so output after it shows that the client
/// continued it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pane_tmux_pauses_is_continued_at_once_and_reported_as_lagged() {
    let server = common::Server {
        socket: common::socket(),
    };
    let control = attach(&server, false).await;
    let mut events = control.subscribe();
    let pane = control
        .cmd("display -p -t f '#{pane_id}'")
        .await
        .expect("pane id")
        .remove(0);
    assert_eq!(control.pauses(), 0);
    let clients = server.tmux(&["list-clients", "-F", "#{client_name}"]);
    let ours = clients.lines().next().expect("our control client").trim();
    server.tmux(&["refresh-client", "-t", ours, "-A", &format!("{pane}:pause")]);
    let lagged = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match events.recv().await {
                Some(Event::Lagged) => return true,
                Some(_) => {}
                None => return false,
            }
        }
    })
    .await;
    assert_eq!(lagged, Ok(true), "the pause was reported to subscribers");
    assert_eq!(control.pauses(), 1);
    control
        .cmd("send-keys -t f 'echo continued-ok' Enter")
        .await
        .unwrap();
    assert!(
        sees(&mut events, "continued-ok", Duration::from_secs(10)).await,
        "output flows again: the client continued the pane"
    );
}

/// tmux decides by itself to pause the pane for a client that fell behind.
/// tmux judges a client's lag only when the pane has new output for it, and
/// stops reading a pane once every client attached to it is full. With ours
/// the only client, the pane stopped within milliseconds of the relay, so
/// its output never aged (same steps on tmux 3.3a alone, `tmux -vv`: the
/// oldest lag checked was 33–46 ms in 6 of 6 runs, none paused); it paused
/// only when, after the relay went on, new output came before the old was
/// written — a race the test lost one run in three. A second control client
/// that keeps reading keeps the pane flowing, as an operator's own
/// `tmux attach` would: the lag checked reached 2 006–2 009 ms and tmux
/// paused the pane in 4 of 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_pane_is_resumed_and_reported_as_lagged() {
    let server = common::Server {
        socket: common::socket(),
    };
    let control = attach(&server, true).await;
    let _reader = reader(&server).await;
    let mut events = control.subscribe();
    let pid = relay_pid(&server.socket);
    control.cmd("send-keys -t f 'yes' Enter").await.unwrap();
    // Stop reading the control client's output so the pane's output ages
    // in the server past pause-after while `yes` keeps writing, then go on.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // SAFETY: kill(2) on a process this test started.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    tokio::time::sleep(Duration::from_secs(4)).await;
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut lagged = false;
    while Instant::now() < deadline && !(lagged && control.pauses() > 0) {
        if let Ok(Some(Event::Lagged)) =
            tokio::time::timeout(Duration::from_millis(100), events.recv()).await
        {
            lagged = true;
        }
    }
    assert!(control.pauses() > 0, "tmux paused the pane for us");
    assert!(lagged, "the pause was reported to subscribers");
    control.cmd("send-keys -t f C-c").await.unwrap();
    until_idle(&control).await;
    drop(events);
    let mut fresh = control.subscribe();
    control
        .cmd("send-keys -t f 'echo resumed-ok' Enter")
        .await
        .unwrap();
    assert!(
        sees(&mut fresh, "resumed-ok", Duration::from_secs(10)).await,
        "output flows again after the pause"
    );
}
