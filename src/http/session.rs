//! The Streamable HTTP transport as a wire: [`HttpWire`] POSTs each JSON-RPC message, reads
//! every reply stream (an `application/json` body, a `text/event-stream`, or a bare 202) on a
//! reader thread of its own, and feeds what the server said into one bounded channel, so
//! [`HttpWire::next`] waits on all open streams at once and yields messages in arrival order.
//! It carries `Mcp-Session-Id` (taken from the initialize reply) and `MCP-Protocol-Version`
//! (once the caller sets it) on every later request, sends `DELETE` at the end, and keeps the
//! HTTP facts a record needs: per request the method, status, content type and framing, the
//! session id's presence and length (never its value), redirects (redacted, not followed),
//! the DELETE status.
//!
//! Limits: no GET stream (server-initiated messages outside a reply are not read), no
//! resumption (`Last-Event-ID`), no retry after `retry:`, no HTTP+SSE (2024-11-05) fallback,
//! no TLS, no HTTP/2, no proxies, no compression, no keep-alive reuse (one connection per
//! request). A reply stream is read until our request's reply arrives, its framed end, the
//! stream deadline (`stream_timeout`) or `close`, whichever comes first. User header values
//! are secrets: they reach the wire only, never `Debug`, errors or facts (names only).

use std::fmt;
use std::io;
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::client::{Conn, Dial, HttpError, exchange};
use super::message::{Framing, HeadLimits, Method, Request, ResponseHead, SecretHeader};
use super::sse::{SseItem, SseParser, SseStats};
use super::url::{HttpUrl, redact_reference};
use crate::wire::framing::{LineKind, Noise, decode};

const ACCEPT: &str = "application/json, text/event-stream";
/// The longest session id kept (the spec bounds nothing; a real one is 32-36 bytes).
const MAX_SESSION_ID: usize = 1024;
/// Bytes of server-chosen header text (content type, challenge) kept.
const MAX_HEADER_TEXT: usize = 1024;

/// Bounds and waits of one wire.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub head: HeadLimits,
    /// An `application/json` reply body.
    pub max_body: u64,
    /// All bytes of one `text/event-stream` reply.
    pub max_stream: u64,
    /// The data of one SSE event (and, plus a little, one SSE line).
    pub max_event: usize,
    /// Bytes kept of a non-2xx body (the rest is not read).
    pub max_error_body: usize,
    /// Bytes kept of a noise body or event.
    pub max_noise: usize,
    /// How long a reply stream may be read after its request was sent.
    pub stream_timeout: Duration,
    /// How long resolving the host may take.
    pub resolve_timeout: Duration,
    /// Events buffered before a reader waits for `next`.
    pub event_depth: usize,
    /// Exchanges recorded in the facts (later ones are counted only).
    pub max_exchanges: usize,
    /// Reply streams read at once (one thread each); a send past it is refused as `Full`.
    pub max_open_streams: usize,
    /// Roots for `https://` (`--cacert`).
    pub tls: super::tls::TlsOptions,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            head: HeadLimits::default(),
            max_body: 64 << 20,
            max_stream: 256 << 20,
            max_event: 64 << 20,
            max_error_body: 64 * 1024,
            max_noise: 4 * 1024,
            stream_timeout: Duration::from_secs(60),
            resolve_timeout: Duration::from_secs(10),
            event_depth: 16,
            max_exchanges: 256,
            max_open_streams: 32,
            tls: super::tls::TlsOptions::default(),
        }
    }
}

/// Something the server did, as the session sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireEvent {
    /// The bytes of one JSON object: a candidate JSON-RPC message.
    Message(Vec<u8>),
    /// A body or event that is not one JSON object (cut to `max_noise`), and why.
    Noise(Vec<u8>, Noise),
    /// An SSE event or a body over its bound; bytes seen.
    Oversize(usize),
    /// An SSE event of a type other than `message` (cut to `max_noise`).
    OtherEvent { event: String, data: Vec<u8> },
    /// A reply that was not 2xx.
    Status(HttpStatus),
    /// A reply stream that could not be read to its end.
    Broken {
        exchange: Option<usize>,
        error: HttpError,
    },
    /// The connection was refused, reset or closed before a reply.
    Gone {
        exchange: Option<usize>,
        kind: io::ErrorKind,
    },
}

