//! The HTTP+SSE transport of 2024-11-05, the fallback a client takes when its initialize
//! POST gets 400, 404 or 405: one `GET` opens an event stream whose first event,
//! `endpoint`, names where to POST; every message is POSTed there (the server answers 202)
//! and every reply comes back on the stream. [`LegacySse`] reads the stream on one thread,
//! POSTs synchronously (a short exchange, bounded by the send's deadline) and keeps the same
//! [`HttpFacts`] as the Streamable HTTP wire, the GET first.
//!
//! Limits: the endpoint must be on the URL's own origin (a stream naming another origin is
//! refused, so no message is ever sent elsewhere); no reconnection of a broken stream; a
//! POST's 2xx body is not read as a reply (the stream carries replies).

use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::client::{Conn, Dial, HttpError, exchange};
use super::message::{Method, Request, SecretHeader};
use super::session::{
    DeleteOutcome, Ended, Exchange, HttpFacts, HttpOptions, HttpStatus, Sent, SessionEnd, WireEvent,
};
use super::sse::{SseItem, SseParser};
use super::url::HttpUrl;
use crate::wire::framing::{LineKind, decode};

/// Bytes of server text (a content type) kept.
const MAX_HEADER_TEXT: usize = 1024;
/// The longest endpoint reference taken.
const MAX_ENDPOINT: usize = 4096;

/// Why the stream gave no endpoint to POST to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseOpenError {
    /// The GET failed before a reply head.
    Http(HttpError),
    /// The GET was answered, but not with a 200 event stream.
    NotAStream { status: u16 },
    /// No `endpoint` event before the wait ended (or the stream ended first).
    NoEndpoint,
    /// The endpoint is not a reference this tool follows (another origin, or unparsable).
    BadEndpoint,
}

impl std::fmt::Display for SseOpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseOpenError::Http(e) => write!(f, "the HTTP+SSE stream could not be opened: {e}"),
            SseOpenError::NotAStream { status } => write!(
                f,
                "the GET for the HTTP+SSE stream got HTTP {status}, not an event stream: the URL is not an MCP endpoint of either HTTP transport"
            ),
            SseOpenError::NoEndpoint => f.write_str(
                "the HTTP+SSE stream named no endpoint in time: raise --timeout, or check the URL",
            ),
            SseOpenError::BadEndpoint => f.write_str(
                "the HTTP+SSE stream named an endpoint on another origin or one that is not a URL: not followed",
            ),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn blank(method: Method, rpc_method: Option<String>) -> Exchange {
    Exchange {
        method,
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
    }
}

/// An HTTP+SSE (2024-11-05) session.
pub struct LegacySse {
    post_to: HttpUrl,
    dial: Dial,
    headers: Vec<SecretHeader>,
    options: HttpOptions,
    facts: Arc<Mutex<HttpFacts>>,
    rx: Option<Receiver<WireEvent>>,
    /// A refused POST, delivered before the stream's next event.
    pending: std::collections::VecDeque<WireEvent>,
    reader: Option<(JoinHandle<()>, TcpStream)>,
}

impl std::fmt::Debug for LegacySse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySse")
            .field("post_to", &self.post_to.redacted())
            .finish_non_exhaustive()
    }
}

