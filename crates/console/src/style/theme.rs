//! Colour themes: named styles every pane draws with, read from TOML files.
//!
//! Built-in themes (`themes/*.toml` at the repository root) are embedded with
//! `include_str!`; `<config dir>/themes/NAME.toml` overrides or adds one. A
//! theme file has one `[styles]` table whose entries are
//! `slot = { fg = "…", bg = "…", bold = true, … }`; slots it leaves out keep
//! the dark theme's style. A bad colour, slot or attribute is a
//! [`ThemeError`] naming the file and the key. With `NO_COLOR` or
//! `--no-color`, [`Theme::no_color`] keeps only bold/reverse/underline.
//!
//! Pure data and file reading at start-up: it never draws.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};

/// The built-in themes, in the order the theme key cycles through them.
pub const BUILTIN: [(&str, &str); 3] = [
    ("dark", include_str!("../../../../themes/dark.toml")),
    ("light", include_str!("../../../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../../../themes/high-contrast.toml"),
    ),
];

macro_rules! slots {
    ($($name:ident),* $(,)?) => {
        /// Every style the console draws with.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Theme {
            pub name: String,
            $(pub $name: Style,)*
        }

        impl Theme {
            /// Slot names as written in theme files.
            pub const SLOTS: &'static [&'static str] = &[$(stringify!($name)),*];

            fn slot_mut(&mut self, name: &str) -> Option<&mut Style> {
                match name {
                    $(stringify!($name) => Some(&mut self.$name),)*
                    _ => None,
                }
            }

            fn map_styles(&self, f: impl Fn(Style) -> Style) -> Theme {
                Theme { name: self.name.clone(), $($name: f(self.$name),)* }
            }

            fn blank(name: &str) -> Theme {
                Theme { name: name.to_string(), $($name: Style::new(),)* }
            }
        }
    };
}

slots!(
    text,
    dim,
    border,
    border_focused,
    title_focused,
    user,
    notice,
    error,
    stdout,
    stderr,
    info,
    running,
    ok,
    warn,
    bad,
    truncated,
    status_bar,
    status_accent,
    status_alert,
    footer_key,
    footer_text,
    selected,
    risk_low,
    risk_medium,
    risk_high,
    banner,
    code,
    heading,
    seen,
    unseen,
    search_match,
    modal,
);

/// Why a theme could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThemeError {
    #[error("theme file {file}: {message}")]
    Syntax { file: String, message: String },
    #[error("theme file {file}: key `{key}`: {message}")]
    Key {
        file: String,
        key: String,
        message: String,
    },
    #[error("unknown theme `{name}`: built-in themes are dark, light and high-contrast; {hint}")]
    Unknown { name: String, hint: String },
    #[error("cannot read theme file {file}: {message}")]
    Read { file: String, message: String },
}

impl Default for Theme {
    fn default() -> Self {
        Theme::builtin("dark").unwrap_or_else(|| Theme::blank("dark"))
    }
}

impl Theme {
    /// A built-in theme by name (None when there is no such built-in).
    pub fn builtin(name: &str) -> Option<Theme> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        // Built-ins are checked by the tests; a broken one falls back to blank.
        Some(
            Theme::parse(name, text, &format!("themes/{name}.toml"), None)
                .unwrap_or_else(|_| Theme::blank(name)),
        )
    }

    /// Parse theme TOML; `file` names it in errors; slots not given keep
    /// `base`'s styles (the dark theme's when `None`).
    pub fn parse(
        name: &str,
        text: &str,
        file: &str,
        base: Option<&Theme>,
    ) -> Result<Theme, ThemeError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| ThemeError::Syntax {
            file: file.to_string(),
            message: e.message().trim().to_string(),
        })?;
        let mut theme = match base {
            Some(b) => b.clone(),
            None => Theme::blank(name),
        };
        theme.name = name.to_string();
        let key_err = |key: String, message: String| ThemeError::Key {
            file: file.to_string(),
            key,
            message,
        };
        for (top, value) in &table {
            match (top.as_str(), value) {
                ("name" | "description", toml::Value::String(_)) => {}
                ("styles", toml::Value::Table(styles)) => {
                    for (slot, spec) in styles {
                        let key = format!("styles.{slot}");
                        let Some(style) = theme.slot_mut(slot) else {
                            return Err(key_err(
                                key,
                                format!("unknown style; known: {}", Theme::SLOTS.join(", ")),
                            ));
                        };
                        *style = parse_style(spec).map_err(|(k, m)| {
                            key_err(
                                if k.is_empty() {
                                    key.clone()
                                } else {
                                    k_join(&key, &k)
                                },
                                m,
                            )
                        })?;
                    }
                }
                _ => {
                    return Err(key_err(
                        top.clone(),
                        "unknown key; a theme has `name`, `description` and a [styles] table"
                            .into(),
                    ));
                }
            }
        }
        Ok(theme)
    }

    /// Load by name: `<config_dir>/themes/NAME.toml` when it exists, else the
    /// built-in of that name.
    pub fn load(name: &str, config_dir: Option<&Path>) -> Result<Theme, ThemeError> {
        let user = config_dir.map(|d| d.join("themes").join(format!("{name}.toml")));
        if let Some(path) = user.as_ref().filter(|p| p.is_file()) {
            let text = std::fs::read_to_string(path).map_err(|e| ThemeError::Read {
                file: path.display().to_string(),
                message: e.to_string(),
            })?;
            let base = Theme::default();
            return Theme::parse(name, &text, &path.display().to_string(), Some(&base));
        }
        Theme::builtin(name).ok_or_else(|| ThemeError::Unknown {
            name: name.to_string(),
            hint: match user {
                Some(p) => format!("or create {}", p.display()),
                None => "no config dir is known for user themes".into(),
            },
        })
    }

    /// This theme without colours (`NO_COLOR`): only text attributes stay.
    pub fn no_color(&self) -> Theme {
        let mut t = self.map_styles(|s| Style {
            fg: None,
            bg: None,
            underline_color: None,
            ..s
        });
        t.name = "no-color".into();
        // Keep the bars and selection readable without colour.
        t.status_bar = Style::new().add_modifier(Modifier::REVERSED);
        t.banner = Style::new().add_modifier(Modifier::REVERSED);
        t.search_match = Style::new().add_modifier(Modifier::REVERSED);
        t.selected = t.selected.add_modifier(Modifier::REVERSED);
        t
    }
}

