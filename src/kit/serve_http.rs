//! `serve --http`: the Streamable HTTP front of the kit's instrumented server. It owns the
//! transport only: the listener, one bounded thread per connection, request parsing, the
//! checks a Streamable HTTP server must make (Host and Origin 403, Accept 406, Content-Type
//! 415, batches 400, unknown sessions 404, a bad `MCP-Protocol-Version` 400), sessions
//! (`Mcp-Session-Id`, DELETE) and the reply mode (JSON for one message, SSE for several).
//! Every message goes through [`Serve`], the same handler and the same log as the stdio
//! server. One connection carries one request (`Connection: close`).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::serve::{Log, MAX_DEPTH, MODERN_VERSION, Serve, depth};
use crate::mcp::code::UNSUPPORTED_VERSION;

/// The 2026-07-28 error for a mirrored header that disagrees with the body.
const HEADER_MISMATCH: i64 = -32020;

/// The path the server answers on.
pub const PATH: &str = "/mcp";
/// Connections served at once; more get 503.
const MAX_CONNECTIONS: usize = 32;
/// Sessions kept; a new one past this ends the least recently used.
const MAX_SESSIONS: usize = 64;
/// Bound on a request head (request line and fields).
const MAX_HEAD: usize = 64 * 1024;
const MAX_FIELDS: usize = 100;
/// Bound on a request body.
const MAX_BODY: usize = 4 << 20;
/// Each read and write waits at most this long; a whole request at most [`REQUEST_DEADLINE`].
const IO_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_DEADLINE: Duration = Duration::from_secs(30);
/// After refusing a request early: how long and how much of its rest is read and dropped.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
const MAX_DRAIN: usize = 8 << 20;

/// Why `serve --http` could not start.
#[derive(Debug)]
pub enum StartError {
    /// The address is neither `PORT` nor `IP:PORT`.
    BadAddress(String),
    /// A non-loopback address without `--allow-remote`.
    NotLoopback(SocketAddr),
    Bind(SocketAddr, io::Error),
    Log(io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::BadAddress(a) => write!(
                f,
                "--http {a}: give a port (8080, bound on 127.0.0.1) or an IP and port (127.0.0.1:8080, [::1]:8080)"
            ),
            StartError::NotLoopback(a) => write!(
                f,
                "--http {a} is not a loopback address: anyone who can reach it can drive this server; add --allow-remote if that is what you want"
            ),
            StartError::Bind(a, e) => write!(
                f,
                "cannot listen on {a}: {e} (is the port in use? give another, or 0 for any free port)"
            ),
            StartError::Log(e) => write!(f, "{e}"),
        }
    }
}

/// Parses `--http`: a port alone binds 127.0.0.1.
pub fn parse_addr(text: &str, allow_remote: bool) -> Result<SocketAddr, StartError> {
    let addr = match text.parse::<u16>() {
        Ok(port) => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        Err(_) => text
            .parse::<SocketAddr>()
            .map_err(|_| StartError::BadAddress(text.to_string()))?,
    };
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(StartError::NotLoopback(addr));
    }
    Ok(addr)
}

/// A session's server, shared by its connections.
type SessionServe = Arc<Mutex<Serve<Vec<u8>>>>;

/// One session: its own server state.
struct Session {
    serve: SessionServe,
    /// The ids of the session's calls whose streams are held open.
    held: HeldIds,
    last_used: u64,
}

/// The ids of a session's held calls: each call's reply goes out on its own stream only, never
/// on another held stream or another request's reply (two calls may be held at once).
type HeldIds = Arc<Mutex<Vec<Value>>>;

/// What the connection threads share.
struct Shared {
    log_path: std::path::PathBuf,
    bound: SocketAddr,
    sessions: Mutex<HashMap<String, Session>>,
    /// The stateless (2026-07-28) requests' server: one state for the whole server.
    modern: Mutex<Serve<Vec<u8>>>,
    clock: AtomicUsize,
    active: AtomicUsize,
}

