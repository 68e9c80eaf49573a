//! The minimal HTTP/1.1 the scripted server needs: reading one request
//! (request line, headers, `Content-Length` body) and writing responses.
//!
//! It reads at most one request per connection (every response says
//! `Connection: close`), refuses chunked request bodies with a clear error, and
//! caps header and body sizes. It never panics on what a client sends and never
//! waits forever: reads are bounded by a timeout.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest accepted request head (request line + headers).
pub const MAX_HEAD: usize = 64 * 1024;
/// Largest accepted request body.
pub const MAX_BODY: usize = 32 * 1024 * 1024;
/// How long a client may take to send its whole request.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path without any query string.
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request could not be read; each maps to a response status.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HttpError {
    #[error("malformed request: {0}")]
    BadRequest(String),
    #[error("request head larger than {MAX_HEAD} bytes")]
    HeadTooLarge,
    #[error("request body larger than {MAX_BODY} bytes")]
    BodyTooLarge,
    #[error("chunked request bodies are not supported; send Content-Length")]
    Chunked,
    #[error("the client closed the connection before sending a full request")]
    Closed,
    #[error("the client took too long to send its request")]
    Timeout,
    #[error("read error: {0}")]
    Io(String),
}

impl HttpError {
    /// The status to answer with, or `None` when there is nobody to answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::BadRequest(_) => Some(400),
            HttpError::HeadTooLarge => Some(431),
            HttpError::BodyTooLarge => Some(413),
            HttpError::Chunked => Some(411),
            HttpError::Timeout => Some(408),
            HttpError::Closed | HttpError::Io(_) => None,
        }
    }
}

/// The parsed head and how long the body is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub content_length: usize,
}

/// Parses a request head (everything before the blank line, without it).
pub fn parse_head(head: &[u8]) -> Result<Head, HttpError> {
    let text = std::str::from_utf8(head)
        .map_err(|_| HttpError::BadRequest("request head is not UTF-8".into()))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ').filter(|p| !p.is_empty());
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) => (m, t, v),
        _ => {
            return Err(HttpError::BadRequest(format!(
                "bad request line {request_line:?}"
            )));
        }
    };
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::BadRequest(format!(
            "unsupported version {version:?}"
        )));
    }
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(HttpError::BadRequest(format!("bad header line {line:?}")));
        };
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(HttpError::BadRequest(format!("bad header name {name:?}")));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let values = |name: &'static str| {
        headers
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    if values("transfer-encoding").any(|v| !v.eq_ignore_ascii_case("identity")) {
        return Err(HttpError::Chunked);
    }
    let mut lengths = values("content-length");
    let content_length = match (lengths.next(), lengths.next()) {
        (None, _) => 0,
        (Some(v), None) => v
            .parse::<usize>()
            .map_err(|_| HttpError::BadRequest(format!("bad Content-Length {v:?}")))?,
        (Some(_), Some(_)) => {
            return Err(HttpError::BadRequest("repeated Content-Length".into()));
        }
    };
    if content_length > MAX_BODY {
        return Err(HttpError::BodyTooLarge);
    }
    let path = target.split('?').next().unwrap_or_default().to_string();
    Ok(Head {
        method: method.to_string(),
        path,
        headers,
        content_length,
    })
}

/// Reads one request, bounded by [`READ_TIMEOUT`].
pub async fn read_request<R: AsyncRead + Unpin>(reader: &mut R) -> Result<Request, HttpError> {
    tokio::time::timeout(READ_TIMEOUT, read_request_inner(reader))
        .await
        .map_err(|_| HttpError::Timeout)?
}

