//! `HttpWire`, the std-only Streamable HTTP client, over real sockets on 127.0.0.1: first
//! against a crafted server (a `TcpListener` thread that writes exact bytes: awkward chunk
//! splits, every SSE line end, held-open connections, oversized heads, a slowloris, a 401, a
//! 307), then against real MCP servers (server-everything in `streamableHttp` mode, and the
//! Python SDK in both reply modes). Every server process is killed and reaped at the end, and
//! every wire reports no reader thread left behind.

mod common;

use common::{ServerProcess, free_port};

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mcp_witness::http::client::HttpError;
use mcp_witness::http::message::HeadError;
use mcp_witness::http::session::Ended;
use mcp_witness::http::{
    DeleteOutcome, HttpOptions, HttpUrl, HttpWire, Sent, SessionEnd, UrlError, WireEvent,
};
use mcp_witness::wire::framing::Noise;
use serde_json::{Value, json};

/// Waits in these tests are bounds for a broken client, never measured.
const BOUND: Duration = Duration::from_secs(20);

fn soon() -> Instant {
    Instant::now() + BOUND
}

/// What the crafted server does on one connection, after reading its request.
enum Step {
    /// Write these bytes.
    Bytes(Vec<u8>),
    /// Write these bytes in pieces cut at these offsets, flushing and pausing between them so
    /// the client's reads see the cuts.
    Split(Vec<u8>, Vec<usize>),
    /// Keep the connection open until the client closes it (noting whether it did).
    HoldUntilClientCloses,
    /// Write these bytes one at a time, 20 ms apart, until the client goes away.
    Drip(Vec<u8>),
}

/// A server that answers each accepted connection with its script, in order.
struct Crafted {
    addr: SocketAddr,
    thread: Option<JoinHandle<Vec<Seen>>>,
}

/// One request as the crafted server saw it.
#[derive(Debug)]
struct Seen {
    head: String,
    body: Vec<u8>,
    /// For `HoldUntilClientCloses`: the client closed the connection.
    client_closed: Option<bool>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

fn read_request(s: &mut TcpStream) -> Seen {
    s.set_read_timeout(Some(BOUND)).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert!(buf.len() < 64 * 1024, "request head too long");
        if s.read(&mut byte).unwrap() == 0 {
            break;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let mut seen = Seen {
        head,
        body: Vec::new(),
        client_closed: None,
    };
    let len: usize = seen.header("content-length").map_or(0, |v| v.parse().unwrap());
    seen.body = vec![0; len];
    s.read_exact(&mut seen.body).unwrap();
    seen
}

impl Crafted {
    fn start(script: Vec<Vec<Step>>) -> Crafted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let thread = std::thread::spawn(move || {
            let mut seen_all = Vec::new();
            for steps in script {
                let until = soon();
                let mut s = loop {
                    match listener.accept() {
                        Ok((s, _)) => break s,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            assert!(Instant::now() < until, "the client never connected");
                            std::thread::sleep(Duration::from_millis(2));
                        }
                        Err(e) => panic!("accept: {e}"),
                    }
                };
                s.set_nonblocking(false).unwrap();
                s.set_nodelay(true).unwrap();
                let mut seen = read_request(&mut s);
                for step in steps {
                    match step {
                        Step::Bytes(b) => {
                            let _ = s.write_all(&b);
                        }
                        Step::Split(b, cuts) => {
                            let mut from = 0;
                            for at in cuts.into_iter().chain([b.len()]) {
                                let _ = s.write_all(&b[from..at]);
                                let _ = s.flush();
                                std::thread::sleep(Duration::from_millis(15));
                                from = at;
                            }
                        }
                        Step::HoldUntilClientCloses => {
                            let mut sink = [0u8; 256];
                            let closed = loop {
                                match s.read(&mut sink) {
                                    Ok(0) => break true,
                                    Ok(_) => {}
                                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                                        break true;
                                    }
                                    Err(_) => break false, // BOUND passed, still open
                                }
                            };
                            seen.client_closed = Some(closed);
                        }
                        Step::Drip(b) => {
                            let until = soon();
                            for byte in b.iter().cycle() {
                                if s.write_all(&[*byte]).is_err() || Instant::now() > until {
                                    break;
                                }
                                std::thread::sleep(Duration::from_millis(20));
                            }
                        }
                    }
                }
                seen_all.push(seen);
            }
            seen_all
        });
        Crafted {
            addr,
            thread: Some(thread),
        }
    }

    fn url(&self, target: &str) -> HttpUrl {
        HttpUrl::parse(&format!("http://{}{target}", self.addr)).unwrap()
    }

    /// Waits for the server's script to finish and returns what it saw.
    fn seen(mut self) -> Vec<Seen> {
        self.thread.take().unwrap().join().expect("crafted server")
    }
}

