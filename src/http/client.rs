//! One HTTP/1.1 exchange over a `TcpStream`: connect with a deadline, write the request, read
//! the head (skipping interim 1xx replies) and then the body piece by piece, framed by
//! `Content-Length` or chunked encoding (trailers read and dropped), never by waiting for the
//! connection to close when either is given. Every read waits at most until the caller's
//! deadline (the socket read timeout is set from it before each read), every line and the
//! whole body are bounded.
//!
//! With the cargo feature `https`, a [`Dial`] to an `https://` URL wraps the socket in TLS
//! (see [`super::tls`]) behind the same [`Conn`]: same timeouts, bounds and framing.
//!
//! Limits: TLS only with the `https` feature (no HTTP/2, no proxies, no compression); one exchange per
//! connection (`Connection: close` is sent; a server that keeps the socket open is framed
//! and then dropped, so no keep-alive reuse); redirects are returned, never followed.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub use super::message::Framing;
use super::message::HeaderError;
use super::message::{
    FramingError, HeadError, HeadLimits, Headers, Method, ResponseHead, framing, parse_field_line,
    parse_status_line,
};
use super::tls::{Tls, TlsError, TlsOptions};
use super::url::{HttpUrl, ResolveError, Scheme, UrlError};

const READ_CHUNK: usize = 16 * 1024;
/// Bytes of a chunk-size line (`1a2b;ext=...`).
const MAX_CHUNK_LINE: usize = 4 * 1024;
/// Interim (1xx) replies skipped before giving up.
const MAX_INTERIM: usize = 8;

/// Why an exchange failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// No connection: refused, unreachable, reset.
    Connect(io::ErrorKind),
    /// The deadline passed (connecting, writing or waiting for bytes).
    TimedOut,
    /// The connection failed or closed mid-exchange.
    Io(io::ErrorKind),
    /// The server closed the connection before the head or the framed body was complete.
    ClosedEarly,
    Head(HeadError),
    Framing(FramingError),
    /// A chunk-size line that is not hex, or a chunk not followed by CRLF.
    BadChunk,
    /// The body is longer than the bound.
    BodyTooLarge(u64),
    /// A `Content-Encoding` other than identity (no decompression here).
    ContentEncoding(String),
    Url(UrlError),
    Header(HeaderError),
    Resolve(ResolveError),
    /// TLS could not be set up, or the handshake failed (`https` feature). Boxed: errors
    /// travel in results and this one carries text.
    Tls(Box<TlsError>),
}