/// A non-2xx reply: enough to classify it later (a 401 challenge, a 404 session, a 405).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpStatus {
    /// Index into [`HttpFacts::exchanges`], when recorded.
    pub exchange: Option<usize>,
    pub status: u16,
    pub content_type: Option<String>,
    /// At most `max_error_body` bytes of the body.
    pub body: Vec<u8>,
    /// The body was longer than what is kept (or broke off).
    pub body_cut: bool,
    /// Every `WWW-Authenticate` value, as sent.
    pub www_authenticate: Vec<String>,
    /// The redacted `Location`, for a redirect.
    pub location: Option<String>,
}

/// What became of a send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// Written; the reply will come through `next`. The index of its exchange in the facts.
    Posted { exchange: Option<usize> },
    /// No connection (refused, reset).
    Gone(io::ErrorKind),
    /// The deadline passed before the request was written.
    TimedOut,
    /// `https://`: TLS failed (certificate refused, handshake failed).
    TlsFailed(super::tls::TlsFailure),
    /// `close` has begun.
    Closed,
    /// `max_open_streams` replies are still being read: nothing was sent.
    Full,
}

/// The session id a reply carried: its shape, never its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SessionIdFact {
    pub length: usize,
    /// Only 0x21-0x7E, as the spec requires.
    pub visible_ascii: bool,
}

/// How reading a reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// The framed end of the body.
    Body,
    /// Our request's reply arrived; the rest of the stream was not waited for.
    Reply,
    /// The stream deadline passed.
    Deadline,
    /// The body went past what is kept (a non-2xx body): the rest was not read.
    Cut,
    /// The wire was closed (or dropped) first.
    Closed,
    /// A read or framing error (see `error`).
    Error,
}

/// One HTTP request and what came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Exchange {
    pub method: Method,
    /// The JSON-RPC method of our message, if it had one.
    pub rpc_method: Option<String>,
    pub status: Option<u16>,
    /// The server's `Content-Type`, cut to 1 KiB (server text: make it inert to print it).
    pub content_type: Option<String>,
    pub framing: Option<Framing>,
    /// The reply carried `Mcp-Session-Id`.
    pub session_id: Option<SessionIdFact>,
    /// A redirect's redacted `Location`.
    pub location: Option<String>,
    pub body_bytes: u64,
    pub sse: Option<SseStats>,
    pub ended: Option<Ended>,
    /// `HttpError::code` of what went wrong, if anything.
    pub error: Option<&'static str>,
}

/// A redirect seen (not followed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redirect {
    pub status: u16,
    pub location: Option<String>,
}

/// What the DELETE at the end did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// The server gave no session id: nothing to delete.
    NoSession,
    /// The status; 2xx and 405 (the server does not let clients end sessions) are accepted.
    Status(u16),
    Failed(HttpError),
}

impl DeleteOutcome {
    pub fn accepted(&self) -> bool {
        matches!(self, DeleteOutcome::NoSession)
            || matches!(self, DeleteOutcome::Status(s) if (200..300).contains(s) || *s == 405)
    }
}

/// The HTTP facts of a session, for the evidence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HttpFacts {
    pub exchanges: Vec<Exchange>,
    /// Exchanges beyond `max_exchanges`, not recorded.
    pub exchanges_dropped: u64,
    /// The session id given with the initialize reply.
    pub session_id: Option<SessionIdFact>,
    /// A later reply carried a different session id.
    pub session_id_changed: bool,
    pub redirects: Vec<Redirect>,
    pub delete_status: Option<u16>,
    /// `https://`: the SHA-256 of the server's leaf certificate (DER), first seen (boxed:
    /// the facts travel in error values).
    pub certificate_sha256: Option<Box<[u8; 32]>>,
}

/// How the session ended.
#[derive(Debug, Clone)]
pub struct SessionEnd {
    pub delete: DeleteOutcome,
    pub facts: HttpFacts,
    /// Reader threads still running when `close` returned (0 unless the deadline was hit).
    pub readers_left: usize,
}