impl LegacySse {
    /// GETs `url`, waits (until `endpoint_wait`) for the `endpoint` event, and keeps reading
    /// the stream until `stream_deadline` or `close`. `facts` receives the GET's exchange.
    pub fn open(
        url: &HttpUrl,
        headers: Vec<SecretHeader>,
        options: HttpOptions,
        endpoint_wait: Instant,
        stream_deadline: Instant,
    ) -> Result<LegacySse, (SseOpenError, HttpFacts)> {
        let facts = Arc::new(Mutex::new(HttpFacts::default()));
        lock(&facts).exchanges.push(blank(Method::Get, None));
        let fail = |e: SseOpenError, facts: &Arc<Mutex<HttpFacts>>| (e, lock(facts).clone());
        let dial = Dial::resolve(url, &options.tls, endpoint_wait)
            .map_err(|e| fail(SseOpenError::Http(e), &facts))?;
        let bytes = Request {
            method: Method::Get,
            target: &url.target,
            host: &url.host_header(),
            fields: &[("Accept", "text/event-stream")],
            secrets: &headers,
            body: None,
        }
        .to_bytes();
        let mut conn = Conn::open(&dial, endpoint_wait).map_err(|e| fail(SseOpenError::Http(e), &facts))?;
        if let Some(d) = conn.certificate_sha256 {
            lock(&facts).certificate_sha256 = Some(Box::new(d));
        }
        conn.write_all(&bytes, endpoint_wait)
            .map_err(|e| fail(SseOpenError::Http(e), &facts))?;
        let head = conn
            .read_head(options.head, endpoint_wait)
            .map_err(|e| fail(SseOpenError::Http(e), &facts))?;
        {
            let mut f = lock(&facts);
            f.exchanges[0].status = Some(head.status);
            f.exchanges[0].content_type = head
                .headers
                .get("content-type")
                .map(|v| v.chars().take(MAX_HEADER_TEXT).collect());
        }
        if head.status != 200 || head.media_type().as_deref() != Some("text/event-stream") {
            lock(&facts).exchanges[0].ended = Some(Ended::Error);
            return Err(fail(SseOpenError::NotAStream { status: head.status }, &facts));
        }
        let socket = conn
            .shutdown_handle()
            .map_err(|e| fail(SseOpenError::Http(HttpError::Io(e.kind())), &facts))?;
        let body = conn
            .body(&head, Method::Get, options.max_stream)
            .map_err(|e| fail(SseOpenError::Http(e), &facts))?;
        lock(&facts).exchanges[0].framing = Some(body.framing);
        let (tx, rx) = mpsc::sync_channel(options.event_depth.max(1));
        let (endpoint_tx, endpoint_rx) = mpsc::sync_channel(1);
        let reader = StreamReader {
            facts: Arc::clone(&facts),
            tx,
            endpoint: Some(endpoint_tx),
            options: options.clone(),
            deadline: stream_deadline,
        };
        let handle = std::thread::Builder::new()
            .name("mcpw-http-sse".into())
            .spawn(move || reader.run(body))
            .map_err(|e| fail(SseOpenError::Http(HttpError::Io(e.kind())), &facts))?;
        // The receiver goes first: a reader blocked on a full channel (a stream of messages
        // before any endpoint) then returns, and the join cannot hang.
        let stop = |rx: Receiver<WireEvent>, socket: TcpStream, handle: JoinHandle<()>| {
            drop(rx);
            let _ = socket.shutdown(Shutdown::Both);
            let _ = handle.join();
        };
        let wait = endpoint_wait.saturating_duration_since(Instant::now());
        let reference: String = match endpoint_rx.recv_timeout(wait) {
            Ok(r) => r,
            Err(_) => {
                stop(rx, socket, handle);
                return Err(fail(SseOpenError::NoEndpoint, &facts));
            }
        };
        let Some(post_to) = resolve(url, &reference) else {
            stop(rx, socket, handle);
            return Err(fail(SseOpenError::BadEndpoint, &facts));
        };
        Ok(LegacySse {
            post_to,
            dial,
            headers,
            options,
            facts,
            rx: Some(rx),
            pending: Default::default(),
            reader: Some((handle, socket)),
        })
    }