impl HttpError {
    /// A stable code for records.
    pub fn code(&self) -> &'static str {
        match self {
            HttpError::Connect(_) => "connect",
            HttpError::TimedOut => "timed_out",
            HttpError::Io(_) => "io",
            HttpError::ClosedEarly => "closed_early",
            HttpError::Head(HeadError::StatusLine) => "bad_status_line",
            HttpError::Head(HeadError::FieldLine) => "bad_header_line",
            HttpError::Head(HeadError::LineTooLong) => "header_line_too_long",
            HttpError::Head(HeadError::HeadTooLarge) => "head_too_large",
            HttpError::Head(HeadError::TooManyHeaders) => "too_many_headers",
            HttpError::Framing(FramingError::TransferEncoding(_)) => "transfer_encoding",
            HttpError::Framing(FramingError::ContentLength) => "bad_content_length",
            HttpError::BadChunk => "bad_chunk",
            HttpError::BodyTooLarge(_) => "body_too_large",
            HttpError::ContentEncoding(_) => "content_encoding",
            HttpError::Url(_) => "url",
            HttpError::Header(_) => "header",
            HttpError::Resolve(_) => "resolve",
            HttpError::Tls(_) => "tls",
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Connect(k) => write!(
                f,
                "cannot connect to the server ({k}): check that it is running and the URL's host and port"
            ),
            HttpError::TimedOut => f.write_str(
                "the server did not answer in time: raise --timeout, or check that the URL points to an MCP endpoint",
            ),
            HttpError::Io(k) => write!(f, "the connection to the server failed ({k})"),
            HttpError::ClosedEarly => {
                f.write_str("the server closed the connection before its reply was complete")
            }
            HttpError::Head(e) => write!(f, "{e}"),
            HttpError::Framing(FramingError::TransferEncoding(c)) => write!(
                f,
                "the server used transfer coding {:?}, which mcp-witness does not decode (only chunked)",
                crate::inert::inert(c)
            ),
            HttpError::Framing(FramingError::ContentLength) => {
                f.write_str("the server's Content-Length is malformed or contradictory")
            }
            HttpError::BadChunk => f.write_str("the server's chunked body is malformed"),
            HttpError::BodyTooLarge(n) => {
                write!(f, "the server's reply body is over the bound of {n} bytes")
            }
            HttpError::ContentEncoding(c) => write!(
                f,
                "the server compressed its reply ({:?}) although mcp-witness asked for none; it cannot be read",
                crate::inert::inert(c)
            ),
            HttpError::Url(e) => write!(f, "{e}"),
            HttpError::Header(e) => write!(f, "{e}"),
            HttpError::Resolve(ResolveError::NoAddress) => {
                f.write_str("the URL's host name has no address: check the name")
            }
            HttpError::Resolve(ResolveError::Failed(k)) => {
                write!(f, "cannot resolve the URL's host name ({k}): check the name and DNS")
            }
            HttpError::Resolve(ResolveError::TimedOut) => f.write_str(
                "resolving the URL's host name took too long: check DNS, or use an IP address",
            ),
            HttpError::Tls(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for HttpError {}

impl From<HeadError> for HttpError {
    fn from(e: HeadError) -> Self {
        HttpError::Head(e)
    }
}

/// What remains before `deadline`, or `TimedOut`.
fn remaining(deadline: Instant) -> Result<Duration, HttpError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(HttpError::TimedOut)
    } else {
        Ok(left)
    }
}

/// Where to connect: the resolved addresses and, for `https://`, the TLS setup.
#[derive(Debug, Clone)]
pub struct Dial {
    pub addrs: Vec<SocketAddr>,
    pub tls: Option<Tls>,
}

impl Dial {
    /// Plain TCP to `addrs`.
    pub fn plain(addrs: Vec<SocketAddr>) -> Dial {
        Dial { addrs, tls: None }
    }

    /// Resolves `url`'s host (before `deadline`) and, for `https://`, sets TLS up with `tls`.
    pub fn resolve(url: &HttpUrl, tls: &TlsOptions, deadline: Instant) -> Result<Dial, HttpError> {
        let addrs = url.resolve(deadline).map_err(HttpError::Resolve)?;
        let tls = match url.scheme {
            Scheme::Http => None,
            #[cfg(feature = "https")]
            Scheme::Https => Some(Tls::new(&url.host, tls).map_err(|e| HttpError::Tls(Box::new(e)))?),
            #[cfg(not(feature = "https"))]
            Scheme::Https => {
                let _ = tls;
                return Err(HttpError::Url(UrlError::HttpsNeedsFeature));
            }
        };
        Ok(Dial { addrs, tls })
    }
}

/// The connection's byte stream: the socket, or TLS over it.
enum Stream {
    Plain(TcpStream),
    #[cfg(feature = "https")]
    Tls(Box<super::tls::TlsStream>),
}

impl Stream {
    fn sock(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            #[cfg(feature = "https")]
            Stream::Tls(t) => &t.sock.sock,
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            #[cfg(feature = "https")]
            Stream::Tls(t) => t.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            #[cfg(feature = "https")]
            Stream::Tls(t) => t.write(buf).and_then(|n| t.flush().map(|()| n)),
        }
    }

    /// Bounds the next read: plain, the socket's timeout; TLS, the deadline of every socket
    /// read that one TLS read makes.
    fn set_read_timeout(&mut self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.set_read_timeout(d),
            #[cfg(feature = "https")]
            Stream::Tls(t) => {
                t.sock.deadline = d.map(|d| Instant::now() + d);
                Ok(())
            }
        }
    }

    fn set_write_timeout(&mut self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.set_write_timeout(d),
            #[cfg(feature = "https")]
            Stream::Tls(t) => {
                t.sock.deadline = d.map(|d| Instant::now() + d);
                Ok(())
            }
        }
    }

    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.sock().peer_addr()
    }

    fn try_clone(&self) -> io::Result<TcpStream> {
        self.sock().try_clone()
    }

    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.sock().shutdown(how)
    }
}

/// An I/O error of a read or write: a TLS failure, a timeout, or the connection's.
fn io_error(e: &io::Error) -> HttpError {
    #[cfg(feature = "https")]
    if let Some(t) = super::tls::classify(e) {
        return HttpError::Tls(Box::new(t));
    }
    if is_timeout(e) {
        HttpError::TimedOut
    } else {
        HttpError::Io(e.kind())
    }
}

