//! A misbehaving HTTP peer for the fault-injection tests (`tests/faults_runtime.rs`): a raw
//! socket on 127.0.0.1:0 that reads each request and then answers as its script says —
//! well, with a gigabyte, a body that never ends, a reset, or headers and then nothing —
//! counting the body bytes it managed to write.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const GIB: u64 = 1 << 30;
/// Most body bytes a peer may get written before the client stops it: the cap read plus
/// what the kernel's socket buffers on both sides hold, far below the gigabyte on offer.
pub const WRITTEN_BOUND: u64 = 64 << 20;

#[derive(Clone, Copy, Debug)]
pub enum Framing {
    Length,
    Chunked,
    /// No Content-Length, not chunked: the body ends when the connection closes.
    Close,
}

/// What the peer does once it has read a request.
#[derive(Clone, Debug)]
pub enum Fault {
    /// A well-formed answer: status, extra header lines, body.
    Answer(u16, &'static str, String),
    /// The status and headers, then 1 GiB of body.
    Huge(u16, Framing),
    /// The status and chunked headers, then one byte every 50 ms, forever.
    Trickle(u16),
    /// The status and headers (Content-Length 1000), then nothing, the connection held.
    HangAfterHeaders(u16),
    /// Nothing at all, the connection held.
    HangBeforeHeaders,
    /// The status, headers (Content-Length 1000) and 100 bytes, then a TCP reset.
    ResetMidBody(u16),
    /// A TCP reset instead of an answer.
    ResetBeforeHeaders,
}

pub fn ok(body: impl Into<String>) -> Fault {
    Fault::Answer(200, "", body.into())
}

#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: String,
}

type Script = Arc<dyn Fn(usize) -> Fault + Send + Sync>;

/// A peer that misbehaves as its script says for the n-th request (from 1) since the
/// script was set.
#[derive(Clone)]
pub struct Peer {
    pub url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    script: Arc<Mutex<(usize, Script)>>,
    /// Body bytes written, over all connections.
    pub written: Arc<AtomicU64>,
    /// Connections not yet closed by either side.
    open: Arc<AtomicUsize>,
}

impl Peer {
    pub async fn start(script: impl Fn(usize) -> Fault + Send + Sync + 'static) -> Peer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = Peer {
            url: format!("http://{}", listener.local_addr().unwrap()),
            requests: Arc::default(),
            script: Arc::new(Mutex::new((0, Arc::new(script)))),
            written: Arc::default(),
            open: Arc::default(),
        };
        let serving = peer.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                serving.open.fetch_add(1, Ordering::SeqCst);
                let peer = serving.clone();
                tokio::spawn(async move {
                    peer.serve(socket).await;
                    peer.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        peer
    }

    pub fn set(&self, script: impl Fn(usize) -> Fault + Send + Sync + 'static) {
        let seen = self.requests.lock().unwrap().len();
        *self.script.lock().unwrap() = (seen, Arc::new(script));
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits (bounded) until every connection is closed: a client that stopped reading a
    /// body but kept its connection would hold one open for good.
    pub async fn all_closed(&self) {
        for _ in 0..300 {
            if self.open.load(Ordering::SeqCst) == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the client kept a connection to a misbehaving peer open");
    }

    async fn serve(&self, mut socket: TcpStream) {
        let Some(request) = read_request(&mut socket).await else {
            return;
        };
        let fault = {
            let mut requests = self.requests.lock().unwrap();
            requests.push(request);
            let (since, script) = self.script.lock().unwrap().clone();
            script(requests.len() - since)
        };
        let _ = self.misbehave(&mut socket, fault).await;
    }

    async fn misbehave(&self, socket: &mut TcpStream, fault: Fault) -> std::io::Result<()> {
        let head = |status: u16, framing: &str| {
            format!("HTTP/1.1 {status} Whatever\r\ncontent-type: application/json\r\n{framing}\r\n")
        };
        match fault {
            Fault::Answer(status, extra, body) => {
                let framing = format!(
                    "content-length: {}\r\nconnection: close\r\n{extra}",
                    body.len()
                );
                socket.write_all(head(status, &framing).as_bytes()).await?;
                socket.write_all(body.as_bytes()).await?;
                self.written.fetch_add(body.len() as u64, Ordering::SeqCst);
                socket.shutdown().await
            }
            Fault::Huge(status, framing) => {
                let framing = match framing {
                    Framing::Length => format!("content-length: {GIB}\r\n"),
                    Framing::Chunked => "transfer-encoding: chunked\r\n".into(),
                    Framing::Close => "connection: close\r\n".into(),
                };
                socket.write_all(head(status, &framing).as_bytes()).await?;
                let block = vec![b' '; 64 << 10];
                let mut sent = 0;
                while sent < GIB {
                    if framing.contains("chunked") {
                        socket
                            .write_all(format!("{:x}\r\n", block.len()).as_bytes())
                            .await?;
                    }
                    socket.write_all(&block).await?;
                    if framing.contains("chunked") {
                        socket.write_all(b"\r\n").await?;
                    }
                    sent += block.len() as u64;
                    self.written.fetch_add(block.len() as u64, Ordering::SeqCst);
                }
                Ok(())
            }
            Fault::Trickle(status) => {
                let framing = "transfer-encoding: chunked\r\n";
                socket.write_all(head(status, framing).as_bytes()).await?;
                loop {
                    socket.write_all(b"1\r\n \r\n").await?;
                    self.written.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            Fault::HangAfterHeaders(status) => {
                socket
                    .write_all(head(status, "content-length: 1000\r\n").as_bytes())
                    .await?;
                wait_for_close(socket).await
            }
            Fault::HangBeforeHeaders => wait_for_close(socket).await,
            Fault::ResetMidBody(status) => {
                socket
                    .write_all(head(status, "content-length: 1000\r\n").as_bytes())
                    .await?;
                socket.write_all(&[b' '; 100]).await?;
                self.written.fetch_add(100, Ordering::SeqCst);
                // Sequencing, not a measure: the client reads the head before the reset.
                tokio::time::sleep(Duration::from_millis(300)).await;
                socket.set_zero_linger()
            }
            Fault::ResetBeforeHeaders => socket.set_zero_linger(),
        }
    }
}

/// Reads until the client closes its side (or fails).
async fn wait_for_close(socket: &mut TcpStream) -> std::io::Result<()> {
    let mut buf = [0u8; 1024];
    while socket.read(&mut buf).await? > 0 {}
    Ok(())
}

/// One HTTP/1.1 request: head, then a Content-Length body.
async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let path = lines.next()?.split_whitespace().nth(1)?.to_string();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .get("content-length")
        .map_or(0, |v| v.parse().unwrap());
    while buf.len() < head_end + len {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..head_end + len]).into_owned();
    Some(Request {
        path,
        headers,
        body,
    })
}