fn chunked(pieces: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pieces {
        out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

fn sse_head() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec()
}

fn json_reply(status: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn wire(url: HttpUrl) -> HttpWire {
    HttpWire::connect(url, vec![], HttpOptions::default()).unwrap()
}

fn message(id: u64, method: &str) -> Vec<u8> {
    json!({"jsonrpc":"2.0","id":id,"method":method})
        .to_string()
        .into_bytes()
}

fn initialize(id: u64) -> Vec<u8> {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"mcp-witness-test","version":"0"}}})
    .to_string()
    .into_bytes()
}

fn initialized() -> Vec<u8> {
    br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec()
}

fn posted(sent: Sent) {
    assert!(matches!(sent, Sent::Posted { .. }), "{sent:?}");
}

/// The next event, failing the test if none comes within the bound.
fn next(w: &mut HttpWire) -> WireEvent {
    w.next(soon()).expect("an event before the bound")
}

fn as_json(ev: &WireEvent) -> Value {
    match ev {
        WireEvent::Message(m) => serde_json::from_slice(m).unwrap(),
        other => panic!("expected a message, got {other:?}"),
    }
}

/// Messages until the reply with `id`, returned with what came before it.
fn until_reply(w: &mut HttpWire, id: u64) -> (Value, Vec<Value>) {
    let mut before = Vec::new();
    loop {
        let ev = next(w);
        let msg = as_json(&ev);
        if msg["id"] == id && msg.get("method").is_none() {
            return (msg, before);
        }
        before.push(msg);
    }
}

