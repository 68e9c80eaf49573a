//! The tmux tools on real tmux (private sockets): every capture-pane
//! option, send-keys and its gate, the management tools with ownership,
//! limits and protection, and the operator's key passthrough with the mirror
//! feed.

use super::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vigil::exec::tmux::TmuxManager;
use vigil::exec::{Backend, RunRequest};
use vigil::policy::gate::FixedApprover;
use vigil::tools::tmux_capture::CapturePane;
use vigil::tools::tmux_keys::SendKeys;
use vigil::tools::tmux_manage::{ManageAction, TmuxManage};
use vigil::tools::{Tool, ToolContext, ToolRegistry};
use vigil_protocol::approval::ApprovalDecision;

fn meta(mut v: Value) -> Value {
    v["risk"] = json!("low");
    v["mutation"] = json!(true);
    v["privesc"] = json!(false);
    v["why"] = json!("test");
    v
}

async fn call(t: &dyn Tool, v: Value) -> Result<String, String> {
    t.execute(
        &vigil::tools::call_as_sent(t, &v.to_string()),
        &ToolContext::default(),
    )
    .await
    .map(|o| o.result.as_str().unwrap_or_default().to_string())
    .map_err(|e| e.to_string())
}

async fn sh(b: &dyn Backend, cmd: &str) {
    let r = RunRequest {
        command: cmd.into(),
        timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    };
    b.run(r, None).await.unwrap();
}

fn manager(b: &vigil::exec::tmux::TmuxBackend<vigil::exec::transport::Local>) -> Arc<TmuxManager> {
    b.manager()
}

