//! `vigil resume`: start a recorded session the way it was started — the
//! model (or the demo's scripted model) and the target written in its
//! `meta.json` — unless the command line or the environment names another
//! (`--model`, `--base-url`, `--demo`, `--ssh`, `--container`,
//! `--tmux`/`--no-tmux`), and one line that says which were used.
//!
//! It only reads the session's meta data and changes a [`Config`]; it
//! starts nothing.

use crate::agent::assemble::{DEMO_MODEL, StartOptions};
use crate::agent::record::session::{Launch, SessionError, SessionMeta, SessionStore};
use crate::cli::args::Cli;
use crate::config::{Config, TmuxMode};

/// What the command line (or the environment, through clap) set itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Given {
    pub model: bool,
    pub base_url: bool,
    pub demo: bool,
    /// `--ssh` or `--container`.
    pub target: bool,
    /// `--tmux` or `--no-tmux`.
    pub tmux: bool,
}

impl Given {
    pub fn from_cli(cli: &Cli) -> Given {
        Given {
            model: cli.model.is_some(),
            base_url: cli.base_url.is_some(),
            demo: cli.demo,
            target: cli.ssh.is_some() || cli.container.is_some(),
            tmux: cli.tmux.is_some() || cli.no_tmux,
        }
    }
}

/// How a resumed session starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resumed {
    /// The session's id.
    pub id: String,
    /// Use the built-in scripted demo model.
    pub demo: bool,
    /// Which model and target, and where each came from (for the operator).
    pub notice: String,
}

/// Read session `id`'s meta data and make `config` start it as recorded
/// where `given` did not say otherwise.
pub fn prepare(config: &mut Config, given: Given, id: &str) -> Result<Resumed, SessionError> {
    let meta = SessionStore::new(&config.data_dir()).meta(id)?;
    Ok(apply(config, given, &meta))
}

impl Resumed {
    /// What the agent starts with: the session to resume and the line
    /// that says which model and target it uses.
    pub fn start_options(&self) -> StartOptions {
        StartOptions {
            resume: Some(self.id.clone()),
            notices: vec![self.notice.clone()],
            ..StartOptions::default()
        }
    }
}

/// [`prepare`] on meta data already read.
pub fn apply(config: &mut Config, given: Given, meta: &SessionMeta) -> Resumed {
    let recorded = meta.launch.clone().unwrap_or_else(|| legacy(meta));
    let from = |cli: bool| if cli { "command line" } else { "recorded" };
    let model_given = given.model || given.base_url || given.demo;
    let demo = given.demo || (!model_given && recorded.demo);
    if !demo {
        if let Some(m) = recorded.model.filter(|_| !given.model) {
            config.model.model = m;
        }
        if let Some(u) = recorded.base_url.filter(|_| !given.base_url) {
            config.model.base_url = u;
        }
    }
    if !given.target {
        config.ssh.target = recorded.ssh;
        config.container.name = recorded.container;
    }
    if !given.tmux {
        match recorded.tmux.as_deref() {
            Some("on") => config.tmux.mode = TmuxMode::On,
            Some("off") => config.tmux.mode = TmuxMode::Off,
            Some("auto") => config.tmux.mode = TmuxMode::Auto,
            _ => {}
        }
    }
    let model = if demo {
        DEMO_MODEL.to_string()
    } else {
        config.model.model.clone()
    };
    let target = match (&config.ssh.target, &config.container.name) {
        (Some(t), _) => format!("ssh {t}"),
        (None, Some(c)) => format!("container {c}"),
        (None, None) => "this machine".to_string(),
    };
    Resumed {
        id: meta.id.clone(),
        demo,
        notice: format!(
            "resumed with model {model} ({}) on {target} ({})",
            from(model_given),
            from(given.target)
        ),
    }
}