/// Waits until every exchange recorded so far has ended (its reader thread is done with it).
fn settled(w: &HttpWire) -> mcp_witness::http::HttpFacts {
    let until = soon();
    loop {
        let facts = w.facts();
        if facts.exchanges.iter().all(|x| x.ended.is_some()) || Instant::now() > until {
            return facts;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn closed(w: HttpWire) -> SessionEnd {
    let end = w.close(soon());
    assert_eq!(end.readers_left, 0, "a reader thread outlived close");
    end
}

#[test]
fn sse_reply_split_at_awkward_places_yields_each_message_in_order_and_stops_at_the_reply() {
    // A notification, then the reply; CR, CRLF and LF line ends; a comment and a priming event;
    // the chunk-size line, the CRLF after it and the CRLF of a line end cut across reads.
    let events: &[u8] = b"id: p1\r\ndata:\r\n\r\n: keepalive\r\
event: message\rdata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\r\
data: \"params\":{\"progress\":1}}\r\r\
event: message\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\r\n\r\n";
    let body = chunked(&[&events[..10], &events[10..41], &events[41..]]);
    let mut reply = sse_head();
    let head_len = reply.len();
    reply.extend_from_slice(&body);
    // Cut inside the head, right after a chunk-size's CR, inside `\r\n` of a line, and mid-JSON.
    let cuts = vec![
        20,
        head_len + 1,
        head_len + 2,
        head_len + 9,
        head_len + 20,
        head_len + 60,
        reply.len() - 8,
    ];
    // The stream is not ended after the reply: the client must stop at its reply.
    let server = Crafted::start(vec![vec![
        Step::Split(reply[..reply.len() - 5].to_vec(), cuts),
        Step::HoldUntilClientCloses,
    ]]);
    let mut w = wire(server.url("/mcp"));
    posted(w.send(message(7, "tools/list"), soon()));
    let (reply, before) = until_reply(&mut w, 7);
    assert_eq!(reply["result"]["ok"], true);
    assert_eq!(before.len(), 1);
    assert_eq!(before[0]["method"], "notifications/progress");
    assert_eq!(before[0]["params"]["progress"], 1);
    let facts = settled(&w);
    let x = &facts.exchanges[0];
    assert_eq!(x.ended, Some(Ended::Reply));
    assert_eq!(x.content_type.as_deref(), Some("text/event-stream"));
    let sse = x.sse.unwrap();
    assert_eq!((sse.events, sse.comments, sse.priming), (3, 1, 1));
    assert!(sse.cr > 0 && sse.crlf > 0 && sse.lf > 0, "{sse:?}");
    closed(w);
    let seen = server.seen();
    assert_eq!(seen[0].client_closed, Some(true));
}

#[test]
fn a_complete_json_body_on_a_connection_held_open_is_delivered_without_waiting_for_close() {
    let body = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    let server = Crafted::start(vec![vec![
        Step::Bytes(json_reply("200 OK", "Connection: keep-alive\r\n", body)),
        Step::HoldUntilClientCloses,
    ]]);
    let mut w = wire(server.url("/mcp"));
    posted(w.send(message(1, "ping"), soon()));
    assert_eq!(
        as_json(&next(&mut w)),
        serde_json::from_str::<Value>(body).unwrap()
    );
    let facts = settled(&w);
    assert_eq!(facts.exchanges[0].ended, Some(Ended::Body));
    closed(w);
    // The server held the socket open; the client framed the body and closed it itself.
    assert_eq!(server.seen()[0].client_closed, Some(true));
}

#[test]
fn chunked_json_with_extensions_and_trailers_is_one_message() {
    let mut reply =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    reply.extend_from_slice(
        b"5;ext=1\r\n{\"jso\r\n1f\r\nnrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n0\r\nX-Trailer: t\r\n\r\n",
    );
    let server = Crafted::start(vec![vec![
        Step::Split(reply.clone(), vec![reply.len() - 30, reply.len() - 3]),
        Step::HoldUntilClientCloses,
    ]]);
    let mut w = wire(server.url("/"));
    posted(w.send(message(3, "ping"), soon()));
    assert_eq!(as_json(&next(&mut w))["id"], 3);
    closed(w);
    assert_eq!(server.seen()[0].client_closed, Some(true));
}

#[test]
fn session_id_and_protocol_version_ride_on_every_later_request_and_delete_ends_the_session() {
    let sid = "sess-0123456789abcdef";
    let init = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"crafted","version":"1"}}}"#;
    let list = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#;
    let mut sse = sse_head();
    sse.extend_from_slice(&chunked(
        &[format!("event: message\ndata: {list}\n\n").as_bytes()],
    ));
    let server = Crafted::start(vec![
        vec![Step::Bytes(json_reply(
            "200 OK",
            &format!("Mcp-Session-Id: {sid}\r\n"),
            init,
        ))],
        vec![Step::Bytes(
            b"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(),
        )],
        vec![Step::Bytes(sse)],
        vec![Step::Bytes(
            b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n".to_vec(),
        )],
    ]);
    let mut w = HttpWire::connect(
        server.url("/mcp?tenant=acme"),
        vec![("Authorization".into(), "Bearer tok-SECRET-4242".into())],
        HttpOptions::default(),
    )
    .unwrap();
    posted(w.send(initialize(1), soon()));
    let (reply, _) = until_reply(&mut w, 1);
    assert!(w.has_session());
    w.set_protocol_version(reply["result"]["protocolVersion"].as_str().unwrap());
    posted(w.send(initialized(), soon()));
    posted(w.send(message(2, "tools/list"), soon()));
    let (tools, before) = until_reply(&mut w, 2);
    assert_eq!(tools["result"]["tools"], json!([]));
    assert!(before.is_empty(), "a 202 carries no event: {before:?}");
    settled(&w);
    let debug = format!("{w:?}");
    assert!(
        debug.contains("Authorization") && !debug.contains("SECRET"),
        "{debug}"
    );
    let end = closed(w);
    assert_eq!(end.delete, DeleteOutcome::Status(405));
    assert!(end.delete.accepted());

    let facts = &end.facts;
    let fact = facts.session_id.unwrap();
    assert_eq!((fact.length, fact.visible_ascii), (sid.len(), true));
    assert_eq!(facts.delete_status, Some(405));
    let shape: Vec<_> = facts
        .exchanges
        .iter()
        .map(|x| (x.method.as_str(), x.rpc_method.as_deref(), x.status))
        .collect();
    assert_eq!(
        shape,
        [
            ("POST", Some("initialize"), Some(200)),
            ("POST", Some("notifications/initialized"), Some(202)),
            ("POST", Some("tools/list"), Some(200)),
            ("DELETE", None, Some(405)),
        ]
    );
    let recorded = format!("{facts:?}{}", serde_json::to_string(facts).unwrap());
    assert!(!recorded.contains(sid), "the session id value is never recorded");
    assert!(!recorded.contains("SECRET"));

    let seen = server.seen();
    assert_eq!(
        seen[0].head.lines().next(),
        Some("POST /mcp?tenant=acme HTTP/1.1")
    );
    assert_eq!(seen[0].header("mcp-session-id"), None);
    assert_eq!(seen[0].header("mcp-protocol-version"), None);
    for s in &seen {
        assert_eq!(
            s.header("authorization").as_deref(),
            Some("Bearer tok-SECRET-4242")
        );
        assert_eq!(s.header("host"), Some(server_host(&s.head)));
    }
    for s in &seen[..3] {
        assert_eq!(
            s.header("accept").as_deref(),
            Some("application/json, text/event-stream")
        );
        assert_eq!(s.header("content-type").as_deref(), Some("application/json"));
    }
    for s in &seen[1..] {
        assert_eq!(s.header("mcp-session-id").as_deref(), Some(sid));
        assert_eq!(s.header("mcp-protocol-version").as_deref(), Some("2025-11-25"));
    }
    assert_eq!(
        seen[3].head.lines().next(),
        Some("DELETE /mcp?tenant=acme HTTP/1.1")
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&seen[1].body).unwrap()["method"],
        "notifications/initialized"
    );
}