/// One connection, with its read buffer.
pub struct Conn {
    stream: Stream,
    buf: Vec<u8>,
    pos: usize,
    /// Bytes received, head included.
    pub received: u64,
    /// The SHA-256 of the server's leaf certificate (DER), for TLS connections.
    pub certificate_sha256: Option<[u8; 32]>,
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conn")
            .field("peer", &self.stream.peer_addr().ok())
            .field("received", &self.received)
            .finish()
    }
}

impl Conn {
    /// Connects to the first address that answers before `deadline` (and, for TLS,
    /// completes the handshake before it).
    pub fn open(dial: &Dial, deadline: Instant) -> Result<Conn, HttpError> {
        let mut last = HttpError::Connect(io::ErrorKind::AddrNotAvailable);
        for addr in &dial.addrs {
            let left = remaining(deadline)?;
            match TcpStream::connect_timeout(addr, left) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    let (stream, certificate_sha256) = match &dial.tls {
                        None => (Stream::Plain(stream), None),
                        #[cfg(feature = "https")]
                        Some(tls) => {
                            let mut t = tls
                                .start(stream, deadline)
                                .map_err(|e| HttpError::Tls(Box::new(e)))?;
                            let digest = super::tls::handshake(&mut t).map_err(|e| match io_error(&e) {
                                HttpError::Io(k) => {
                                    HttpError::Tls(Box::new(TlsError::Handshake(k.to_string())))
                                }
                                other => other,
                            })?;
                            (Stream::Tls(Box::new(t)), digest)
                        }
                        #[cfg(not(feature = "https"))]
                        Some(never) => match *never {},
                    };
                    return Ok(Conn {
                        stream,
                        buf: Vec::new(),
                        pos: 0,
                        received: 0,
                        certificate_sha256,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::TimedOut => last = HttpError::TimedOut,
                Err(e) => last = HttpError::Connect(e.kind()),
            }
        }
        Err(last)
    }

    /// A handle that can shut the socket down from another thread (wakes a blocked read).
    pub fn shutdown_handle(&self) -> io::Result<TcpStream> {
        self.stream.try_clone()
    }

    /// Writes all of `bytes` before `deadline`.
    pub fn write_all(&mut self, bytes: &[u8], deadline: Instant) -> Result<(), HttpError> {
        let mut rest = bytes;
        while !rest.is_empty() {
            self.stream
                .set_write_timeout(Some(remaining(deadline)?))
                .map_err(|e| HttpError::Io(e.kind()))?;
            match self.stream.write(rest) {
                Ok(0) => return Err(HttpError::Io(io::ErrorKind::WriteZero)),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(&e)),
            }
        }
        Ok(())
    }

    /// Reads more bytes into the buffer; `Ok(0)` at end of stream.
    fn fill(&mut self, deadline: Instant) -> Result<usize, HttpError> {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        let start = self.buf.len();
        self.buf.resize(start + READ_CHUNK, 0);
        loop {
            let left = match remaining(deadline) {
                Ok(l) => l,
                Err(e) => {
                    self.buf.truncate(start);
                    return Err(e);
                }
            };
            if let Err(e) = self.stream.set_read_timeout(Some(left)) {
                self.buf.truncate(start);
                return Err(HttpError::Io(e.kind()));
            }
            match self.stream.read(&mut self.buf[start..]) {
                Ok(n) => {
                    self.buf.truncate(start + n);
                    self.received += n as u64;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buf.truncate(start);
                    return Err(io_error(&e));
                }
            }
        }
    }

