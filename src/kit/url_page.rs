//! The loopback page of URL mode elicitation: the "out-of-band" step a client's user (or a
//! test client) completes by opening the URL serve sent. One listener per process, always on
//! 127.0.0.1 whatever `serve --http` binds, started at the first URL elicitation; serve never
//! opens a browser. Each elicitation has a random id in its path (`/elicitation/<id>`), so no
//! other page can complete it by guessing; a visit is logged (`dir: "page"`) and, for a legacy
//! stdio session, answered by `notifications/elicitation/complete` on the client's pipe.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::serve::Log;

/// Writes one message to the client that owns an elicitation (stdio only).
pub type Sink = Arc<dyn Fn(&Value) + Send + Sync>;

/// Elicitations kept at once; the oldest is forgotten past this.
const MAX_OPEN: usize = 256;
/// Bound on a request head read from a visitor, and on each read and write.
const MAX_HEAD: usize = 8 * 1024;
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// A whole visit (head read and reply) at most this long.
const VISIT_DEADLINE: Duration = Duration::from_secs(4);
/// Visitors served at once, each on its own thread: one that sends nothing (or sends slowly)
/// does not keep the user's own visit waiting. More are closed unanswered.
const MAX_VISITORS: usize = 16;
/// The path prefix of an elicitation's page.
pub const PATH: &str = "/elicitation/";

struct Open {
    id: String,
    visited: bool,
    sink: Option<Sink>,
}

/// The page listener and the elicitations it completes.
pub struct Page {
    addr: SocketAddr,
    open: Mutex<Vec<Open>>,
    log: Mutex<Log>,
    /// Visits being served.
    visiting: AtomicUsize,
}

static PAGE: OnceLock<Result<Arc<Page>, String>> = OnceLock::new();

/// The process's page, started on first use (its visits are logged to `log`'s file).
pub fn page(log: &Log) -> Result<Arc<Page>, String> {
    PAGE.get_or_init(|| {
        let log = log
            .try_clone()
            .map_err(|e| format!("cannot share the log: {e}"))?;
        Page::start(log).map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))
    })
    .clone()
}

