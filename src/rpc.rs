//! JSON-RPC over a spawned server: requests matched to replies by id, server-to-client
//! requests answered (`ping` with `{}`, anything else with -32601; an id past 256 bytes is
//! never echoed), notifications and stdout noise recorded. Only the awaited reply is built,
//! under a parse budget. Every wait is bounded and ends early when the server exits, or when
//! a reply shows the awaited one cannot be matched (a repeated `id` key, an error with
//! `id: null`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::envelope::{Envelope, Id, Method};
use crate::json_budget::{self, Budget, ParseError};
use crate::mcp::wire;
use crate::redact::Redactor;
use crate::wire::framing::{self, Frame, LineKind, Noise};
use crate::wire::{Closing, Grace, Sent, Wire, WireEvent};

/// Noise lines kept verbatim (each cut to `NOISE_LINE_BYTES`).
pub const NOISE_KEEP: usize = 5;
pub const NOISE_LINE_BYTES: usize = 512;
/// Notification methods and server requests kept by name.
const NAMES_KEEP: usize = 32;
/// The longest a write waits for room in the server's stdin.
const WRITE_WAIT: Duration = Duration::from_secs(2);
/// After the server exits, how long stdout may still deliver what it wrote before exiting.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(300);
/// Requests whose method is remembered by id, so a reply is validated as what it answers.
const SENT_KEEP: usize = 64;
/// What one notification or server request may build when it is parsed for validation.
const UNSOLICITED_BUDGET: Budget = Budget::small(256 * 1024);

/// Everything seen on the wire that was not the reply being waited for.
#[derive(Debug, Default, Clone)]
pub struct Traffic {
    pub noise_count: u64,
    /// Noise lines kept (redacted and cut), with what kind of noise each is.
    pub noise: Vec<(String, Noise)>,
    pub crlf_lines: u64,
    pub notifications: Vec<String>,
    pub notification_count: u64,
    /// Server-to-client requests: method and how we answered (`{}` or -32601).
    pub server_requests: Vec<(String, &'static str)>,
    pub server_request_count: u64,
    /// Replies whose id matched nothing we were waiting for.
    pub unmatched_replies: u64,
    /// Server requests left unanswered: the answer found no room in the server's stdin (it
    /// does not read it), or the request's id was too long to echo or not an id at all.
    pub answers_not_sent: u64,
    pub max_line: usize,
    pub messages: u64,
    /// Lines that were a JSON array: batch replies (no batch is MCP since 2025-06-18).
    pub array_lines: u64,
    /// `notifications/message` (log) notifications, counted past the names kept.
    pub log_messages: u64,
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
    /// The reply would build more than its parse budget allows (its length in bytes).
    TooComplex { bytes: usize },
    /// A reply carried the `id` key more than once: which request it answers is ambiguous.
    DuplicateIdKey { keys: usize },
    /// While a request was pending, an error reply came with `id: null`: the server could not
    /// tell which request failed (often it could not parse ours), and no raw line of ours was
    /// waiting for such an answer. Code and message as sent (the message cut to 1024 bytes).
    ErrorWithNullId { code: Option<i64>, message: String },
    /// The server refused the request at the transport level (HTTP: its status).
    Refused(Box<crate::wire::Refusal>),
    /// No connection could be made to send it (HTTP).
    Unreachable { kind: std::io::ErrorKind },
    /// `https://`: TLS failed before the request could be sent.
    TlsFailed(crate::http::tls::TlsFailure),
    /// The reply stream or its connection broke off (HTTP), in words.
    Lost { why: String },
}

/// How much of a noise line is read for redaction before it is cut for the record.
const NOISE_SCAN_BYTES: usize = 64 * 1024;

/// At most `max` bytes of `text`, on a character boundary, owned.
fn cut(text: &str, max: usize) -> String {
    crate::text::cut(text, max).to_string()
}

/// A JSON-RPC client over a wire.
pub struct Rpc {
    wire: Box<dyn Wire>,
    next_id: u64,
    pub traffic: Traffic,
    /// Masks secrets in every reply, name and noise line kept, before any cut.
    pub redactor: Redactor,
    /// The run's deadline: no wait goes past it, whatever its own timeout.
    pub deadline: Option<Instant>,
    /// What one reply may build (see `json_budget`): `Budget::REPLY` unless a caller that
    /// needs only a few short fields of a reply asks for less.
    pub parse_budget: Budget,
    /// The method of the request being waited for, for the progress line.
    awaiting: &'static str,
    /// Raw lines sent (`send_raw`) whose error reply, with `id: null` when the line could not
    /// be parsed, may still come: each such reply is theirs, not a failure of a request.
    raw_unanswered: u64,
    /// Replies parsed in full that held a known secret (see `Redactor::map_secrets_found`),
    /// masked on arrival: a caller compares it before and after a request.
    pub replies_with_secrets: u64,
    /// When set, every message received is validated against the MCP schema (`mcp::wire`)
    /// and what it broke is recorded here: the awaited replies as they are parsed, and a
    /// sample of the notifications and server requests, parsed under a small budget.
    pub wire_log: Option<Box<wire::Log>>,
    /// The method of each recent request, by id (at most `SENT_KEEP`).
    sent: VecDeque<(u64, String)>,
    /// Fixed results for server requests a caller chose to answer (method, result), as the
    /// client kit's control client answers `roots/list`; every other request gets -32601.
    pub answers: Vec<(&'static str, Value)>,
    /// Answers chosen from a server request's params (method, params): a result, or an error
    /// (code, message); `None` falls back to `answers`. Set by the kit's control client, whose
    /// answer to `elicitation/create` depends on the mode asked.
    pub answerer: Option<Answerer>,
}

/// See [`Rpc::answerer`].
pub type Answerer = Box<dyn FnMut(&str, Option<&Value>) -> Option<Result<Value, (i64, String)>> + Send>;

impl Rpc {
    pub fn new(wire: Box<dyn Wire>) -> Self {
        Rpc {
            wire,
            next_id: 1,
            traffic: Traffic::default(),
            redactor: Redactor::default(),
            deadline: None,
            parse_budget: Budget::REPLY,
            raw_unanswered: 0,
            awaiting: "",
            replies_with_secrets: 0,
            wire_log: None,
            answers: Vec::new(),
            answerer: None,
            sent: VecDeque::new(),
        }
    }

