//! The console's tests: the App driven key by key, and its screens as
//! snapshots (ratatui TestBackend + insta, in `snapshots/`).

pub(crate) mod app_keys_tests;
pub(crate) mod app_tests;
pub(crate) mod attach_tests;
pub(crate) mod diff_snapshots;
pub(crate) mod event_loop_tests;
pub(crate) mod facts_snapshots;
pub(crate) mod fleet_tests;
pub(crate) mod footer_tests;
pub(crate) mod overlay_snapshots;
pub(crate) mod pane_trait_tests;
pub(crate) mod passthrough_tests;
pub(crate) mod preview_snapshots;
pub(crate) mod restore_snapshots;
pub(crate) mod snapshot_tests;
pub(crate) mod style_tests;
pub(crate) mod view_tests;