    /// POSTs one message to the endpoint before `deadline`. A non-2xx answer is delivered
    /// by `next` as a status event.
    pub fn send(&mut self, message: Vec<u8>, deadline: Instant) -> Sent {
        if self.rx.is_none() {
            return Sent::Closed;
        }
        let rpc_method = serde_json::from_slice::<serde_json::Value>(&message)
            .ok()
            .and_then(|m| m.get("method")?.as_str().map(|s| s.chars().take(256).collect()));
        let index = {
            let mut f = lock(&self.facts);
            if f.exchanges.len() < self.options.max_exchanges {
                f.exchanges.push(blank(Method::Post, rpc_method));
                Some(f.exchanges.len() - 1)
            } else {
                f.exchanges_dropped += 1;
                None
            }
        };
        let bytes = Request {
            method: Method::Post,
            target: &self.post_to.target,
            host: &self.post_to.host_header(),
            fields: &[("Accept", "application/json, text/event-stream")],
            secrets: &self.headers,
            body: Some(("application/json", &message)),
        }
        .to_bytes();
        let result = exchange(
            &self.dial,
            Method::Post,
            &bytes,
            self.options.head,
            self.options.max_error_body as u64,
            deadline,
        );
        let mut f = lock(&self.facts);
        match result {
            Ok(resp) => {
                let content_type: Option<String> = resp
                    .head
                    .headers
                    .get("content-type")
                    .map(|v| v.chars().take(MAX_HEADER_TEXT).collect());
                if let Some(x) = index.map(|i| &mut f.exchanges[i]) {
                    x.status = Some(resp.head.status);
                    x.content_type = content_type.clone();
                    x.framing = Some(resp.framing);
                    x.body_bytes = resp.body.len() as u64;
                    x.ended = Some(Ended::Body);
                }
                if !(200..300).contains(&resp.head.status) {
                    self.pending.push_back(WireEvent::Status(HttpStatus {
                        exchange: index,
                        status: resp.head.status,
                        content_type,
                        body: resp.body,
                        body_cut: false,
                        www_authenticate: resp
                            .head
                            .headers
                            .all("www-authenticate")
                            .take(16)
                            .map(|v| v.chars().take(MAX_HEADER_TEXT).collect())
                            .collect(),
                        location: None,
                    }));
                }
                Sent::Posted { exchange: index }
            }
            Err(e) => {
                if let Some(x) = index.map(|i| &mut f.exchanges[i]) {
                    x.error = Some(e.code());
                    x.ended = Some(Ended::Error);
                }
                match e {
                    HttpError::TimedOut => Sent::TimedOut,
                    HttpError::Connect(k) | HttpError::Io(k) => Sent::Gone(k),
                    HttpError::Tls(t) => Sent::TlsFailed(t.failure()),
                    _ => Sent::Gone(std::io::ErrorKind::Other),
                }
            }
        }
    }

    /// A refused POST, or the stream's next event, or `None` when `deadline` passes.
    pub fn next(&mut self, deadline: Instant) -> Option<WireEvent> {
        if let Some(e) = self.pending.pop_front() {
            return Some(e);
        }
        let rx = self.rx.as_ref()?;
        rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .ok()
    }

    /// A copy of the facts so far.
    pub fn facts(&self) -> HttpFacts {
        lock(&self.facts).clone()
    }

    /// Closes the stream (the session ends with it: this transport has no DELETE) and
    /// waits for the reader, until `deadline` at most.
    pub fn close(mut self, deadline: Instant) -> SessionEnd {
        self.rx = None;
        let mut readers_left = 0;
        if let Some((handle, socket)) = self.reader.take() {
            let _ = socket.shutdown(Shutdown::Both);
            let until = deadline.max(Instant::now() + Duration::from_millis(200));
            while !handle.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(2));
            }
            if handle.is_finished() {
                let _ = handle.join();
            } else {
                readers_left = 1;
            }
        }
        SessionEnd {
            delete: DeleteOutcome::NoSession,
            facts: lock(&self.facts).clone(),
            readers_left,
        }
    }
}

