//! The one list of secret places: files and folders whose contents must not
//! reach the model, a log or another process without an operator's fresh
//! decision (keys, tokens, credentials, vigil's own config with its API key).
//!
//! Every consumer reads this one list: the file tools (a read of a secret
//! place asks), the risk estimate (a command that names one is not low), and
//! the kernel sandbox and the preview view (each place is masked: it reads as
//! absent or denied). `[secrets] add` extends the defaults, `[secrets] remove`
//! takes entries out (both ways configurable).
//!
//! An entry is one of:
//! - an absolute path (`/etc/shadow`): that path and everything beneath it;
//! - a home path (`~/.ssh`): the same beneath the home directory;
//! - a name without `/` (`.ssh`, `.env*`): any file or folder of that name at
//!   any depth; `*` matches any run of characters within one name, never `/`.
//!
//! This module only matches paths it is given (already resolved: symlinks and
//! `..` followed by the caller) and lists concrete places to mask; it never
//! reads a file's contents.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

/// The default secret places (vigil's own config and data directories are
/// added at run time, see [`SecretPlaces::new`]).
pub const DEFAULT_SECRET_PLACES: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/letsencrypt",
    "/etc/security/opasswd",
    "/var/backups/shadow.bak",
    "/var/backups/gshadow.bak",
    "/run/secrets",
    "/var/run/secrets",
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.netrc",
    "~/.git-credentials",
    "~/.docker/config.json",
    "~/.kube",
    "~/.config/gcloud",
    "~/.config/gh",
    "~/.pgpass",
    "~/.password-store",
    "~/.local/share/keyrings",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.vault-token",
    "~/.azure",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.claude/.credentials.json",
    "~/.config/git/credentials",
    "~/.config/op",
    "~/.s3cfg",
    "~/.boto",
    "~/.my.cnf",
    "~/.dockercfg",
    "~/.gradle/gradle.properties",
    "~/.m2/settings.xml",
    "~/.authinfo",
    "~/.authinfo.gpg",
    "~/.env",
    "~/.bash_history",
    "~/.zsh_history",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.python_history",
    "~/.local/share/fish/fish_history",
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".env",
    ".env.*",
    ".env*",
    // Names without a dot (`id_rsa`, `*.pem`, `credentials.json`) are not
    // listed: any glob may match them, so every `cat dir/*` would count as
    // a secret read; what they hold is caught by its shape instead
    // (`policy::secret_content`, a `by_effect` trial's output).
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".vault-token",
    ".htpasswd",
    ".my.cnf",
];

/// `[secrets]`: change the list both ways.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SecretsConfig {
    /// More secret places (same forms as the defaults).
    pub add: Vec<String>,
    /// Default entries to drop (exactly as listed in the defaults).
    pub remove: Vec<String>,
}

/// One entry, ready to match.
#[derive(Debug, Clone, PartialEq)]
enum Place {
    /// An absolute path and everything beneath it.
    Under(PathBuf),
    /// A name (with `*` globs) at any depth.
    Name(String),
}

/// The secret places in force.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretPlaces {
    places: Vec<(String, Place)>,
    /// `places[own..]` are vigil's own directories (the spill carve-out
    /// applies to them only).
    own: usize,
    /// Folders inside vigil's own directories that are not secret: the
    /// spill folders holding full tool outputs the model is pointed to
    /// (a `*` component matches any one name).
    open: Vec<PathBuf>,
}

impl Default for SecretPlaces {
    /// The defaults with the process's `$HOME`, no vigil folders.
    fn default() -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        SecretPlaces::new(&SecretsConfig::default(), home.as_deref(), &[])
    }
}