#[derive(Debug, Default)]
struct State {
    session_id: Option<String>,
    facts: HttpFacts,
    closing: bool,
}

struct Reader {
    handle: JoinHandle<()>,
    socket: Option<TcpStream>,
}

/// A Streamable HTTP session with one MCP endpoint.
pub struct HttpWire {
    url: HttpUrl,
    dial: Dial,
    headers: Vec<SecretHeader>,
    options: HttpOptions,
    protocol_version: Option<String>,
    state: Arc<Mutex<State>>,
    tx: SyncSender<WireEvent>,
    rx: Option<Receiver<WireEvent>>,
    readers: Vec<Reader>,
}

impl fmt::Debug for HttpWire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpWire")
            .field("url", &self.url.redacted())
            .field(
                "header_names",
                &self.headers.iter().map(|h| h.name()).collect::<Vec<_>>(),
            )
            .field("protocol_version", &self.protocol_version)
            .field("readers", &self.readers.len())
            .finish_non_exhaustive()
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// The parts of our own message the wire needs: its method and, for a request, its id.
#[derive(serde::Deserialize)]
struct Peek {
    method: Option<String>,
    id: Option<serde_json::Value>,
}

/// The parts of a server message that tell whether it answers our request.
#[derive(serde::Deserialize)]
struct ReplyPeek {
    id: Option<serde_json::Value>,
    method: Option<serde::de::IgnoredAny>,
}

impl HttpWire {
    /// Checks the URL (plain http only here) and the user headers, and resolves the host.
    /// No connection is made yet: each `send` makes its own.
    pub fn connect(
        url: HttpUrl,
        headers: Vec<(String, String)>,
        options: HttpOptions,
    ) -> Result<HttpWire, HttpError> {
        url.require_plain().map_err(HttpError::Url)?;
        let headers = headers
            .iter()
            .map(|(n, v)| SecretHeader::new(n, v))
            .collect::<Result<Vec<_>, _>>()
            .map_err(HttpError::Header)?;
        let dial = Dial::resolve(&url, &options.tls, Instant::now() + options.resolve_timeout)?;
        let (tx, rx) = mpsc::sync_channel(options.event_depth.max(1));
        Ok(HttpWire {
            url,
            dial,
            headers,
            options,
            protocol_version: None,
            state: Arc::default(),
            tx,
            rx: Some(rx),
            readers: Vec::new(),
        })
    }