/// Binds, prints the URL on stdout, and serves until the process is ended.
pub fn run(addr: SocketAddr, log_path: &Path) -> Result<(), StartError> {
    let listener = TcpListener::bind(addr).map_err(|e| StartError::Bind(addr, e))?;
    let bound = listener.local_addr().map_err(|e| StartError::Bind(addr, e))?;
    let modern = Serve::new(Log::open(log_path).map_err(StartError::Log)?, Vec::new());
    let shared = Arc::new(Shared {
        log_path: log_path.to_path_buf(),
        bound,
        sessions: Mutex::new(HashMap::new()),
        modern: Mutex::new(modern),
        clock: AtomicUsize::new(0),
        active: AtomicUsize::new(0),
    });
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "http://{bound}{PATH}");
    let _ = out.flush();
    drop(out);
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // Out of descriptors or a connection reset before accept: wait, do not spin.
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if shared.active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            shared.active.fetch_sub(1, Ordering::SeqCst);
            let mut stream = stream;
            let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
            let _ = respond(&mut stream, 503, &[], None, b"");
            continue;
        }
        let s = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("serve-http".into())
            .spawn(move || {
                connection(&s, stream);
                s.active.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            shared.active.fetch_sub(1, Ordering::SeqCst);
        }
    }
    Ok(())
}

/// A parsed request.
struct Request {
    method: String,
    path: String,
    fields: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request could not be read: the status to answer, if any.
enum ReadError {
    Status(u16, &'static str),
    Gone,
}

fn read_request(stream: &mut TcpStream, deadline: Instant) -> Result<Request, ReadError> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(ReadError::Status(431, "request head too large"));
        }
        if Instant::now() > deadline {
            return Err(ReadError::Status(408, "request too slow"));
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err(ReadError::Gone),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(ReadError::Gone),
        }
    };
    let head = std::str::from_utf8(&buf[..head_end])
        .map_err(|_| ReadError::Status(400, "request head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let (Some(method), Some(target), Some(version)) = (first.next(), first.next(), first.next()) else {
        return Err(ReadError::Status(400, "malformed request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Status(505, "HTTP/1.x only"));
    }
    let mut fields = Vec::new();
    for line in lines {
        if fields.len() >= MAX_FIELDS {
            return Err(ReadError::Status(431, "too many header fields"));
        }
        let Some((n, v)) = line.split_once(':') else {
            return Err(ReadError::Status(400, "malformed header field"));
        };
        fields.push((n.trim().to_string(), v.trim().to_string()));
    }
    let path = target.split('?').next().unwrap_or("").to_string();
    let mut req = Request {
        method: method.to_string(),
        path,
        fields,
        body: Vec::new(),
    };
    if req.field("Transfer-Encoding").is_some() {
        return Err(ReadError::Status(411, "send the body with Content-Length"));
    }
    let len = match req.field("Content-Length") {
        None => 0,
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| ReadError::Status(400, "bad Content-Length"))?,
    };
    if len > MAX_BODY {
        return Err(ReadError::Status(413, "body too large"));
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        if Instant::now() > deadline {
            return Err(ReadError::Status(408, "request too slow"));
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err(ReadError::Gone),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(ReadError::Gone),
        }
    }
    body.truncate(len);
    req.body = body;
    Ok(req)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Status",
    }
}

