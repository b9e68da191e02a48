//! A small HTTP/1.1 server on loopback for the download tests: each path answers
//! with a scripted behaviour (good, truncated, wrong status, stalled, trickling).
//! Real sockets and real HTTP framing, so the client's timeouts and length checks
//! are exercised as on the network.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone)]
pub enum Reply {
    /// 200 with the bytes.
    Body(Vec<u8>),
    /// 200 announcing all the bytes, sending the first `sent`, then closing.
    Truncated { body: Vec<u8>, sent: usize },
    /// The status, with a short text body.
    Status(u16),
    /// 200, the first `sent` bytes, then silence for `pause` before the rest.
    Stall {
        body: Vec<u8>,
        sent: usize,
        pause: Duration,
    },
    /// 200, the bytes in `chunks` pieces `every` apart.
    Trickle {
        body: Vec<u8>,
        chunks: usize,
        every: Duration,
    },
}

pub struct Server {
    pub base_url: String,
    requests: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Serves `routes` (path → reply; anything else is a 404) on 127.0.0.1.
    pub async fn start(routes: HashMap<String, Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address: SocketAddr = listener.local_addr().unwrap();
        let routes = Arc::new(routes);
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(stream, routes.clone()));
            }
        });
        Server {
            base_url: format!("http://{address}"),
            requests,
            task,
        }
    }

    /// Connections accepted so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, routes: Arc<HashMap<String, Reply>>) {
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let head = String::from_utf8_lossy(&request);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let reply = routes.get(&path).cloned().unwrap_or(Reply::Status(404));
    let _ = respond(&mut stream, reply).await;
}

async fn respond(stream: &mut TcpStream, reply: Reply) -> std::io::Result<()> {
    let head = |status: &str, length: usize| {
        format!("HTTP/1.1 {status}\r\ncontent-length: {length}\r\ncontent-type: application/octet-stream\r\nconnection: close\r\n\r\n")
    };
    match reply {
        Reply::Body(body) => {
            stream
                .write_all(head("200 OK", body.len()).as_bytes())
                .await?;
            stream.write_all(&body).await?;
        }
        Reply::Truncated { body, sent } => {
            stream
                .write_all(head("200 OK", body.len()).as_bytes())
                .await?;
            stream.write_all(&body[..sent]).await?;
        }
        Reply::Status(status) => {
            let text = b"not here";
            stream
                .write_all(head(&format!("{status} Scripted"), text.len()).as_bytes())
                .await?;
            stream.write_all(text).await?;
        }
        Reply::Stall { body, sent, pause } => {
            stream
                .write_all(head("200 OK", body.len()).as_bytes())
                .await?;
            stream.write_all(&body[..sent]).await?;
            stream.flush().await?;
            tokio::time::sleep(pause).await;
            stream.write_all(&body[sent..]).await?;
        }
        Reply::Trickle {
            body,
            chunks,
            every,
        } => {
            stream
                .write_all(head("200 OK", body.len()).as_bytes())
                .await?;
            for piece in body.chunks(body.len().div_ceil(chunks).max(1)) {
                stream.write_all(piece).await?;
                stream.flush().await?;
                tokio::time::sleep(every).await;
            }
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}