    /// One line (without its CRLF or LF), at most `max` bytes; `Err(over)` past it.
    fn read_line(&mut self, max: usize, over: HttpError, deadline: Instant) -> Result<Vec<u8>, HttpError> {
        let mut line = Vec::new();
        loop {
            let avail = &self.buf[self.pos..];
            if let Some(i) = avail.iter().position(|b| *b == b'\n') {
                if line.len() + i > max + 1 {
                    return Err(over);
                }
                line.extend_from_slice(&avail[..i]);
                self.pos += i + 1;
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            if line.len() + avail.len() > max + 1 {
                return Err(over);
            }
            line.extend_from_slice(avail);
            self.pos = self.buf.len();
            if self.fill(deadline)? == 0 {
                return Err(HttpError::ClosedEarly);
            }
        }
    }

    /// Reads a response head, skipping interim 1xx replies.
    pub fn read_head(&mut self, limits: HeadLimits, deadline: Instant) -> Result<ResponseHead, HttpError> {
        for _ in 0..MAX_INTERIM {
            let mut used = 0usize;
            let mut line = |conn: &mut Conn| -> Result<Vec<u8>, HttpError> {
                let budget = limits.max_line.min(limits.max_head.saturating_sub(used));
                let over = if budget < limits.max_line {
                    HeadError::HeadTooLarge
                } else {
                    HeadError::LineTooLong
                };
                let l = conn.read_line(budget, HttpError::Head(over), deadline)?;
                used += l.len() + 2;
                if used > limits.max_head {
                    return Err(HttpError::Head(HeadError::HeadTooLarge));
                }
                Ok(l)
            };
            let status = parse_status_line(&line(self)?)?;
            let mut headers = Vec::new();
            loop {
                let l = line(self)?;
                if l.is_empty() {
                    break;
                }
                if headers.len() == limits.max_headers {
                    return Err(HttpError::Head(HeadError::TooManyHeaders));
                }
                headers.push(parse_field_line(&l)?);
            }
            // 101 would switch protocols: not interim for us, and not HTTP any more.
            if (100..=199).contains(&status) && status != 101 {
                continue;
            }
            return Ok(ResponseHead {
                status,
                headers: Headers(headers),
            });
        }
        Err(HttpError::Head(HeadError::StatusLine))
    }

    /// A reader for the body the head announces (a reply to `method`), at most `max` bytes.
    pub fn body(self, head: &ResponseHead, method: Method, max: u64) -> Result<BodyReader, HttpError> {
        let framing = framing(head, Some(method)).map_err(HttpError::Framing)?;
        let state = match framing {
            Framing::None | Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::ChunkSize,
            Framing::Close => State::Close,
        };
        if let Framing::Length(n) = framing
            && n > max
        {
            return Err(HttpError::BodyTooLarge(max));
        }
        Ok(BodyReader {
            conn: self,
            framing,
            state,
            max,
            read: 0,
        })
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Length(u64),
    ChunkSize,
    Chunk(u64),
    ChunkEnd,
    Trailers,
    Close,
    Done,
}

/// A response body being read.
#[derive(Debug)]
pub struct BodyReader {
    conn: Conn,
    pub framing: Framing,
    state: State,
    max: u64,
    read: u64,
}

impl BodyReader {
    /// The next piece of the body, `Ok(None)` at its framed end.
    pub fn next_piece(&mut self, deadline: Instant) -> Result<Option<Vec<u8>>, HttpError> {
        loop {
            match self.state {
                State::Done => return Ok(None),
                State::Length(0) => {
                    self.state = State::Done;
                }
                State::Length(n) => {
                    let piece = self.take(n, deadline, true)?;
                    self.state = State::Length(n - piece.len() as u64);
                    return self.count(piece).map(Some);
                }
                State::ChunkSize => {
                    let line = self
                        .conn
                        .read_line(MAX_CHUNK_LINE, HttpError::BadChunk, deadline)?;
                    let size = chunk_size(&line).ok_or(HttpError::BadChunk)?;
                    self.state = if size == 0 {
                        State::Trailers
                    } else {
                        State::Chunk(size)
                    };
                }
                State::Chunk(n) => {
                    let piece = self.take(n, deadline, true)?;
                    let left = n - piece.len() as u64;
                    self.state = if left == 0 {
                        State::ChunkEnd
                    } else {
                        State::Chunk(left)
                    };
                    return self.count(piece).map(Some);
                }
                State::ChunkEnd => {
                    let line = self.conn.read_line(2, HttpError::BadChunk, deadline)?;
                    if !line.is_empty() {
                        return Err(HttpError::BadChunk);
                    }
                    self.state = State::ChunkSize;
                }
                State::Trailers => {
                    // Trailer fields are read and dropped, bounded like a head.
                    let limits = HeadLimits::default();
                    let mut used = 0usize;
                    loop {
                        let line = self.conn.read_line(
                            limits.max_line,
                            HttpError::Head(HeadError::LineTooLong),
                            deadline,
                        )?;
                        if line.is_empty() {
                            break;
                        }
                        used += line.len() + 2;
                        if used > limits.max_head {
                            return Err(HttpError::Head(HeadError::HeadTooLarge));
                        }
                    }
                    self.state = State::Done;
                }
                State::Close => {
                    let piece = self.take(u64::MAX, deadline, false)?;
                    if piece.is_empty() {
                        self.state = State::Done;
                        return Ok(None);
                    }
                    return self.count(piece).map(Some);
                }
            }
        }
    }

    /// The whole rest of the body.
    pub fn read_all(&mut self, deadline: Instant) -> Result<Vec<u8>, HttpError> {
        let mut out = Vec::new();
        while let Some(piece) = self.next_piece(deadline)? {
            out.extend_from_slice(&piece);
        }
        Ok(out)
    }

    /// Up to `max` body bytes: buffered first, else one read. Empty only at end of stream
    /// when `eof_ok`; else end of stream is `ClosedEarly`.
    fn take(&mut self, max: u64, deadline: Instant, framed: bool) -> Result<Vec<u8>, HttpError> {
        if self.conn.pos == self.conn.buf.len() && self.conn.fill(deadline)? == 0 {
            return if framed {
                Err(HttpError::ClosedEarly)
            } else {
                Ok(Vec::new())
            };
        }
        let avail = &self.conn.buf[self.conn.pos..];
        let n = avail.len().min(usize::try_from(max).unwrap_or(usize::MAX));
        let piece = avail[..n].to_vec();
        self.conn.pos += n;
        Ok(piece)
    }

    fn count(&mut self, piece: Vec<u8>) -> Result<Vec<u8>, HttpError> {
        self.read += piece.len() as u64;
        if self.read > self.max {
            return Err(HttpError::BodyTooLarge(self.max));
        }
        Ok(piece)
    }

    /// Body bytes delivered so far.
    pub fn bytes(&self) -> u64 {
        self.read
    }

    /// Whether the framed end was reached.
    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Closes the connection (both directions), whether or not the body was read to its end.
    pub fn close(self) {
        let _ = self.conn.stream.shutdown(Shutdown::Both);
    }
}

/// The size of a chunk-size line (`1A;name=value`), or `None` if malformed.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let end = line
        .iter()
        .position(|b| *b == b';' || *b == b' ' || *b == b'\t')
        .unwrap_or(line.len());
    let hex = &line[..end];
    if hex.is_empty() || hex.len() > 15 || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
}

/// A complete exchange: status, head, whole body (bounded). For short requests (DELETE,
/// tests); streaming replies use [`Conn`] and [`BodyReader`] directly.
#[derive(Debug)]
pub struct Response {
    pub head: ResponseHead,
    pub framing: Framing,
    pub body: Vec<u8>,
}

/// Connects, writes `request`, reads the head and the body (at most `max_body` bytes; a
/// longer body is cut there and the connection dropped), all before `deadline`.
pub fn exchange(
    dial: &Dial,
    method: Method,
    request: &[u8],
    limits: HeadLimits,
    max_body: u64,
    deadline: Instant,
) -> Result<Response, HttpError> {
    let mut conn = Conn::open(dial, deadline)?;
    conn.write_all(request, deadline)?;
    let head = conn.read_head(limits, deadline)?;
    let mut body = conn.body(&head, method, u64::MAX)?;
    let framing = body.framing;
    let mut bytes = Vec::new();
    while let Some(piece) = body.next_piece(deadline)? {
        let room = usize::try_from(max_body)
            .unwrap_or(usize::MAX)
            .saturating_sub(bytes.len());
        bytes.extend_from_slice(&piece[..piece.len().min(room)]);
        if piece.len() >= room {
            break;
        }
    }
    body.close();
    Ok(Response {
        head,
        framing,
        body: bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_size_lines_take_hex_and_ignore_extensions() {
        assert_eq!(chunk_size(b"1a"), Some(26));
        assert_eq!(chunk_size(b"0"), Some(0));
        assert_eq!(chunk_size(b"FF;name=value"), Some(255));
        assert_eq!(chunk_size(b"10 ; x"), Some(16));
        assert_eq!(chunk_size(b""), None);
        assert_eq!(chunk_size(b"-1"), None);
        assert_eq!(chunk_size(b"0x10"), None);
        assert_eq!(chunk_size(b"ffffffffffffffffff"), None);
    }
}
