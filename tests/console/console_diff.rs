//! End-to-end: the diff review card through the real binary in tmux — a
//! `write_file` over an existing config shows a coloured unified diff that
//! scrolls to its second hunk and zooms, a new file shows its content, and
//! an `edit` shows the one line it changes; nothing is written before the
//! operator approves.

use super::console_support as support;

use support::{BASE_CONFIG, Console};

const RULES: &str = r#"
[[rule]]
when = { role = "user", contains = "rewrite-conf" }
times = 0
text = "Rewriting the config."
[[rule.tool_calls]]
name = "write_file"
[rule.tool_calls.arguments]
path = "{conf}"
content = "{new_conf}"

[[rule]]
when = { role = "user", contains = "new-motd" }
times = 0
text = "Writing the motd."
[[rule.tool_calls]]
name = "write_file"
[rule.tool_calls.arguments]
path = "{motd}"
content = "Welcome to web-1.\nManaged by vigil.\n"

[[rule]]
when = { role = "user", contains = "bump-workers" }
times = 0
text = "Editing one line."
[[rule.tool_calls]]
name = "edit"
[rule.tool_calls.arguments]
command = "str_replace"
path = "{conf}"
old_str = "setting_12 value_12;"
new_str = "setting_12 value_twelve;"

[[rule]]
when = { role = "tool" }
times = 0
text = "TOOL SAID: {last_tool}"
"#;

/// `text` drawn in ANSI colour `n` (basic or 256-colour form).
fn coloured(line: &str, text: &str, n: u8) -> bool {
    line.contains(&format!("\x1b[3{n}m{text}")) || line.contains(&format!("\x1b[38;5;{n}m{text}"))
}

fn conf(lines: std::ops::RangeInclusive<u32>) -> String {
    lines
        .map(|i| format!("setting_{i:02} value_{i};\n"))
        .collect()
}

#[test]
fn writes_and_edits_show_their_diff_before_approval() {
    let files = tempfile::tempdir().expect("tempdir");
    let base = vigil::tools::paths::resolve_local(files.path()).expect("resolve");
    let conf_path = base.join("app.conf");
    let motd_path = base.join("motd");
    let before = conf(1..=40);
    std::fs::write(&conf_path, &before).expect("write conf");
    let after = before
        .replace("setting_03 value_3;", "setting_03 value_three;")
        .replace("setting_35 value_35;\n", "");
    let scenario = format!("model = \"e2e\"\nchunk_delay_ms = 0\n{RULES}")
        .replace("{conf}", &conf_path.display().to_string())
        .replace("{motd}", &motd_path.display().to_string())
        .replace("{new_conf}", &after.replace('\n', "\\n"));
    let c = Console::start_scenario("diff", &scenario, BASE_CONFIG, "", "");
    let idle = || c.wait_for("the turn to end", |s| s.contains("│ idle"));

    // A rewrite: the first hunk, coloured, and nothing written yet.
    c.send("rewrite-conf");
    c.wait("approvals (1)");
    c.wait("-setting_03 value_3;");
    c.wait("+setting_03 value_three;");
    let ansi = c.screen_ansi();
    assert!(
        ansi.lines().any(|l| coloured(l, "+setting_03", 2)),
        "added lines are green:\n{ansi}"
    );
    assert!(
        ansi.lines().any(|l| coloured(l, "-setting_03", 1)),
        "removed lines are red:\n{ansi}"
    );
    assert_eq!(std::fs::read_to_string(&conf_path).unwrap(), before);
    // Scroll to the second hunk, then zoom the card to the whole screen.
    c.to_approvals();
    c.keys(&["PageDown", "PageDown"]);
    c.wait("-setting_35 value_35;");
    c.keys(&["Home", "z"]);
    let zoomed = c.wait_for("the zoomed card", |s| {
        s.contains("-setting_35 value_35;") && s.contains("+setting_03 value_three;")
    });
    assert!(!zoomed.contains("┌ conversation"), "zoomed:\n{zoomed}");
    // Esc goes back to the panes (sent alone: Esc then y at once reads as Alt-y).
    c.keys(&["Escape"]);
    c.wait("┌ conversation");
    c.answer("y");
    c.wait("TOOL SAID");
    idle();
    assert_eq!(std::fs::read_to_string(&conf_path).unwrap(), after);

    // A new file shows its content.
    c.send("new-motd");
    c.wait("approvals (1)");
    c.wait("new file: 2 lines, 36 bytes");
    c.wait("+Managed by vigil.");
    c.answer("n");
    idle();
    assert!(!motd_path.exists(), "denied write happened");

    // An edit shows the line it changes.
    c.send("bump-workers");
    c.wait("approvals (1)");
    c.wait("-setting_12 value_12;");
    c.wait("+setting_12 value_twelve;");
    c.answer("n");
    idle();
    assert_eq!(std::fs::read_to_string(&conf_path).unwrap(), after);
}
