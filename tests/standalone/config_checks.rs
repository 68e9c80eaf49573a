//! The checks of the configuration that belong to the layers above it (key
//! names are the console's, the tool environment is exec's), run through
//! `vigil::startup::check_config` as the binary does at start-up.

use std::path::Path;

use vigil::config::{Config, ConfigError};

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml(text, Path::new("/etc/vigil.toml"))
}

#[test]
fn bad_key_names_are_clear_errors() {
    // Key names are the console's to check, at start-up.
    let parsed = parse("[console.keys]\nzoom = \"ctrl-banana\"\n").unwrap();
    let err = vigil::startup::check_config(&parsed)
        .unwrap_err()
        .to_string();
    assert!(err.contains("console.keys.zoom"), "{err}");
    assert!(err.contains("ctrl-banana"), "{err}");
    let c = parse("[console]\ntheme = \"light\"\n[console.keys]\nzoom = \"F2\"\n").unwrap();
    assert_eq!(c.console.keys.get("zoom").map(String::as_str), Some("F2"));
}

#[test]
fn tool_environment_settings_are_checked_and_used() {
    // The tool environment is exec's to check, at start-up.
    let checked =
        |text: &str| parse(text).and_then(|c| vigil::startup::check_config(&c).map(|()| c));
    let err = checked("[tools]\nenv_exclude = [\"A B\"]\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("tools.env_exclude") && err.contains("A B"),
        "{err}"
    );
    let err = checked("[tools]\nenv_passthrough = [\"*\"]\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("tools.env_passthrough"), "{err}");
    let c = parse(
        "[model]\napi_key_env = \"LLM_CRED\"\n[tools]\nenv_exclude = [\"AWS_*\"]\n\
         env_passthrough = [\"CI_JOB_TOKEN\"]\nshell_always_sandboxed = true\n",
    )
    .unwrap();
    assert!(c.tools.shell_always_sandboxed);
    let p = vigil::exec::env::EnvPolicy::from_config(&c).unwrap();
    let keeps = |n: &str| p.keeps(std::ffi::OsStr::new(n));
    assert!(!keeps("LLM_CRED") && !keeps("AWS_REGION") && !keeps("VIGIL_API_KEY"));
    assert!(keeps("CI_JOB_TOKEN") && keeps("PATH"));
}
