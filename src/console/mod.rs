//! The operator console (ratatui). It renders agent events and sends
//! commands; it never executes anything and never awaits the agent.
pub struct ConsoleOptions {
    pub initial_message: Option<String>,
    pub fps_cap: u32,
    pub bell: bool,
}
pub async fn run(
    _e: tokio::sync::mpsc::UnboundedReceiver<crate::event::AgentEvent>,
    _c: tokio::sync::mpsc::UnboundedSender<crate::event::AgentCommand>,
    _o: ConsoleOptions,
) -> std::io::Result<()> {
    Err(std::io::Error::other("console not merged yet"))
}
