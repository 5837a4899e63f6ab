//! JSON-RPC over a spawned server: requests matched to replies by id, server-to-client
//! requests answered (`ping` with `{}`, anything else with -32601), notifications and stdout
//! noise recorded. Every wait is bounded and ends early when the server exits.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::framing::{self, Frame, LineKind};
use crate::transport::{Event, Server};

/// Noise lines kept verbatim (each cut to `NOISE_LINE_BYTES`).
pub const NOISE_KEEP: usize = 5;
pub const NOISE_LINE_BYTES: usize = 512;
/// Notification methods and server requests kept by name.
const NAMES_KEEP: usize = 32;
/// After the server exits, how long stdout may still deliver what it wrote before exiting.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(300);

/// Everything seen on the wire that was not the reply being waited for.
#[derive(Debug, Default, Clone)]
pub struct Traffic {
    pub noise_count: u64,
    pub noise: Vec<(String, &'static str)>,
    pub crlf_lines: u64,
    pub notifications: Vec<String>,
    pub notification_count: u64,
    /// Server-to-client requests: method and how we answered (`{}` or -32601).
    pub server_requests: Vec<(String, &'static str)>,
    pub server_request_count: u64,
    /// Replies whose id matched nothing we were waiting for.
    pub unmatched_replies: u64,
    pub max_line: usize,
    pub messages: u64,
}

/// A reply to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Result(Value),
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// Has the id but neither a `result` nor a well-formed `error`.
    Malformed(Map<String, Value>),
}

/// Why no reply came.
#[derive(Debug, Clone, PartialEq)]
pub enum NoReply {
    /// Silence past the timeout while the server was alive.
    Timeout { waited_ms: u64 },
    /// The server exited.
    Exited,
    /// The server closed stdout but stayed alive.
    StdoutClosed,
    /// A line exceeded the bound.
    Oversize { bytes: usize },
    /// Its stdin is closed: nothing can be sent.
    StdinClosed,
}

/// A JSON-RPC client on top of a server process.
pub struct Rpc {
    pub server: Server,
    next_id: u64,
    pub traffic: Traffic,
}

impl Rpc {
    pub fn new(server: Server) -> Self {
        Rpc {
            server,
            next_id: 1,
            traffic: Traffic::default(),
        }
    }

    /// Sends a notification (no reply expected).
    pub fn notify(&mut self, method: &str, params: Option<Value>) -> bool {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        self.write(&msg)
    }

    /// Writes one raw line (the caller's bytes plus a newline), for robustness checks.
    pub fn send_raw(&mut self, bytes: &[u8]) -> bool {
        let mut line = bytes.to_vec();
        line.push(b'\n');
        self.server.send(line)
    }

    /// Sends a request and waits for its reply.
    pub fn request(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Reply, NoReply> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        if !self.write(&msg) {
            // Usually the server has exited: say so if its exit shows up promptly.
            return match self.wait_for(&Value::from(id), DRAIN_AFTER_EXIT) {
                Err(NoReply::Exited) => Err(NoReply::Exited),
                _ => Err(NoReply::StdinClosed),
            };
        }
        self.wait_for(&Value::from(id), timeout)
    }

    fn write(&mut self, msg: &Value) -> bool {
        let mut line = serde_json::to_vec(msg).expect("serializing a Value cannot fail");
        line.push(b'\n');
        self.server.send(line)
    }

    /// Waits for the reply carrying `id`, handling everything else that arrives meanwhile.
    pub fn wait_for(&mut self, id: &Value, timeout: Duration) -> Result<Reply, NoReply> {
        self.wait_reply(&|got: Option<&Value>| got == Some(id), timeout)
    }