    /// Remembers which method request `id` called, for the validation of its reply.
    fn remember(&mut self, id: u64, method: &str) {
        if self.wire_log.is_some() {
            if self.sent.len() >= SENT_KEEP {
                self.sent.pop_front();
            }
            self.sent.push_back((id, method.to_string()));
        }
    }

    /// The wire under this client (byte counts, exit, stderr).
    pub fn wire(&self) -> &dyn Wire {
        self.wire.as_ref()
    }

    /// The handshake settled on `version` (the wire may carry it, e.g. as an HTTP header).
    pub fn negotiated(&mut self, version: &str) {
        self.wire.negotiated(version);
    }

    /// Ends the connection (a process's measured teardown) and says how it ended.
    pub fn close(self, grace: Grace) -> Closing {
        self.wire.close(grace)
    }

    /// Whether the run's deadline has passed.
    pub fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Sends a notification (no reply expected).
    pub fn notify(&mut self, method: &str, params: Option<Value>) -> bool {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        self.write(&msg) == Sent::Sent
    }

    /// Writes one raw line (the caller's bytes plus a newline), for robustness checks.
    pub fn send_raw(&mut self, bytes: &[u8]) -> bool {
        self.raw_unanswered += 1;
        self.wire.send_raw(bytes.to_vec(), Instant::now() + WRITE_WAIT) == Sent::Sent
    }

    /// Sends a request without waiting; returns its id, or `None` if it could not be sent.
    pub fn request_nowait(&mut self, method: &str, params: Option<Value>) -> Option<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.remember(id, method);
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        (self.write(&msg) == Sent::Sent).then(|| Value::from(id))
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
        self.remember(id, method);
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(p) = params {
            msg["params"] = p;
        }
        let started = Instant::now();
        match self.write(&msg) {
            Sent::Sent => {}
            Sent::Full => {
                return Err(NoReply::Timeout {
                    waited_ms: started.elapsed().as_millis() as u64,
                });
            }
            Sent::Unreachable(kind) => return Err(NoReply::Unreachable { kind }),
            Sent::TlsFailed(t) => return Err(NoReply::TlsFailed(t)),
            Sent::Closed => {
                // Usually the server has exited: say so if its exit shows up promptly.
                return match self.wait_for(&Value::from(id), DRAIN_AFTER_EXIT) {
                    Err(NoReply::Exited) => Err(NoReply::Exited),
                    _ => Err(NoReply::StdinClosed),
                };
            }
        }
        self.awaiting = progress_name(method);
        let reply = self.wait_for(&Value::from(id), timeout.saturating_sub(started.elapsed()));
        self.awaiting = "";
        match reply {
            // The timeout counts from before the request was written: so does the wait reported.
            Err(NoReply::Timeout { .. }) => Err(NoReply::Timeout {
                waited_ms: started.elapsed().as_millis() as u64,
            }),
            other => other,
        }
    }