fn respond(
    stream: &mut TcpStream,
    status: u16,
    fields: &[(&str, &str)],
    media: Option<&str>,
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (n, v) in fields {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    if let Some(m) = media {
        head.push_str(&format!("Content-Type: {m}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut all = head.into_bytes();
    all.extend_from_slice(body);
    stream.write_all(&all)?;
    stream.flush()
}

/// A JSON-RPC error body.
fn error_body(code: i64, message: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}))
        .expect("serializing a Value cannot fail")
}

/// One HTTP reply: status, extra fields, media type and body.
struct Reply {
    status: u16,
    fields: Vec<(&'static str, String)>,
    media: Option<&'static str>,
    body: Vec<u8>,
    /// A legacy request answered by a server request first: the stream stays open until the
    /// request's own reply (written once the client POSTs its answer), or the deadline.
    held: Option<Held>,
}

/// What a held event stream waits for: the reply with `id`, from the session's server.
struct Held {
    id: Value,
    serve: Option<(SessionServe, HeldIds)>,
}

impl Reply {
    fn error(status: u16, code: i64, message: &str) -> Reply {
        Reply {
            status,
            fields: Vec::new(),
            media: Some("application/json"),
            body: error_body(code, message),
            held: None,
        }
    }
    fn empty(status: u16) -> Reply {
        Reply {
            status,
            fields: Vec::new(),
            media: None,
            body: Vec::new(),
            held: None,
        }
    }
}

fn connection(shared: &Shared, mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let (reply, unread) = match read_request(&mut stream, deadline) {
        Ok(req) => (handle(shared, &req), false),
        Err(ReadError::Status(s, why)) => (Reply::error(s, -32600, why), true),
        Err(ReadError::Gone) => return,
    };
    let fields: Vec<(&str, &str)> = reply.fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
    if let Some(held) = &reply.held {
        hold(&mut stream, &fields, &reply.body, held);
        if let Some((_, ids)) = &held.serve {
            let mut ids = ids.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(at) = ids.iter().position(|i| *i == held.id) {
                ids.remove(at);
            }
        }
        let _ = stream.shutdown(std::net::Shutdown::Both);
        return;
    }
    let _ = respond(&mut stream, reply.status, &fields, reply.media, &reply.body);
    if unread {
        // Closing with the rest of the request unread would reset the connection and could
        // destroy the reply before the client reads it: end our side, then drain (bounded).
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let _ = stream.set_read_timeout(Some(DRAIN_TIMEOUT));
        let until = Instant::now() + DRAIN_TIMEOUT;
        let mut sink = [0u8; 8192];
        let mut drained = 0;
        while drained < MAX_DRAIN && Instant::now() < until {
            match stream.read(&mut sink) {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// The host part of a `Host` value or an origin's authority, lower-cased, brackets kept.
fn host_of(authority: &str) -> String {
    let a = authority.to_ascii_lowercase();
    if a.starts_with('[') {
        return a.split(']').next().map(|h| format!("{h}]")).unwrap_or(a);
    }
    a.split(':').next().unwrap_or("").to_string()
}

/// Whether a host name is this server's: a loopback name, or the address it is bound to.
fn host_allowed(shared: &Shared, host: &str) -> bool {
    let bound = match shared.bound.ip() {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    };
    matches!(host, "localhost" | "127.0.0.1" | "[::1]") || host == bound
}

fn handle(shared: &Shared, req: &Request) -> Reply {
    if req.path != PATH {
        return Reply::error(404, -32600, "not found: this server answers on /mcp");
    }
    // DNS rebinding: a page on another site reaches a local server under its own name.
    match req.field("Host") {
        Some(h) if host_allowed(shared, &host_of(h)) => {}
        _ => return Reply::error(403, -32600, "Forbidden: Host is not this server's"),
    }
    if let Some(origin) = req.field("Origin") {
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .unwrap_or("");
        if !host_allowed(shared, &host_of(authority)) {
            return Reply::error(403, -32600, "Forbidden: Origin is not this server's");
        }
    }
    match req.method.as_str() {
        "POST" => post(shared, req),
        "DELETE" => delete(shared, req),
        _ => {
            let mut r = Reply::error(
                405,
                -32600,
                "Method Not Allowed: POST a message, or DELETE a session",
            );
            r.fields.push(("Allow", "POST, DELETE".into()));
            r
        }
    }
}

fn delete(shared: &Shared, req: &Request) -> Reply {
    let Some(sid) = req.field("Mcp-Session-Id") else {
        return Reply::error(400, -32600, "Bad Request: DELETE needs an Mcp-Session-Id");
    };
    let mut sessions = shared.sessions.lock().unwrap_or_else(|p| p.into_inner());
    match sessions.remove(sid) {
        Some(_) => Reply::empty(200),
        None => Reply::error(404, -32001, "Session not found"),
    }
}

fn media_type(v: &str) -> String {
    v.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

fn post(shared: &Shared, req: &Request) -> Reply {
    let accept: Vec<String> = req
        .field("Accept")
        .unwrap_or("")
        .split(',')
        .map(media_type)
        .collect();
    let takes = |t: &str| accept.iter().any(|a| a == t || a == "*/*");
    if !(takes("application/json") && takes("text/event-stream")) {
        return Reply::error(
            406,
            -32600,
            "Not Acceptable: the client must accept both application/json and text/event-stream",
        );
    }
    if req.field("Content-Type").map(media_type).as_deref() != Some("application/json") {
        return Reply::error(415, -32600, "Unsupported Media Type: send application/json");
    }
    let msg = match serde_json::from_slice::<Value>(&req.body) {
        Ok(v) if depth(&v) <= MAX_DEPTH => v,
        Ok(_) => return Reply::error(400, -32600, "Invalid Request: nested too deep"),
        Err(_) => return Reply::error(400, -32700, "Parse error"),
    };
    if msg.is_array() {
        return Reply::error(
            400,
            -32600,
            "Invalid Request: JSON-RPC batches are not supported (removed in 2025-06-18)",
        );
    }
    if !msg.is_object() {
        return Reply::error(400, -32600, "Invalid Request: a message is a JSON object");
    }
    let method = msg.get("method").and_then(Value::as_str);
    let id = msg.get("id").filter(|i| !i.is_null()).cloned();
    // A request has a method (of any type: the handler answers a bad one) and an id.
    let is_request = msg.get("method").is_some() && id.is_some();
    let header_version = req.field("MCP-Protocol-Version");
    if let Some(sid) = req.field("Mcp-Session-Id") {
        if let Some(v) = header_version
            && !crate::mcp::LEGACY_VERSIONS.contains(&v)
        {
            return Reply::error(
                400,
                -32600,
                &format!("Bad Request: unsupported MCP-Protocol-Version {v}"),
            );
        }
        let (serve, held_ids) = {
            let mut sessions = shared.sessions.lock().unwrap_or_else(|p| p.into_inner());
            let now = shared.clock.fetch_add(1, Ordering::SeqCst) as u64;
            match sessions.get_mut(sid) {
                Some(s) => {
                    s.last_used = now;
                    (Arc::clone(&s.serve), Arc::clone(&s.held))
                }
                None => {
                    return Reply::error(404, -32001, "Session not found: start a new one with initialize");
                }
            }
        };
        let mut reply = {
            let mut serve = serve.lock().unwrap_or_else(|p| p.into_inner());
            let others_held = held_ids.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let reply = exchange_among(&mut serve, &req.body, id.as_ref(), is_request, &others_held);
            if let Some(held) = &reply.held {
                // Registered before the stream's head goes out, so before the client can
                // answer serve's request and the reply can be written.
                held_ids
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(held.id.clone());
            }
            reply
        };
        if let Some(held) = reply.held.as_mut() {
            held.serve = Some((serve, held_ids));
        }
        return reply;
    }
    if method == Some("initialize") {
        return initialize(shared, &req.body);
    }
    let meta_version = msg
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(crate::mcp::meta::PROTOCOL_VERSION));
    if is_request {
        let Some(meta_version) = meta_version else {
            return Reply::error(
                400,
                -32600,
                "Bad Request: Mcp-Session-Id missing (send initialize first)",
            );
        };
        // 2026-07-28: stateless; the mirrored headers must agree with the body.
        if meta_version.as_str() != Some(MODERN_VERSION) {
            let mut r = Reply::error(400, UNSUPPORTED_VERSION, "Unsupported protocol version");
            r.body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": UNSUPPORTED_VERSION, "message": "Unsupported protocol version",
                "data": {"supported": [MODERN_VERSION], "requested": meta_version}}}))
            .expect("serializing a Value cannot fail");
            return r;
        }
        let mismatch = |what: &str| {
            let mut r = Reply::error(400, HEADER_MISMATCH, "");
            r.body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": HEADER_MISMATCH, "message": format!("{what} does not match the body")}}))
            .expect("serializing a Value cannot fail");
            r
        };
        if header_version.is_some_and(|h| h != MODERN_VERSION) {
            return mismatch("MCP-Protocol-Version");
        }
        if let (Some(m), Some(h)) = (method, req.field("Mcp-Method"))
            && h != m
        {
            return mismatch("Mcp-Method");
        }
        if method == Some("subscriptions/listen") {
            return Reply::error(
                400,
                -32601,
                "subscriptions/listen is served over stdio only by serve",
            );
        }
    }
    let mut serve = shared.modern.lock().unwrap_or_else(|p| p.into_inner());
    unheld(exchange(
        &mut serve,
        &req.body,
        id.as_ref(),
        is_request,
        Vec::new(),
    ))
}

/// Outside a legacy session no stream can be held (the modern era asks with `input_required`).
fn unheld(reply: Reply) -> Reply {
    match reply.held {
        Some(_) => Reply::error(500, -32603, "the server wrote no reply"),
        None => reply,
    }
}

/// Opens a session for an initialize request.
fn initialize(shared: &Shared, body: &[u8]) -> Reply {
    let log = match Log::open(&shared.log_path) {
        Ok(l) => l,
        Err(e) => return Reply::error(503, -32603, &format!("cannot open the log: {e}")),
    };
    let serve = Arc::new(Mutex::new(Serve::new(log, Vec::new())));
    // A URL elicitation's completion goes out on the session's next stream.
    let weak = Arc::downgrade(&serve);
    let sink: super::url_page::Sink = Arc::new(move |msg: &Value| {
        if let Some(s) = weak.upgrade() {
            s.lock().unwrap_or_else(|p| p.into_inner()).push(msg);
        }
    });
    serve.lock().unwrap_or_else(|p| p.into_inner()).set_sink(sink);
    let id = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|m| m.get("id").cloned());
    let sid = match session_id() {
        Ok(s) => s,
        Err(e) => return Reply::error(503, -32603, &format!("no randomness for a session id: {e}")),
    };
    let reply = unheld(exchange(
        &mut serve.lock().unwrap_or_else(|p| p.into_inner()),
        body,
        id.as_ref(),
        true,
        vec![("Mcp-Session-Id", sid.clone())],
    ));
    if reply.status == 200 {
        let mut sessions = shared.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(k, _)| k.clone())
        {
            sessions.remove(&oldest);
        }
        let now = shared.clock.fetch_add(1, Ordering::SeqCst) as u64;
        sessions.insert(
            sid,
            Session {
                serve,
                held: HeldIds::default(),
                last_used: now,
            },
        );
    }
    reply
}