    /// From now on every request carries `MCP-Protocol-Version: version`. Ignored unless it is
    /// visible ASCII (it came from the server's initialize result).
    pub fn set_protocol_version(&mut self, version: &str) {
        if !version.is_empty() && version.len() <= 64 && version.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            self.protocol_version = Some(version.to_string());
        }
    }

    /// The redacted URL.
    pub fn url(&self) -> String {
        self.url.redacted()
    }

    /// The user header names (never their values), in order.
    pub fn header_names(&self) -> Vec<String> {
        self.headers.iter().map(|h| h.name().to_string()).collect()
    }

    /// Whether the server gave a session id.
    pub fn has_session(&self) -> bool {
        lock(&self.state).session_id.is_some()
    }

    /// A copy of the facts so far.
    pub fn facts(&self) -> HttpFacts {
        lock(&self.state).facts.clone()
    }

    fn request_bytes(&self, method: Method, body: Option<&[u8]>, extra: &[(&str, String)]) -> Vec<u8> {
        let session = lock(&self.state).session_id.clone();
        let mut fields: Vec<(&str, &str)> = Vec::new();
        if method != Method::Delete {
            fields.push(("Accept", ACCEPT));
        }
        if let Some(s) = &session {
            fields.push(("Mcp-Session-Id", s));
        }
        let own_version = extra
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("MCP-Protocol-Version"));
        if let Some(v) = self.protocol_version.as_ref().filter(|_| !own_version) {
            fields.push(("MCP-Protocol-Version", v));
        }
        for (n, v) in extra {
            fields.push((n, v));
        }
        Request {
            method,
            target: &self.url.target,
            host: &self.url.host_header(),
            fields: &fields,
            secrets: &self.headers,
            body: body.map(|b| ("application/json", b)),
        }
        .to_bytes()
    }

    fn record(&self, exchange: Exchange) -> Option<usize> {
        let mut st = lock(&self.state);
        if st.facts.exchanges.len() < self.options.max_exchanges {
            st.facts.exchanges.push(exchange);
            Some(st.facts.exchanges.len() - 1)
        } else {
            st.facts.exchanges_dropped += 1;
            None
        }
    }

    /// POSTs one JSON-RPC message, connecting and writing before `deadline`. The reply is read
    /// on a thread of its own and comes through [`HttpWire::next`].
    pub fn send(&mut self, message: Vec<u8>, deadline: Instant) -> Sent {
        self.send_with(message, &[], deadline)
    }

    /// [`HttpWire::send`] with more request headers (visible ASCII values only; others are
    /// dropped): the mirrored `Mcp-Method`/`Mcp-Name` of the 2026-07-28 era, and an
    /// `MCP-Protocol-Version` of this message that replaces the session's.
    pub fn send_with(&mut self, message: Vec<u8>, extra: &[(&str, String)], deadline: Instant) -> Sent {
        let extra: Vec<(&str, String)> = extra
            .iter()
            .filter(|(_, v)| v.len() <= 1024 && v.bytes().all(|b| (0x20..=0x7e).contains(&b)))
            .cloned()
            .collect();
        self.reap();
        if lock(&self.state).closing {
            return Sent::Closed;
        }
        if self.readers.len() >= self.options.max_open_streams {
            return Sent::Full;
        }
        let peek: Option<Peek> = serde_json::from_slice(&message).ok();
        let rpc_method = peek
            .as_ref()
            .and_then(|p| p.method.clone())
            .map(|m| m.chars().take(256).collect::<String>());
        // A request (method and id) has a reply to wait for; a notification or response none.
        let reply_id = peek
            .as_ref()
            .filter(|p| p.method.is_some())
            .and_then(|p| p.id.clone());
        let initialize = rpc_method.as_deref() == Some("initialize");
        let bytes = self.request_bytes(Method::Post, Some(&message), &extra);
        let index = self.record(Exchange {
            method: Method::Post,
            rpc_method,
            status: None,
            content_type: None,
            framing: None,
            session_id: None,
            location: None,
            body_bytes: 0,
            sse: None,
            ended: None,
            error: None,
        });
        let fail = |state: &Mutex<State>, e: &HttpError| {
            if let Some(i) = index {
                let mut st = lock(state);
                st.facts.exchanges[i].error = Some(e.code());
                st.facts.exchanges[i].ended = Some(Ended::Error);
            }
        };
        let mut conn = match Conn::open(&self.dial, deadline) {
            Ok(c) => {
                if let Some(d) = c.certificate_sha256 {
                    lock(&self.state)
                        .facts
                        .certificate_sha256
                        .get_or_insert_with(|| Box::new(d));
                }
                c
            }
            Err(e) => {
                fail(&self.state, &e);
                return sent_error(e);
            }
        };
        if let Err(e) = conn.write_all(&bytes, deadline) {
            fail(&self.state, &e);
            return sent_error(e);
        }
        let socket = conn.shutdown_handle().ok();
        let job = Job {
            index,
            reply_id,
            initialize,
            state: Arc::clone(&self.state),
            tx: self.tx.clone(),
            options: self.options.clone(),
            deadline: Instant::now() + self.options.stream_timeout,
        };
        match std::thread::Builder::new()
            .name("mcpw-http-reply".into())
            .spawn(move || job.run(conn))
        {
            Ok(handle) => self.readers.push(Reader { handle, socket }),
            Err(e) => {
                let e = HttpError::Io(e.kind());
                fail(&self.state, &e);
                return sent_error(e);
            }
        }
        Sent::Posted { exchange: index }
    }

    /// The next thing the server did on any reply stream, or `None` when `deadline` passes.
    pub fn next(&mut self, deadline: Instant) -> Option<WireEvent> {
        let rx = self.rx.as_ref()?;
        let wait = deadline.saturating_duration_since(Instant::now());
        rx.recv_timeout(wait).ok()
    }

    /// Joins reader threads that have finished.
    fn reap(&mut self) {
        let (done, open): (Vec<_>, Vec<_>) = std::mem::take(&mut self.readers)
            .into_iter()
            .partition(|r| r.handle.is_finished());
        self.readers = open;
        for r in done {
            let _ = r.handle.join();
        }
    }

    /// Stops every reader: their sockets are shut down and the channel dropped, so a read or a
    /// wait for room returns at once.
    fn stop_readers(&mut self) {
        lock(&self.state).closing = true;
        for r in &mut self.readers {
            if let Some(s) = r.socket.take() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        self.rx = None;
    }

    /// Ends the session: stops reading, sends `DELETE` with the session id when the server
    /// gave one (before `deadline`), waits for the reader threads, and reports.
    pub fn close(mut self, deadline: Instant) -> SessionEnd {
        self.stop_readers();
        let has_session = lock(&self.state).session_id.is_some();
        let delete = if has_session {
            let bytes = self.request_bytes(Method::Delete, None, &[]);
            let index = self.record(Exchange {
                method: Method::Delete,
                rpc_method: None,
                status: None,
                content_type: None,
                framing: None,
                session_id: None,
                location: None,
                body_bytes: 0,
                sse: None,
                ended: None,
                error: None,
            });
            let result = exchange(
                &self.dial,
                Method::Delete,
                &bytes,
                self.options.head,
                self.options.max_error_body as u64,
                deadline,
            );
            let mut st = lock(&self.state);
            match result {
                Ok(resp) => {
                    st.facts.delete_status = Some(resp.head.status);
                    if let Some(i) = index {
                        let ex = &mut st.facts.exchanges[i];
                        ex.status = Some(resp.head.status);
                        ex.content_type = content_type(&resp.head);
                        ex.framing = Some(resp.framing);
                        ex.body_bytes = resp.body.len() as u64;
                        ex.ended = Some(Ended::Body);
                    }
                    DeleteOutcome::Status(resp.head.status)
                }
                Err(e) => {
                    if let Some(i) = index {
                        st.facts.exchanges[i].error = Some(e.code());
                        st.facts.exchanges[i].ended = Some(Ended::Error);
                    }
                    DeleteOutcome::Failed(e)
                }
            }
        } else {
            DeleteOutcome::NoSession
        };
        // Readers return at once (sockets shut, channel gone); wait for them, bounded.
        let until = deadline.max(Instant::now() + Duration::from_millis(200));
        while self.readers.iter().any(|r| !r.handle.is_finished()) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        self.reap();
        let readers_left = self.readers.len();
        self.readers.clear(); // any left are detached; their sockets are shut down
        let facts = lock(&self.state).facts.clone();
        SessionEnd {
            delete,
            facts,
            readers_left,
        }
    }
}