    /// Queues a message, waiting at most `WRITE_WAIT` for room (a server that never reads
    /// its stdin must not hang us).
    fn write(&mut self, msg: &Value) -> Sent {
        let message = serde_json::to_vec(msg).expect("serializing a Value cannot fail");
        self.wire.send(message, Instant::now() + WRITE_WAIT)
    }

    /// Waits for the reply carrying `id`, handling everything else that arrives meanwhile.
    /// Being a pending request, an error reply with `id: null` or a reply with a repeated
    /// `id` key ends the wait at once.
    pub fn wait_for(&mut self, id: &Value, timeout: Duration) -> Result<Reply, NoReply> {
        self.wait_inner(&|got: Option<&Value>| got == Some(id), timeout, true)
    }

    /// Waits for a reply whose id (`None` when it has none) `accept` takes.
    pub fn wait_reply(
        &mut self,
        accept: &dyn Fn(Option<&Value>) -> bool,
        timeout: Duration,
    ) -> Result<Reply, NoReply> {
        self.wait_inner(accept, timeout, false)
    }

    fn wait_inner(
        &mut self,
        accept: &dyn Fn(Option<&Value>) -> bool,
        timeout: Duration,
        pending: bool,
    ) -> Result<Reply, NoReply> {
        let start = Instant::now();
        let mut deadline = start + timeout;
        if let Some(run_deadline) = self.deadline {
            deadline = deadline.min(run_deadline);
        }
        let mut exited = self.wire.exit().is_some();
        if exited {
            deadline = deadline.min(Instant::now() + DRAIN_AFTER_EXIT);
        }
        let shown = crate::progress::enabled() && !self.awaiting.is_empty();
        let result = 'wait: loop {
            if exited && self.wire.output_closed() {
                break Err(NoReply::Exited);
            }
            // With a progress line, wake once a second to rewrite it.
            let slice = if shown {
                deadline.min(Instant::now() + crate::progress::AFTER)
            } else {
                deadline
            };
            let Some(event) = self.wire.next(slice) else {
                if slice < deadline && !exited {
                    crate::progress::waiting(self.awaiting, start.elapsed(), deadline - start);
                    continue;
                }
                if exited {
                    break Err(NoReply::Exited);
                }
                break Err(NoReply::Timeout {
                    waited_ms: start.elapsed().as_millis() as u64,
                });
            };
            match event {
                WireEvent::Exited(_) => {
                    exited = true;
                    // Lines written just before the exit may still be in the pipe.
                    deadline = deadline.min(Instant::now() + DRAIN_AFTER_EXIT);
                }
                WireEvent::OutputClosed => {
                    if !exited {
                        // A crashing server closes stdout as it exits: wait a moment for
                        // the exit, so the record says "exited" rather than "closed stdout".
                        let until = Instant::now() + DRAIN_AFTER_EXIT;
                        while self.wire.exit().is_none() {
                            if self.wire.next(until).is_none() && Instant::now() >= until {
                                break 'wait Err(NoReply::StdoutClosed);
                            }
                        }
                        break Err(NoReply::Exited);
                    }
                }
                WireEvent::Frame(Frame::Oversize(bytes)) => break Err(NoReply::Oversize { bytes }),
                WireEvent::Refused(refusal) => {
                    // Refused without an id (a notification, a raw message): the awaited
                    // reply may still come; the wire's facts keep the status.
                    if refusal.id.as_ref().is_some_and(|id| accept(Some(id))) {
                        break Err(NoReply::Refused(Box::new(refusal)));
                    }
                }
                WireEvent::Lost { id, why } => {
                    // Lost for the awaited request, or for no request in particular (a
                    // stream that carried every reply) while one waits.
                    if id.as_ref().map_or(pending, |id| accept(Some(id))) {
                        break Err(NoReply::Lost { why });
                    }
                }
                WireEvent::Frame(Frame::Line(line)) => {
                    if let Some(reply) = self.on_line(&line, accept, pending) {
                        break reply;
                    }
                }
            }
        };
        if shown {
            crate::progress::clear();
        }
        result
    }