impl Page {
    fn start(log: Log) -> io::Result<Arc<Page>> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let page = Arc::new(Page {
            addr: listener.local_addr()?,
            open: Mutex::new(Vec::new()),
            log: Mutex::new(log),
            visiting: AtomicUsize::new(0),
        });
        let serving = Arc::clone(&page);
        std::thread::Builder::new()
            .name("url-page".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    serving.admit(stream);
                }
            })?;
        Ok(page)
    }

    /// Serves a visitor on a thread of its own, if fewer than [`MAX_VISITORS`] are served.
    fn admit(self: &Arc<Self>, stream: TcpStream) {
        if self.visiting.fetch_add(1, Ordering::SeqCst) >= MAX_VISITORS {
            self.visiting.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        let page = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("url-page-visit".into())
            .spawn(move || {
                page.visit(stream);
                page.visiting.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            self.visiting.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Registers a new elicitation: its id and URL. `sink` (legacy stdio) gets the
    /// completion notification when the page is visited.
    pub fn open(&self, sink: Option<Sink>) -> io::Result<(String, String)> {
        let bytes: [u8; 16] = crate::evidence::keys::random_bytes()?;
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.len() >= MAX_OPEN {
            open.remove(0);
        }
        open.push(Open {
            id: id.clone(),
            visited: false,
            sink,
        });
        let url = self.url(&id);
        Ok((id, url))
    }

    /// The URL of elicitation `id`'s page.
    pub fn url(&self, id: &str) -> String {
        format!("http://{}{PATH}{id}", self.addr)
    }

    /// Whether the page of elicitation `id` was visited (`None`: no such elicitation).
    pub fn visited(&self, id: &str) -> Option<bool> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.iter().find(|o| o.id == id).map(|o| o.visited)
    }

    /// Serves one visitor: reads its head (bounded), completes the elicitation its path names.
    fn visit(&self, mut stream: TcpStream) {
        let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
        let head = read_until(&mut stream, |h| h.windows(4).any(|w| w == b"\r\n\r\n"));
        let line = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_whitespace();
        let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let path = target.split(['?', '#']).next().unwrap_or("");
        let (status, text) = match (method, path.strip_prefix(PATH)) {
            ("GET", Some(id)) => match self.complete(id) {
                Some(true) => (
                    "200 OK",
                    "mcp-witness: this elicitation is complete. Go back to your MCP client.",
                ),
                Some(false) => ("200 OK", "mcp-witness: this elicitation was already complete."),
                None => ("404 Not Found", "mcp-witness: no such elicitation."),
            },
            ("GET", None) => ("404 Not Found", "mcp-witness: no such page."),
            _ => (
                "405 Method Not Allowed",
                "mcp-witness: GET the URL of an elicitation.",
            ),
        };
        let body = format!("<!doctype html><title>mcp-witness</title><p>{text}</p>\n");
        let reply = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes());
    }

    /// Marks `id` visited: `Some(true)` the first time (logged, and the sink told), `Some(false)`
    /// again, `None` for an unknown id.
    fn complete(&self, id: &str) -> Option<bool> {
        let sink = {
            let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            let o = open.iter_mut().find(|o| o.id == id)?;
            if o.visited {
                return Some(false);
            }
            o.visited = true;
            o.sink.take()
        };
        {
            let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
            log.mark("page", json!({"elicitationId": id, "visited": true}));
        }
        if let Some(sink) = sink {
            sink(&json!({"jsonrpc": "2.0", "method": COMPLETE, "params": {"elicitationId": id}}));
        }
        Some(true)
    }
}

/// Reads from `stream` until `done` says what was read is enough, [`MAX_HEAD`] bytes, the end,
/// or [`VISIT_DEADLINE`] (each read waits only for what is left of it): a peer that trickles
/// bytes is given up on at the deadline.
fn read_until(stream: &mut TcpStream, done: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let until = Instant::now() + VISIT_DEADLINE;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while got.len() < MAX_HEAD && !done(&got) {
        let left = until.saturating_duration_since(Instant::now()).min(IO_TIMEOUT);
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    got
}

/// The notification that tells a legacy client its URL elicitation completed.
pub const COMPLETE: &str = "notifications/elicitation/complete";

/// The longest elicitation id a page URL may name (serve's are 32 hex digits).
const MAX_ID: usize = 64;

/// Whether `url` is a page of this kind on a loopback address (what a test client checks
/// before it "opens" a URL it was sent): `http://`, a loopback IP and port, and
/// `/elicitation/` followed by an id of letters and digits only, so a URL a bridge or
/// server chose cannot carry a line break, a header or a second request into the GET.
pub fn is_loopback_page(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or("");
    let id = rest[authority.len()..].strip_prefix(PATH).unwrap_or("");
    authority
        .parse::<SocketAddr>()
        .is_ok_and(|a| a.ip().is_loopback())
        && (1..=MAX_ID).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Opens a page URL the way a browser would, for the control client: one bounded GET to a
/// loopback page; the status code.
pub fn open_url(url: &str) -> Result<u16, String> {
    if !is_loopback_page(url) {
        return Err("not a loopback elicitation page: not opened".into());
    }
    let rest = &url["http://".len()..];
    let authority = rest.split('/').next().unwrap_or("");
    let path = &rest[authority.len()..];
    let addr: SocketAddr = authority.parse().map_err(|_| "bad address".to_string())?;
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| e.to_string())?;
    let _ = s.set_write_timeout(Some(IO_TIMEOUT));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    // The status line is all that is read: until its end, the bound, or the deadline, so a
    // page that trickles (a port a forged URL named) cannot hold drive.
    let reply = read_until(&mut s, |r| r.contains(&b'\n'));
    if !reply.contains(&b'\n') {
        return Err("no whole HTTP status line in time".into());
    }
    let line = reply.split(|&b| b == b'\n').next().unwrap_or(&[]);
    String::from_utf8_lossy(line)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| "no HTTP status in the reply".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_elicitation_pages_count_as_pages() {
        assert!(is_loopback_page("http://127.0.0.1:4000/elicitation/ab"));
        assert!(is_loopback_page("http://[::1]:4000/elicitation/ab"));
        assert!(!is_loopback_page("http://10.0.0.1:4000/elicitation/ab"));
        assert!(!is_loopback_page("https://127.0.0.1:4000/elicitation/ab"));
        assert!(!is_loopback_page("http://localhost:4000/elicitation/ab"));
        assert!(!is_loopback_page("http://127.0.0.1:4000/other"));
    }

    #[test]
    fn a_page_that_trickles_its_status_line_is_given_up_on_at_the_visit_deadline() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        // One byte at a time, each well within a read's timeout, the line whole only after
        // twice the deadline.
        let line = b"HTTP/1.1 200 OK\r\n";
        let step = VISIT_DEADLINE * 2 / line.len() as u32;
        let page = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            for b in line {
                if s.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(step);
            }
        });
        let got = open_url(&format!("http://{addr}{PATH}ab12"));
        assert_eq!(got, Err("no whole HTTP status line in time".to_string()));
        page.join().unwrap();
    }

    #[test]
    fn a_page_url_carrying_anything_but_an_id_is_no_page() {
        // A line break would end the GET's request line and start text of the URL's choosing.
        assert!(!is_loopback_page(
            "http://127.0.0.1:4000/elicitation/ab HTTP/1.1\r\nHost: x\r\n\r\nPOST /admin"
        ));
        assert!(!is_loopback_page("http://127.0.0.1:4000/elicitation/ab\nX: 1"));
        assert!(!is_loopback_page("http://127.0.0.1:4000/elicitation/"));
        assert!(!is_loopback_page("http://127.0.0.1:4000/elicitation/../admin"));
        assert!(!is_loopback_page(&format!(
            "http://127.0.0.1:4000/elicitation/{}",
            "a".repeat(65)
        )));
    }
}