impl SecretsConfig {
    /// A `remove` entry that is not a default is a mistake worth naming.
    pub fn validate(&self) -> Result<(), String> {
        for r in &self.remove {
            if !DEFAULT_SECRET_PLACES.contains(&r.as_str()) {
                return Err(format!(
                    "`{r}` is not a default secret place (the defaults: {})",
                    DEFAULT_SECRET_PLACES.join(", ")
                ));
            }
        }
        for a in &self.add {
            if a.trim().is_empty() {
                return Err("an empty entry in [secrets] add".into());
            }
        }
        Ok(())
    }
}

impl SecretPlaces {
    /// The defaults minus `cfg.remove`, plus `cfg.add`, plus `vigil_dirs`
    /// (vigil's config and data directories, and the config file it was
    /// started with). `~/` entries are dropped when there is no home.
    pub fn new(cfg: &SecretsConfig, home: Option<&Path>, vigil_dirs: &[PathBuf]) -> Self {
        let mut places = Vec::new();
        let defaults = DEFAULT_SECRET_PLACES
            .iter()
            .filter(|d| !cfg.remove.iter().any(|r| r == *d))
            .map(|d| d.to_string());
        for entry in defaults.chain(cfg.add.iter().cloned()) {
            if let Some(p) = parse(&entry, home) {
                places.push((entry, p));
            }
        }
        let own = places.len();
        for d in vigil_dirs {
            places.push((d.display().to_string(), Place::Under(lexical(d))));
        }
        SecretPlaces {
            places,
            own,
            open: Vec::new(),
        }
    }

    /// The `~/` entries once more for each of `homes` (every account's home
    /// on this machine, [`account_homes`]): another user's key is as secret
    /// as the operator's.
    pub fn with_homes(mut self, cfg: &SecretsConfig, homes: &[PathBuf]) -> Self {
        let tilde: Vec<String> = DEFAULT_SECRET_PLACES
            .iter()
            .filter(|d| !cfg.remove.iter().any(|r| r == *d))
            .map(|d| d.to_string())
            .chain(cfg.add.iter().cloned())
            .filter(|e| e.trim().starts_with("~/"))
            .collect();
        let mut extra = Vec::new();
        for home in homes {
            for entry in &tilde {
                if let Some(place) = parse(entry, Some(home))
                    && !self.places.iter().any(|(_, p)| *p == place)
                {
                    let shown = home.join(entry.trim().trim_start_matches("~/"));
                    extra.push((shown.display().to_string(), place));
                }
            }
        }
        let n = extra.len();
        self.places.splice(self.own..self.own, extra);
        self.own += n;
        self
    }

    /// `data_dir`'s spill folders (`spill/`, `sessions/*/spill/`) are not
    /// secret: tool outputs the model was told to read from there.
    pub fn with_spill_folders_of(mut self, data_dir: &Path) -> Self {
        let d = lexical(data_dir);
        self.open.push(d.join("spill"));
        self.open.push(d.join("sessions").join("*").join("spill"));
        self
    }

    /// The folders carved out of vigil's own directories (see
    /// [`SecretPlaces::with_spill_folders_of`]); `*` is one name.
    pub fn open_folders(&self) -> &[PathBuf] {
        &self.open
    }

    /// The entry that makes `resolved` (absolute, symlinks and `..` already
    /// followed) a secret place, if any.
    pub fn matches(&self, resolved: &Path) -> Option<&str> {
        let resolved = lexical(resolved);
        let (listed, own) = self.places.split_at(self.own);
        if let Some(found) = matching(listed, &resolved) {
            return Some(found);
        }
        if self.open.iter().any(|o| under_pattern(&resolved, o)) {
            return None;
        }
        matching(own, &resolved)
    }

    /// Every place entry with its absolute root (`None` for a name entry,
    /// which matches at any depth): for readers that compare a pattern
    /// with the places rather than one path.
    pub fn roots(&self) -> impl Iterator<Item = (&str, Option<&Path>)> {
        self.places.iter().map(|(e, p)| match p {
            Place::Under(root) => (e.as_str(), Some(root.as_path())),
            Place::Name(_) => (e.as_str(), None),
        })
    }

