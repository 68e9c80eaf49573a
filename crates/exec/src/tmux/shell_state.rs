//! Reading a managed pane's shell state for a trial (`approval =
//! "by_effect"`): vigil runs a capture in the pane, the way it runs any
//! command there (the pane's run lock held, the wrapper's markers), which
//! dumps the shell's variables, functions, aliases, options and umask into
//! files of vigil's private session directory; vigil reads and removes
//! them and builds the replay ([`crate::shell_replay`]).
//!
//! The capture only prints: it changes nothing in the shell but `$?` (as
//! every vigil command does) and a loop variable it unsets. It calls the
//! shell's built-ins through `builtin`/`command`, so a function an earlier
//! command defined under a built-in's name is not run (names such a
//! function could take unasked are asked: `policy::pane_state`). It never
//! runs on another machine.

use std::time::Duration;

use super::manager::TmuxManager;
use crate::shell_replay::{Dumps, ShellKind};
use crate::{ExecError, RunRequest};

/// The parts a capture writes, by file extension.
const PARTS: &[&str] = &["v", "x", "r", "f", "a", "o", "u"];

/// How long a capture may take.
const CAPTURE_WAIT: Duration = Duration::from_secs(5);

/// The capture script for a `kind` shell, writing `{base}.{part}`; of the
/// functions and aliases, only those named in `defined` (the ones vigil's
/// own commands defined: [`crate::shell_replay::defined_names`]).
pub fn capture_script(kind: ShellKind, base: &str, defined: &[String]) -> String {
    let f = |p: &str| crate::transport::sh_quote(&format!("{base}.{p}"));
    let names: String = defined
        .iter()
        .map(|n| format!(" {}", crate::transport::sh_quote(n)))
        .collect();
    // With no name, nothing: `declare -f`, `functions`, `alias` alone
    // would print them all.
    let (fns, aliases) = match (defined.is_empty(), kind) {
        (true, _) => (":".to_string(), ":".to_string()),
        (false, ShellKind::Bash) => (
            format!("builtin declare -f --{names}"),
            format!("builtin alias --{names}"),
        ),
        (false, ShellKind::Zsh) => (
            format!("builtin functions --{names}"),
            format!("builtin alias -L --{names}"),
        ),
        (false, ShellKind::Dash) => (":".to_string(), format!("command alias{names}")),
    };
    let body = match kind {
        ShellKind::Bash => format!(
            "{{ builtin declare -p; }} >{v} 2>/dev/null\n\
             {{ {fns}; }} >{f} 2>/dev/null\n\
             {{ {aliases}; }} >{a} 2>/dev/null\n\
             {{ builtin set +o; builtin shopt -p; }} >{o} 2>/dev/null\n\
             {{ builtin umask; }} >{u} 2>/dev/null\n",
            v = f("v"),
            f = f("f"),
            a = f("a"),
            o = f("o"),
            u = f("u"),
        ),
        ShellKind::Zsh => format!(
            "{{ for __vigil_p in ${{(k)parameters}}; do case ${{parameters[$__vigil_p]}} in \
             *special*|*readonly*) ;; *) builtin typeset -p -- $__vigil_p ;; esac; done; \
             builtin typeset -p PATH; }} >{v} 2>/dev/null; builtin unset __vigil_p\n\
             {{ for __vigil_p in ${{(k)parameters}}; do case ${{parameters[$__vigil_p]}} in \
             *export*) builtin print -r -- \"export $__vigil_p\" ;; esac; done; }} >{x} \
             2>/dev/null; builtin unset __vigil_p\n\
             {{ {fns}; }} >{f} 2>/dev/null\n\
             {{ {aliases}; }} >{a} 2>/dev/null\n\
             {{ builtin setopt; }} >{o} 2>/dev/null\n\
             {{ builtin umask; }} >{u} 2>/dev/null\n",
            v = f("v"),
            x = f("x"),
            f = f("f"),
            a = f("a"),
            o = f("o"),
            u = f("u"),
        ),
        ShellKind::Dash => format!(
            "{{ command set; }} >{v} 2>/dev/null\n\
             {{ command export -p; }} >{x} 2>/dev/null\n\
             {{ command readonly -p; }} >{r} 2>/dev/null\n\
             {{ {aliases}; }} >{a} 2>/dev/null\n\
             {{ command set +o; }} >{o} 2>/dev/null\n\
             {{ command umask; }} >{u} 2>/dev/null\n",
            v = f("v"),
            x = f("x"),
            r = f("r"),
            a = f("a"),
            o = f("o"),
            u = f("u"),
        ),
    };
    format!("# vigil: reading this shell's state for a trial\n{body}")
}