/// What a session recorded before `launch` existed says: the model's label
/// and the target's (`local`, `ssh user@host`, `podman:name`, `tmux NAME`,
/// `tmux NAME (ssh user@host)`).
fn legacy(meta: &SessionMeta) -> Launch {
    let demo = meta.model == DEMO_MODEL;
    let mut launch = Launch {
        model: (!demo).then(|| meta.model.clone()),
        demo,
        ..Launch::default()
    };
    let mut target = meta.target.as_str();
    if let Some(rest) = target.strip_prefix("tmux ") {
        launch.tmux = Some("on".into());
        target = match (rest.find('('), rest.strip_suffix(')')) {
            (Some(i), Some(inner)) => &inner[i + 1..],
            _ => "local",
        };
    }
    if let Some(host) = target.strip_prefix("ssh ") {
        launch.ssh = Some(host.to_string());
    } else if let Some((_, name)) = target
        .split_once(':')
        .filter(|(engine, _)| matches!(*engine, "podman" | "docker"))
    {
        launch.container = Some(name.to_string());
    }
    launch
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(model: &str, target: &str, launch: Option<Launch>) -> SessionMeta {
        SessionMeta {
            id: "1-1".into(),
            started_ms: 1,
            model: model.into(),
            target: target.into(),
            launch,
        }
    }

    #[test]
    fn the_recorded_model_and_target_are_used_unless_given() {
        let recorded = Launch {
            model: Some("qwen3".into()),
            base_url: Some("http://10.0.0.5:8080/v1".into()),
            demo: false,
            ssh: Some("ops@db1".into()),
            container: None,
            tmux: Some("off".into()),
        };
        let m = meta("qwen3", "ssh ops@db1", Some(recorded));
        let mut c = Config::default();
        c.container.name = Some("from-the-file".into());
        let r = apply(&mut c, Given::default(), &m);
        assert!(!r.demo);
        assert_eq!(c.model.model, "qwen3");
        assert_eq!(c.model.base_url, "http://10.0.0.5:8080/v1");
        assert_eq!(c.ssh.target.as_deref(), Some("ops@db1"));
        assert_eq!(c.container.name, None);
        assert_eq!(c.tmux.mode, TmuxMode::Off);
        assert_eq!(
            r.notice,
            "resumed with model qwen3 (recorded) on ssh ops@db1 (recorded)"
        );

        let mut c = Config::default();
        c.model.model = "llama".into();
        c.container.name = Some("box".into());
        let given = Given {
            model: true,
            target: true,
            tmux: true,
            ..Given::default()
        };
        let r = apply(&mut c, given, &m);
        assert_eq!(c.model.model, "llama");
        assert_eq!(c.model.base_url, "http://10.0.0.5:8080/v1");
        assert_eq!(c.container.name.as_deref(), Some("box"));
        assert_eq!(c.tmux.mode, TmuxMode::Auto);
        assert_eq!(
            r.notice,
            "resumed with model llama (command line) on container box (command line)"
        );
    }

    #[test]
    fn a_demo_session_resumes_as_the_demo_and_old_sessions_are_read() {
        let mut c = Config::default();
        let r = apply(
            &mut c,
            Given::default(),
            &meta(DEMO_MODEL, "tmux vigil-x", None),
        );
        assert!(r.demo);
        assert_eq!(c.tmux.mode, TmuxMode::On);
        assert!(
            r.notice
                .contains("vigil-demo (scripted) (recorded) on this machine")
        );
        let given = Given {
            model: true,
            ..Given::default()
        };
        assert!(!apply(&mut c, given, &meta(DEMO_MODEL, "local", None)).demo);

        let old = meta("gpt-x", "tmux vigil-a (ssh me@h:2222)", None);
        let mut c = Config::default();
        apply(&mut c, Given::default(), &old);
        assert_eq!(c.model.model, "gpt-x");
        assert_eq!(c.ssh.target.as_deref(), Some("me@h:2222"));
        let mut c = Config::default();
        apply(&mut c, Given::default(), &meta("m", "podman:web", None));
        assert_eq!(c.container.name.as_deref(), Some("web"));
    }
}
