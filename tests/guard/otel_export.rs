//! `[telemetry] otlp_endpoint` end to end: the real `vigil exec` sends
//! spans for the turn, its call and the call's decision over OTLP/HTTP
//! (protobuf) to a real receiver, `oteltap` from PyPI (installed by
//! `.ci/run` into tests/.venv, hash pinned; found in `VIGIL_TEST_OTELTAP`,
//! tests/.venv or PATH; missing fails, naming `.ci/run`, unless
//! `VIGIL_SKIP_LLAMA=1`), which prints every span it decoded as a JSON line.

use super::hooks_common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hooks_common::{Home, one_command, script};
use serde_json::Value;

fn oteltap() -> Option<String> {
    let given = [
        std::env::var("VIGIL_TEST_OTELTAP").ok(),
        Some(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/.venv/bin/oteltap").into()),
    ];
    if let Some(p) = given
        .into_iter()
        .flatten()
        .find(|p| std::path::Path::new(p).exists())
    {
        return Some(p);
    }
    let out = Command::new("sh")
        .args(["-c", "command -v oteltap"])
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!path.is_empty()).then_some(path)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_calls_and_decisions_reach_a_real_otlp_receiver() {
    let Some(tap) = oteltap() else {
        assert!(
            std::env::var_os("VIGIL_SKIP_LLAMA").is_some(),
            "oteltap is not in tests/.venv: run .ci/run (or set VIGIL_SKIP_LLAMA=1 to skip \
             the tests that need tests/.venv)"
        );
        eprintln!("VIGIL_SKIP_LLAMA: no OTLP receiver, not tried");
        return;
    };
    let port = free_port();
    let mut receiver = Command::new(tap)
        .args(["--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("oteltap starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "oteltap never listened");
        std::thread::sleep(Duration::from_millis(50));
    }

    let home = Home::new();
    let hook = script(
        &home,
        "deny.sh",
        "cat >/dev/null\necho '{\"version\":1,\"decision\":\"deny\",\"reason\":\"no rm\"}'",
    );
    let config = format!(
        "[telemetry]\notlp_endpoint = \"http://127.0.0.1:{port}\"\n\n\
         [[hooks.decide]]\nname = \"no-rm\"\ncommand = {hook}\n"
    );
    let run = home.exec(&config, &one_command("rm -rf build"), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);

    // vigil exec waits for its exports before it exits: all are in.
    let _ = receiver.kill();
    let mut text = String::new();
    receiver
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let _ = receiver.wait();
    let spans: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let named = |n: &str| -> Vec<&Value> { spans.iter().filter(|s| s["name"] == n).collect() };
    let (turn, call, decision) = (named("turn"), named("call run_shell"), named("decision"));
    assert_eq!(
        (turn.len(), call.len(), decision.len()),
        (1, 1, 1),
        "{text}"
    );
    let attr = |s: &Value, k: &str| -> Value {
        s["attributes"]
            .as_array()
            .and_then(|a| a.iter().find(|kv| kv["key"] == k))
            .map(|kv| kv["value"].clone())
            .unwrap_or(Value::Null)
    };
    let decided = attr(decision[0], "vigil.decided_by");
    assert!(
        decided["stringValue"]
            .as_str()
            .unwrap()
            .contains("denied by hook `no-rm`"),
        "{decided}"
    );
    assert_eq!(attr(decision[0], "vigil.approved")["boolValue"], false);
    assert_eq!(
        attr(turn[0], "vigil.turn.outcome")["stringValue"],
        "completed"
    );
    assert_eq!(
        attr(turn[0], "vigil.session_id")["stringValue"],
        run.session().as_str()
    );
    assert_eq!(decision[0]["parentSpanId"], call[0]["spanId"]);
    assert_eq!(call[0]["parentSpanId"], turn[0]["spanId"]);
    assert!(spans.iter().all(|s| s["traceId"] == turn[0]["traceId"]));
    assert_eq!(
        call[0]["status"]["code"], 2,
        "a denied call failed: {}",
        call[0]
    );
}