impl Drop for HttpWire {
    fn drop(&mut self) {
        self.stop_readers();
    }
}

fn sent_error(e: HttpError) -> Sent {
    match e {
        HttpError::TimedOut => Sent::TimedOut,
        HttpError::Connect(k) | HttpError::Io(k) => Sent::Gone(k),
        HttpError::Tls(t) => Sent::TlsFailed(t.failure()),
        _ => Sent::Gone(io::ErrorKind::Other),
    }
}

fn content_type(head: &ResponseHead) -> Option<String> {
    head.headers
        .get("content-type")
        .map(|v| v.chars().take(MAX_HEADER_TEXT).collect())
}

fn session_fact(id: &str) -> SessionIdFact {
    SessionIdFact {
        length: id.len(),
        visible_ascii: !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
    }
}

/// The event a failed read becomes: the connection went away, or the stream broke.
fn error_event(index: Option<usize>, e: HttpError) -> WireEvent {
    match e {
        HttpError::Io(
            k @ (io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionRefused),
        ) => WireEvent::Gone {
            exchange: index,
            kind: k,
        },
        HttpError::ClosedEarly => WireEvent::Gone {
            exchange: index,
            kind: io::ErrorKind::UnexpectedEof,
        },
        error => WireEvent::Broken {
            exchange: index,
            error,
        },
    }
}