#[tokio::test]
async fn capture_pane_options() {
    let (b, s) = common::start("bash").await;
    let cap = CapturePane::new(manager(&b));
    sh(&*b, "seq 1 60; printf 'pad   \\n'; printf '\\033[31mRED\\033[0m\\n'; printf 'x%.0s' $(seq 1 150); echo").await;
    // The command's end can be seen before tmux has drawn its last output
    // (a busy machine): wait for the last line on the screen first.
    let long = "x".repeat(150);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !call(&cap, json!({})).await.unwrap().contains(&long) {
        assert!(
            std::time::Instant::now() < deadline,
            "the output never showed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let visible = call(&cap, json!({})).await.unwrap();
    assert!(
        visible.contains("RED") && !visible.contains("\x1b["),
        "{visible}"
    );
    assert!(
        !visible.lines().any(|l| l == "1"),
        "history is not visible by default"
    );
    let all = call(&cap, json!({"start": "-"})).await.unwrap();
    assert!(all.lines().any(|l| l == "1"), "{all}");
    let window = call(&cap, json!({"start": 0, "end": "2"})).await.unwrap();
    assert!(window.lines().count() <= 3, "{window}");
    let escapes = call(&cap, json!({"include_escape_sequences": true}))
        .await
        .unwrap();
    assert!(escapes.contains("\x1b["), "{escapes}");
    let octal = call(
        &cap,
        json!({"escape_non_printable": true, "include_escape_sequences": true}),
    )
    .await
    .unwrap();
    assert!(octal.contains("\\033"), "{octal}");
    let trailing = call(
        &cap,
        json!({"preserve_trailing_spaces": true, "join_wrapped_lines": false}),
    )
    .await
    .unwrap();
    assert!(trailing.lines().any(|l| l == "pad   "), "{trailing}");
    let trimmed = call(&cap, json!({"join_wrapped_lines": false}))
        .await
        .unwrap();
    assert!(trimmed.lines().any(|l| l == "pad"), "{trimmed}");
    // 150 x's wrap at width 120: joined by default, split when asked.
    let joined = call(&cap, json!({})).await.unwrap();
    assert!(joined.lines().any(|l| l == "x".repeat(150)), "{joined}");
    let split = call(&cap, json!({"join_wrapped_lines": false}))
        .await
        .unwrap();
    assert!(split.lines().any(|l| l == "x".repeat(120)), "{split}");

    // No alternate screen: main screen plus a notice.
    let alt = call(&cap, json!({"include_alternate_screen": true}))
        .await
        .unwrap();
    assert!(
        alt.contains("no alternate screen is active") && alt.contains("RED"),
        "{alt}"
    );
    // A missing managed pane falls back to shared with a notice first.
    let fb = call(&cap, json!({"pane": "nope"})).await.unwrap();
    assert!(
        fb.starts_with("[notice: no managed pane `vigil-nope`"),
        "{fb}"
    );
    assert!(fb.contains("RED"));
    // Delay waits.
    let t = Instant::now();
    call(&cap, json!({"delay": "300ms"})).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(300));
    // Raw target on vigil's server.
    let raw = call(&cap, json!({"target": "vigil-test:shared"}))
        .await
        .unwrap();
    assert!(raw.contains("RED"));
    // Bad options are argument errors.
    assert!(
        call(&cap, json!({"start": "top"}))
            .await
            .unwrap_err()
            .contains("start")
    );
    assert!(
        call(&cap, json!({"delay": "2h"}))
            .await
            .unwrap_err()
            .contains("delay")
    );

    // The alternate screen itself, and tail truncation.
    s.tmux(&[
        "send-keys",
        "-t",
        "vigil-test:shared",
        "printf '\\033[?1049hALTSCREEN'; sleep 30",
        "Enter",
    ]);
    let alt_on = [
        "display",
        "-p",
        "-t",
        "vigil-test:shared",
        "#{alternate_on}",
    ];
    s.until(&alt_on, "the alternate screen", |a| a.trim() == "1")
        .await;
    let alt = call(&cap, json!({"include_alternate_screen": true}))
        .await
        .unwrap();
    assert!(!alt.contains("notice"), "{alt}");
    s.tmux(&["send-keys", "-t", "vigil-test:shared", "C-c"]);
    s.tmux(&[
        "send-keys",
        "-t",
        "vigil-test:shared",
        "printf '\\033[?1049l\\033[H\\033[2J'",
        "Enter",
    ]);
    // Back on the normal screen, cleared by the shell's own printf (with
    // `clear`, a program, the shell could be seen between the two).
    let back = "#{alternate_on} #{pane_current_command}";
    let back = ["display", "-p", "-t", "vigil-test:shared", back];
    s.until(&back, "the shell on the normal screen", |a| {
        a.trim() == "0 bash"
    })
    .await;
    sh(&*b, "seq 1 3000").await;
    let long = call(&cap, json!({"start": "-"})).await.unwrap();
    assert!(long.starts_with("[truncated "), "{}", &long[..50]);
    assert!(long.trim_end().ends_with('$') || long.contains("3000"));
}

#[tokio::test]
async fn send_keys_types_in_order_and_never_retargets() {
    let (b, s) = common::start("bash").await;
    sh(&*b, "true").await;
    let keys = SendKeys::new(manager(&b));
    let out = call(
        &keys,
        meta(json!({"literal_text": "echo one-", "keys": ["Left", "BSpace"], "enter": true})),
    )
    .await
    .unwrap();
    assert!(out.contains("sent"), "{out}");
    let capture = ["capture-pane", "-p", "-t", "vigil-test:shared"];
    s.until(&capture, "the edited line's output", |sc| {
        sc.lines().any(|l| l == "on-")
    })
    .await;

    let err = call(&keys, meta(json!({"pane": "ghost", "keys": ["C-c"]})))
        .await
        .unwrap_err();
    assert!(err.contains("no managed pane"), "{err}");
    let err = call(&keys, json!({"keys": ["C-c"]})).await.unwrap_err();
    assert!(err.contains("risk"), "{err}");
    let err = call(&keys, meta(json!({}))).await.unwrap_err();
    assert!(err.contains("nothing to send"), "{err}");

    // Gated like run_shell: a denial means nothing is typed.
    let mut reg = ToolRegistry::new();
    reg.set_approver(Arc::new(FixedApprover(ApprovalDecision::Deny)));
    reg.register(SendKeys::new(manager(&b)));
    let run = reg
        .execute(
            "send-keys",
            &meta(json!({"literal_text": "echo denied-text", "enter": true})).to_string(),
        )
        .await;
    assert!(run.denied());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !s.tmux(&["capture-pane", "-p", "-t", "vigil-test:shared"])
            .contains("denied-text")
    );
    let g = keys.gate(&meta(json!({"keys": ["C-c"]}))).unwrap();
    assert!(g.action.contains("C-c"));
    assert!(
        SendKeys::new(manager(&b))
            .with_confirm(false)
            .gate(&json!({}))
            .is_none()
    );
}

