//! A small HTTP/1.1 server on loopback for the download tests: each path answers
//! with a scripted behaviour (good, truncated, wrong status, stalled, trickling).
//! Real sockets and real HTTP framing, so the client's timeouts and length checks
//! are exercised as on the network.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
    stop: Arc<AtomicBool>,
    address: SocketAddr,
}

impl Server {
    /// Serves `routes` (path → reply; anything else is a 404) on 127.0.0.1,
    /// each connection on a thread of its own.
    pub fn start(routes: HashMap<String, Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let routes = Arc::new(routes);
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (counter, stopped) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                counter.fetch_add(1, Ordering::SeqCst);
                let routes = routes.clone();
                std::thread::spawn(move || serve(stream, &routes));
            }
        });
        Server {
            base_url: format!("http://{address}"),
            requests,
            stop,
            address,
        }
    }

    /// Connections accepted so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The accept loop sees the flag on its next connection: this one.
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.address);
    }
}

fn serve(mut stream: TcpStream, routes: &HashMap<String, Reply>) {
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let head = String::from_utf8_lossy(&request);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let reply = routes.get(&path).cloned().unwrap_or(Reply::Status(404));
    let _ = respond(&mut stream, reply);
}

fn respond(stream: &mut TcpStream, reply: Reply) -> std::io::Result<()> {
    let head = |status: &str, length: usize| {
        format!("HTTP/1.1 {status}\r\ncontent-length: {length}\r\ncontent-type: application/octet-stream\r\nconnection: close\r\n\r\n")
    };
    match reply {
        Reply::Body(body) => {
            stream.write_all(head("200 OK", body.len()).as_bytes())?;
            stream.write_all(&body)?;
        }
        Reply::Truncated { body, sent } => {
            stream.write_all(head("200 OK", body.len()).as_bytes())?;
            stream.write_all(&body[..sent])?;
        }
        Reply::Status(status) => {
            let text = b"not here";
            stream.write_all(head(&format!("{status} Scripted"), text.len()).as_bytes())?;
            stream.write_all(text)?;
        }
        Reply::Stall { body, sent, pause } => {
            stream.write_all(head("200 OK", body.len()).as_bytes())?;
            stream.write_all(&body[..sent])?;
            stream.flush()?;
            std::thread::sleep(pause);
            stream.write_all(&body[sent..])?;
        }
        Reply::Trickle {
            body,
            chunks,
            every,
        } => {
            stream.write_all(head("200 OK", body.len()).as_bytes())?;
            for piece in body.chunks(body.len().div_ceil(chunks).max(1)) {
                stream.write_all(piece)?;
                stream.flush()?;
                std::thread::sleep(every);
            }
        }
    }
    stream.flush()?;
    stream.shutdown(std::net::Shutdown::Write)
}
