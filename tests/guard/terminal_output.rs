//! What vigil prints to a terminal is sanitised like the console: the real
//! binary runs under a pty (`script -q`, the typescript holding every byte
//! that reached the terminal) while the scripted model answers with text
//! holding raw escapes (OSC 52 clipboard, OSC 2 title, cursor moves, a
//! screen clear, a bidi override, 8-bit CSI) and has a command print the
//! same; then `vigil sessions` (whose last message is that text), `vigil
//! ps`, `vigil policy check` on such a command, and `vigil audit export`.
//! No ESC, BEL, C1 control or bidi override reaches the pty, and the plain
//! words around them do.

use super::hooks_common;

use std::process::Command;

use hooks_common::Home;
use vigil_scripted::{Scenario, ScriptedServer};

/// The model's text: plain words around escapes (TOML escapes).
const HOSTILE: &str = r"model-before \u001b]52;c;aGVsbG8=\u0007\u001b]2;pwned-title\u0007\u001b[2J\u001b[1;1H\u001b[Kmodel-after \u202eevil\u202c \u009b2Kend";

fn scenario() -> String {
    // The command prints the same escapes with printf's octal escapes.
    let command = r"printf 'cmd-before \033]52;c;aGVsbG8=\007\033]2;cmd-title\007\033[2J\033[Acmd-after \342\200\256x\n'";
    format!(
        "[[rule]]\nwhen = {{ role = \"user\" }}\ntimes = 1\ntext = \"{HOSTILE}\"\n\
         [[rule.tool_calls]]\nname = \"run_shell\"\n[rule.tool_calls.arguments]\n\
         command = {command:?}\nrisk = \"low\"\nmutation = false\nprivesc = false\n\
         why = \"pty test\"\n\n\
         [[rule]]\nwhen = {{ role = \"tool\" }}\ntext = \"{HOSTILE}\"\n"
    )
}

/// Run `vigil <args>` under a pty; every byte the terminal received.
fn under_pty(home: &Home, args: &[String]) -> (i32, Vec<u8>) {
    let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_vigil").to_string())
        .chain(args.iter().cloned())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let typescript = home.path().join("typescript");
    let status = Command::new("script")
        .args(["-q", "-e", "-c", &quoted.join(" ")])
        .arg(&typescript)
        .env("VIGIL_DATA_DIR", home.data())
        .env("VIGIL_RUNTIME_DIR", home.path().join("rt"))
        .env("HOME", home.path().join("home"))
        .env("XDG_CONFIG_HOME", home.path().join("xdg"))
        .env_remove("VIGIL_API_KEY")
        .current_dir(home.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("script runs");
    let mut bytes = std::fs::read(&typescript).unwrap_or_default();
    let _ = std::fs::remove_file(&typescript);
    // script's own header and footer (which quote the command line) are
    // not what vigil printed.
    if bytes.starts_with(b"Script started") {
        let end = bytes.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.drain(..end);
    }
    let footer = b"\nScript done on";
    if let Some(at) = bytes.windows(footer.len()).rposition(|w| w == footer) {
        bytes.truncate(at + 1);
    }
    (status.code().unwrap_or(-1), bytes)
}

/// What reached the terminal must hold no byte a terminal acts on.
fn assert_clean(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let bad: Vec<(usize, char)> = text
        .char_indices()
        .filter(|(_, c)| {
            (c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(bad.is_empty(), "{what}: {bad:?} reached the pty:\n{text:?}");
}

fn config(home: &Home) -> String {
    let cfg = home.path().join("config.toml");
    std::fs::write(&cfg, "").unwrap();
    cfg.display().to_string()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_raw_escape_from_the_model_or_a_command_reaches_the_terminal() {
    let home = Home::new();
    let server = ScriptedServer::start(Scenario::from_toml_str(&scenario()).expect("scenario"))
        .await
        .expect("scripted server");
    let cfg = config(&home);
    let base = server.base_url();
    let exec = args(&[
        "--config",
        &cfg,
        "--base-url",
        &base,
        "--model",
        "m",
        "--no-tmux",
        "--auto-approve",
        "exec",
        "go",
    ]);
    // The scripted server answers on the other worker meanwhile.
    let (code, bytes) = tokio::task::block_in_place(|| under_pty(&home, &exec));
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert_eq!(code, 0, "{text}");
    assert_clean("vigil exec", &bytes);
    for word in [
        "model-before",
        "model-after",
        "evil",
        "cmd-before",
        "cmd-after",
    ] {
        assert!(text.contains(word), "`{word}` missing: {text}");
    }
    assert!(
        !text.contains("pwned-title"),
        "an OSC's payload was printed: {text}"
    );
    assert!(
        text.contains("│ cmd-before cmd-after x"),
        "the command's output, its escapes gone: {text}"
    );

    let (code, bytes) = under_pty(&home, &args(&["sessions"]));
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("model-after"), "{text}");
    assert_clean("vigil sessions", &bytes);

    let (code, bytes) = under_pty(&home, &args(&["ps"]));
    assert_eq!(code, 0);
    assert_clean("vigil ps", &bytes);

    let check = args(&[
        "--config",
        &cfg,
        "policy",
        "check",
        "--",
        "echo",
        "\u{1b}]52;c;aGVsbG8=\u{7}policy-word\u{202e}\u{1b}[2J",
    ]);
    let (_, bytes) = under_pty(&home, &check);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert!(text.contains("policy-word"), "{text}");
    assert_clean("vigil policy check", &bytes);

    let (code, bytes) = under_pty(&home, &args(&["audit", "export", "last"]));
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("\"tool\":\"run_shell\""), "{text}");
    assert_clean("vigil audit export", &bytes);
}
