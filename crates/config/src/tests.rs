//! Config parsing and validation tests.

use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml(text, Path::new("/etc/vigil.toml"))
}

#[test]
fn empty_file_gives_defaults() {
    assert_eq!(parse("").unwrap(), Config::default());
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let err = parse("[model]\nmodel = \"x\"\nbase_ulr = \"http://a\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("/etc/vigil.toml"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("base_ulr"), "{err}");
}

#[test]
fn wrong_type_is_reported_with_its_line() {
    let err = parse("[tools]\nshell_confirm = \"yes\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 2"), "{err}");
    assert!(err.contains("bool") || err.contains("boolean"), "{err}");
}

#[test]
fn invalid_values_name_the_key() {
    let err = parse("[model]\nbase_url = \"ftp://x\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("model.base_url"), "{err}");
    let err = parse("[agent]\nmax_rounds = 0\n").unwrap_err().to_string();
    assert!(err.contains("agent.max_rounds"), "{err}");
}

#[test]
fn overrides_win_over_the_file() {
    let mut c = parse("[model]\nmodel = \"a\"\n").unwrap();
    c.apply(Overrides {
        model: Some("b".into()),
        ..Default::default()
    });
    assert_eq!(c.model.model, "b");
}

#[test]
fn the_example_config_parses_to_the_defaults() {
    let text = include_str!("../../../config.example.toml");
    let c = parse(text).unwrap();
    assert_eq!(c.tools, ToolsConfig::default());
    assert_eq!(c.console, ConsoleConfig::default());
    assert_eq!(c.notify, crate::NotifyConfig::default());
}

#[test]
fn remote_targets_parse_and_conflict() {
    let c = parse(
        "[ssh]\ntarget = \"root@h:2222\"\nidentity_file = \"/k\"\noptions = [\"StrictHostKeyChecking=yes\"]\n",
    )
    .unwrap();
    assert_eq!(c.ssh.target.as_deref(), Some("root@h:2222"));
    assert_eq!(c.ssh.connect_timeout_secs, 10);
    let c = parse("[container]\nname = \"box\"\nengine = \"podman\"\n").unwrap();
    assert_eq!(c.container.engine, EngineSetting::Podman);
    let err = parse("[ssh]\ntarget = \"h\"\n[container]\nname = \"b\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("not both"), "{err}");
    let err = parse("[container]\nengine = \"lxc\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn missing_explicit_file_is_a_clear_error() {
    let err = Config::load(Some(Path::new("/nonexistent/vigil.toml")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/nonexistent/vigil.toml"), "{err}");
}

#[test]
fn secrets_and_unasked_hosts_are_checked_and_used() {
    let cfg = parse(
        "[tools]\nfetch_unasked_hosts = [\"docs.rs\", \"*.rust-lang.org\"]\n\
         [secrets]\nadd = [\"/srv/vault\"]\nremove = [\".env\", \".env*\"]\n",
    )
    .unwrap();
    let places = cfg.secret_places();
    assert_eq!(
        places.matches(Path::new("/srv/vault/k")),
        Some("/srv/vault")
    );
    assert_eq!(places.matches(Path::new("/app/.env")), None);
    assert!(
        places
            .matches(&cfg.data_dir().join("sessions/1/events.jsonl"))
            .is_some()
    );
    for bad in ["https://docs.rs", "docs.rs:443", "docs.rs/x", "", "*"] {
        let text = format!("[tools]\nfetch_unasked_hosts = [\"{bad}\"]\n");
        let e = parse(&text).unwrap_err().to_string();
        assert!(
            e.contains("fetch_unasked_hosts") && e.contains("not a host"),
            "{e}"
        );
    }
    let e = parse("[secrets]\nremove = [\"/nope\"]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("secrets") && e.contains("not a default"), "{e}");
}

#[test]
fn the_config_file_read_is_a_secret_place_wherever_it_lies() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("my-vigil.toml");
    std::fs::write(&file, "[model]\napi_key = \"k\"\n").unwrap();
    let cfg = Config::load(Some(&file)).unwrap();
    let real = std::fs::canonicalize(&file).unwrap();
    assert_eq!(cfg.source.as_deref(), Some(real.as_path()));
    assert!(cfg.secret_places().matches(&real).is_some());
    assert_eq!(
        cfg.secret_places()
            .matches(&real.with_file_name("other.toml")),
        None
    );
}