/// The user's theme directory parent: the platform config dir for vigil.
pub fn user_config_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "vigil").map(|p| p.config_dir().to_path_buf())
}

/// True when the `NO_COLOR` convention asks for no colour.
pub fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

fn k_join(a: &str, b: &str) -> String {
    format!("{a}.{b}")
}

/// One style table; errors are (sub-key, message).
fn parse_style(spec: &toml::Value) -> Result<Style, (String, String)> {
    let toml::Value::Table(t) = spec else {
        return Err((
            String::new(),
            "must be a table like { fg = \"cyan\", bold = true }".into(),
        ));
    };
    let mut style = Style::new();
    for (k, v) in t {
        match k.as_str() {
            "fg" | "bg" => {
                let color = parse_color(v).map_err(|m| (k.clone(), m))?;
                style = if k == "fg" {
                    style.fg(color)
                } else {
                    style.bg(color)
                };
            }
            "bold" | "italic" | "underline" | "reversed" | "dim" => {
                let toml::Value::Boolean(on) = v else {
                    return Err((k.clone(), "must be true or false".into()));
                };
                let m = match k.as_str() {
                    "bold" => Modifier::BOLD,
                    "italic" => Modifier::ITALIC,
                    "underline" => Modifier::UNDERLINED,
                    "reversed" => Modifier::REVERSED,
                    _ => Modifier::DIM,
                };
                if *on {
                    style = style.add_modifier(m);
                }
            }
            _ => {
                return Err((
                    k.clone(),
                    "unknown attribute; use fg, bg, bold, italic, underline, reversed, dim".into(),
                ));
            }
        }
    }
    Ok(style)
}

fn parse_color(v: &toml::Value) -> Result<Color, String> {
    let toml::Value::String(s) = v else {
        return Err("a colour is a string: a name (red, light-blue), #rrggbb or 0-255".into());
    };
    Color::from_str(s.trim()).map_err(|_| {
        format!("`{s}` is not a colour: use a name (red, light-blue, dark-gray), #rrggbb or 0-255")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_set_every_slot() {
        for (name, text) in BUILTIN {
            let t = Theme::parse(name, text, name, None).unwrap_or_else(|e| panic!("{e}"));
            let table: toml::Table = toml::from_str(text).unwrap();
            let styles = table["styles"].as_table().unwrap();
            for slot in Theme::SLOTS {
                assert!(styles.contains_key(*slot), "{name} lacks {slot}");
            }
            assert_eq!(t.name, name);
        }
    }

    #[test]
    fn bad_colour_names_file_and_key() {
        let err = Theme::parse(
            "x",
            "[styles]\ndim = { fg = \"purpl\" }\n",
            "/cfg/themes/x.toml",
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("/cfg/themes/x.toml"), "{err}");
        assert!(err.contains("styles.dim.fg"), "{err}");
        assert!(err.contains("purpl"), "{err}");
        let err = Theme::parse("x", "[styles]\nnope = {}\n", "f", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("styles.nope"), "{err}");
        let err = Theme::parse("x", "[styles\n", "f.toml", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("f.toml"), "{err}");
    }

    #[test]
    fn user_dir_overrides_and_missing_is_clear() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("themes")).unwrap();
        std::fs::write(
            dir.path().join("themes/mine.toml"),
            "[styles]\nuser = { fg = \"#ff0000\" }\n",
        )
        .unwrap();
        let t = Theme::load("mine", Some(dir.path())).unwrap();
        assert_eq!(t.user.fg, Some(Color::Rgb(255, 0, 0)));
        assert_eq!(t.dim, Theme::default().dim, "other slots keep dark's");
        let err = Theme::load("nope", Some(dir.path()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope") && !err.contains("mine"), "{err}");
        assert!(Theme::load("light", None).is_ok());
    }

    #[test]
    fn no_color_drops_colours_only() {
        let t = Theme::default().no_color();
        assert_eq!(t.user.fg, None);
        assert!(t.user.add_modifier.contains(Modifier::BOLD));
    }
}
