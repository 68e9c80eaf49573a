//! What the console draws over or inside the panes: the diff of a file
//! change, the preview card of a command's effects, and markdown text.

pub mod diff;
pub mod markdown;
pub mod preview_card;