async fn read_request_inner<R: AsyncRead + Unpin>(reader: &mut R) -> Result<Request, HttpError> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(pos) = find_blank_line(&buf) {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            return Err(HttpError::HeadTooLarge);
        }
        let n = reader
            .read(&mut chunk)
            .await
            .map_err(|e| HttpError::Io(e.to_string()))?;
        if n == 0 {
            return Err(HttpError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = parse_head(&buf[..head_end])?;
    let mut body = buf.split_off(head_end + 4);
    while body.len() < head.content_length {
        let n = reader
            .read(&mut chunk)
            .await
            .map_err(|e| HttpError::Io(e.to_string()))?;
        if n == 0 {
            return Err(HttpError::Closed);
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(head.content_length);
    Ok(Request {
        method: head.method,
        path: head.path,
        headers: head.headers,
        body,
    })
}

fn find_blank_line(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

/// The standard reason phrase for the statuses this server uses.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// Writes a complete response with a `Content-Length` body.
pub async fn write_response<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: u16,
    content_type: &str,
    extra_headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason(status),
        body.len()
    );
    for (k, v) in extra_headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes()).await?;
    w.write_all(body).await?;
    w.flush().await
}

/// Writes the head of an event-stream response; the body runs until close.
pub async fn write_stream_head<W: AsyncWrite + Unpin>(w: &mut W) -> std::io::Result<()> {
    w.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
    )
    .await?;
    w.flush().await
}

/// A JSON error body in the OpenAI shape.
pub fn error_body(message: &str, kind: &str, code: u16) -> Vec<u8> {
    serde_json::json!({
        "error": { "message": message, "type": kind, "code": code }
    })
    .to_string()
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_request_line_headers_and_length() {
        let h = parse_head(
            b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\nContent-Type: application/json",
        )
        .unwrap();
        assert_eq!(h.method, "POST");
        assert_eq!(h.path, "/v1/chat/completions");
        assert_eq!(h.content_length, 12);
        assert_eq!(h.headers[0], ("host".into(), "a".into()));
    }

    #[test]
    fn rejects_bad_heads() {
        assert!(matches!(
            parse_head(b"GARBAGE"),
            Err(HttpError::BadRequest(_))
        ));
        assert!(matches!(
            parse_head(b"GET / HTTP/2.0"),
            Err(HttpError::BadRequest(_))
        ));
        assert!(matches!(
            parse_head(b"GET / HTTP/1.1\r\nnocolon"),
            Err(HttpError::BadRequest(_))
        ));
        assert!(matches!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: abc"),
            Err(HttpError::BadRequest(_))
        ));
        assert!(matches!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2"),
            Err(HttpError::BadRequest(_))
        ));
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked"),
            Err(HttpError::Chunked)
        );
        assert_eq!(
            parse_head(format!("POST / HTTP/1.1\r\nContent-Length: {}", MAX_BODY + 1).as_bytes()),
            Err(HttpError::BodyTooLarge)
        );
        assert_eq!(HttpError::Chunked.status(), Some(411));
    }

    #[tokio::test]
    async fn reads_body_split_across_reads() {
        let (mut client, mut server) = tokio::io::duplex(16);
        let writer = tokio::spawn(async move {
            let msg = b"POST /x HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world";
            for piece in msg.chunks(5) {
                client.write_all(piece).await.unwrap();
            }
            client
        });
        let req = read_request(&mut server).await.unwrap();
        assert_eq!(req.body, b"hello world");
        assert_eq!(req.header("Content-Length"), Some("11"));
        drop(writer.await.unwrap());
    }

    #[tokio::test]
    async fn early_close_is_reported() {
        let (client, mut server) = tokio::io::duplex(64);
        let mut client = client;
        client
            .write_all(b"POST /x HTTP/1.1\r\nContent-Length: 50\r\n\r\nshort")
            .await
            .unwrap();
        drop(client);
        assert_eq!(read_request(&mut server).await, Err(HttpError::Closed));
    }

    #[tokio::test]
    async fn response_has_length_and_close() {
        let mut out = Vec::new();
        write_response(
            &mut out,
            404,
            "application/json",
            &[("Retry-After", "3".into())],
            b"{}",
        )
        .await
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"));
        assert!(text.contains("Content-Length: 2\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.contains("Retry-After: 3\r\n"));
        assert!(text.ends_with("\r\n\r\n{}"));
    }
}