    /// Handles one stdout line; returns the reply if it is the one awaited (or why the
    /// awaited reply cannot be had). Only that reply is parsed in full, under `parse_budget`:
    /// other lines cost no more memory than their envelope.
    fn on_line(
        &mut self,
        line: &[u8],
        accept: &dyn Fn(Option<&Value>) -> bool,
        pending: bool,
    ) -> Option<Result<Reply, NoReply>> {
        self.traffic.max_line = self.traffic.max_line.max(line.len());
        let decoded = framing::decode(line);
        if decoded.crlf {
            self.traffic.crlf_lines += 1;
        }
        let body = match decoded.kind {
            LineKind::Object(body) => body,
            LineKind::Noise(kind) => {
                self.traffic.noise_count += 1;
                if kind == Noise::NotObject && line.trim_ascii_start().first() == Some(&b'[') {
                    self.traffic.array_lines += 1;
                }
                if self.traffic.noise.len() < NOISE_KEEP {
                    // Redact the whole line first, so no part of a secret survives the cut.
                    let text = String::from_utf8_lossy(&line[..line.len().min(NOISE_SCAN_BYTES)]);
                    let text = self.redactor.text(&text);
                    self.traffic.noise.push((cut(&text, NOISE_LINE_BYTES), kind));
                }
                return None;
            }
        };
        self.traffic.messages += 1;
        let Ok(env) = serde_json::from_slice::<Envelope>(body) else {
            self.traffic.unmatched_replies += 1;
            return None;
        };
        match (&env.method, env.id()) {
            (Some(Method::Name(method)), Some(id)) if *id != Id::Value(Value::Null) => {
                let method = method.clone();
                // Only a caller that answers by params pays for parsing them.
                let chosen = self.answerer.as_mut().and_then(|answer| {
                    let msg = serde_json::from_slice::<Value>(body).ok();
                    answer(&method, msg.as_ref().and_then(|m| m.get("params")))
                });
                self.answer_server_request(&method, id.clone(), chosen);
                self.validate_unsolicited(wire::Kind::ServerRequest, body);
                None
            }
            (Some(method), _) => {
                if env.id().is_none() {
                    self.validate_unsolicited(wire::Kind::Notification, body);
                }
                self.traffic.notification_count += 1;
                if matches!(method, Method::Name(m) if m == "notifications/message") {
                    self.traffic.log_messages += 1;
                }
                if self.traffic.notifications.len() < NAMES_KEEP {
                    // Redact before the cut, so no part of a secret survives it.
                    let name = match method {
                        Method::Name(m) => cut(&self.redactor.text(m), 128),
                        Method::NotString => "(not a string)".to_string(),
                    };
                    self.traffic.notifications.push(name);
                }
                None
            }
            (None, _) => self.on_reply(body, &env, accept, pending),
        }
    }

    /// A message without a method: the awaited reply, an unmatchable one, or another's.
    fn on_reply(
        &mut self,
        body: &[u8],
        env: &Envelope,
        accept: &dyn Fn(Option<&Value>) -> bool,
        pending: bool,
    ) -> Option<Result<Reply, NoReply>> {
        let accepted = if env.ids.is_empty() {
            accept(None)
        } else {
            env.ids
                .iter()
                .any(|id| matches!(id, Id::Value(v) if accept(Some(v))))
        };
        if env.id_keys > 1 && (accepted || pending) {
            return Some(Err(NoReply::DuplicateIdKey { keys: env.id_keys }));
        }
        let null_error = env.has_error && env.id() == Some(&Id::Value(Value::Null));
        // An error with id null answers one of our raw lines, if any may still be answered.
        let ours = null_error && self.raw_unanswered > 0;
        if ours {
            self.raw_unanswered -= 1;
        }
        if !accepted {
            if pending && null_error && !ours {
                let (code, message) = match json_budget::parse_object(body, Budget::REPLY) {
                    Ok(msg) => {
                        let err = msg.get("error");
                        let code = err.and_then(|e| e.get("code")).and_then(Value::as_i64);
                        let message = err
                            .and_then(|e| e.get("message"))
                            .and_then(Value::as_str)
                            .map_or_else(String::new, |m| cut(&self.redactor.text(m), 1024));
                        (code, message)
                    }
                    Err(_) => (None, String::new()),
                };
                return Some(Err(NoReply::ErrorWithNullId { code, message }));
            }
            self.note_id_echo(env, accept);
            self.traffic.unmatched_replies += 1;
            return None;
        }
        Some(match json_budget::parse_object(body, self.parse_budget) {
            Ok(mut msg) => {
                // Redacted whole as it arrives (strings and keys), before anything reads, cuts
                // or records a part of it.
                if self.redactor.map_secrets_found(&mut msg) > 0 {
                    self.replies_with_secrets += 1;
                }
                let msg = self.validate_reply(env, msg);
                Ok(classify_reply(msg))
            }
            Err(ParseError::TooComplex) => Err(NoReply::TooComplex { bytes: body.len() }),
            Err(ParseError::Invalid) => Ok(Reply::Malformed(Map::new())),
        })
    }