    /// Waits for a reply whose id (`None` when it has none) `accept` takes.
    pub fn wait_reply(
        &mut self,
        accept: &dyn Fn(Option<&Value>) -> bool,
        timeout: Duration,
    ) -> Result<Reply, NoReply> {
        let start = Instant::now();
        let mut deadline = start + timeout;
        let mut exited = self.server.exit_status().is_some();
        if exited {
            deadline = deadline.min(Instant::now() + DRAIN_AFTER_EXIT);
        }
        loop {
            if exited && self.server.stdout_closed() {
                return Err(NoReply::Exited);
            }
            let Some(event) = self.server.next_event(deadline) else {
                if exited {
                    return Err(NoReply::Exited);
                }
                return Err(NoReply::Timeout {
                    waited_ms: start.elapsed().as_millis() as u64,
                });
            };
            match event {
                Event::Exited(_) => {
                    exited = true;
                    // Lines written just before the exit may still be in the pipe.
                    deadline = deadline.min(Instant::now() + DRAIN_AFTER_EXIT);
                }
                Event::StdoutClosed => {
                    if !exited {
                        // A crashing server closes stdout as it exits: wait a moment for
                        // the exit, so the record says "exited" rather than "closed stdout".
                        let until = Instant::now() + DRAIN_AFTER_EXIT;
                        while self.server.exit_status().is_none() {
                            if self.server.next_event(until).is_none() && Instant::now() >= until {
                                return Err(NoReply::StdoutClosed);
                            }
                        }
                        return Err(NoReply::Exited);
                    }
                }
                Event::Stdout(Frame::Oversize(bytes)) => return Err(NoReply::Oversize { bytes }),
                Event::Stdout(Frame::Line(line)) => {
                    if let Some(reply) = self.on_line(&line, accept) {
                        return Ok(reply);
                    }
                }
            }
        }
    }

    /// Handles one stdout line; returns the reply if it is the one awaited.
    fn on_line(&mut self, line: &[u8], accept: &dyn Fn(Option<&Value>) -> bool) -> Option<Reply> {
        self.traffic.max_line = self.traffic.max_line.max(line.len());
        let decoded = framing::decode(line);
        if decoded.crlf {
            self.traffic.crlf_lines += 1;
        }
        let msg = match decoded.kind {
            LineKind::Message(m) => m,
            LineKind::Noise(kind) => {
                self.traffic.noise_count += 1;
                if self.traffic.noise.len() < NOISE_KEEP {
                    let cut = &line[..line.len().min(NOISE_LINE_BYTES)];
                    self.traffic
                        .noise
                        .push((String::from_utf8_lossy(cut).into_owned(), kind.code()));
                }
                return None;
            }
        };
        self.traffic.messages += 1;
        let method = msg.get("method").and_then(Value::as_str).map(str::to_string);
        match (method, msg.get("id")) {
            (Some(method), Some(id)) if !id.is_null() => {
                let id = id.clone();
                self.answer_server_request(&method, id);
                None
            }
            (Some(method), _) => {
                self.traffic.notification_count += 1;
                if self.traffic.notifications.len() < NAMES_KEEP {
                    self.traffic
                        .notifications
                        .push(method.chars().take(128).collect());
                }
                None
            }
            (None, id) if accept(id) => Some(classify_reply(msg)),
            (None, _) => {
                self.traffic.unmatched_replies += 1;
                None
            }
        }
    }

    fn answer_server_request(&mut self, method: &str, id: Value) {
        let (reply, how) = if method == "ping" {
            (json!({"jsonrpc": "2.0", "id": id, "result": {}}), "{}")
        } else {
            let error = json!({"code": -32601, "message": format!("mcp-witness does not handle {method}")});
            (json!({"jsonrpc": "2.0", "id": id, "error": error}), "-32601")
        };
        self.traffic.server_request_count += 1;
        if self.traffic.server_requests.len() < NAMES_KEEP {
            self.traffic
                .server_requests
                .push((method.chars().take(128).collect(), how));
        }
        self.write(&reply);
    }
}

fn classify_reply(msg: Map<String, Value>) -> Reply {
    if let Some(err) = msg.get("error") {
        let code = err.get("code").and_then(Value::as_i64);
        let message = err.get("message").and_then(Value::as_str);
        return match (code, message) {
            (Some(code), Some(message)) => Reply::Error {
                code,
                message: message.to_string(),
                data: err.get("data").cloned(),
            },
            _ => Reply::Malformed(msg),
        };
    }
    match msg.get("result") {
        Some(result) => Reply::Result(result.clone()),
        None => Reply::Malformed(msg),
    }
}
