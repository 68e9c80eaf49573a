use super::*;

#[test]
fn globs_match_whole_texts() {
    assert!(glob_match("git log *", "git log -3"));
    assert!(glob_match("*", ""));
    assert!(glob_match("a?c", "abc"));
    assert!(!glob_match("git log *", "git status"));
    assert!(!glob_match("git", "git log"));
    assert!(glob_match("*--output*", "git log --output=x"));
}

#[test]
fn bad_rules_name_the_file_and_line() {
    let text =
        "[agent]\nname = \"x\"\n\n[[approval.rules]]\ncommand = [\"git\"]\ndecision = \"allow\"\n";
    let config =
        vigil_config::Config::from_toml(text, std::path::Path::new("/etc/v.toml")).unwrap();
    let e = PolicyRules::check(&config.approval)
        .unwrap_err()
        .to_string();
    assert!(e.contains("/etc/v.toml:4"), "{e}");
    assert!(e.contains("bare `git`"), "{e}");
    for bad in [
        "[[approval.rules]]\ndecision = \"allow\"\n",
        "[[approval.rules]]\ncommand = [\"ls\"]\npattern = \"ls\"\ndecision = \"allow\"\n",
        "[[approval.rules]]\ncommand = []\ndecision = \"deny\"\n",
        "[[approval.rules]]\ncommand = [\"ls\"]\ndecision = \"maybe\"\n",
        "[[approval.rules]]\npath = \"/tmp/*\"\ndecision = \"allow\"\n",
        "[[approval.rules]]\ncommand = [\"ls\"]\ndecision = \"allow\"\ncolour = 1\n",
    ] {
        let r = vigil_config::Config::from_toml(bad, std::path::Path::new("v.toml"));
        assert!(r.is_err(), "{bad}");
    }
}

/// A `run_shell` call's gate for `action`.
fn gate(action: &str) -> GateInfo {
    GateInfo {
        action: action.into(),
        model_risk: None,
        mutation: None,
        privesc: None,
        why: None,
        editable_field: Some("command".into()),
    }
}

#[test]
fn deny_matches_anywhere_in_the_text_and_wins() {
    let text = "[[approval.rules]]\ncommand = [\"ls\"]\ndecision = \"allow\"\n\
                [[approval.rules]]\ncommand = [\"curl\"]\ndecision = \"deny\"\n";
    let config = vigil_config::Config::from_toml(text, std::path::Path::new("v.toml")).unwrap();
    let rules = PolicyRules::from_config(&config.approval);
    let decide = |a: &str| {
        let g = gate(a);
        let command = vigil_shell::Command::read(a);
        let call = Call {
            tool: "run_shell",
            gate: &g,
            command: Some(&command),
            estimate: crate::risk::assess(&command.script).risk,
            paths: &[],
            written: &[],
        };
        rules.decide(&call).map(|r| r.decision)
    };
    assert_eq!(decide("ls -l"), Some(RuleDecision::Allow));
    assert_eq!(decide("ls $(/usr/bin/curl x)"), Some(RuleDecision::Deny));
    assert_eq!(decide("ls; 'curl' x"), Some(RuleDecision::Deny));
    assert_eq!(decide("ls 'unclosed; curl x"), Some(RuleDecision::Deny));
    assert_eq!(decide("ls | sh"), None, "allow needs one plain command");
}

#[test]
fn preview_is_only_for_commands_the_operator_decides() {
    for bad in [
        "[[approval.rules]]\ncommand = [\"make\"]\ndecision = \"allow\"\npreview = true\n",
        "[[approval.rules]]\ncommand = [\"make\"]\ndecision = \"deny\"\npreview = true\n",
        "[[approval.rules]]\ntool = \"write_file\"\npath = \"/etc/*\"\ndecision = \"ask\"\npreview = true\n",
    ] {
        let e = vigil_config::Config::from_toml(bad, std::path::Path::new("v.toml")).unwrap_err();
        assert!(e.to_string().contains("preview = true"), "{e}");
    }
    let text = "[[approval.rules]]\ncommand = [\"make\"]\ndecision = \"ask\"\npreview = true\n";
    let config = vigil_config::Config::from_toml(text, std::path::Path::new("v.toml")).unwrap();
    let rules = PolicyRules::from_config(&config.approval);
    let wants = |a: &str| {
        let command = vigil_shell::Command::read(a);
        let g = gate(a);
        rules.wants_preview(&Call {
            tool: "run_shell",
            gate: &g,
            command: Some(&command),
            estimate: Risk::Medium,
            paths: &[],
            written: &[],
        })
    };
    assert!(wants("make install"));
    assert!(wants("cd src && make"));
    assert!(!wants("ls"));
}

