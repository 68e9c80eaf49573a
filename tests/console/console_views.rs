//! End-to-end: layout and navigation (help, zoom, theme key, configurable
//! keys, NO_COLOR), watching (markdown, tool output with the truncation
//! mark), the history view with the spill-file viewer, and intervening (Esc
//! cancels, messages typed during a turn are queued).

use super::common;
use super::console_support as support;

use std::process::Command;
use std::time::Duration;

use support::{BASE_CONFIG, Console};

#[test]
fn help_zoom_theme_and_configured_keys() {
    let config = format!("{BASE_CONFIG}[console.keys]\nzoom = \"ctrl-z\"\n");
    let c = Console::start("layout", &config, "", "");
    c.keys(&["Tab"]);
    c.wait("PgUp/PgDn scroll");
    c.keys(&["?"]);
    c.wait("Ctrl-z");
    // The list is longer than the window: it scrolls to the rest.
    c.keys(&["Down", "Down", "Down", "Down", "Down", "Down"]);
    c.wait("deny with a reason for the model");
    c.keys(&["Escape"]);
    c.wait("PgUp/PgDn scroll");
    c.keys(&["C-z"]);
    c.wait_for("conversation zoomed", |s| {
        !s.contains(" tools ") && s.contains("conversation")
    });
    c.keys(&["C-z"]);
    c.wait(" tools ");
    c.keys(&["t"]);
    c.wait("theme: light");
}

#[test]
fn no_color_flag_and_env_drop_colours() {
    for (args, env) in [("--no-color", ""), ("", "NO_COLOR=1")] {
        let c = Console::start("nocolor", BASE_CONFIG, args, env);
        c.wait("conversation");
        let ansi = c.screen_ansi();
        assert!(
            !has_colour(&ansi),
            "colour escape with {args}{env}: {ansi:?}"
        );
    }
    let c = Console::start("colour", BASE_CONFIG, "", "");
    c.wait("conversation");
    assert!(has_colour(&c.screen_ansi()), "colours by default");
}

/// True when an SGR sequence sets a foreground or background colour.
fn has_colour(ansi: &str) -> bool {
    ansi.split("\x1b[").skip(1).any(|seq| {
        let Some(end) = seq.find('m') else {
            return false;
        };
        seq[..end].split(';').any(|p| {
            matches!(
                p.parse::<u32>(),
                Ok(30..=38 | 40..=48 | 90..=97 | 100..=107)
            )
        })
    })
}

#[test]
fn bad_key_and_bad_theme_colour_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "[console.keys]\nzoom = \"ctrl-banana\"\n").unwrap();
    let out = Command::new(common::vigil_bin())
        .args(["--config", cfg.to_str().unwrap()])
        .env("VIGIL_DATA_DIR", dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("console.keys.zoom") && err.contains("ctrl-banana"),
        "{err}"
    );

    let themes = dir.path().join("xdg/vigil/themes");
    std::fs::create_dir_all(&themes).unwrap();
    std::fs::write(
        themes.join("mine.toml"),
        "[styles]\nuser = { fg = \"purpl\" }\n",
    )
    .unwrap();
    std::fs::write(&cfg, "[console]\ntheme = \"mine\"\n").unwrap();
    let out = Command::new(common::vigil_bin())
        .args(["--config", cfg.to_str().unwrap()])
        .env("VIGIL_DATA_DIR", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("mine.toml") && err.contains("styles.user.fg") && err.contains("purpl"),
        "{err}"
    );
}

#[test]
fn markdown_tool_output_history_and_the_spill_viewer() {
    let c = Console::start("history", BASE_CONFIG, "", "");
    c.send("markdown please");
    c.wait("• first step with ls -l");
    c.wait("│ echo in-a-code-block");
    c.send("flood");
    c.wait_for("the flood's turn to end", |s| {
        s.contains("truncated for model") && s.contains("│ idle")
    });
    c.keys(&["Tab", "h"]);
    c.wait("history · 1 tool calls");
    c.wait("seq 1 20000");
    c.keys(&["Enter"]);
    c.wait("M│1");
    c.keys(&["/"]);
    c.type_text("15000");
    c.keys(&["Enter"]);
    // The middle of the output was cut for the model: no M mark.
    c.wait_for("unseen match", |s| {
        s.contains(" │15000") && s.contains("/15000 1/1")
    });
    c.keys(&["End"]);
    c.wait("M│20000");
    c.keys(&["s"]);
    c.wait("save the full output to");
    c.keys(&["Enter"]);
    c.wait("saved");
    let saved: Vec<_> = std::fs::read_dir(c.work())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("vigil-output-"))
        .collect();
    assert_eq!(saved.len(), 1);
    let text = std::fs::read_to_string(saved[0].path()).unwrap();
    assert!(text.contains("\n12345\n"));
    assert!(
        text.starts_with("1\n2\n"),
        "no banner line: {:?}",
        &text[..40]
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = saved[0].metadata().unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "saved outputs are private");
    c.keys(&["Escape"]);
    c.wait("history · 1 tool calls");
    c.keys(&["Escape"]);
    c.wait(" tools ");
}

#[test]
fn esc_goes_back_x_twice_cancels_and_typed_messages_queue() {
    let c = Console::start("intervene", BASE_CONFIG, "", "");
    c.send("hang");
    c.wait("running");
    c.send("later please");
    c.wait("later please (queued)");
    // Esc only leaves the message box: the call keeps running.
    c.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!c.screen().contains("turn cancelled"), "{}", c.screen());
    // The cancel key asks first, the second press cancels.
    c.keys(&["x"]);
    c.wait("press x again to cancel");
    c.keys(&["x"]);
    c.wait("turn cancelled");
    c.wait("cancelled");
    c.wait("echo: later please");
    let screen = c.screen();
    assert!(
        !screen.contains("denied"),
        "cancelled, not denied:\n{screen}"
    );
}
