//! [`CommandBackend`]: the [`Backend`](super::Backend) for any transport that
//! runs plain processes (no tmux).

use super::transport::Transport;

/// Runs commands and file operations through a transport.
pub struct CommandBackend<T: Transport> {
    transport: T,
}

impl<T: Transport> CommandBackend<T> {
    pub fn new(transport: T) -> Self {
        CommandBackend { transport }
    }

    pub fn transport(&self) -> &T {
        &self.transport
    }
}
