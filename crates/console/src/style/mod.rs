//! How text looks: themes (built in and the operator's) and the text
//! helpers every pane uses (escape stripping, width, wrapping).

pub mod text;
pub mod theme;
