//! Fault-injection hook for the end-to-end fault tests, and nothing else:
//! with `VIGIL_TEST_PANIC_RENDER=<text>` set, the conversation pane's render
//! panics as soon as an entry (or a queued message) contains `<text>`, which proves that a panic
//! inside a pane's render restores the terminal, exits and keeps the session
//! (`tests/exec/faults.rs`).
//!
//! Inert unless the variable is set: the environment is read once, then
//! each frame costs one `OnceLock` read. Compiled out of release builds
//! (`debug_assertions`). This module must never change what a frame shows.

/// The text whose appearance in the conversation pane panics its render.
pub fn panic_render_trigger() -> Option<&'static str> {
    #[cfg(debug_assertions)]
    {
        static TRIGGER: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        TRIGGER
            .get_or_init(|| {
                std::env::var("VIGIL_TEST_PANIC_RENDER")
                    .ok()
                    .filter(|t| !t.is_empty())
            })
            .as_deref()
    }
    #[cfg(not(debug_assertions))]
    {
        None
    }
}

/// Panic (the injected fault) when one of `texts` holds the trigger.
pub fn check_render<'a>(mut texts: impl Iterator<Item = &'a str>) {
    if let Some(trigger) = panic_render_trigger() {
        if texts.any(|t| t.contains(trigger)) {
            panic!("injected fault: VIGIL_TEST_PANIC_RENDER matched while rendering a pane");
        }
    }
}