/// The Host header the client must have sent: the listener's address.
fn server_host(head: &str) -> String {
    // Every crafted server binds 127.0.0.1:<port>; read the port back from the Host line.
    let host = head.lines().find_map(|l| l.strip_prefix("Host: ")).unwrap_or("");
    assert!(host.starts_with("127.0.0.1:"), "{head}");
    host.to_string()
}

#[test]
fn an_oversized_response_head_breaks_the_stream_with_a_typed_error() {
    let mut reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n".to_vec();
    // 100 fields (under the count bound) of 1000 bytes: 100 KB, over the 64 KiB head bound.
    for i in 0..100 {
        reply.extend_from_slice(format!("X-Filler-{i}: {}\r\n", "y".repeat(1000)).as_bytes());
    }
    reply.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
    let server = Crafted::start(vec![vec![Step::Bytes(reply), Step::HoldUntilClientCloses]]);
    let mut w = wire(server.url("/mcp"));
    posted(w.send(message(1, "ping"), soon()));
    match next(&mut w) {
        WireEvent::Broken { error, .. } => {
            assert_eq!(error, HttpError::Head(HeadError::HeadTooLarge))
        }
        other => panic!("expected a broken stream, got {other:?}"),
    }
    assert_eq!(settled(&w).exchanges[0].error, Some("head_too_large"));
    closed(w);
    assert_eq!(server.seen()[0].client_closed, Some(true));
}

