//! Style snapshots, one per theme (and NO_COLOR): the same console state
//! rendered into a TestBackend, written as runs of cells sharing a style so
//! a colour change shows up as a readable diff.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;

use crate::app::App;
use crate::style::theme::Theme;

/// `row: [x0..x1) fg/bg/modifiers "text"` for every run of one style.
fn style_runs(buffer: &Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut x = 0;
        while x < area.width {
            let style = buffer[(x, y)].style();
            let start = x;
            let mut text = String::new();
            while x < area.width && buffer[(x, y)].style() == style {
                text.push_str(buffer[(x, y)].symbol());
                x += 1;
            }
            let trimmed = text.trim();
            let plain_bg = matches!(style.bg, None | Some(ratatui::style::Color::Reset));
            if trimmed.is_empty() && plain_bg {
                continue;
            }
            let fg = style
                .fg
                .map(|c| format!("{c}"))
                .unwrap_or_else(|| "-".into());
            let bg = style
                .bg
                .map(|c| format!("{c}"))
                .unwrap_or_else(|| "-".into());
            out.push_str(&format!(
                "{y:>2}: [{start}..{x}) {fg}/{bg}/{:?} {:?}\n",
                style.add_modifier,
                trimmed.chars().take(24).collect::<String>()
            ));
        }
    }
    out
}

fn render(theme: Theme) -> String {
    let mut app: App = crate::tests::snapshot_tests::waiting_for_approval();
    app.set_themes(vec![theme]);
    crate::tests::app_tests::look_at_approvals(&mut app);
    let mut t = Terminal::new(TestBackend::new(100, 30)).expect("backend");
    t.draw(|f| app.draw(f)).expect("draw");
    style_runs(t.backend().buffer())
}

#[test]
fn dark_theme_styles() {
    insta::assert_snapshot!(render(Theme::builtin("dark").expect("built-in")));
}

#[test]
fn light_theme_styles() {
    insta::assert_snapshot!(render(Theme::builtin("light").expect("built-in")));
}

#[test]
fn high_contrast_theme_styles() {
    insta::assert_snapshot!(render(Theme::builtin("high-contrast").expect("built-in")));
}

#[test]
fn no_color_styles_have_no_colours() {
    let runs = render(Theme::default().no_color());
    for line in runs.lines() {
        let plain = line.contains(" -/-/")
            || line.contains(" Reset/Reset/")
            || line.contains(" Reset/-/")
            || line.contains(" -/Reset/");
        assert!(plain, "coloured cell under NO_COLOR: {line}");
    }
    insta::assert_snapshot!(runs);
}