/// Run the capture in the pane (`session`/`pane`) and read what it wrote.
/// Only on this machine (the files are read here).
pub async fn capture(
    mgr: &TmuxManager,
    kind: ShellKind,
    session: Option<&str>,
    pane: Option<&str>,
    defined: &[String],
) -> Result<Dumps, String> {
    if !mgr.transport().is_local() {
        return Err("the pane is on another machine".into());
    }
    let base = format!("{}/state-{}", mgr.dir(), mgr.next_id());
    let req = RunRequest {
        command: capture_script(kind, &base, defined),
        timeout: Some(CAPTURE_WAIT),
        session: session.map(str::to_string),
        pane: pane.map(str::to_string),
        ..RunRequest::default()
    };
    let ran = super::run::run_in_pane(mgr, req, None).await;
    let read = |p: &str| {
        let path = format!("{base}.{p}");
        let text = std::fs::read(&path).map(|b| String::from_utf8_lossy(&b).into_owned());
        let _ = std::fs::remove_file(&path);
        text.unwrap_or_default()
    };
    let parts: Vec<String> = PARTS.iter().map(|p| read(p)).collect();
    match ran {
        Ok(out) if out.exit_code.is_some() => {}
        Ok(_) => return Err("the capture did not finish".into()),
        Err(e) => return Err(describe(&e)),
    }
    let [vars, exports, readonly, functions, aliases, options, umask] =
        <[String; 7]>::try_from(parts).map_err(|_| "capture parts".to_string())?;
    if vars.trim().is_empty() {
        return Err("the pane's shell printed no variables".into());
    }
    Ok(Dumps {
        vars,
        exports,
        readonly,
        functions,
        aliases,
        options,
        umask,
    })
}

fn describe(e: &ExecError) -> String {
    let text = e.to_string();
    text.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell_replay::{replay, script as replayed};

    /// The capture and the replay, run by each real shell: a variable, an
    /// unexported one, a function and an alias read the same after the
    /// replay as in the shell that was captured.
    #[test]
    fn each_shell_reads_the_same_after_a_replay() {
        for (kind, exe) in [
            (ShellKind::Bash, "bash"),
            (ShellKind::Zsh, "zsh"),
            (ShellKind::Dash, "dash"),
        ] {
            if std::process::Command::new(exe)
                .arg("-c")
                .arg(":")
                .status()
                .is_err()
            {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let base = dir.path().join("s").display().to_string();
            let setup = "export EXP='a b'; LOC=\"it's\nlines\"; alias hi='echo alias-ok'; \
                         umask 027; SECRET_TOKEN=zz\n";
            let func = if kind == ShellKind::Dash {
                ""
            } else {
                "fn1() { echo \"fn-$LOC\"; }\n"
            };
            let script = format!(
                "{setup}{func}{}",
                capture_script(kind, &base, &["fn1".into(), "hi".into()])
            );
            let st = std::process::Command::new(exe)
                .arg("-c")
                .arg(&script)
                .status()
                .unwrap();
            assert!(st.success(), "{exe}");
            let read = |p: &str| std::fs::read_to_string(format!("{base}.{p}")).unwrap_or_default();
            let dumps = Dumps {
                vars: read("v"),
                exports: read("x"),
                readonly: read("r"),
                functions: read("f"),
                aliases: read("a"),
                options: read("o"),
                umask: read("u"),
            };
            let r = replay(kind, &dumps, &|_| true).unwrap_or_else(|| panic!("{exe}: {dumps:?}"));
            assert_eq!(r.withheld, vec!["SECRET_TOKEN".to_string()], "{exe}");
            // Exported, special ones too (zsh's PATH and LANG are special).
            for name in ["EXP", "PATH"] {
                assert!(
                    r.exported.iter().any(|n| n == name),
                    "{exe}: {:?}",
                    r.exported
                );
            }
            let call = if kind == ShellKind::Dash { "" } else { "fn1\n" };
            let command = format!(
                "printf '%s|%s|' \"$EXP\" \"$LOC\"; sh -c 'printf %s \"$EXP\"'; echo; umask; \
                 hi\n{call}"
            );
            let probe = replayed(kind, &r, &command);
            let out = std::process::Command::new(exe)
                .arg("-c")
                .arg(&probe)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.starts_with("a b|it's\nlines|a b\n"), "{exe}: {text}");
            assert!(text.contains("027\nalias-ok\n"), "{exe}: {text}");
            if kind != ShellKind::Dash {
                assert!(text.contains("fn-it's\nlines"), "{exe}: {text}");
            }
        }
    }
}
