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
        crate::config::Config::from_toml(text, std::path::Path::new("/etc/v.toml")).unwrap();
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
        let r = crate::config::Config::from_toml(bad, std::path::Path::new("v.toml"));
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
    let config = crate::config::Config::from_toml(text, std::path::Path::new("v.toml")).unwrap();
    let rules = PolicyRules::from_config(&config.approval);
    let decide = |a: &str| {
        let g = gate(a);
        let script = crate::shell::parse(a);
        let call = Call {
            tool: "run_shell",
            gate: &g,
            script: Some(&script),
            estimate: crate::policy::risk::assess(&script).risk,
            paths: &[],
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
        let e = crate::config::Config::from_toml(bad, std::path::Path::new("v.toml")).unwrap_err();
        assert!(e.to_string().contains("preview = true"), "{e}");
    }
    let text = "[[approval.rules]]\ncommand = [\"make\"]\ndecision = \"ask\"\npreview = true\n";
    let config = crate::config::Config::from_toml(text, std::path::Path::new("v.toml")).unwrap();
    let rules = PolicyRules::from_config(&config.approval);
    let wants = |a: &str| {
        let script = crate::shell::parse(a);
        let g = gate(a);
        rules.wants_preview(&Call {
            tool: "run_shell",
            gate: &g,
            script: Some(&script),
            estimate: Risk::Medium,
            paths: &[],
        })
    };
    assert!(wants("make install"));
    assert!(wants("cd src && make"));
    assert!(!wants("ls"));
}