/// One reply to read, on its own thread.
struct Job {
    index: Option<usize>,
    reply_id: Option<serde_json::Value>,
    initialize: bool,
    state: Arc<Mutex<State>>,
    tx: SyncSender<WireEvent>,
    options: HttpOptions,
    deadline: Instant,
}

impl Job {
    fn update(&self, f: impl FnOnce(&mut Exchange)) {
        if let Some(i) = self.index {
            f(&mut lock(&self.state).facts.exchanges[i]);
        }
    }

    fn closing(&self) -> bool {
        lock(&self.state).closing
    }

    /// Records how it ended; a failure becomes an event unless the wire is closing.
    fn fail(&self, e: HttpError) {
        let closing = self.closing();
        let timed_out = e == HttpError::TimedOut;
        self.update(|x| {
            x.ended = Some(if closing {
                Ended::Closed
            } else if timed_out {
                Ended::Deadline
            } else {
                Ended::Error
            });
            if !closing {
                x.error = Some(e.code());
            }
        });
        if !closing {
            let _ = self.tx.send(error_event(self.index, e));
        }
    }

    fn run(self, mut conn: Conn) {
        let head = match conn.read_head(self.options.head, self.deadline) {
            Ok(h) => h,
            Err(e) => return self.fail(e),
        };
        self.note_head(&head);
        let limit = match head.media_type().as_deref() {
            Some("text/event-stream") => self.options.max_stream,
            _ => self.options.max_body,
        };
        let success = (200..300).contains(&head.status);
        if !success {
            // The status is what matters: it is delivered even when the body cannot be framed.
            return self.status_event(&head, conn.body(&head, Method::Post, u64::MAX).ok());
        }
        let body = match conn.body(&head, Method::Post, limit) {
            Ok(b) => b,
            Err(e) => return self.fail(e),
        };
        self.update(|x| x.framing = Some(body.framing));
        let encoding = head
            .headers
            .get("content-encoding")
            .map(|c| c.trim().to_ascii_lowercase())
            .filter(|c| !c.is_empty() && c != "identity");
        if let Some(coding) = encoding {
            body.close();
            self.fail(HttpError::ContentEncoding(coding.chars().take(64).collect()));
        } else if head.media_type().as_deref() == Some("text/event-stream") {
            self.read_stream(body);
        } else {
            self.read_json(body);
        }
    }

    fn note_head(&self, head: &ResponseHead) {
        let sid = head.headers.get("mcp-session-id");
        let fact = sid.map(session_fact);
        let location = head
            .headers
            .get("location")
            .filter(|_| (300..400).contains(&head.status))
            .map(redact_reference);
        let mut st = lock(&self.state);
        if let Some(i) = self.index {
            let x = &mut st.facts.exchanges[i];
            x.status = Some(head.status);
            x.content_type = content_type(head);
            x.session_id = fact;
            x.location = location.clone();
        }
        if (300..400).contains(&head.status) {
            st.facts.redirects.push(Redirect {
                status: head.status,
                location,
            });
        }
        if let (Some(id), Some(fact)) = (sid, fact) {
            let usable = fact.visible_ascii && id.len() <= MAX_SESSION_ID;
            match &st.session_id {
                None if self.initialize && usable && (200..300).contains(&head.status) => {
                    st.session_id = Some(id.to_string());
                    st.facts.session_id = Some(fact);
                }
                Some(known) if known != id => st.facts.session_id_changed = true,
                _ => {}
            }
        }
    }

