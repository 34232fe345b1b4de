//! Test support: a client HTTP/2 connection written frame by frame, for what no client library
//! sends: many streams opened and left open, responses never read. Frames are queued to a
//! writer thread; a reader thread reads everything the server sends (so its writes never
//! block), acknowledges its SETTINGS and PINGs, tracks the connection's flow-control window,
//! and counts RST_STREAM and GOAWAY. It never opens the server's flow-control window on its
//! own (no `WINDOW_UPDATE` unless [`RawConnection::open_window`] is called), so a response
//! past 64 KiB stalls. Used by the CLI's `attacks::` tests and elastic's rendezvous tests.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// HTTP/2's client connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const ACK: u8 = 0x1;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
/// SETTINGS parameters.
const MAX_CONCURRENT_STREAMS: u16 = 0x3;
const INITIAL_WINDOW_SIZE: u16 = 0x4;
/// HTTP/2's initial flow-control window, of the connection and of each stream.
const DEFAULT_WINDOW: i64 = 65_535;
/// Bytes queued to the writer past which [`RawConnection::send`] waits.
const MAX_QUEUED: usize = 1 << 20;

/// Appends one frame to `out`.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(payload.len()).expect("a frame's payload fits 24 bits");
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// An HPACK header block of literal fields without indexing, new names, no Huffman coding.
fn header_block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in fields {
        block.push(0x00);
        for text in [name, value] {
            // A 7-bit length prefix: one byte holds lengths below 127.
            block.push(u8::try_from(text.len()).ok().filter(|&n| n < 127).unwrap());
            block.extend_from_slice(text.as_bytes());
        }
    }
    block
}

/// The header block of a gRPC call to `path` on `authority`.
pub fn grpc_request_headers(authority: &str, path: &str) -> Vec<u8> {
    header_block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", authority),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ])
}

/// Appends a HEADERS frame (the whole block, stream left open) and a DATA frame (stream left
/// open) opening stream `stream`.
pub fn open_stream(stream: u32, headers: &[u8], data: &[u8], out: &mut Vec<u8>) {
    frame(HEADERS, END_HEADERS, stream, headers, out);
    frame(DATA, 0, stream, data, out);
}

/// Appends a whole call on stream `stream`: a HEADERS frame, then a DATA frame of `data` that
/// ends the stream.
pub fn call(stream: u32, headers: &[u8], data: &[u8], out: &mut Vec<u8>) {
    frame(HEADERS, END_HEADERS, stream, headers, out);
    frame(DATA, END_STREAM, stream, data, out);
}

/// `message` as a gRPC message: not compressed, its 4-byte length, then its bytes.
pub fn grpc_message(message: &[u8]) -> Vec<u8> {
    let len = u32::try_from(message.len()).expect("a message fits 32 bits");
    let mut data = vec![0];
    data.extend_from_slice(&len.to_be_bytes());
    data.extend_from_slice(message);
    data
}

/// What the server sent on a [`RawConnection`], as counted by its reader.
#[derive(Debug, Clone, Default)]
pub struct Received {
    /// The error code and debug data of the server's GOAWAY, if it sent one.
    pub goaway: Option<(u32, String)>,
    /// RST_STREAM frames received.
    pub rst_streams: u64,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, if it set one.
    pub max_concurrent_streams: Option<u32>,
    /// The connection ended (EOF or an error) while we still read it.
    pub closed: bool,
}

/// State the reader shares with the caller.
#[derive(Default)]
struct Shared {
    received: Mutex<Received>,
    /// The connection's send window left, in bytes.
    window: AtomicI64,
    /// The server's initial window of each stream.
    stream_window: AtomicI64,
    /// Bytes queued to the writer and not yet written.
    queued: AtomicUsize,
    /// Bytes read from the server.
    read: AtomicU64,
}