#[test]
fn a_slowloris_server_is_cut_off_at_the_stream_deadline() {
    let server = Crafted::start(vec![vec![
        Step::Bytes(b"HTTP/1.1 200 OK\r\n".to_vec()),
        Step::Drip(b"X-Slow: yes\r\n".to_vec()),
    ]]);
    let options = HttpOptions {
        stream_timeout: Duration::from_millis(600),
        ..HttpOptions::default()
    };
    let mut w = HttpWire::connect(server.url("/mcp"), vec![], options).unwrap();
    posted(w.send(message(1, "ping"), soon()));
    match next(&mut w) {
        WireEvent::Broken { error, .. } => assert_eq!(error, HttpError::TimedOut),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(settled(&w).exchanges[0].ended, Some(Ended::Deadline));
    closed(w);
    server.seen();
}

#[test]
fn a_401_becomes_a_status_event_with_its_challenge_and_body() {
    let challenge = r#"Bearer error="invalid_token", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp""#;
    let body = r#"{"error":"invalid_token","error_description":"Authentication required"}"#;
    let server = Crafted::start(vec![vec![Step::Bytes(json_reply(
        "401 Unauthorized",
        &format!("WWW-Authenticate: {challenge}\r\n"),
        body,
    ))]]);
    let mut w = wire(server.url("/mcp"));
    posted(w.send(initialize(1), soon()));
    match next(&mut w) {
        WireEvent::Status(s) => {
            assert_eq!(s.status, 401);
            assert_eq!(s.www_authenticate, [challenge]);
            assert_eq!(s.content_type.as_deref(), Some("application/json"));
            assert_eq!(s.body, body.as_bytes());
            assert!(!s.body_cut);
            assert_eq!(s.exchange, Some(0));
        }
        other => panic!("expected a status event, got {other:?}"),
    }
    let end = closed(w);
    assert_eq!(end.delete, DeleteOutcome::NoSession);
    server.seen();
}

#[test]
fn an_error_body_past_the_bound_is_cut_and_an_unframable_one_still_reports_its_status() {
    let html = format!("<!DOCTYPE html><pre>Cannot POST /mcp</pre>{}", " ".repeat(500));
    let server = Crafted::start(vec![
        vec![
            Step::Bytes(
                format!(
                    "HTTP/1.1 404 Not Found\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n{html}",
                    html.len()
                )
                .into_bytes(),
            ),
            Step::HoldUntilClientCloses,
        ],
        vec![Step::Bytes(
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 5, 6\r\n\r\nhello".to_vec(),
        )],
    ]);
    let options = HttpOptions {
        max_error_body: 64,
        ..HttpOptions::default()
    };
    let mut w = HttpWire::connect(server.url("/mcp"), vec![], options).unwrap();
    posted(w.send(initialize(1), soon()));
    match next(&mut w) {
        WireEvent::Status(s) => {
            assert_eq!(s.status, 404);
            assert_eq!(s.content_type.as_deref(), Some("text/html; charset=utf-8"));
            assert_eq!(s.body, &html.as_bytes()[..64]);
            assert!(s.body_cut);
        }
        other => panic!("expected a status event, got {other:?}"),
    }
    posted(w.send(initialize(2), soon()));
    match next(&mut w) {
        WireEvent::Status(s) => {
            assert_eq!(s.status, 400);
            assert!(s.body.is_empty() && s.body_cut);
        }
        other => panic!("expected a status event, got {other:?}"),
    }
    let end = closed(w);
    assert_eq!(end.facts.exchanges[0].ended, Some(Ended::Cut));
    assert_eq!(end.facts.exchanges[1].ended, Some(Ended::Error));
    assert_eq!(server.seen()[0].client_closed, Some(true));
}

#[test]
fn a_307_redirect_is_recorded_redacted_and_not_followed() {
    let server = Crafted::start(vec![vec![Step::Bytes(
        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:1/mcp?api_key=LEAKME\r\nContent-Length: 0\r\n\r\n".to_vec(),
    )]]);
    let mut w = wire(server.url("/mcp/"));
    posted(w.send(initialize(1), soon()));
    match next(&mut w) {
        WireEvent::Status(s) => {
            assert_eq!(s.status, 307);
            assert_eq!(
                s.location.as_deref(),
                Some("http://127.0.0.1:1/mcp?api_key=[REDACTED]")
            );
        }
        other => panic!("expected a status event, got {other:?}"),
    }
    let end = closed(w);
    assert_eq!(end.facts.redirects.len(), 1);
    assert_eq!(end.facts.redirects[0].status, 307);
    assert!(!format!("{:?}", end.facts).contains("LEAKME"));
    // One request only: the redirect was not followed.
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn a_body_that_is_not_json_is_noise_and_a_compressed_one_is_refused() {
    let server = Crafted::start(vec![
        vec![Step::Bytes(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n<html></html>"
                .to_vec(),
        )],
        vec![Step::Bytes(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nxyz"
                .to_vec(),
        )],
    ]);
    let mut w = wire(server.url("/"));
    posted(w.send(message(1, "ping"), soon()));
    assert_eq!(
        next(&mut w),
        WireEvent::Noise(b"<html></html>".to_vec(), Noise::NotJson)
    );
    posted(w.send(message(2, "ping"), soon()));
    match next(&mut w) {
        WireEvent::Broken { error, .. } => {
            assert_eq!(error, HttpError::ContentEncoding("gzip".into()))
        }
        other => panic!("expected a refused encoding, got {other:?}"),
    }
    closed(w);
    server.seen();
}

#[test]
fn a_server_that_closes_before_replying_is_gone_and_a_closed_port_is_refused() {
    let server = Crafted::start(vec![vec![]]);
    let mut w = wire(server.url("/"));
    posted(w.send(message(1, "ping"), soon()));
    assert!(matches!(
        next(&mut w),
        WireEvent::Gone {
            kind: std::io::ErrorKind::UnexpectedEof,
            ..
        }
    ));
    closed(w);
    server.seen();

    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut w = wire(HttpUrl::parse(&format!("http://127.0.0.1:{port}/mcp")).unwrap());
    assert_eq!(
        w.send(message(1, "ping"), soon()),
        Sent::Gone(std::io::ErrorKind::ConnectionRefused)
    );
    closed(w);
}

#[test]
fn an_ipv6_literal_url_reaches_a_server_on_the_ipv6_loopback() {
    let listener = TcpListener::bind("[::1]:0").expect("this machine has an IPv6 loopback");
    let port = listener.local_addr().unwrap().port();
    let thread = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let seen = read_request(&mut s);
        s.write_all(&json_reply(
            "200 OK",
            "",
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ))
        .unwrap();
        seen
    });
    let mut w = wire(HttpUrl::parse(&format!("http://[::1]:{port}/mcp")).unwrap());
    posted(w.send(message(1, "ping"), soon()));
    assert_eq!(as_json(&next(&mut w))["id"], 1);
    closed(w);
    let seen = thread.join().unwrap();
    assert_eq!(seen.header("host"), Some(format!("[::1]:{port}")));
}

