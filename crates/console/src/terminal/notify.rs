//! The console's side of "an approval waits": the bytes it writes to its
//! terminal for the title with the count of waiting approvals, and for a
//! desktop notification (OSC 9 or OSC 777, wrapped for tmux), and which
//! desktop escape `auto` picks for the terminal it runs in.
//!
//! Pure: it builds strings and reads the environment it is given; the event
//! loop writes them. It never writes to the terminal itself, and never puts
//! a control character of foreign text (a command the model asked for) into
//! an escape: text is flattened to printable characters first.

use vigil_config::{DesktopMode, NotifyConfig};

/// Save the terminal's title on its title stack (xterm `CSI 22;0t`).
pub const PUSH_TITLE: &str = "\x1b[22;0t";
/// Restore the title saved by [`PUSH_TITLE`] (xterm `CSI 23;0t`).
pub const POP_TITLE: &str = "\x1b[23;0t";
/// Longest body text put in a desktop notification.
const MAX_BODY_CHARS: usize = 160;

/// Which desktop-notification escape, and whether to pass it through tmux.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Desktop {
    pub osc: Osc,
    /// Wrap in tmux's DCS passthrough (`ESC P tmux; … ESC \`), which tmux
    /// forwards to the outer terminal when `allow-passthrough` is on (and
    /// drops silently otherwise).
    pub tmux: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Osc {
    /// `ESC ] 9 ; body BEL`.
    Nine,
    /// `ESC ] 777 ; notify ; title ; body BEL` (rxvt-unicode, foot, ghostty).
    SevenSevenSeven,
}

/// How the console notifies beyond the bell (`ConsoleOptions::bell`),
/// resolved once at start-up. The default writes nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotifyOptions {
    /// Keep the count of waiting approvals in the terminal title.
    pub title: bool,
    pub desktop: Option<Desktop>,
}

/// The environment variables that decide `desktop = "auto"`.
#[derive(Debug, Clone, Default)]
pub struct TermEnv {
    pub term_program: Option<String>,
    pub term: Option<String>,
    /// iTerm2 sets `LC_TERMINAL`, which survives ssh and tmux.
    pub lc_terminal: Option<String>,
    /// Windows Terminal sets `WT_SESSION`.
    pub wt_session: bool,
    /// `TMUX` is set: the console runs inside tmux.
    pub in_tmux: bool,
}

impl TermEnv {
    pub fn from_process() -> TermEnv {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        TermEnv {
            term_program: var("TERM_PROGRAM"),
            term: var("TERM"),
            lc_terminal: var("LC_TERMINAL"),
            wt_session: var("WT_SESSION").is_some(),
            in_tmux: var("TMUX").is_some(),
        }
    }
}

impl NotifyOptions {
    /// `[notify]` resolved for the terminal described by `env`.
    pub fn resolve(cfg: &NotifyConfig, env: &TermEnv) -> NotifyOptions {
        let tmux = env.in_tmux;
        let desktop = match cfg.desktop {
            DesktopMode::Off => None,
            DesktopMode::Osc9 => Some(Desktop {
                osc: Osc::Nine,
                tmux,
            }),
            DesktopMode::Osc777 => Some(Desktop {
                osc: Osc::SevenSevenSeven,
                tmux,
            }),
            DesktopMode::Auto => auto_osc(env).map(|osc| Desktop { osc, tmux }),
        };
        NotifyOptions {
            title: cfg.title,
            desktop,
        }
    }
}

/// The escape `auto` picks: only for terminals known to show it, never a
/// guess (an unknown terminal may print an OSC it does not know). Inside
/// tmux `TERM_PROGRAM` names tmux, not the terminal, so only `LC_TERMINAL`
/// (iTerm2) identifies it there.
fn auto_osc(env: &TermEnv) -> Option<Osc> {
    if env.lc_terminal.as_deref() == Some("iTerm2") {
        return Some(Osc::Nine);
    }
    if env.in_tmux {
        return None;
    }
    if env.wt_session {
        return Some(Osc::Nine);
    }
    let program = env.term_program.as_deref().unwrap_or("");
    let term = env.term.as_deref().unwrap_or("");
    if matches!(program, "iTerm.app" | "WezTerm") {
        return Some(Osc::Nine);
    }
    // kitty is left out: its own protocol is OSC 99.
    if program == "ghostty"
        || term == "xterm-ghostty"
        || term.starts_with("rxvt")
        || term.starts_with("foot")
    {
        Some(Osc::SevenSevenSeven)
    } else {
        None
    }
}

/// The title text: "vigil" or "vigil: N waiting".
pub fn title_text(waiting: usize) -> String {
    if waiting == 0 {
        "vigil".to_string()
    } else {
        format!("vigil: {waiting} waiting")
    }
}