    /// Validates an awaited reply as the answer to the method its id was sent with.
    fn validate_reply(&mut self, env: &Envelope, msg: Map<String, Value>) -> Map<String, Value> {
        let Some(log) = self.wire_log.as_mut() else {
            return msg;
        };
        let method = match env.id() {
            Some(Id::Value(id)) => id
                .as_u64()
                .and_then(|id| self.sent.iter().rev().find(|(sent, _)| *sent == id))
                .map(|(_, m)| m.as_str()),
            _ => None,
        };
        let value = Value::Object(msg);
        log.record(wire::Kind::Reply(method), &value);
        match value {
            Value::Object(msg) => msg,
            _ => Map::new(),
        }
    }

    /// A reply matched nothing: if its id is one of ours written as a string ("7" for 7),
    /// the server did not echo the id exactly.
    fn note_id_echo(&mut self, env: &Envelope, accept: &dyn Fn(Option<&Value>) -> bool) {
        let Some(log) = self.wire_log.as_mut() else { return };
        for id in &env.ids {
            // Our ids are integers: one written as a string ("7") or as a float (7.0).
            let as_ours = match id {
                Id::Value(Value::String(s)) => s.parse::<u64>().ok(),
                Id::Value(Value::Number(n)) if n.is_f64() => n
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15)
                    .map(|f| f as u64),
                _ => None,
            };
            if let (Some(n), Id::Value(raw)) = (as_ours, id)
                && (accept(Some(&Value::from(n))) || self.sent.iter().any(|(sent, _)| *sent == n))
            {
                // Both SDKs correlate "7" with 7; the Python SDK's ids are strict integers or
                // strings, so 7.0 is refused.
                let (what, rule, severity) = if raw.is_string() {
                    ("the string", "id-echo-string", wire::Severity::Tolerated)
                } else {
                    ("the float", "id-echo-float", wire::Severity::Reject)
                };
                log.add(wire::Found {
                    family: wire::Family::Envelope,
                    violation: wire::Violation {
                        pointer: "/id".into(),
                        rule,
                        message: format!(
                            "the reply's id is {what} {} where the request's id was the integer {n}: ids are echoed exactly, with their type",
                            crate::text::truncate(&crate::inert::json(raw), 64)
                        ),
                        severity,
                        payload: crate::text::truncate(&crate::inert::json(raw), 240),
                    },
                });
            }
        }
    }

    /// Parses a notification or server request under a small budget and validates it, for
    /// the first `SAMPLE_UNSOLICITED` of a run; later ones (and unparsable ones) are counted.
    fn validate_unsolicited(&mut self, kind: wire::Kind<'static>, body: &[u8]) {
        let Some(log) = self.wire_log.as_mut() else { return };
        let sampled = log
            .families
            .get(&wire::family_of(kind, &Value::Null))
            .map_or(0, |f| f.messages);
        if sampled >= wire::SAMPLE_UNSOLICITED {
            log.unsampled += 1;
            return;
        }
        match json_budget::parse(body, UNSOLICITED_BUDGET) {
            Ok(mut value) => {
                if let Value::Object(m) = &mut value {
                    self.redactor.map_secrets_found(m);
                }
                log.record(kind, &value);
            }
            Err(_) => log.unsampled += 1,
        }
    }

    fn answer_server_request(&mut self, method: &str, id: Id, chosen: Option<Result<Value, (i64, String)>>) {
        self.traffic.server_request_count += 1;
        let how = match id {
            // Never echo an id too long to be one (a server could make us queue its bytes),
            // nor something that is not an id.
            Id::TooLong(_) | Id::Invalid => "not_answered",
            Id::Value(id) => {
                let fixed = self
                    .answers
                    .iter()
                    .find(|(m, _)| *m == method)
                    .map(|(_, r)| r.clone());
                let chosen = chosen.or(fixed.map(Ok));
                let reply = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": id, "result": {}})
                } else if let Some(Err((code, message))) = &chosen {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                } else if let Some(Ok(result)) = &chosen {
                    json!({"jsonrpc": "2.0", "id": id, "result": result})
                } else {
                    let error =
                        json!({"code": -32601, "message": "mcp-witness does not handle this request"});
                    json!({"jsonrpc": "2.0", "id": id, "error": error})
                };
                let message = serde_json::to_vec(&reply).expect("serializing a Value cannot fail");
                // Never wait to answer: a server that floods requests without reading its
                // stdin gets its answers dropped (the transport bounds the bytes queued), not
                // our probe hung.
                match self.wire.send(message, Instant::now()) {
                    Sent::Sent if method == "ping" => "{}",
                    Sent::Sent if chosen.is_some() => "answered",
                    Sent::Sent => "-32601",
                    _ => "dropped",
                }
            }
        };
        if matches!(how, "not_answered" | "dropped") {
            self.traffic.answers_not_sent += 1;
        }
        if self.traffic.server_requests.len() < NAMES_KEEP {
            let method = self.redactor.text(method);
            self.traffic.server_requests.push((cut(&method, 128), how));
        }
    }
}

