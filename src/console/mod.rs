//! The operator console (ratatui). It renders agent events and sends
//! commands; it never executes anything and never awaits the agent.