/// A client HTTP/2 connection driven frame by frame (see the module docs). Dropping it closes
/// the socket.
pub struct RawConnection {
    socket: TcpStream,
    to_writer: Option<Sender<Vec<u8>>>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl RawConnection {
    /// Connects to `addr` and sends the preface and an empty SETTINGS frame.
    pub fn open(addr: SocketAddr) -> std::io::Result<Self> {
        let socket = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        socket.set_nodelay(true)?;
        let shared = Arc::new(Shared {
            window: AtomicI64::new(DEFAULT_WINDOW),
            stream_window: AtomicI64::new(DEFAULT_WINDOW),
            ..Shared::default()
        });
        let (to_writer, queue) = channel::<Vec<u8>>();
        let writer = {
            let mut socket = socket.try_clone()?;
            let shared = shared.clone();
            std::thread::spawn(move || {
                for bytes in queue {
                    if socket.write_all(&bytes).is_err() {
                        return;
                    }
                    shared.queued.fetch_sub(bytes.len(), Ordering::Relaxed);
                }
            })
        };
        let reader = {
            let socket = socket.try_clone()?;
            let (shared, to_writer) = (shared.clone(), to_writer.clone());
            std::thread::spawn(move || read_frames(socket, &shared, &to_writer))
        };
        let connection = Self {
            socket,
            to_writer: Some(to_writer),
            shared,
            threads: vec![writer, reader],
        };
        let mut start = PREFACE.to_vec();
        frame(SETTINGS, 0, 0, &[], &mut start);
        connection.send(start);
        Ok(connection)
    }

    /// Queues `bytes` to be written; first waits while more than 1 MiB is queued (the
    /// server reads slower than we write), unless the connection is closed.
    pub fn send(&self, bytes: Vec<u8>) {
        while self.shared.queued.load(Ordering::Relaxed) > MAX_QUEUED && !self.received().closed {
            std::thread::sleep(Duration::from_millis(1));
        }
        if let Some(to_writer) = &self.to_writer {
            queue(&self.shared, to_writer, bytes);
        }
    }

    /// Takes `n` bytes of the send window (the connection's, and a fresh stream's), or
    /// returns false and takes nothing if either has less.
    pub fn take_window(&self, n: usize) -> bool {
        let n = n as i64;
        if self.shared.stream_window.load(Ordering::Relaxed) < n {
            return false;
        }
        self.shared
            .window
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                (left >= n).then_some(left - n)
            })
            .is_ok()
    }

    /// Opens the server's flow-control window by `increment` bytes, the connection's and
    /// stream `stream`'s (`WINDOW_UPDATE` on both).
    pub fn open_window(&self, stream: u32, increment: u32) {
        let mut update = Vec::new();
        for on in [0, stream] {
            frame(WINDOW_UPDATE, 0, on, &increment.to_be_bytes(), &mut update);
        }
        self.send(update);
    }

    /// What the server has sent so far.
    pub fn received(&self) -> Received {
        self.shared.received.lock().unwrap().clone()
    }

    /// Bytes read from the server so far.
    pub fn bytes_read(&self) -> u64 {
        self.shared.read.load(Ordering::Relaxed)
    }
}

impl Drop for RawConnection {
    /// Closes the connection (a blocked write fails, the reader sees the end) and waits for
    /// its threads.
    fn drop(&mut self) {
        self.to_writer = None;
        let _ = self.socket.shutdown(Shutdown::Both);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Hands `bytes` to the writer thread, counted as queued until written.
fn queue(shared: &Shared, to_writer: &Sender<Vec<u8>>, bytes: Vec<u8>) {
    shared.queued.fetch_add(bytes.len(), Ordering::Relaxed);
    let _ = to_writer.send(bytes);
}

/// The reader thread: every frame the server sends, until the connection ends.
fn read_frames(mut socket: TcpStream, shared: &Shared, to_writer: &Sender<Vec<u8>>) {
    let mut header = [0u8; 9];
    let mut payload = Vec::new();
    while socket.read_exact(&mut header).is_ok() {
        let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let (kind, flags) = (header[3], header[4]);
        let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & !(1 << 31);
        payload.resize(len, 0);
        if socket.read_exact(&mut payload).is_err() {
            break;
        }
        shared.read.fetch_add(9 + len as u64, Ordering::Relaxed);
        let word = |at: usize| {
            payload
                .get(at..at + 4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        match kind {
            SETTINGS if flags & ACK == 0 => {
                for setting in payload.chunks_exact(6) {
                    let id = u16::from_be_bytes([setting[0], setting[1]]);
                    let value =
                        u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
                    match id {
                        MAX_CONCURRENT_STREAMS => {
                            shared.received.lock().unwrap().max_concurrent_streams = Some(value);
                        }
                        INITIAL_WINDOW_SIZE => {
                            shared.stream_window.store(value.into(), Ordering::Relaxed);
                        }
                        _ => {}
                    }
                }
                let mut ack = Vec::new();
                frame(SETTINGS, ACK, 0, &[], &mut ack);
                queue(shared, to_writer, ack);
            }
            PING if flags & ACK == 0 => {
                let mut pong = Vec::new();
                frame(PING, ACK, 0, &payload, &mut pong);
                queue(shared, to_writer, pong);
            }
            WINDOW_UPDATE if stream == 0 => {
                let increment = word(0).unwrap_or(0) & !(1 << 31);
                shared.window.fetch_add(increment.into(), Ordering::Relaxed);
            }
            RST_STREAM => shared.received.lock().unwrap().rst_streams += 1,
            GOAWAY => {
                let debug = String::from_utf8_lossy(payload.get(8..).unwrap_or_default());
                shared.received.lock().unwrap().goaway = word(4).map(|code| (code, debug.into()));
            }
            _ => {}
        }
    }
    shared.received.lock().unwrap().closed = true;
}
