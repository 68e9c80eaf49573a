//! `run_shell`.
