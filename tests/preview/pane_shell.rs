//! End to end through the real binary in tmux: under `approval =
//! "by_effect"` the trial has the managed pane's shell. A function, an
//! alias and an unexported variable the pane's shell holds give the same
//! output in the trial as they would in the pane, unasked; `cd sub` runs
//! unasked and moves the pane; defining them, and a state change that
//! would run code later (`PROMPT_COMMAND`), is asked. For bash, zsh and
//! dash panes.

use super::console_support::Console;

fn config(shell: &str) -> String {
    format!(
        "[agent]\napproval = \"by_effect\"\n[console]\nbell = false\n[tmux]\nshell = \"{shell}\"\n"
    )
}

use super::by_effect::scenario;

/// The pane gets a function (not in dash: it cannot list them), an alias
/// and an unexported variable on the operator's word; then reading them,
/// `cd sub` and a read there run unasked; `PROMPT_COMMAND` is asked.
fn the_trial_has_the_pane_shell(shell: &str, tag: &str) {
    let with_function = shell != "dash";
    let setup = if with_function {
        "greet() { echo fn-$1; }; alias hi='echo alias-ok'; LOCALV=local-value"
    } else {
        "alias hi='echo alias-ok'; LOCALV=local-value"
    };
    let use_cmd = if with_function {
        "echo v=$LOCALV; greet x; hi"
    } else {
        "echo v=$LOCALV; hi"
    };
    let scenario = scenario(&[
        ("setup-cmd", setup),
        ("use-cmd", use_cmd),
        ("cd-cmd", "cd sub"),
        ("read-here", "cat here.txt; echo again=$LOCALV"),
        ("hook-cmd", "PROMPT_COMMAND='touch hooked'"),
        ("op-cmd", "eval 'OPVAR=op-value'"),
        ("export-cmd", "export NODE_OPTIONS=--require=./x.js"),
        ("lang-cmd", "LANG=C"),
        ("opread-cmd", "echo op=$OPVAR"),
    ]);
    let c = Console::start_scenario(tag, &scenario, &config(shell), "", "");
    let work = c.work();
    std::fs::create_dir(work.join("sub")).unwrap();
    std::fs::write(work.join("sub/here.txt"), "inside-sub-content\n").unwrap();
    c.wait("policy: by effect");

    c.send("setup-cmd");
    // Defining a function or an alias in the pane is the operator's call:
    // later commands there (theirs, and those they approve) run with it.
    let card = c.wait_for("the setup card", |s| s.contains("approvals (1)"));
    if with_function {
        assert!(card.contains("`shell-state`"), "{card}");
    } else {
        assert!(card.contains("it changes an alias"), "{card}");
    }
    c.answer("y");
    c.wait_for("the setup to run", |s| {
        s.matches("TOOL SAID").count() >= 1 && !s.contains("approvals (1)")
    });

    // Nobody answers: these reach the model only if they were not asked.
    c.send("use-cmd");
    c.wait_for("the pane's state read in the trial", |s| {
        s.contains("v=local-value")
            && s.contains("alias-ok")
            && (!with_function || s.contains("fn-x"))
    });
    c.send("cd-cmd");
    c.wait_for("the cd to run unasked, in the pane", |s| {
        s.contains("Running cd-cmd") && s.contains("$ cd sub") && s.contains("no pending approvals")
    });
    c.send("read-here");
    c.wait_for("the read in sub reaching the model", |s| {
        s.contains("inside-sub-content") && s.contains("again=local-value")
    });
    assert!(!c.screen().contains("approvals (1)"));

    c.send("hook-cmd");
    // The whole card is waited for, its reason included: a screen caught
    // mid-draw can show the new card's first line above the old body.
    c.wait_for("the PROMPT_COMMAND card naming `shell-hook`", |s| {
        s.contains("approvals (1)") && s.contains("$ PROMPT_COMMAND") && s.contains("`shell-hook`")
    });
    c.answer("n");
    c.wait_for("the denial", |s| {
        s.contains("denied by operator") && !s.contains("approvals (1)")
    });
    assert!(!work.join("hooked").exists() && !work.join("sub/hooked").exists());

    // What later commands in the pane (the operator's, and those they
    // approve) would run with: an export, a variable the pane exports.
    for (n, (trigger, command, why)) in [
        ("export-cmd", "export NODE_OPTIONS", "it changes an alias"),
        ("lang-cmd", "LANG=C", "it changes `LANG`"),
    ]
    .into_iter()
    .enumerate()
    {
        c.send(trigger);
        c.wait_for(&format!("the card of {trigger} saying {why:?}"), |s| {
            s.contains("approvals (1)") && s.contains(&format!("$ {command}")) && s.contains(why)
        });
        c.answer("n");
        c.wait_for("the denial", |s| {
            s.matches("denied by operator").count() >= n + 2 && !s.contains("approvals (1)")
        });
    }

    // A variable no command of vigil's set (here through `eval`, which
    // vigil does not read into; an rc file's or one the operator typed
    // alike) does not exist for a trial: reading it is asked.
    c.send("op-cmd");
    let card = c.wait_for("the eval card", |s| {
        s.contains("approvals (1)") && s.contains("$ eval 'OPVAR")
    });
    assert!(card.contains("`shell-hook`"), "{card}");
    c.answer("y");
    c.wait_for("the eval to run", |s| {
        s.contains("Running op-cmd") && !s.contains("approvals (1)")
    });
    c.send("opread-cmd");
    let card = c.wait_for("the card of a read of OPVAR", |s| {
        s.contains("approvals (1)") && s.contains("$ echo op=$OPVAR")
    });
    assert!(card.contains("no command"), "{card}");
    c.answer("n");
    c.wait_for("the fourth denial", |s| {
        s.matches("denied by operator").count() >= 4 && !s.contains("approvals (1)")
    });
    assert!(!c.screen().contains("op=op-value"));
}

#[test]
fn a_bash_pane() {
    the_trial_has_the_pane_shell("bash", "paneshell-bash");
}

#[test]
fn a_zsh_pane() {
    the_trial_has_the_pane_shell("zsh", "paneshell-zsh");
}

#[test]
fn a_dash_pane() {
    the_trial_has_the_pane_shell("dash", "paneshell-dash");
}