/// A reply in words, for reasons and messages.
pub fn describe(reply: &Result<Reply, NoReply>) -> String {
    match reply {
        Ok(Reply::Result(_)) => "returned a result".into(),
        Ok(Reply::Error { code, message, .. }) => {
            format!("returned error {code}: {}", crate::text::truncate(message, 200))
        }
        Ok(Reply::Malformed(_)) => "returned a reply with neither result nor error".into(),
        Err(why) => describe_no_reply(why),
    }
}

/// Why no reply came, in words.
pub fn describe_no_reply(why: &NoReply) -> String {
    match why {
        NoReply::Timeout { waited_ms } => format!("got no reply within {waited_ms} ms"),
        NoReply::Exited => "got no reply: the server exited".into(),
        NoReply::StdoutClosed => "got no reply: the server closed its stdout".into(),
        NoReply::Oversize { bytes } => format!("got a line longer than the bound ({bytes} bytes)"),
        NoReply::StdinClosed => "could not be sent: the server's stdin is closed".into(),
        NoReply::TooComplex { bytes } => {
            format!("got a reply too complex to hold ({bytes} bytes, past the parse budget)")
        }
        NoReply::DuplicateIdKey { keys } => {
            format!("got a reply with the `id` key {keys} times (ambiguous)")
        }
        NoReply::ErrorWithNullId { code, message } => format!(
            "got an error with id null ({}: {})",
            code.map_or_else(|| "no code".to_string(), |c| c.to_string()),
            crate::text::truncate(message, 200)
        ),
        NoReply::Refused(r) => {
            let body = if r.body.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", crate::text::truncate(r.body.trim(), 200))
            };
            match &r.location {
                None if r.status == 401 => format!(
                    "was refused with HTTP 401: authorization required; give credentials with --header-env 'Authorization=VAR' (the value read from $VAR){body}"
                ),
                Some(to) => format!(
                    "was redirected (HTTP {}) to {to}; redirects are not followed, give the final URL",
                    r.status
                ),
                None => format!("was refused with HTTP {}{body}", r.status),
            }
        }
        NoReply::Unreachable { kind } => format!("could not be sent: no connection ({kind})"),
        NoReply::TlsFailed(t) => format!("could not be sent: {}", t.sentence()),
        NoReply::Lost { why } => format!("got no reply: {why}"),
    }
}

/// The name a progress line gives a request: ours, from the crate's own vocabulary.
fn progress_name(method: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "initialize",
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "ping",
    ];
    KNOWN
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("server's")
}