    /// A non-2xx reply: its head facts and the start of its body, as one event.
    fn status_event(&self, head: &ResponseHead, body: Option<super::client::BodyReader>) {
        let max = self.options.max_error_body;
        let mut kept = Vec::new();
        let mut ended = Ended::Error; // no framable body
        let mut bytes = 0;
        if let Some(mut body) = body {
            self.update(|x| x.framing = Some(body.framing));
            ended = loop {
                match body.next_piece(self.deadline) {
                    Ok(Some(piece)) => {
                        let room = max - kept.len();
                        if piece.len() > room {
                            kept.extend_from_slice(&piece[..room]);
                            break Ended::Cut;
                        }
                        kept.extend_from_slice(&piece);
                    }
                    Ok(None) => break Ended::Body,
                    Err(HttpError::TimedOut) => break Ended::Deadline,
                    Err(_) => break Ended::Error,
                }
            };
            bytes = body.bytes();
            body.close();
        }
        let cut = ended != Ended::Body;
        self.update(|x| {
            x.body_bytes = bytes;
            x.ended = Some(ended);
        });
        let event = WireEvent::Status(HttpStatus {
            exchange: self.index,
            status: head.status,
            content_type: content_type(head),
            body: kept,
            body_cut: cut,
            www_authenticate: head
                .headers
                .all("www-authenticate")
                .take(16)
                .map(|v| v.chars().take(MAX_HEADER_TEXT).collect())
                .collect(),
            location: head
                .headers
                .get("location")
                .filter(|_| (300..400).contains(&head.status))
                .map(redact_reference),
        });
        let _ = self.tx.send(event);
    }

    /// A whole body holding one message (or nothing, for a 202).
    fn read_json(&self, mut body: super::client::BodyReader) {
        let bytes = match body.read_all(self.deadline) {
            Ok(b) => b,
            Err(e) => {
                body.close();
                return self.fail(e);
            }
        };
        self.update(|x| {
            x.body_bytes = bytes.len() as u64;
            x.ended = Some(Ended::Body);
        });
        body.close();
        if !bytes.is_empty() {
            let _ = self.tx.send(self.classify(&bytes));
        }
    }

    fn classify(&self, bytes: &[u8]) -> WireEvent {
        match decode(bytes).kind {
            LineKind::Object(obj) => WireEvent::Message(obj.to_vec()),
            LineKind::Noise(kind) => {
                WireEvent::Noise(bytes[..bytes.len().min(self.options.max_noise)].to_vec(), kind)
            }
        }
    }

    /// Whether `message` is the reply to our request.
    fn is_our_reply(&self, message: &[u8]) -> bool {
        let Some(want) = &self.reply_id else {
            return false;
        };
        serde_json::from_slice::<ReplyPeek>(message)
            .is_ok_and(|p| p.method.is_none() && p.id.as_ref() == Some(want))
    }

    /// An event stream: every `message` event in order, until our reply or the end.
    fn read_stream(&self, mut body: super::client::BodyReader) {
        let o = &self.options;
        let mut parser = SseParser::new(o.max_event.saturating_add(16), o.max_event);
        let mut out = Vec::new();
        let ended = loop {
            let piece = match body.next_piece(self.deadline) {
                Ok(Some(p)) => p,
                Ok(None) => {
                    parser.finish();
                    break Ok(Ended::Body);
                }
                Err(e) => break Err(e),
            };
            parser.push(&piece, &mut |item| out.push(item));
            let mut replied = false;
            for item in out.drain(..) {
                let event = match item {
                    // A priming event (an id, empty data): nothing to deliver.
                    SseItem::Event(e) if e.data.is_empty() => continue,
                    SseItem::Oversize(n) => WireEvent::Oversize(n),
                    SseItem::Event(e) if e.event == "message" => {
                        let ev = self.classify(&e.data);
                        if let WireEvent::Message(m) = &ev {
                            replied |= self.is_our_reply(m);
                        }
                        ev
                    }
                    SseItem::Event(e) => WireEvent::OtherEvent {
                        event: e.event.chars().take(256).collect(),
                        data: e.data[..e.data.len().min(o.max_noise)].to_vec(),
                    },
                };
                if self.tx.send(event).is_err() {
                    break;
                }
            }
            if replied {
                break Ok(Ended::Reply);
            }
            if self.closing() {
                break Ok(Ended::Closed);
            }
        };
        let stats = parser.stats;
        let bytes = body.bytes();
        body.close();
        self.update(|x| {
            x.sse = Some(stats);
            x.body_bytes = bytes;
        });
        match ended {
            Ok(how) => self.update(|x| x.ended = Some(how)),
            Err(e) => self.fail(e),
        }
    }
}
