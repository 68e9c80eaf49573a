//! A tiny hand-written HTTP/1.1 server on loopback for the web tool tests:
//! each connection gets one response chosen by the request path.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One canned response.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Wait this long before answering.
    pub delay: Duration,
}

impl Reply {
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    pub fn redirect(to: &str) -> Reply {
        Reply {
            status: 302,
            headers: vec![("Location".into(), to.into())],
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    pub fn slow(delay: Duration) -> Reply {
        Reply {
            delay,
            ..Reply::ok("text/plain", "late")
        }
    }
}

/// The request line's target (path and query) → reply.
pub type Handler = Arc<dyn Fn(&str) -> Reply + Send + Sync>;

/// Start a server; it runs until the test's runtime ends.
pub async fn serve(handler: Handler) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let handler = handler.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf);
                let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let reply = handler(&target);
                tokio::time::sleep(reply.delay).await;
                let mut out = format!("HTTP/1.1 {} X\r\n", reply.status);
                for (k, v) in &reply.headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str(&format!(
                    "Content-Length: {}\r\nConnection: close\r\n\r\n",
                    reply.body.len()
                ));
                let _ = sock.write_all(out.as_bytes()).await;
                let _ = sock.write_all(&reply.body).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    addr
}

/// A server answering every path with `reply`.
pub async fn serve_fixed(reply: Reply) -> SocketAddr {
    serve(Arc::new(move |_| reply.clone())).await
}