fn classify_reply(mut msg: Map<String, Value>) -> Reply {
    if let Some(err) = msg.get_mut("error") {
        let code = err.get("code").and_then(Value::as_i64);
        let message = err.get("message").and_then(Value::as_str).map(str::to_string);
        return match (code, message) {
            (Some(code), Some(message)) => Reply::Error {
                code,
                message,
                data: err.get_mut("data").map(Value::take),
            },
            _ => Reply::Malformed(msg),
        };
    }
    match msg.remove("result") {
        Some(result) => Reply::Result(result),
        None => Reply::Malformed(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::stdio::{Server, SpawnSpec};

    /// A server in sh: answers its first line with an error whose id is null, its second
    /// with a result for id 1.
    fn null_then_result() -> Rpc {
        let script = r#"read l; echo '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad line"}}'; read l; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; cat >/dev/null"#;
        let spec = SpawnSpec {
            program: "/bin/sh".into(),
            argv0: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![],
            cwd: None,
            max_line: 1 << 20,
            background: false,
        };
        Rpc::new(Box::new(Server::spawn(&spec).unwrap()))
    }

    #[test]
    fn an_error_with_a_null_id_fails_the_pending_request_at_once() {
        let mut rpc = null_then_result();
        let reply = rpc.request("ping", None, Duration::from_secs(10));
        assert_eq!(
            reply,
            Err(NoReply::ErrorWithNullId {
                code: Some(-32700),
                message: "bad line".into()
            })
        );
        rpc.close(Grace::default());
    }

    /// A server in sh that answers its first line three times: with the id as a string, as
    /// a float, then exactly.
    fn echoes_ids_loosely() -> Rpc {
        let script = r#"read l; echo '{"jsonrpc":"2.0","id":"1","result":{}}'; echo '{"jsonrpc":"2.0","id":1.0,"result":{}}'; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; cat >/dev/null"#;
        let spec = SpawnSpec {
            program: "/bin/sh".into(),
            argv0: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![],
            cwd: None,
            max_line: 1 << 20,
            background: false,
        };
        Rpc::new(Box::new(Server::spawn(&spec).unwrap()))
    }

    #[test]
    fn an_id_echoed_as_a_string_is_tolerated_and_as_a_float_rejected() {
        let mut rpc = echoes_ids_loosely();
        rpc.wire_log = Some(Box::default());
        let reply = rpc.request("ping", None, Duration::from_secs(10));
        assert_eq!(reply, Ok(Reply::Result(json!({}))));
        let log = rpc.wire_log.take().unwrap();
        let envelope = &log.families[&wire::Family::Envelope];
        let seen: Vec<_> = envelope
            .kept
            .iter()
            .map(|v| (v.pointer.as_str(), v.rule, v.severity, v.payload.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("/id", "id-echo-string", wire::Severity::Tolerated, "\"1\""),
                ("/id", "id-echo-float", wire::Severity::Reject, "1.0"),
            ]
        );
        assert_eq!(log.families[&wire::Family::Empty].messages, 1);
        rpc.close(Grace::default());
    }

    #[test]
    fn notifications_past_the_sample_are_counted_not_parsed() {
        let script = r#"read l; i=0; while [ $i -lt 300 ]; do echo '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"loud","data":1}}'; i=$((i+1)); done; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; cat >/dev/null"#;
        let spec = SpawnSpec {
            program: "/bin/sh".into(),
            argv0: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![],
            cwd: None,
            max_line: 1 << 20,
            background: false,
        };
        let mut rpc = Rpc::new(Box::new(Server::spawn(&spec).unwrap()));
        rpc.wire_log = Some(Box::default());
        let reply = rpc.request("ping", None, Duration::from_secs(10));
        assert_eq!(reply, Ok(Reply::Result(json!({}))));
        let log = rpc.wire_log.take().unwrap();
        let notes = &log.families[&wire::Family::Notifications];
        assert_eq!(notes.messages, wire::SAMPLE_UNSOLICITED);
        assert_eq!(notes.rejects, wire::SAMPLE_UNSOLICITED);
        assert_eq!(notes.kept.len(), 1, "one distinct violation kept");
        assert_eq!(log.unsampled, 300 - wire::SAMPLE_UNSOLICITED);
        assert_eq!(rpc.traffic.notification_count, 300);
        rpc.close(Grace::default());
    }

    #[test]
    fn an_error_with_a_null_id_after_a_raw_line_of_ours_answers_that_line() {
        let mut rpc = null_then_result();
        assert!(rpc.send_raw(b"not json"));
        let reply = rpc.request("ping", None, Duration::from_secs(10));
        assert_eq!(reply, Ok(Reply::Result(json!({}))));
        assert_eq!(rpc.traffic.unmatched_replies, 1);
        rpc.close(Grace::default());
    }
}