/// A session id: 128 random bits in hex (visible ASCII, as the spec asks).
fn session_id() -> io::Result<String> {
    let bytes: [u8; 16] = crate::evidence::keys::random_bytes()?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `line` is the reply to one of `ids` (a held call's, which only its stream takes).
fn replies_to(line: &[u8], ids: &[Value]) -> bool {
    !ids.is_empty()
        && serde_json::from_slice::<Value>(line)
            .ok()
            .is_some_and(|m| m.get("method").is_none() && m.get("id").is_some_and(|i| ids.contains(i)))
}

/// Takes what `serve` wrote, leaving the replies to `others_held` for their own streams: the
/// lines taken, newline-separated.
fn take_lines(serve: &mut Serve<Vec<u8>>, others_held: &[Value]) -> Vec<Vec<u8>> {
    let out = serve.drain();
    let (mut taken, mut left) = (Vec::new(), Vec::new());
    for l in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        if replies_to(l, others_held) {
            left.extend_from_slice(l);
            left.push(b'\n');
        } else {
            taken.push(l.to_vec());
        }
    }
    if !left.is_empty() {
        serve.undrain(&left);
    }
    taken
}

/// [`exchange_among`] outside a session (no call is held there).
fn exchange(
    serve: &mut Serve<Vec<u8>>,
    body: &[u8],
    id: Option<&Value>,
    is_request: bool,
    fields: Vec<(&'static str, String)>,
) -> Reply {
    let mut r = exchange_among(serve, body, id, is_request, &[]);
    if matches!(r.status, 200 | 202) {
        r.fields.extend(fields);
    }
    r
}

/// Feeds one message to the handler and turns what it wrote into the HTTP reply: 202 for a
/// notification or response, JSON for a lone reply, SSE when other messages come with it
/// (they go first, the reply last, so the stream ends with the reply). The replies to the
/// session's held calls (`others_held`) are left for their streams.
fn exchange_among(
    serve: &mut Serve<Vec<u8>>,
    body: &[u8],
    id: Option<&Value>,
    is_request: bool,
    others_held: &[Value],
) -> Reply {
    let fields = Vec::new();
    // The handler takes one line: a body holding newlines would not be one message.
    let line: Vec<u8> = body
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect();
    if serve.on_line(&line).is_err() {
        return Reply::error(503, -32603, "the server could not write its reply");
    }
    if !is_request {
        // What a notification or a response made the server write (the reply to a call held
        // open, a completion) stays queued for the stream that waits, or the next reply.
        let mut r = Reply::empty(202);
        r.fields = fields;
        return r;
    }
    let mut reply = None;
    let mut others = Vec::new();
    for l in take_lines(serve, others_held) {
        let l = l.as_slice();
        let is_reply = serde_json::from_slice::<Value>(l).ok().is_some_and(|m| {
            m.get("method").is_none() && (m.get("id") == id || m.get("id") == Some(&Value::Null))
        });
        if is_reply && reply.is_none() {
            reply = Some(l.to_vec());
        } else {
            others.push(l.to_vec());
        }
    }
    let Some(reply) = reply else {
        let asks = others.iter().any(|l| {
            serde_json::from_slice::<Value>(l)
                .ok()
                .is_some_and(|m| m.get("method").is_some() && m.get("id").is_some())
        });
        if let (true, Some(id)) = (asks, id) {
            // A server request (legacy flows): the stream stays open for the reply.
            return Reply {
                status: 200,
                fields,
                media: Some("text/event-stream"),
                body: events(&others),
                held: Some(Held {
                    id: id.clone(),
                    serve: None,
                }),
            };
        }
        return Reply::error(500, -32603, "the server wrote no reply");
    };
    if others.is_empty() {
        return Reply {
            status: 200,
            fields,
            media: Some("application/json"),
            body: reply,
            held: None,
        };
    }
    others.push(reply);
    Reply {
        status: 200,
        fields,
        media: Some("text/event-stream"),
        body: events(&others),
        held: None,
    }
}

/// Server-sent events, one per message.
fn events(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut sse = Vec::new();
    for m in messages {
        sse.extend_from_slice(b"event: message\ndata: ");
        sse.extend_from_slice(m);
        sse.extend_from_slice(b"\n\n");
    }
    sse
}

/// How often a held stream looks for the session's new messages; it lasts at most as long as
/// any request ([`REQUEST_DEADLINE`]).
const HOLD_POLL: Duration = Duration::from_millis(10);
const HOLD_DEADLINE: Duration = REQUEST_DEADLINE;

/// Writes a held event stream: the first events, then every message the session's server
/// writes, until the reply to the held request (or the deadline, or the client leaves).
fn hold(stream: &mut TcpStream, fields: &[(&str, &str)], first: &[u8], held: &Held) {
    let Some((serve, ids)) = &held.serve else {
        return;
    };
    let mut head =
        String::from("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n");
    for (n, v) in fields {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    if stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(first))
        .is_err()
    {
        return;
    }
    let until = Instant::now() + HOLD_DEADLINE;
    while Instant::now() < until {
        std::thread::sleep(HOLD_POLL);
        let lines = {
            let mut serve = serve.lock().unwrap_or_else(|p| p.into_inner());
            let others: Vec<Value> = ids
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .filter(|i| **i != held.id)
                .cloned()
                .collect();
            take_lines(&mut serve, &others)
        };
        if lines.is_empty() {
            continue;
        }
        if stream
            .write_all(&events(&lines))
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
        let done = lines.iter().any(|l| {
            serde_json::from_slice::<Value>(l)
                .ok()
                .is_some_and(|m| m.get("method").is_none() && m.get("id") == Some(&held.id))
        });
        if done {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_binds_loopback_and_a_remote_address_needs_allow_remote() {
        assert_eq!(
            parse_addr("8080", false).unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(parse_addr("[::1]:9", false).unwrap(), "[::1]:9".parse().unwrap());
        assert!(matches!(
            parse_addr("0.0.0.0:80", false),
            Err(StartError::NotLoopback(_))
        ));
        assert!(parse_addr("0.0.0.0:80", true).is_ok());
        assert!(matches!(
            parse_addr("localhost:80", false),
            Err(StartError::BadAddress(_))
        ));
    }

    #[test]
    fn host_of_keeps_ipv6_brackets_and_drops_the_port() {
        assert_eq!(host_of("[::1]:8080"), "[::1]");
        assert_eq!(host_of("LocalHost:1"), "localhost");
        assert_eq!(host_of("evil.example.com"), "evil.example.com");
    }
}