/// `OSC 2 ; title ST`: sets the window title (and tmux's `#{pane_title}`).
pub fn set_title(waiting: usize) -> String {
    format!("\x1b]2;{}\x1b\\", title_text(waiting))
}

/// The desktop notification for an approval that waits.
pub fn desktop(d: Desktop, body: &str) -> String {
    let body = printable(body);
    let osc = match d.osc {
        Osc::Nine => format!("\x1b]9;vigil: {body}\x07"),
        Osc::SevenSevenSeven => format!("\x1b]777;notify;vigil: approval waiting;{body}\x07"),
    };
    if d.tmux { tmux_passthrough(&osc) } else { osc }
}

/// tmux's DCS passthrough: every ESC inside doubled.
fn tmux_passthrough(seq: &str) -> String {
    format!("\x1bPtmux;{}\x1b\\", seq.replace('\x1b', "\x1b\x1b"))
}

/// Foreign text made safe inside an OSC: control characters and `;` (the
/// OSC 777 field separator) become spaces, cut to [`MAX_BODY_CHARS`].
fn printable(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() || c == ';' { ' ' } else { c })
        .collect();
    let mut out: String = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    if out.chars().count() > MAX_BODY_CHARS {
        out = out.chars().take(MAX_BODY_CHARS - 1).collect();
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(program: &str, term: &str, tmux: bool) -> TermEnv {
        TermEnv {
            term_program: Some(program.into()).filter(|p: &String| !p.is_empty()),
            term: Some(term.into()),
            in_tmux: tmux,
            ..TermEnv::default()
        }
    }

    #[test]
    fn title_bytes_carry_the_count() {
        assert_eq!(set_title(0), "\x1b]2;vigil\x1b\\");
        assert_eq!(set_title(2), "\x1b]2;vigil: 2 waiting\x1b\\");
        assert_eq!(PUSH_TITLE.as_bytes(), b"\x1b[22;0t");
        assert_eq!(POP_TITLE.as_bytes(), b"\x1b[23;0t");
    }

    #[test]
    fn desktop_bytes_for_each_escape_and_through_tmux() {
        let nine = Desktop {
            osc: Osc::Nine,
            tmux: false,
        };
        assert_eq!(
            desktop(nine, "run_shell: rm -rf /tmp/x"),
            "\x1b]9;vigil: run_shell: rm -rf /tmp/x\x07"
        );
        let seven = Desktop {
            osc: Osc::SevenSevenSeven,
            tmux: false,
        };
        assert_eq!(
            desktop(seven, "a;b\x07c\x1b]0;evil\nd"),
            "\x1b]777;notify;vigil: approval waiting;a b c ]0 evil d\x07"
        );
        let wrapped = desktop(Desktop { tmux: true, ..nine }, "ls");
        assert_eq!(wrapped, "\x1bPtmux;\x1b\x1b]9;vigil: ls\x07\x1b\\");
        let long = desktop(nine, &"x".repeat(500));
        assert!(long.chars().count() < MAX_BODY_CHARS + 20);
    }

    #[test]
    fn auto_picks_only_known_terminals() {
        let cfg = NotifyConfig::default();
        let pick = |e: TermEnv| NotifyOptions::resolve(&cfg, &e).desktop;
        assert_eq!(
            pick(env("iTerm.app", "xterm-256color", false)).map(|d| d.osc),
            Some(Osc::Nine)
        );
        assert_eq!(
            pick(env("", "rxvt-unicode-256color", false)).map(|d| d.osc),
            Some(Osc::SevenSevenSeven)
        );
        assert_eq!(
            pick(env("", "foot", false)).map(|d| d.osc),
            Some(Osc::SevenSevenSeven)
        );
        assert_eq!(pick(env("", "xterm-256color", false)), None);
        assert_eq!(pick(env("tmux", "tmux-256color", true)), None);
        let iterm_in_tmux = TermEnv {
            lc_terminal: Some("iTerm2".into()),
            ..env("tmux", "screen", true)
        };
        assert_eq!(
            pick(iterm_in_tmux),
            Some(Desktop {
                osc: Osc::Nine,
                tmux: true
            })
        );
        let forced = NotifyConfig {
            desktop: DesktopMode::Osc777,
            ..NotifyConfig::default()
        };
        let d = NotifyOptions::resolve(&forced, &env("tmux", "screen", true)).desktop;
        assert_eq!(
            d,
            Some(Desktop {
                osc: Osc::SevenSevenSeven,
                tmux: true
            })
        );
        let off = NotifyConfig {
            desktop: DesktopMode::Off,
            ..NotifyConfig::default()
        };
        assert_eq!(
            NotifyOptions::resolve(&off, &env("iTerm.app", "x", false)).desktop,
            None
        );
    }
}
