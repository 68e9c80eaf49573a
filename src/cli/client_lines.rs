//! Reading the agent's lines on the client side: one `\n`-terminated line at
//! a time, never more than [`MAX_LINE`] bytes held (a longer line is an
//! error, not an allocation). It only frames bytes.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use crate::event::wire::MAX_LINE;

/// Why no line could be read.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("a line longer than {MAX_LINE} bytes")]
    TooLong,
    #[error("a line that is not UTF-8")]
    NotUtf8,
    #[error("cannot read from the socket: {0}")]
    Io(#[from] std::io::Error),
}

/// The next line without its `\n` (None: the peer closed the connection).
pub async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R) -> Result<Option<String>, LineError> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return match buf.is_empty() {
                true => Ok(None),
                false => String::from_utf8(buf)
                    .map(Some)
                    .map_err(|_| LineError::NotUtf8),
            };
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.unwrap_or(available.len());
        if buf.len() + take > MAX_LINE {
            return Err(LineError::TooLong);
        }
        buf.extend_from_slice(&available[..take]);
        let used = newline.map_or(take, |i| i + 1);
        r.consume(used);
        if newline.is_some() {
            return String::from_utf8(buf)
                .map(Some)
                .map_err(|_| LineError::NotUtf8);
        }
    }
}