#[test]
fn a_body_without_length_or_chunking_is_read_to_the_close() {
    let server = Crafted::start(vec![vec![Step::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".to_vec(),
    )]]);
    let mut w = wire(server.url("/"));
    posted(w.send(message(1, "ping"), soon()));
    assert_eq!(as_json(&next(&mut w))["id"], 1);
    let facts = settled(&w);
    assert_eq!(
        facts.exchanges[0].framing,
        Some(mcp_witness::http::message::Framing::Close)
    );
    closed(w);
    server.seen();
}

#[test]
fn a_body_cut_short_or_a_malformed_chunk_is_never_delivered_as_a_message() {
    let server = Crafted::start(vec![
        // Announces 100 bytes, sends 20, closes.
        vec![Step::Bytes(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":\"2.0\",\"i".to_vec(),
        )],
        // A chunk size that is not hex.
        vec![Step::Bytes(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n".to_vec(),
        ), Step::HoldUntilClientCloses],
    ]);
    let mut w = wire(server.url("/"));
    posted(w.send(message(1, "ping"), soon()));
    assert!(matches!(
        next(&mut w),
        WireEvent::Gone {
            kind: std::io::ErrorKind::UnexpectedEof,
            ..
        }
    ));
    posted(w.send(message(2, "ping"), soon()));
    match next(&mut w) {
        WireEvent::Broken { error, exchange } => {
            assert_eq!(error, HttpError::BadChunk);
            assert_eq!(exchange, Some(1));
        }
        other => panic!("expected a malformed chunk, got {other:?}"),
    }
    closed(w);
    assert_eq!(server.seen()[1].client_closed, Some(true));
}

#[test]
fn sse_events_of_other_types_oversize_events_and_bad_json_each_get_their_own_event() {
    let big = format!("data: {{\"x\":\"{}\"}}\n\n", "a".repeat(300));
    let stream = format!(
        "event: endpoint\ndata: /messages?session_id=1\n\n{big}data: not json\n\ndata: [1,2]\n\ndata: {{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{{}}}}\n\n"
    );
    let mut reply = sse_head();
    reply.extend_from_slice(&chunked(&[stream.as_bytes()]));
    let server = Crafted::start(vec![vec![Step::Bytes(reply)]]);
    let options = HttpOptions {
        max_event: 256,
        ..HttpOptions::default()
    };
    let mut w = HttpWire::connect(server.url("/"), vec![], options).unwrap();
    posted(w.send(message(5, "tools/list"), soon()));
    assert_eq!(
        next(&mut w),
        WireEvent::OtherEvent {
            event: "endpoint".into(),
            data: b"/messages?session_id=1".to_vec()
        }
    );
    assert!(matches!(next(&mut w), WireEvent::Oversize(n) if n > 256));
    assert_eq!(
        next(&mut w),
        WireEvent::Noise(b"not json".to_vec(), Noise::NotJson)
    );
    assert_eq!(
        next(&mut w),
        WireEvent::Noise(b"[1,2]".to_vec(), Noise::NotObject)
    );
    assert_eq!(as_json(&next(&mut w))["id"], 5);
    closed(w);
    server.seen();
}

#[test]
fn a_server_that_never_answers_is_cut_off_by_close() {
    // Accepts, reads the request, then holds the socket without answering.
    let server = Crafted::start(vec![vec![Step::HoldUntilClientCloses]]);
    let mut w = wire(server.url("/"));
    posted(w.send(message(1, "ping"), soon()));
    // No reply, and close shuts the waiting reader down.
    let end = closed(w);
    assert_eq!(end.facts.exchanges[0].ended, Some(Ended::Closed));
    assert_eq!(end.facts.exchanges[0].error, None);
    assert_eq!(server.seen()[0].client_closed, Some(true));
}