    /// The name entries (`.env`, `.env.*`, `.ssh`…) with their globs.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.places.iter().filter_map(|(_, p)| match p {
            Place::Name(g) => Some(g.as_str()),
            Place::Under(_) => None,
        })
    }

    /// Whether `name` (one path component) is a secret name at any depth.
    pub fn is_secret_name(&self, name: &str) -> bool {
        self.places
            .iter()
            .any(|(_, p)| matches!(p, Place::Name(g) if glob_name(g, name)))
    }

    /// The existing absolute places (not the name entries) to mask.
    pub fn existing_roots(&self) -> Vec<PathBuf> {
        self.places
            .iter()
            .filter_map(|(_, p)| match p {
                Place::Under(root) if std::fs::symlink_metadata(root).is_ok() => Some(root.clone()),
                _ => None,
            })
            .collect()
    }

    /// Every entry as configured (for `vigil policy check` and the docs).
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.places.iter().map(|(e, _)| e.as_str())
    }
}

/// Every account's home directory on this machine (`/etc/passwd`, the
/// ones that exist, never `/`).
pub fn account_homes() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let mut homes: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split(':').nth(5))
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && h != Path::new("/") && h.is_dir())
        .collect();
    homes.sort();
    homes.dedup();
    homes
}

fn parse(entry: &str, home: Option<&Path>) -> Option<Place> {
    let entry = entry.trim();
    if let Some(rest) = entry.strip_prefix("~/") {
        return home.map(|h| Place::Under(lexical(&h.join(rest))));
    }
    if entry.starts_with('/') {
        return Some(Place::Under(lexical(Path::new(entry))));
    }
    if !entry.is_empty() && !entry.contains('/') {
        return Some(Place::Name(entry.to_string()));
    }
    // A relative path with a slash means nothing stable: refused by validate
    // callers; ignored here.
    None
}

/// The first of `places` that `resolved` lies in.
fn matching<'a>(places: &'a [(String, Place)], resolved: &Path) -> Option<&'a str> {
    places
        .iter()
        .find(|(_, p)| match p {
            Place::Under(root) => resolved.starts_with(root),
            Place::Name(glob) => resolved.components().any(|c| match c {
                Component::Normal(n) => n.to_str().is_some_and(|n| glob_name(glob, n)),
                _ => false,
            }),
        })
        .map(|(entry, _)| entry.as_str())
}

/// Whether `p` lies under `pattern`, whose `*` components match any one name.
fn under_pattern(p: &Path, pattern: &Path) -> bool {
    let mut names = p.components();
    pattern.components().all(|want| match (want, names.next()) {
        (Component::Normal(w), Some(Component::Normal(n))) => w == n || (w == "*" && n != ".."),
        (Component::RootDir, Some(Component::RootDir)) => true,
        _ => false,
    })
}

