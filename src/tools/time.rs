//! `time`.