#[test]
fn garbage_replies_end_every_exchange_without_killing_a_reader() {
    // Random bytes after a plausible start: heads, framings and bodies the client has never
    // seen. A reader that panicked would leave its exchange without an end.
    let starts: [&[u8]; 4] = [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\nContent-Type: application/json\r\n\r\n",
        b"HTTP/1.1 4",
        b"",
    ];
    let alphabet = b"0123456789abcdefHTTP/1. :;\r\n\r\n{}\"data\xff\x00";
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let rounds = 60;
    let script: Vec<Vec<Step>> = (0..rounds)
        .map(|i| {
            let mut bytes = starts[i % starts.len()].to_vec();
            let len = rand(300);
            bytes.extend((0..len).map(|_| alphabet[rand(alphabet.len())]));
            vec![Step::Bytes(bytes)]
        })
        .collect();
    let server = Crafted::start(script);
    let options = HttpOptions {
        stream_timeout: Duration::from_secs(2),
        ..HttpOptions::default()
    };
    let mut w = HttpWire::connect(server.url("/"), vec![], options).unwrap();
    for i in 0..rounds {
        posted(w.send(message(i as u64, "ping"), soon()));
        // One at a time, so each connection gets its own script.
        let facts = settled(&w);
        assert!(facts.exchanges[i].ended.is_some(), "exchange {i} never ended");
        while w.next(Instant::now()).is_some() {}
    }
    closed(w);
    assert_eq!(server.seen().len(), rounds);
}

#[test]
fn sends_past_the_open_stream_bound_are_refused_until_a_reply_ends() {
    let server = Crafted::start(vec![vec![Step::HoldUntilClientCloses]]);
    let options = HttpOptions {
        max_open_streams: 1,
        ..HttpOptions::default()
    };
    let mut w = HttpWire::connect(server.url("/"), vec![], options).unwrap();
    posted(w.send(message(1, "ping"), soon()));
    assert_eq!(w.send(message(2, "ping"), soon()), Sent::Full);
    let end = closed(w);
    assert_eq!(end.facts.exchanges.len(), 1, "the refused send made no request");
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn https_urls_bad_headers_and_userinfo_are_refused_before_any_connection() {
    // The default build has no TLS (tests/https_probe.rs covers the `https` feature).
    #[cfg(not(feature = "https"))]
    {
        let https = HttpUrl::parse("https://127.0.0.1:1/mcp").unwrap();
        let e = HttpWire::connect(https, vec![], HttpOptions::default()).unwrap_err();
        assert_eq!(e, HttpError::Url(UrlError::HttpsNeedsFeature));
        assert!(e.to_string().contains("https"));
    }

    let url = HttpUrl::parse("http://127.0.0.1:1/mcp").unwrap();
    let e = HttpWire::connect(
        url,
        vec![("X-Key".into(), "SECRET\r\nInjected: 1".into())],
        HttpOptions::default(),
    )
    .unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(text.contains("X-Key") && !text.contains("SECRET"), "{text}");

    assert_eq!(
        HttpUrl::parse("http://me:pw@127.0.0.1/mcp"),
        Err(UrlError::Userinfo)
    );
}

// ---------------------------------------------------------------- real MCP servers

impl ServerProcess {
    fn url(&self) -> HttpUrl {
        HttpUrl::parse(&format!("http://127.0.0.1:{}/mcp", self.port)).unwrap()
    }

    /// Kills it and checks it is gone.
    fn stop(mut self) {
        let _ = self.child.kill();
        let status = self.child.wait().unwrap();
        assert!(!status.success() || status.code().is_some());
    }
}

/// initialize, notifications/initialized, tools/list and DELETE through `HttpWire`; returns
/// the initialize result, the tool names and how the session ended.
fn session_over_http(url: HttpUrl) -> (Value, Vec<String>, SessionEnd) {
    let mut w = wire(url);
    posted(w.send(initialize(1), soon()));
    let (init, _) = until_reply(&mut w, 1);
    let version = init["result"]["protocolVersion"].as_str().unwrap().to_string();
    w.set_protocol_version(&version);
    posted(w.send(initialized(), soon()));
    posted(w.send(message(2, "tools/list"), soon()));
    let (tools, _) = until_reply(&mut w, 2);
    let names = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    settled(&w);
    (init, names, closed(w))
}

#[test]
fn server_everything_over_streamable_http_answers_initialize_tools_list_and_delete() {
    let dir = common::reference_dir();
    let tmp = common::TempDir::new("everything-http");
    let port = free_port();
    let mut cmd = Command::new("node");
    cmd.arg("--require")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/http-servers/loopback-listen.cjs"
        ))
        .arg(dir.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    let server = ServerProcess::start(cmd, port, tmp.path());

    let (init, names, end) = session_over_http(server.url());
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    // 13 tools for a client that declares no capabilities (REFERENCE-SERVERS.md).
    assert_eq!(names.len(), 13, "{names:?}");
    assert!(names.iter().any(|n| n == "echo"), "{names:?}");
    assert_eq!(end.delete, DeleteOutcome::Status(200));

    let facts = &end.facts;
    let sid = facts.session_id.expect("everything gives a session id");
    assert_eq!((sid.length, sid.visible_ascii), (36, true)); // a UUID
    let shape: Vec<_> = facts
        .exchanges
        .iter()
        .map(|x| (x.method.as_str(), x.rpc_method.as_deref(), x.status))
        .collect();
    assert_eq!(
        shape,
        [
            ("POST", Some("initialize"), Some(200)),
            ("POST", Some("notifications/initialized"), Some(202)),
            ("POST", Some("tools/list"), Some(200)),
            ("DELETE", None, Some(200)),
        ]
    );
    for i in [0, 2] {
        assert_eq!(
            facts.exchanges[i].content_type.as_deref(),
            Some("text/event-stream")
        );
    }
    // everything keeps the connection open after each stream: the reads ended at the reply.
    assert_eq!(facts.exchanges[0].ended, Some(Ended::Reply));
    assert_eq!(facts.exchanges[2].ended, Some(Ended::Reply));
    assert_eq!(
        facts.exchanges[1].framing,
        Some(mcp_witness::http::message::Framing::Chunked)
    );
    server.stop();
}