impl Drop for LegacySse {
    fn drop(&mut self) {
        if let Some((_, socket)) = &self.reader {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

/// The endpoint reference resolved against the stream's URL: an absolute URL on the same
/// origin, an absolute path, or a path relative to the stream's folder.
fn resolve(base: &HttpUrl, reference: &str) -> Option<HttpUrl> {
    let reference = reference.trim();
    if reference.is_empty() || reference.len() > MAX_ENDPOINT {
        return None;
    }
    let lower = reference.to_ascii_lowercase();
    let text = if lower.starts_with("http://") || lower.starts_with("https://") {
        reference.to_string()
    } else if reference.starts_with("//") {
        return None;
    } else if reference.starts_with('/') {
        format!("{}{reference}", base.origin())
    } else {
        let path = base.target.split('?').next().unwrap_or("/");
        let folder = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        format!("{}{folder}{reference}", base.origin())
    };
    let url = HttpUrl::parse(&text).ok()?;
    (url.origin() == base.origin()).then_some(url)
}

/// Reads the GET stream on its own thread.
struct StreamReader {
    facts: Arc<Mutex<HttpFacts>>,
    tx: SyncSender<WireEvent>,
    endpoint: Option<SyncSender<String>>,
    options: HttpOptions,
    deadline: Instant,
}

impl StreamReader {
    fn run(mut self, mut body: super::client::BodyReader) {
        let o = &self.options;
        let mut parser = SseParser::new(o.max_event.saturating_add(16), o.max_event);
        let mut items = Vec::new();
        let ended = loop {
            let piece = match body.next_piece(self.deadline) {
                Ok(Some(p)) => p,
                Ok(None) => break Ended::Body,
                Err(HttpError::TimedOut) => break Ended::Deadline,
                Err(e) => {
                    if self
                        .tx
                        .send(WireEvent::Broken {
                            exchange: Some(0),
                            error: e,
                        })
                        .is_err()
                    {
                        break Ended::Closed;
                    }
                    break Ended::Error;
                }
            };
            parser.push(&piece, &mut |item| items.push(item));
            let mut gone = false;
            for item in items.drain(..) {
                let event = match item {
                    SseItem::Oversize(n) => WireEvent::Oversize(n),
                    SseItem::Event(e) if e.event == "endpoint" => {
                        if let Some(tx) = self.endpoint.take() {
                            let _ = tx.send(String::from_utf8_lossy(&e.data).into_owned());
                        }
                        continue;
                    }
                    SseItem::Event(e) if e.data.is_empty() => continue,
                    SseItem::Event(e) if e.event == "message" => match decode(&e.data).kind {
                        LineKind::Object(obj) => WireEvent::Message(obj.to_vec()),
                        LineKind::Noise(kind) => {
                            WireEvent::Noise(e.data[..e.data.len().min(o.max_noise)].to_vec(), kind)
                        }
                    },
                    SseItem::Event(e) => WireEvent::OtherEvent {
                        event: e.event.chars().take(256).collect(),
                        data: e.data[..e.data.len().min(o.max_noise)].to_vec(),
                    },
                };
                if self.tx.send(event).is_err() {
                    gone = true;
                    break;
                }
            }
            if gone {
                break Ended::Closed;
            }
        };
        let mut f = lock(&self.facts);
        f.exchanges[0].sse = Some(parser.stats);
        f.exchanges[0].body_bytes = body.bytes();
        f.exchanges[0].ended = Some(ended);
        drop(f);
        body.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_on_the_same_origin_only() {
        let base = HttpUrl::parse("http://127.0.0.1:9/sse").unwrap();
        let r = |s: &str| resolve(&base, s).map(|u| u.target);
        assert_eq!(r("/message?sessionId=a").as_deref(), Some("/message?sessionId=a"));
        assert_eq!(r("message?x=1").as_deref(), Some("/message?x=1"));
        assert_eq!(r("http://127.0.0.1:9/m").as_deref(), Some("/m"));
        assert_eq!(r("http://127.0.0.2:9/m"), None);
        assert_eq!(r("//evil.example/m"), None);
        assert_eq!(r(""), None);
    }
}