#[test]
fn path_globs_never_cross_a_slash_unless_doubled() {
    assert!(path_glob_match("/w/notes/*", "/w/notes/a.txt"));
    assert!(!path_glob_match("/w/notes/*", "/w/notes/sub/a.txt"));
    assert!(!path_glob_match("/w/notes/*", "/w/notesX/a"));
    assert!(path_glob_match("/w/notes/**", "/w/notes/sub/a.txt"));
    assert!(path_glob_match("/w/**/key", "/w/app/secrets/key"));
    assert!(path_glob_match("/w/*.txt", "/w/a.txt"));
    assert!(!path_glob_match("/w/*.txt", "/w/d/a.txt"));
    assert!(!path_glob_match("/w/?", "/w//"));
    assert!(path_glob_match("/w/?", "/w/a"));
    // Many stars do not blow up.
    let long = format!("/{}", "a/".repeat(200));
    assert!(!path_glob_match("/**a**a**a**a**a**a**b", &long));
}

/// A `write_file` call whose canonical path is `path`.
fn file_decision(rules: &PolicyRules, path: &str) -> Option<RuleDecision> {
    let g = GateInfo {
        action: format!("write {path} (1 bytes)"),
        model_risk: None,
        mutation: Some(true),
        privesc: None,
        why: None,
        editable_field: None,
    };
    let paths = [path.to_string()];
    let call = Call {
        tool: "write_file",
        gate: &g,
        command: None,
        estimate: Risk::Medium,
        paths: &paths,
        written: &[],
    };
    rules.decide(&call).map(|r| r.decision)
}

#[test]
fn path_rules_match_canonical_paths_anchored_at_the_agents_directory() {
    let text = "[[approval.rules]]\ntool = \"write_file\"\npath = \"notes/*\"\ndecision = \"allow\"\n\
                [[approval.rules]]\ntool = \"*\"\npath = \"app/secrets/**\"\ndecision = \"deny\"\n";
    let config = vigil_config::Config::from_toml(text, std::path::Path::new("v.toml")).unwrap();
    let rules = PolicyRules::from_config_at(&config.approval, std::path::Path::new("/w"));
    assert_eq!(
        file_decision(&rules, "/w/notes/a.txt"),
        Some(RuleDecision::Allow)
    );
    // What `notes/../../home/.bashrc` resolves to is not under notes/.
    assert_eq!(file_decision(&rules, "/home/.bashrc"), None);
    assert_eq!(file_decision(&rules, "/w/notes/sub/a.txt"), None);
    // What `app/x/../secrets/key` resolves to is denied.
    assert_eq!(
        file_decision(&rules, "/w/app/secrets/key"),
        Some(RuleDecision::Deny)
    );
    // The summary's words are never matched: a call declaring no path.
    let g = GateInfo {
        action: "srv.write /w/notes/a.txt".into(),
        model_risk: None,
        mutation: None,
        privesc: None,
        why: None,
        editable_field: None,
    };
    let call = Call {
        tool: "write_file",
        gate: &g,
        command: None,
        estimate: Risk::Medium,
        paths: &[],
        written: &[],
    };
    assert_eq!(rules.decide(&call).map(|r| r.decision), None);
}

#[test]
fn deny_and_ask_also_match_the_written_path_allow_only_the_real_one() {
    // `app/web/vault` is a symlink to `app/store`: the call's real path is
    // outside `app/*/vault/**`, the path the model wrote is inside.
    let text = "[[approval.rules]]\ntool = \"*\"\npath = \"app/*/vault/**\"\ndecision = \"deny\"\n\
                [[approval.rules]]\ntool = \"write_file\"\npath = \"notes/*\"\ndecision = \"allow\"\n";
    let config = vigil_config::Config::from_toml(text, std::path::Path::new("v.toml")).unwrap();
    let rules = PolicyRules::from_config_at(&config.approval, std::path::Path::new("/w"));
    let g = GateInfo {
        action: "write".into(),
        model_risk: None,
        mutation: Some(true),
        privesc: None,
        why: None,
        editable_field: None,
    };
    let decide = |real: &str, written: &str| {
        let (paths, written) = ([real.to_string()], [written.to_string()]);
        let call = Call {
            tool: "write_file",
            gate: &g,
            command: None,
            estimate: Risk::Medium,
            paths: &paths,
            written: &written,
        };
        rules.decide(&call).map(|r| r.decision)
    };
    assert_eq!(
        decide("/w/app/store/key", "/w/app/web/vault/key"),
        Some(RuleDecision::Deny)
    );
    // An allow never takes the written path: a link under notes/ to
    // elsewhere is not allowed.
    assert_eq!(decide("/etc/x", "/w/notes/link"), None);
}