#[tokio::test]
async fn management_tools_respect_ownership_limits_and_protection() {
    let (b, s) = common::start("dash").await;
    let m = manager(&b);
    let tools: Vec<TmuxManage> = TmuxManage::all(&m);
    let t = |a: ManageAction| tools.iter().find(|x| x.name() == a.tool_name()).unwrap();
    let cs = t(ManageAction::CreateSession);
    let ks = t(ManageAction::KillSession);
    let cp = t(ManageAction::CreatePane);
    let kp = t(ManageAction::KillPane);

    let out = call(cs, meta(json!({"session": "build"}))).await.unwrap();
    assert!(
        out.contains("created managed tmux session vigil-test-build"),
        "{out}"
    );
    let out = call(cs, meta(json!({"session": "vigil-test-build"})))
        .await
        .unwrap();
    assert!(out.contains("reused"), "{out}");
    assert!(
        s.tmux(&[
            "show-options",
            "-t",
            "vigil-test-build",
            "-v",
            "@vigil-owner"
        ])
        .contains("test")
    );
    call(cs, meta(json!({"session": "two"}))).await.unwrap();
    let err = call(cs, meta(json!({"session": "three"})))
        .await
        .unwrap_err();
    assert!(err.contains("max_sessions = 3"), "{err}");

    // Commands run in the new session.
    let r = b
        .run(
            RunRequest {
                command: "echo in-build".into(),
                session: Some("build".into()),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.stdout, b"in-build\n");

    let err = call(ks, meta(json!({"session": "vigil-test"})))
        .await
        .unwrap_err();
    assert!(err.contains("cannot be killed"), "{err}");
    s.tmux(&["new-session", "-d", "-s", "vigil-test-foreign"]);
    let err = call(ks, meta(json!({"session": "foreign"})))
        .await
        .unwrap_err();
    assert!(err.contains("not managed"), "{err}");
    let out = call(ks, meta(json!({"session": "two"}))).await.unwrap();
    assert!(out.contains("killed"), "{out}");
    assert!(
        !s.tmux(&["ls", "-F", "#{session_name}"])
            .contains("vigil-test-two")
    );
    let err = call(ks, json!({"session": "build"})).await.unwrap_err();
    assert!(err.contains("risk"), "{err}");

    let out = call(cp, meta(json!({"pane": "logs"}))).await.unwrap();
    assert!(out.contains("created managed pane `vigil-logs`"), "{out}");
    let r = b
        .run(
            RunRequest {
                command: "echo in-logs".into(),
                pane: Some("logs".into()),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(r.stdout, b"in-logs\n");
    call(cp, meta(json!({"pane": "p2"}))).await.unwrap();
    let err = call(cp, meta(json!({"pane": "p3"}))).await.unwrap_err();
    assert!(err.contains("max_panes = 3"), "{err}");
    let err = call(kp, meta(json!({"pane": "shared"}))).await.unwrap_err();
    assert!(err.contains("protected"), "{err}");
    s.tmux(&["new-window", "-d", "-t", "vigil-test:", "-n", "vigil-raw"]);
    let err = call(kp, meta(json!({"pane": "raw"}))).await.unwrap_err();
    assert!(err.contains("unmanaged"), "{err}");
    let out = call(kp, meta(json!({"pane": "logs"}))).await.unwrap();
    assert!(out.contains("killed managed pane `vigil-logs`"), "{out}");

    for tool in &tools {
        let d = tool.definition();
        for section in [
            "When to use:",
            "When NOT to use:",
            "Disambiguation:",
            "Example:",
        ] {
            assert!(
                d.function.description.contains(section),
                "{} {section}",
                tool.name()
            );
        }
        let g = tool
            .gate(&meta(json!({"session": "x", "pane": "y"})))
            .unwrap();
        assert!(g.action.contains(tool.name()));
    }
    for d in [
        CapturePane::new(m.clone()).definition(),
        SendKeys::new(m.clone()).definition(),
    ] {
        for section in [
            "When to use:",
            "When NOT to use:",
            "Disambiguation:",
            "Example:",
        ] {
            assert!(d.function.description.contains(section), "{section}");
        }
    }
}

/// The operator's key passthrough: typed keys land in the shared pane in
/// order; a half-typed line the operator leaves behind does not leak into
/// the agent's next command, whose output stays exact; the mirror feed
/// publishes the pane (with the typed text) and nothing when idle.
#[tokio::test]
async fn operator_keys_reach_the_pane_and_leave_attribution_intact() {
    use vigil_protocol::PaneKey;
    let (b, _s) = common::start("bash").await;
    let m = manager(&b);
    let mut feed = vigil::exec::tmux::spawn_mirror_feed(&m);
    feed.changed().await.unwrap();

    let text = |t: &str| PaneKey::Text(t.into());
    m.send_operator_keys(&[text("echo op-$((6*7))"), PaneKey::Key("Enter".into())])
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let shown = feed.borrow_and_update().clone();
        if shown.lines().any(|l| l.trim() == "op-42") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "mirror feed never showed it:\n{shown}"
        );
        let _ = tokio::time::timeout(Duration::from_secs(1), feed.changed()).await;
    }

    // A bad key name is refused before anything is typed.
    assert!(
        m.send_operator_keys(&[PaneKey::Key("Enter; kill-server".into())])
            .await
            .is_err()
    );

    // The operator leaves a half-typed line; the agent's command is exact.
    m.send_operator_keys(&[text("echo half-typed")])
        .await
        .unwrap();
    let r = RunRequest {
        command: "printf 'agent\\tok\\n'".into(),
        timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    };
    let out = b.run(r, None).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "agent\tok\n");
    assert_eq!(out.exit_code, Some(0));

    // Idle: once the pane settles, no new capture is published.
    let mut last = Instant::now();
    while last.elapsed() < Duration::from_millis(700) {
        if tokio::time::timeout(Duration::from_millis(100), feed.changed())
            .await
            .is_ok()
        {
            feed.borrow_and_update();
            last = Instant::now();
        }
        assert!(
            Instant::now() < deadline + Duration::from_secs(60),
            "never settles"
        );
    }
    assert!(
        tokio::time::timeout(Duration::from_millis(500), feed.changed())
            .await
            .is_err(),
        "an idle pane publishes nothing"
    );
}

