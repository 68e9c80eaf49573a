//! Reading protocol lines from a socket: one `\n`-terminated line at a
//! time, never more than [`MAX_LINE`] bytes held (a longer line is an error,
//! not an allocation), and writing one message as one line.
//!
//! It only frames bytes; it never decides what a line means.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use crate::wire::{MAX_LINE, ServerMsg};

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
/// A last line without `\n` before the end counts as a line.
pub async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R) -> Result<Option<String>, LineError> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return match buf.is_empty() {
                true => Ok(None),
                false => to_text(buf).map(Some),
            };
        }
        let (used, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let end = if done { used - 1 } else { used };
        if buf.len() + end > MAX_LINE {
            return Err(LineError::TooLong);
        }
        buf.extend_from_slice(&available[..end]);
        r.consume(used);
        if done {
            return to_text(buf).map(Some);
        }
    }
}

fn to_text(mut buf: Vec<u8>) -> Result<String, LineError> {
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    String::from_utf8(buf).map_err(|_| LineError::NotUtf8)
}

/// One message as its line (`\n`-terminated).
pub fn message_line(msg: &ServerMsg) -> String {
    let mut line = serde_json::to_string(msg).unwrap_or_else(|e| {
        let refused = ServerMsg::Refused {
            reason: format!("the agent could not encode its answer: {e}"),
        };
        serde_json::to_string(&refused).unwrap_or_default()
    });
    line.push('\n');
    line
}

/// Write one message and flush.
pub async fn write_message<W: AsyncWrite + Unpin>(
    w: &mut W,
    msg: &ServerMsg,
) -> std::io::Result<()> {
    w.write_all(message_line(msg).as_bytes()).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_split_and_an_over_long_one_is_an_error() {
        let data = b"one\ntwo\r\nlast".to_vec();
        let mut r = tokio::io::BufReader::with_capacity(2, &data[..]);
        assert_eq!(read_line(&mut r).await.unwrap().as_deref(), Some("one"));
        assert_eq!(read_line(&mut r).await.unwrap().as_deref(), Some("two"));
        assert_eq!(read_line(&mut r).await.unwrap().as_deref(), Some("last"));
        assert!(read_line(&mut r).await.unwrap().is_none());
        let long = vec![b'x'; MAX_LINE + 10];
        let mut r = tokio::io::BufReader::new(&long[..]);
        assert!(matches!(read_line(&mut r).await, Err(LineError::TooLong)));
        let bad = b"\xff\xfe\n".to_vec();
        let mut r = tokio::io::BufReader::new(&bad[..]);
        assert!(matches!(read_line(&mut r).await, Err(LineError::NotUtf8)));
    }
}