/// `..` and `.` removed without looking at the filesystem.
pub fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// A secret name glob against one name ([`crate::glob`]: `*` and `?`
/// never cross `/`, `name` being one component).
pub fn glob_name(glob: &str, name: &str) -> bool {
    crate::glob::glob_matches(glob, name, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> SecretPlaces {
        SecretPlaces::new(
            &SecretsConfig::default(),
            Some(Path::new("/home/op")),
            &[PathBuf::from("/home/op/.config/vigil")],
        )
    }

    #[test]
    fn defaults_cover_keys_tokens_and_vigils_own_config() {
        let s = places();
        for p in [
            "/home/op/.ssh/id_ed25519",
            "/home/op/.config/vigil/config.toml",
            "/home/op/.netrc",
            "/home/op/.config/gh/hosts.yml",
            "/etc/shadow",
            "/srv/app/.env",
            "/srv/app/.env.production",
            "/root/.ssh/authorized_keys",
            "/home/op/../op/.aws/credentials",
        ] {
            assert!(s.matches(Path::new(p)).is_some(), "{p} should be secret");
        }
        for p in [
            "/etc/passwd",
            "/home/op/notes.txt",
            "/srv/app/envrc.example/x",
            "/srv/app/env",
        ] {
            assert_eq!(s.matches(Path::new(p)), None, "{p} is not secret");
        }
    }

    #[test]
    fn the_list_is_configurable_both_ways() {
        let cfg = SecretsConfig {
            add: vec!["/srv/vault".into(), "*.pem".into()],
            remove: vec![".env".into(), ".env*".into()],
        };
        cfg.validate().unwrap();
        let s = SecretPlaces::new(&cfg, Some(Path::new("/home/op")), &[]);
        assert_eq!(s.matches(Path::new("/srv/vault/k")), Some("/srv/vault"));
        assert_eq!(s.matches(Path::new("/x/server.pem")), Some("*.pem"));
        assert_eq!(s.matches(Path::new("/srv/app/.env")), None);
        assert!(s.matches(Path::new("/srv/app/.env.local")).is_some());
        let bad = SecretsConfig {
            remove: vec!["/nope".into()],
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("not a default"));
    }

    #[test]
    fn spill_folders_stay_readable_the_rest_of_the_data_dir_does_not() {
        let cfg = SecretsConfig {
            add: vec!["/d/vigil/spill/kept".into()],
            ..Default::default()
        };
        let s = SecretPlaces::new(
            &cfg,
            Some(Path::new("/home/op")),
            &[PathBuf::from("/d/vigil"), PathBuf::from("/etc/v.toml")],
        )
        .with_spill_folders_of(Path::new("/d/vigil"));
        // The operator's own entries are never carved out.
        assert_eq!(
            s.matches(Path::new("/d/vigil/spill/kept/x")),
            Some("/d/vigil/spill/kept")
        );
        assert_eq!(s.matches(Path::new("/d/vigil/spill/run_shell-1.txt")), None);
        assert_eq!(s.matches(Path::new("/d/vigil/sessions/17-2/spill/x")), None);
        assert!(
            s.matches(Path::new("/d/vigil/sessions/17-2/events.jsonl"))
                .is_some()
        );
        assert!(
            s.matches(Path::new("/d/vigil/spill/../logs/agent.log"))
                .is_some()
        );
        assert!(s.matches(Path::new("/d/vigil/spill/.env")).is_some());
        assert_eq!(s.matches(Path::new("/etc/v.toml")), Some("/etc/v.toml"));
        assert_eq!(s.matches(Path::new("/etc/v.toml.bak")), None);
    }

    #[test]
    fn every_accounts_home_and_every_env_file_counts() {
        let s = places().with_homes(
            &SecretsConfig::default(),
            &[PathBuf::from("/home/deploy"), PathBuf::from("/home/op")],
        );
        let hit = s.matches(Path::new("/home/deploy/.config/gh/hosts.yml"));
        assert_eq!(hit, Some("/home/deploy/.config/gh"));
        assert!(s.matches(Path::new("/home/deploy/.ssh/id_rsa")).is_some());
        for p in [
            "/srv/a/.envrc",
            "/srv/a/.env-production",
            "/srv/a/.env_local",
            "/srv/a/.env~",
        ] {
            assert!(s.matches(Path::new(p)).is_some(), "{p}");
        }
        assert!(s.matches(Path::new("/etc/ssl/private/x.key")).is_some());
        // vigil's own folder is still its own (the spill carve-out keeps working).
        assert!(
            s.matches(Path::new("/home/op/.config/vigil/config.toml"))
                .is_some()
        );
    }

    #[test]
    fn globs_stay_within_one_name() {
        assert!(glob_name(".env.*", ".env.local"));
        assert!(!glob_name(".env.*", ".env"));
        assert!(glob_name("*", "x"));
        assert!(glob_name("a*b*c", "aXbYc"));
        assert!(!glob_name("a*b*c", "aXc"));
        assert!(!glob_name("ab*ab", "ab"));
    }
}