/// Keys typed into the shared pane, then `remove_file` (an `rm` run in that
/// pane) completes.
#[tokio::test(flavor = "multi_thread")]
async fn keys_into_the_shared_pane_then_remove_file_completes() {
    let (b, _s) = common::start("sh").await;
    sh(&*b, "echo one").await;
    let keys = SendKeys::new(manager(&b));
    call(
        &keys,
        meta(json!({"literal_text": "echo three", "enter": true})),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    let p = p.to_str().unwrap();
    let files = async {
        b.write_file(p, b"after").await.unwrap();
        assert_eq!(b.read_file(p).await.unwrap(), b"after");
        b.remove_file(p).await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(45), files)
        .await
        .expect("remove_file hung after keys into the shared pane");
    assert!(!std::path::Path::new(p).exists());
}

/// The agent's own keys can leave the shell at a continuation prompt
/// (`echo "open` + Enter): the next command must not be swallowed into that
/// line (it would wait out its whole timeout) but run exactly; and a program
/// the agent started with keys is never interrupted by the next command,
/// which is refused at once as busy.
#[tokio::test(flavor = "multi_thread")]
async fn keys_the_agent_typed_never_swallow_or_kill_the_next_command() {
    let (b, _s) = common::start("bash").await;
    sh(&*b, "echo ready").await;
    let keys = SendKeys::new(manager(&b));
    call(
        &keys,
        meta(json!({"literal_text": "echo \"open", "enter": true})),
    )
    .await
    .unwrap();
    let r = RunRequest {
        command: "printf 'after\\tcontinuation\\n'".into(),
        timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    };
    let out = b
        .run(r, None)
        .await
        .expect("runs after a continuation prompt");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "after\tcontinuation\n"
    );
    assert_eq!(out.exit_code, Some(0));

    call(
        &keys,
        meta(json!({"literal_text": "sleep 30", "enter": true})),
    )
    .await
    .unwrap();
    let m = manager(&b);
    let foreground = || async {
        let pane = m.resolve(None, None).await.unwrap();
        m.pane_state(&pane).await.unwrap().current_command
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while foreground().await != "sleep" {
        assert!(Instant::now() < deadline, "sleep never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = RunRequest {
        command: "echo no".into(),
        timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    };
    let busy = b
        .run(r, None)
        .await
        .expect_err("a busy pane refuses")
        .to_string();
    assert!(busy.contains("busy running `sleep`"), "{busy}");
    // The refusal did not interrupt the program the agent started.
    assert_eq!(foreground().await, "sleep");
}

/// The approval card's `in:` line: the managed pane's current directory,
/// following a `cd`; a session vigil has not made is not made for it.
#[tokio::test]
async fn the_pane_directory_for_the_card_follows_cd_and_creates_nothing() {
    let (b, s) = common::start("bash").await;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap();
    sh(&*b, &format!("cd '{}'", real.display())).await;
    let shown = b.workdir(None, None).await;
    assert_eq!(shown.as_deref(), Some(real.to_str().unwrap()));
    let before = s.tmux(&["list-sessions", "-F", "#{session_name}"]);
    assert_eq!(b.workdir(Some("ghost"), None).await, None);
    assert_eq!(b.workdir(None, Some("no-such-pane")).await, None);
    let after = s.tmux(&["list-sessions", "-F", "#{session_name}"]);
    assert_eq!(before, after, "nothing was created for a card");
}