fn python_server(args: &[&str], tmp: &common::TempDir) -> ServerProcess {
    let dir = common::reference_dir();
    let port = free_port();
    let mut cmd = Command::new(dir.join("venv/bin/python"));
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/http-servers/py_streamable.py"
    ))
    .arg(port.to_string())
    .args(args);
    ServerProcess::start(cmd, port, tmp.path())
}

fn python_sdk_session(json_mode: bool) {
    let tmp = common::TempDir::new("python-http");
    let server = python_server(if json_mode { &["--json"] } else { &[] }, &tmp);
    let (init, names, end) = session_over_http(server.url());
    assert_eq!(init["result"]["serverInfo"]["name"], "py-http-fixture");
    assert_eq!(names, ["add", "echo"]);
    assert_eq!(end.delete, DeleteOutcome::Status(200));
    let sid = end.facts.session_id.expect("the Python SDK gives a session id");
    assert_eq!((sid.length, sid.visible_ascii), (32, true)); // 32 hex digits
    let want = if json_mode {
        "application/json"
    } else {
        "text/event-stream"
    };
    for i in [0, 2] {
        let x = &end.facts.exchanges[i];
        assert_eq!(x.status, Some(200));
        assert_eq!(x.content_type.as_deref(), Some(want));
        // SSE lines from sse-starlette end in CRLF.
        if !json_mode {
            let sse = x.sse.unwrap();
            assert!(sse.crlf > 0 && sse.lf == 0, "{sse:?}");
        }
    }
    assert_eq!(end.facts.exchanges[1].status, Some(202));
    server.stop();
}

#[test]
fn python_sdk_json_mode_answers_initialize_tools_list_and_delete() {
    python_sdk_session(true);
}

#[test]
fn python_sdk_sse_mode_answers_initialize_tools_list_and_delete() {
    python_sdk_session(false);
}

#[test]
fn python_sdk_stateless_mode_gives_no_session_so_no_delete_is_sent() {
    let tmp = common::TempDir::new("python-http-stateless");
    let server = python_server(&["--json", "--stateless"], &tmp);
    let (_, names, end) = session_over_http(server.url());
    assert_eq!(names, ["add", "echo"]);
    assert_eq!(end.delete, DeleteOutcome::NoSession);
    assert_eq!(end.facts.session_id, None);
    assert_eq!(end.facts.delete_status, None);
    let methods: Vec<_> = end.facts.exchanges.iter().map(|x| x.method.as_str()).collect();
    assert_eq!(methods, ["POST", "POST", "POST"]);
    server.stop();
}
