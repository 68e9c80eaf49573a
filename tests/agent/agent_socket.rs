//! End-to-end: the real `vigil __agent` process and raw clients on its Unix
//! socket — hello, replay, live, commands, several consoles sharing one
//! approval, read-only watchers, bad input, a second agent, a stale socket,
//! stop, a client killed mid-stream, and another user kept out.

use super::agent_proc as support;
use super::helper_proc;

use helper_proc::{Reaped, helper, helper_result};
use support::{Agent, Dirs, turn_finished};
use vigil_protocol::AgentCommand;
use vigil_protocol::AgentEvent;
use vigil_protocol::wire::{AgentState, ClientMsg, Role, ServerMsg};

fn say(text: &str) -> AgentCommand {
    AgentCommand::UserMessage { text: text.into() }
}

fn assistant_text(events: &[(u64, AgentEvent)]) -> String {
    events
        .iter()
        .filter_map(|(_, e)| match e {
            AgentEvent::AssistantMessage { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("|")
}

#[test]
fn hello_welcome_replay_live_and_a_reattach_gets_only_newer_events() {
    let dirs = Dirs::new();
    let agent = Agent::start(&dirs, &[]);
    assert!(agent.socket.starts_with(dirs.runtime()));
    let mode = std::fs::metadata(&agent.socket).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );

    let mut c = agent.connect();
    let first = c.attach(Role::Console, 0, "first");
    assert_eq!(first.you, 1);
    assert_eq!(first.agent.id, agent.id);
    assert_eq!(first.agent.pid, agent.pid);
    assert_eq!(first.agent.model, "e2e");
    assert_eq!(first.agent.state, AgentState::Idle);
    assert!(
        first
            .replay
            .iter()
            .any(|(_, e)| matches!(e, AgentEvent::SessionStarted { .. })),
        "the replay starts with the session: {:?}",
        first.replay
    );
    assert_eq!(first.replay.last().map(|(s, _)| *s), Some(first.live));

    c.command(say("one"));
    let turn = c.until("the first turn", turn_finished);
    assert_eq!(assistant_text(&turn), "echo: one");
    assert!(turn.windows(2).all(|w| w[0].0 < w[1].0), "seqs grow");
    let seen = turn.last().unwrap().0;
    c.send(&ClientMsg::Status);
    match c.expect() {
        ServerMsg::Status { agent: info } => {
            assert_eq!(info.consoles, 1);
            assert_eq!(info.state, AgentState::Idle);
        }
        other => panic!("no status: {other:?}"),
    }
    c.send(&ClientMsg::Detach);
    assert!(c.next().is_none(), "detach closes the connection");

    // While nobody is attached the agent keeps working.
    let mut other = agent.connect();
    other.attach(Role::Console, u64::MAX, "other");
    other.command(say("two"));
    other.until("the second turn", turn_finished);
    other.send(&ClientMsg::Detach);

    // Back with the last seq seen: only what came after it.
    let mut back = agent.connect();
    let again = back.attach(Role::Console, seen, "first again");
    assert_eq!(again.you, 3, "consoles are numbered in attach order");
    assert!(again.replay.iter().all(|(s, _)| *s > seen));
    assert_eq!(assistant_text(&again.replay), "echo: two");
    // From zero: everything, both turns.
    let mut full = agent.connect();
    let all = full.attach(Role::Watch, 0, "full");
    assert_eq!(assistant_text(&all.replay), "echo: one|echo: two");
    assert_eq!(all.live, again.live);
}

/// The id of the approval a `gate-me` turn waits on.
/// The first request's id and the token its card carries.
fn requested(events: &[(u64, AgentEvent)]) -> (u64, String) {
    events
        .iter()
        .find_map(|(_, e)| match e {
            AgentEvent::ApprovalRequested { request } => Some((request.id, request.token.clone())),
            _ => None,
        })
        .expect("an approval request")
}

fn is_request(e: &AgentEvent) -> bool {
    matches!(e, AgentEvent::ApprovalRequested { .. })
}

#[test]
fn two_consoles_share_an_approval_the_second_answers_and_a_watcher_cannot() {
    let dirs = Dirs::new();
    let agent = Agent::start(&dirs, &[]);
    let mut c1 = agent.connect();
    let mut c2 = agent.connect();
    let mut w = agent.connect();
    let one = c1.attach(Role::Console, 0, "laptop");
    let two = c2.attach(Role::Console, 0, "phone");
    let watch = w.attach(Role::Watch, 0, "wall");
    assert_eq!((one.you, two.you, watch.you), (1, 2, 3));

    c1.command(say("gate-me"));
    let (id, token) = requested(&c1.until("the request on console 1", is_request));
    assert_eq!(
        requested(&c2.until("the request on console 2", is_request)),
        (id, token.clone())
    );
    w.until("the request on the watcher", is_request);

    // The watcher is refused by the agent itself, and the call still waits.
    let approve = AgentCommand::Approval {
        id,
        decision: vigil_protocol::Answer::ApproveOnce,
        token,
    };
    w.command(approve.clone());
    let why = w.refused();
    assert!(why.contains("read-only"), "{why}");
    w.command(say("typed by a watcher"));
    assert!(w.refused().contains("read-only"));
    w.send(&ClientMsg::Stop {
        on_exit: vigil_protocol::OnExit::Keep,
    });
    assert!(w.refused().contains("cannot stop"));
    w.send(&ClientMsg::Status);
    let info = loop {
        match w.expect() {
            ServerMsg::Status { agent } => break agent,
            ServerMsg::Event { .. } => {}
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(info.state, AgentState::Waiting);
    assert_eq!(info.pending_approvals, 1);
    assert_eq!(info.consoles, 3);

    // The second console answers; everyone sees who.
    c2.command(approve.clone());
    for (name, c) in [
        ("console 1", &mut c1),
        ("console 2", &mut c2),
        ("watcher", &mut w),
    ] {
        let seen = c.until(name, turn_finished);
        let resolved: Vec<_> = seen
            .iter()
            .filter_map(|(_, e)| match e {
                AgentEvent::ApprovalResolved {
                    id: rid,
                    answered_by,
                    ..
                } if *rid == id => Some(answered_by.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(resolved.len(), 1, "{name}: {seen:?}");
        let by = resolved[0].as_ref().expect("answered_by is filled in");
        assert_eq!(
            (by.console.id, by.console.name.as_str()),
            (2, "phone"),
            "{name}"
        );
        assert!(by.at_ms > 0);
        assert!(
            assistant_text(&seen).contains("gated-ran"),
            "{name}: the call ran"
        );
    }

    // A late answer from the first console changes nothing and says why.
    c1.command(approve);
    let why = c1.refused();
    assert!(
        why.contains("already answered by console 2: uid ") && why.contains("(says \"phone\")"),
        "{why}"
    );
    c1.command(say("after"));
    let after = c1.until("the next turn", turn_finished);
    assert!(
        !after
            .iter()
            .any(|(_, e)| matches!(e, AgentEvent::ApprovalResolved { .. })),
        "{after:?}"
    );
}

#[test]
fn bad_lines_are_refused_with_a_reason_and_the_agent_carries_on() {
    let dirs = Dirs::new();
    let agent = Agent::start(&dirs, &[]);
    let refused_then_closed = |c: &mut support::Client| -> String {
        let reason = match c.expect() {
            ServerMsg::Refused { reason } => reason,
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert!(c.closed());
        reason
    };

    let mut c = agent.connect();
    c.send_raw("this is not json\n");
    let why = refused_then_closed(&mut c);
    assert!(why.contains("not a hello"), "{why}");

    let mut c = agent.connect();
    c.send_raw(r#"{"type":"hello","protocol":99,"role":"console","last_seq":0,"name":"x"}"#);
    c.send_raw("\n");
    let why = refused_then_closed(&mut c);
    assert!(why.contains("protocol version mismatch"), "{why}");
    assert!(
        why.contains("version 2") && why.contains("version 99"),
        "{why}"
    );

    let mut c = agent.connect();
    c.send(&ClientMsg::Status);
    assert!(refused_then_closed(&mut c).contains("must be a hello"));

    // After a good hello: a message of this version the agent does not
    // know (a newer client's type, a decision no client may send) is
    // answered and the connection stays open; what is not JSON closes it.
    let mut c = agent.connect();
    c.attach(Role::Console, 0, "g");
    c.send_raw("{\"type\":\"nonsense\"}\n");
    let why = c.refused();
    assert!(
        why.contains("unknown message type `nonsense`") && why.contains("stays open"),
        "{why}"
    );
    c.send_raw(concat!(
        r#"{"type":"command","command":{"type":"approval","id":1,"#,
        r#""decision":{"decision":"approve_unasked","value":"me"}}}"#,
        "\n"
    ));
    let why = c.refused();
    assert!(why.contains("a `command` this agent cannot read"), "{why}");
    c.send(&ClientMsg::Status);
    loop {
        match c.expect() {
            ServerMsg::Status { .. } => break,
            ServerMsg::Event { .. } | ServerMsg::Mirror { .. } => {}
            other => panic!("the connection should still answer: {other:?}"),
        }
    }
    c.send_raw("this is not json\n");
    assert!(c.refused().contains("not a protocol message"));
    assert!(c.closed());

    let mut c = agent.connect();
    c.attach(Role::Console, 0, "h");
    c.send(&ClientMsg::Hello {
        protocol: vigil_protocol::wire::PROTOCOL_VERSION,
        role: Role::Console,
        last_seq: 0,
        name: "again".into(),
    });
    assert!(c.refused().contains("second hello"));
    assert!(c.closed());

    let mut c = agent.connect();
    c.attach(Role::Console, 0, "long");
    let long = "x".repeat(vigil_protocol::wire::MAX_LINE + 16);
    let writer = std::thread::spawn({
        let mut w = c.writer.try_clone().unwrap();
        move || {
            use std::io::Write;
            let _ = w.write_all(long.as_bytes());
        }
    });
    assert!(c.refused().contains("longer than"));
    let _ = writer.join();

    // Nothing of that hurt the agent.
    let mut good = agent.connect();
    good.attach(Role::Console, 0, "good");
    good.command(say("still here"));
    assert_eq!(
        assistant_text(&good.until("a turn", turn_finished)),
        "echo: still here"
    );
}

#[test]
fn a_second_agent_on_the_session_is_refused_with_the_pid_and_stop_says_bye() {
    let dirs = Dirs::new();
    let mut agent = Agent::start(&dirs, &[]);
    let (mut second, said) = dirs.spawn(&["--resume", &agent.id]);
    let error = said["error"].as_str().unwrap_or_else(|| panic!("{said}"));
    assert_eq!(
        error,
        format!(
            "session {id} already has an agent (pid {pid}): `vigil attach {id}`",
            id = agent.id,
            pid = agent.pid
        )
    );
    assert_eq!(second.wait().unwrap().code(), Some(1));

    let mut console = agent.connect();
    console.attach(Role::Console, 0, "c");
    let mut control = agent.connect();
    match control.hello(Role::Control, 0, "vigil stop") {
        ServerMsg::Welcome { you, .. } => assert_eq!(you.id, 0),
        other => panic!("{other:?}"),
    }
    control.send(&ClientMsg::Stop {
        on_exit: vigil_protocol::OnExit::Keep,
    });
    for c in [&mut control, &mut console] {
        let bye = loop {
            match c.expect() {
                ServerMsg::Bye { reason } => break reason,
                ServerMsg::Event { .. } => {}
                other => panic!("{other:?}"),
            }
        };
        assert!(bye.contains("stopped by a control client"), "{bye}");
        assert!(c.next().is_none(), "the connection closes after Bye");
    }
    assert_eq!(agent.wait_exit(), Some(0));
    assert!(!agent.socket.exists(), "the socket is removed");
    let lock = vigil_protocol::runtime::lock_path(&dirs.runtime(), &agent.id);
    assert!(!lock.exists(), "the lock file is removed");
}

#[test]
fn resume_exec_on_a_session_with_a_live_agent_is_refused_and_writes_nothing() {
    let dirs = Dirs::new();
    let agent = Agent::start(&dirs, &[]);
    let mut c = agent.connect();
    c.attach(Role::Console, 0, "c");
    c.command(say("first"));
    c.until("a turn", turn_finished);
    let events = dirs
        .data()
        .join("sessions")
        .join(&agent.id)
        .join("events.jsonl");
    let before = std::fs::read(&events).expect("the session's events");
    let out = dirs
        .vigil()
        .args(["resume", &agent.id, "--exec", "second"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("vigil resume --exec");
    assert_eq!(out.status.code(), Some(1));
    // stderr: captured, or the log when the command sent it there.
    let said = String::from_utf8_lossy(&out.stderr).to_string() + &dirs.log_text();
    assert!(
        said.contains(&format!(
            "session {id} already has an agent (pid {pid}): `vigil attach {id}`",
            id = agent.id,
            pid = agent.pid
        )),
        "{said}"
    );
    assert_eq!(std::fs::read(&events).unwrap(), before, "nothing written");
    // The live agent still has its session and carries on.
    c.command(say("still here"));
    c.until("a second turn", turn_finished);
    assert!(std::fs::read(&events).unwrap().len() > before.len());
}

#[test]
fn a_stale_socket_left_by_a_killed_agent_is_removed_on_resume() {
    let dirs = Dirs::new();
    let mut agent = Agent::start(&dirs, &[]);
    let mut c = agent.connect();
    c.attach(Role::Console, 0, "c");
    c.command(say("before the crash"));
    c.until("a turn", turn_finished);
    agent.kill();
    assert!(agent.socket.exists(), "SIGKILL leaves the socket behind");

    let resumed = Agent::start(&dirs, &["--resume", &agent.id]);
    assert_eq!(resumed.id, agent.id);
    assert!(
        dirs.log_text()
            .contains("removed a stale socket left by a dead agent"),
        "{}",
        dirs.log_text()
    );
    let mut c = resumed.connect();
    let attached = c.attach(Role::Console, 0, "back");
    let restored = |e: &AgentEvent| matches!(e, AgentEvent::SessionRestored { .. });
    if !attached.replay.iter().any(|(_, e)| restored(e)) {
        c.until("the resumed agent saying what it restored", restored);
    }
}

/// `vigil ps ARGS` with the test's folders: (exit code, stdout).
fn ps(dirs: &Dirs, args: &[&str]) -> (Option<i32>, String) {
    let out = dirs
        .vigil()
        .arg("ps")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("vigil ps");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn prune_removes_only_sockets_whose_agent_is_gone_for_sure() {
    let dirs = Dirs::new();
    let live = Agent::start(&dirs, &[]);
    let mut dead = Agent::start(&dirs, &[]);
    dead.kill();
    // A socket nobody answers on while its session lock is held (an agent
    // starting, or one stuck): stale to a connect, but not ours to remove.
    let rt = dirs.runtime();
    let held_id = "held-session";
    let held_sock = vigil_protocol::runtime::socket_path(&rt, held_id);
    drop(std::os::unix::net::UnixListener::bind(&held_sock).unwrap());
    let lock = vigil::agent::server::lock::SessionLock::acquire(&rt, held_id).unwrap();
    // Not a socket at all, named like one: never removed.
    let plain = rt.join("not-a-socket.sock");
    std::fs::write(&plain, "keep me").unwrap();

    let (code, before) = ps(&dirs, &[]);
    assert_eq!(code, Some(0));
    assert!(before.contains(&live.id), "{before}");
    for id in [dead.id.as_str(), held_id, "not-a-socket"] {
        assert!(before.contains(&format!("stale: {id} ")), "{id}: {before}");
    }

    let (code, pruned) = ps(&dirs, &["--prune"]);
    assert_eq!(code, Some(0));
    assert!(
        pruned.contains(&format!("removed the stale socket of {}", dead.id)),
        "{pruned}"
    );
    assert!(!dead.socket.exists(), "the dead agent's socket is gone");
    assert!(held_sock.exists(), "a socket whose lock is held is kept");
    assert!(pruned.contains("already has an agent"), "{pruned}");
    assert_eq!(std::fs::read_to_string(&plain).unwrap(), "keep me");
    assert!(live.socket.exists(), "a live agent is untouched");

    let (_, after) = ps(&dirs, &[]);
    assert!(after.contains(&live.id), "{after}");
    assert!(!after.contains(&dead.id), "{after}");
    assert!(after.contains(&format!("stale: {held_id} ")), "{after}");
    // Once the lock is free, the held one goes too.
    lock.release();
    let (_, last) = ps(&dirs, &["--prune"]);
    assert!(
        last.contains("removed the stale socket of held-session"),
        "{last}"
    );
    assert!(!held_sock.exists());
}

#[test]
fn a_client_killed_mid_stream_does_not_hurt_the_agent() {
    let dirs = Dirs::new();
    let agent = Agent::start(&dirs, &[]);
    let mut slow = Reaped(
        helper(&agent.socket, "slow", false)
            .spawn()
            .expect("helper"),
    );
    assert!(helper_result(&mut slow.0).contains("\"welcome\""));
    let mut c = agent.connect();
    c.attach(Role::Console, 0, "fast");
    c.command(say("flood"));
    let (id, token) = requested(&c.until("the flood's approval", is_request));
    c.command(AgentCommand::Approval {
        id,
        decision: vigil_protocol::Answer::ApproveOnce,
        token,
    });
    c.until("the flood running", |e| {
        matches!(e, AgentEvent::ToolOutput { .. })
    });
    // SIGKILL the slow reader's own group while output streams to it.
    drop(slow);
    let flood = c.until("the flood's end", turn_finished);
    assert!(
        assistant_text(&flood).contains("300000"),
        "the fast console saw the end of the flood"
    );
    let consoles = support::eventually(|| {
        c.send(&ClientMsg::Status);
        loop {
            if let ServerMsg::Status { agent } = c.expect() {
                break (agent.consoles == 1).then_some(());
            }
        }
    });
    assert!(
        consoles.is_some(),
        "the killed console is no longer counted"
    );
    c.command(say("after the kill"));
    let after = c.until("a turn after the kill", turn_finished);
    assert_eq!(assistant_text(&after), "echo: after the kill");
}

#[test]
fn another_user_cannot_connect_neither_through_the_directory_nor_the_socket() {
    use std::os::unix::fs::PermissionsExt;
    let dirs = Dirs::new();
    let agent = Agent::start(&dirs, &[]);
    let open = |path: &std::path::Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    // Only the runtime directory (0700) stands in the way.
    open(dirs.tmp.path(), 0o755);
    let mut c = helper(&agent.socket, "try", true).spawn().expect("setpriv");
    let said = helper_result(&mut c);
    let _ = c.wait();
    assert!(
        said.contains("connect failed") && said.contains("ermission denied"),
        "{said}"
    );

    // Opened on purpose: the agent still checks who is calling.
    open(&dirs.runtime(), 0o755);
    open(&agent.socket, 0o666);
    let mut c = helper(&agent.socket, "try", true).spawn().expect("setpriv");
    let said = helper_result(&mut c);
    let _ = c.wait();
    assert!(said.contains("\"refused\""), "{said}");
    assert!(
        said.contains("uid 65534 may not talk to this agent"),
        "{said}"
    );
    open(&dirs.runtime(), 0o700);
    open(dirs.tmp.path(), 0o700);

    // The owner still can.
    let mut me = agent.connect();
    assert_eq!(me.attach(Role::Watch, 0, "me").agent.id, agent.id);
}

/// The next `Mirror` frame whose text satisfies `pred` (events skipped).
fn mirror_until(c: &mut support::Client, what: &str, pred: impl Fn(&str) -> bool) -> String {
    loop {
        match c.next() {
            Some(ServerMsg::Mirror { text }) if pred(&text) => return text,
            Some(ServerMsg::Mirror { .. } | ServerMsg::Event { .. }) => {}
            other => panic!("waiting for a mirror frame with {what}, got {other:?}"),
        }
    }
}

#[test]
fn mirror_frames_follow_the_managed_pane_and_sighup_does_not_end_the_agent() {
    let dirs = Dirs::with_tmux();
    let agent = Agent::start(&dirs, &[]);
    let mut c = agent.connect();
    let attached = c.attach(Role::Console, 0, "c");
    assert!(attached.agent.mirror.is_some(), "a managed pane to mirror");
    c.command(say("gate-me"));
    let (id, token) = requested(&c.until("the request", is_request));
    c.command(AgentCommand::Approval {
        id,
        decision: vigil_protocol::Answer::ApproveOnce,
        token,
    });
    mirror_until(&mut c, "the command's output", |t| t.contains("gated-ran"));

    // A terminal closing under the agent (SIGHUP) changes nothing.
    unsafe { libc::kill(agent.pid as i32, libc::SIGHUP) };
    // A console attaching now gets the pane as it is, right after Live.
    let mut late = agent.connect();
    late.attach(Role::Watch, 0, "late");
    match late.expect() {
        ServerMsg::Mirror { text } => assert!(text.contains("gated-ran"), "{text}"),
        other => panic!("no mirror frame after live: {other:?}"),
    }
    late.send(&ClientMsg::Status);
    let info = loop {
        if let ServerMsg::Status { agent } = late.expect() {
            break agent;
        }
    };
    assert_eq!(info.pid, agent.pid, "the agent outlived SIGHUP");
}

#[test]
fn an_open_runtime_directory_is_refused_on_the_ready_line() {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dirs = Dirs::new();
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(dirs.runtime())
        .unwrap();
    std::fs::set_permissions(dirs.runtime(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (mut child, said) = dirs.spawn(&[]);
    let error = said["error"].as_str().unwrap_or_else(|| panic!("{said}"));
    assert!(error.contains("is open to others (mode 755)"), "{error}");
    assert_eq!(child.wait().unwrap().code(), Some(1));
    assert_eq!(
        std::fs::read_dir(dirs.runtime()).unwrap().count(),
        0,
        "nothing was created in it"
    );
}