#[test]
fn path_rules_on_tools_without_paths_or_with_dotdot_are_refused_at_load() {
    for (bad, says) in [
        (
            "[[approval.rules]]\ntool = \"fs__write\"\npath = \"/srv/*\"\ndecision = \"allow\"\n",
            "declares no path",
        ),
        (
            "[[approval.rules]]\ntool = \"write_file\"\npath = \"notes/../x\"\ndecision = \"deny\"\n",
            "contains `..`",
        ),
    ] {
        let e = vigil_config::Config::from_toml(bad, std::path::Path::new("v.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says) && e.contains("v.toml"), "{e}");
    }
}

/// Each wrapper form a `deny` rule on `rm` and on `git push` must see.
const EVASIONS: &[(&str, &str)] = &[
    ("rm -f x", "rm"),
    ("env rm -f x", "rm"),
    ("env -i A=1 rm -f x", "rm"),
    ("timeout 5 rm -f x", "rm"),
    ("nice -n 5 rm -f x", "rm"),
    ("nohup rm -f x", "rm"),
    ("command rm -f x", "rm"),
    ("exec rm -f x", "rm"),
    ("stdbuf -oL rm -f x", "rm"),
    ("setsid rm -f x", "rm"),
    ("ionice -c 3 rm -f x", "rm"),
    ("chrt -b 0 rm -f x", "rm"),
    ("taskset 1 rm -f x", "rm"),
    ("time rm -f x", "rm"),
    ("sudo -u x rm -f x", "rm"),
    ("doas -u x rm -f x", "rm"),
    ("busybox rm -f x", "rm"),
    ("toybox rm -f x", "rm"),
    ("xargs -0 rm -f", "rm"),
    ("find . -exec rm {} \\;", "rm"),
    ("find . -okdir rm {} +", "rm"),
    ("sh -c 'rm -f x'", "rm"),
    ("bash -c 'rm -f x'", "rm"),
    ("su -c 'rm -f x'", "rm"),
    ("eval 'rm -f x'", "rm"),
    ("sudo env timeout 5 sh -c 'xargs rm'", "rm"),
    ("git push origin", "git push"),
    ("git -C . push", "git push"),
    ("git -c a=b --no-pager push", "git push"),
    ("sudo git --git-dir=.git push", "git push"),
];

fn rules_of(text: &str) -> PolicyRules {
    let config = vigil_config::Config::from_toml(text, std::path::Path::new("v.toml")).unwrap();
    PolicyRules::from_config(&config.approval)
}

fn call_decision(rules: &PolicyRules, tool: &str, a: &str) -> (Option<RuleDecision>, bool) {
    let g = gate(a);
    let command = vigil_shell::Command::read(a);
    let call = Call {
        tool,
        gate: &g,
        command: Some(&command),
        estimate: crate::risk::assess(&command.script).risk,
        paths: &[],
        written: &[],
    };
    (
        rules.decide(&call).map(|r| r.decision),
        rules.cannot_tell(&call).is_some(),
    )
}

#[test]
fn deny_rules_see_through_every_wrapper() {
    let rules = rules_of(
        "[[approval.rules]]\ncommand = [\"rm\"]\ndecision = \"deny\"\n\
         [[approval.rules]]\ncommand = [\"git\", \"push\"]\ndecision = \"deny\"\n\
         [[approval.rules]]\ncommand = [\"ls\"]\ndecision = \"allow\"\n",
    );
    for (text, _) in EVASIONS {
        assert_eq!(
            call_decision(&rules, "run_shell", text).0,
            Some(RuleDecision::Deny),
            "{text}"
        );
        // The text typed into a pane by send-keys too.
        assert_eq!(
            call_decision(&rules, "send-keys", text).0,
            Some(RuleDecision::Deny),
            "send-keys {text}"
        );
    }
    // Controls: near misses are not denied, nor unknown.
    for text in ["ls -l", "echo rm", "git log push", "grep -r rm src"] {
        assert_ne!(
            call_decision(&rules, "run_shell", text),
            (Some(RuleDecision::Deny), false),
            "{text}"
        );
        assert!(!call_decision(&rules, "run_shell", text).1, "{text}");
    }
    // An allow rule never reaches a pane's keys.
    assert_eq!(call_decision(&rules, "send-keys", "ls -l").0, None);
}

#[test]
fn a_command_that_cannot_be_told_is_asked_where_a_deny_rule_could_apply() {
    let deny = rules_of("[[approval.rules]]\ncommand = [\"rm\"]\ndecision = \"deny\"\n");
    for text in [
        "$CMD -f x",
        "eval \"$X\"",
        "sh -c \"$X\"",
        "env $A rm",
        "echo rm | sh",
    ] {
        assert_eq!(
            call_decision(&deny, "run_shell", text),
            (None, true),
            "{text}"
        );
    }
    assert_eq!(call_decision(&deny, "run_shell", "ls -l"), (None, false));
    // Nothing to guard: nothing to ask for.
    let allow = rules_of("[[approval.rules]]\ncommand = [\"ls\"]\ndecision = \"allow\"\n");
    assert_eq!(
        call_decision(&allow, "run_shell", "$CMD -f x"),
        (None, false)
    );
    // A rule on another tool does not guard commands.
    let other = rules_of(
        "[[approval.rules]]\ntool = \"write_file\"\npath = \"/etc/*\"\ndecision = \"deny\"\n",
    );
    assert_eq!(call_decision(&other, "run_shell", "$CMD"), (None, false));
}
