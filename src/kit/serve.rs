//! `serve`: an instrumented stdio MCP server (legacy handshake and 2026-07-28 eras). Every
//! line in both directions goes to a JSON-lines log as it happens, one write per entry, so a
//! SIGTERM or SIGINT loses nothing already exchanged; each process and each session begins
//! with an entry of its own. Besides the list_changed cycle it asks the client for the flows
//! of `kit::flow` (roots, elicitation) when their ask tool is called.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::elicit_url::{self, URL_STATE};
use super::flow::{self, COMPLETE_PROMPT, ElicitModes, Flow};
use super::url_page::{self, Sink};
use super::{Domain, STATUS_TOOL};
use crate::wire::framing::{self, Frame, LineKind, Splitter};

/// Log file name when neither `--log` nor `MCP_WITNESS_LOG` says otherwise.
pub const DEFAULT_LOG: &str = "mcp-witness-serve.log.jsonl";
/// The environment variable naming the log (clients launch servers from their own config).
pub const LOG_ENV: &str = "MCP_WITNESS_LOG";
pub const SERVER_NAME: &str = "mcp-witness-serve";
/// Legacy versions echoed when requested; anything else gets the latest.
const KNOWN_VERSIONS: &[&str] = crate::mcp::LEGACY_VERSIONS;
const LATEST: &str = "2025-11-25";
const MAX_LINE: usize = 16 << 20;
/// Bound on one log line, which `analyze` reads back within the same bound. Room for a
/// message of `MAX_LINE` bytes and its wrapping; an entry that would still be longer (a
/// message whose re-serialisation grew, as escaped raw bytes do) is logged as a note of its size.
pub const MAX_LOG_LINE: usize = 2 * MAX_LINE;

/// The log path: `--log`, else `MCP_WITNESS_LOG`, else the default in the current folder.
pub fn log_path(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| {
        std::env::var_os(LOG_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
    .unwrap_or_else(|| PathBuf::from(DEFAULT_LOG))
}

/// The JSON-lines log. Entries are appended (a client that restarts the server keeps one
/// log); each is one `write` of a whole line, with no buffering in this process.
pub struct Log {
    file: File,
}

impl Log {
    pub fn open(path: &Path) -> io::Result<Log> {
        // A FIFO, device, folder or socket is refused at once, never blocked on.
        let file =
            crate::files::open_append(path, "serve log").map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Log { file })
    }

    /// A second handle on the same file (the URL page logs its visits through it).
    pub fn try_clone(&self) -> io::Result<Log> {
        Ok(Log {
            file: self.file.try_clone()?,
        })
    }

    /// Writes a marker entry (`dir` is `start` or `session`): where a process or a session
    /// begins, so `analyze` judges each session on its own.
    pub fn mark(&mut self, dir: &str, info: Value) {
        let ts = crate::clock::now().rfc3339;
        let mut text = serde_json::to_vec(&json!({"ts": ts, "dir": dir, "info": info}))
            .expect("serializing a Value cannot fail");
        text.push(b'\n');
        let _ = self.file.write_all(&text);
        let _ = self.file.flush();
    }

    /// Writes one entry for a line seen in direction `dir` (`in` or `out`).
    pub fn line(&mut self, dir: &str, line: &[u8]) {
        let ts = crate::clock::now().rfc3339;
        let entry = match framing::decode(line).kind {
            LineKind::Object(body) => match serde_json::from_slice::<Value>(body) {
                // The entry wraps the message one level deeper: keep it readable back.
                Ok(msg) if depth(&msg) <= MAX_DEPTH => json!({"ts": ts, "dir": dir, "msg": msg}),
                Ok(_) => json!({"ts": ts, "dir": dir, "raw": String::from_utf8_lossy(line)}),
                Err(_) => json!({"ts": ts, "dir": dir, "raw": String::from_utf8_lossy(line)}),
            },
            LineKind::Noise(_) => json!({"ts": ts, "dir": dir, "raw": String::from_utf8_lossy(line)}),
        };
        let mut text = serde_json::to_vec(&entry).expect("serializing a Value cannot fail");
        if text.len() >= MAX_LOG_LINE {
            let note = format!(
                "(entry of {} bytes not logged: over the log's line bound)",
                text.len()
            );
            text = serde_json::to_vec(&json!({"ts": ts, "dir": dir, "raw": note}))
                .expect("serializing a Value cannot fail");
        }
        text.push(b'\n');
        let _ = self.file.write_all(&text);
        let _ = self.file.flush();
    }
}

/// Messages nested deeper than this are refused (and logged as raw text), far below the
/// 128 levels at which serde_json, and so `analyze`, stop reading.
pub const MAX_DEPTH: usize = 64;
/// Open `subscriptions/listen` streams allowed at once.
const MAX_LISTENS: usize = 64;

/// Nesting depth of a JSON value.
pub fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// The modern protocol version this server speaks.
pub const MODERN_VERSION: &str = crate::mcp::DEFAULT_MODERN;
use crate::mcp::code::UNSUPPORTED_VERSION;
pub use crate::mcp::meta::SUBSCRIPTION_ID as META_SUBSCRIPTION;
use crate::mcp::meta::{
    CLIENT_CAPABILITIES as META_CAPS, PROTOCOL_VERSION as META_VERSION, SERVER_INFO as META_SERVER,
};
/// The `subscriptions/listen` filter field of each domain.
pub fn listen_field(d: Domain) -> &'static str {
    match d {
        Domain::Tools => "toolsListChanged",
        Domain::Resources => "resourcesListChanged",
        Domain::Prompts => "promptsListChanged",
    }
}

/// An open `subscriptions/listen` stream (modern era): its request id and filter.
#[derive(Debug, Clone)]
struct Listen {
    id: Value,
    wants: [bool; 3],
    /// The stream subscribed to updates of the counter resource.
    counter: bool,
}

/// Which set each domain is in, and who gets told when it changes.
#[derive(Debug, Default, Clone)]
struct State {
    mutated: [bool; 3],
    /// A legacy `initialize` was answered: list_changed goes out untagged.
    initialized: bool,
    /// The session's start entry is written (at `initialize`, or at the first modern request).
    session_marked: bool,
    /// The capabilities of the legacy `initialize`.
    caps: Value,
    /// Legacy flow questions sent and not yet answered: (our request id, the call id, flow).
    asked: Vec<(Value, Value, Flow)>,
    /// Questions sent so far (request ids `witness-<flow>-<n>`).
    questions: u64,
    /// The level set with `logging/setLevel` (legacy).
    log_level: Option<String>,
    /// The counter resource's value, and whether a legacy client subscribed to it.
    counter: u64,
    subscribed: bool,
    /// Slow calls still open: their id and era.
    slow: Vec<(Value, bool)>,
    listens: Vec<Listen>,
    /// Modern URL elicitations asked again because the page was not visited yet: id, times.
    url_reasks: Vec<(String, u32)>,
}

fn index(d: Domain) -> usize {
    match d {
        Domain::Tools => 0,
        Domain::Resources => 1,
        Domain::Prompts => 2,
    }
}

impl State {
    fn mutated(&self, d: Domain) -> bool {
        self.mutated[index(d)]
    }

    /// The current item of a domain.
    fn current(&self, d: Domain) -> &'static str {
        if self.mutated(d) { d.beta() } else { d.alpha() }
    }

    fn status(&self) -> Value {
        let s = |d: Domain| if self.mutated(d) { "beta" } else { "alpha" };
        json!({"tools": s(Domain::Tools), "resources": s(Domain::Resources), "prompts": s(Domain::Prompts)})
    }
}

/// The server: state plus where its lines go.
pub struct Serve<W: Write> {
    state: State,
    log: Log,
    out: W,
    /// Where a legacy URL elicitation's completion goes once its page is visited (stdio).
    sink: Option<Sink>,
}

impl<W: Write> Serve<W> {
    pub fn new(log: Log, out: W) -> Self {
        Serve {
            state: State::default(),
            log,
            out,
            sink: None,
        }
    }

    /// Sets where `notifications/elicitation/complete` goes (the stdio server's stdout).
    pub fn with_sink(mut self, sink: Sink) -> Self {
        self.set_sink(sink);
        self
    }

    /// Sets where `notifications/elicitation/complete` goes (an HTTP session's next stream).
    pub fn set_sink(&mut self, sink: Sink) {
        self.sink = Some(sink);
    }

    /// Writes a message the client did not ask for (logged like every other).
    pub fn push(&mut self, msg: &Value) {
        let _ = self.send(msg.clone());
    }

    /// Writes one message to the client, logging it first.
    fn send(&mut self, msg: Value) -> io::Result<()> {
        let mut line = serde_json::to_vec(&msg).expect("serializing a Value cannot fail");
        self.log.line("out", &line);
        line.push(b'\n');
        self.out.write_all(&line)?;
        self.out.flush()
    }

    /// Handles one line from the client.
    pub fn on_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.log.line("in", line);
        let body = match framing::decode(line).kind {
            LineKind::Object(body) => body,
            LineKind::Noise(framing::Noise::Blank) => return Ok(()),
            LineKind::Noise(_) => {
                return self.send(json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32700, "message": "Parse error"}}));
            }
        };
        let msg = match serde_json::from_slice::<Value>(body) {
            Ok(msg) if depth(&msg) <= MAX_DEPTH => msg,
            _ => {
                return self.send(json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32600, "message": format!("Invalid Request: nested deeper than {MAX_DEPTH} levels")}}));
            }
        };
        let method = match msg.get("method") {
            Some(Value::String(m)) => m.as_str(),
            // A response from the client: the answer to a flow question, or nothing to do.
            None => return self.on_answer(&msg),
            Some(_) => {
                let id = msg.get("id").cloned().unwrap_or(Value::Null);
                return self.send(json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32600, "message": "Invalid Request: method must be a string"}}));
            }
        };
        let id = match msg.get("id") {
            Some(id) if !id.is_null() => id.clone(),
            _ => {
                return self.on_notification(method, msg.get("params"));
            }
        };
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let modern = params.pointer(&format!("/_meta/{}", META_VERSION.replace('/', "~1")));
        let modern = match modern {
            None => false,
            Some(v) if v.as_str() == Some(MODERN_VERSION) => {
                if params["_meta"].get(META_CAPS).is_none() {
                    return self.reply(id, Err((-32602, format!("missing _meta {META_CAPS}"))), false);
                }
                true
            }
            Some(v) => {
                let error = json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": UNSUPPORTED_VERSION, "message": "Unsupported protocol version",
                    "data": {"supported": [MODERN_VERSION], "requested": v}}});
                return self.send(error);
            }
        };
        match method {
            "server/discover" if !modern => {
                let why = format!("server/discover needs _meta {META_VERSION} and {META_CAPS}");
                return self.reply(id, Err((-32602, why)), false);
            }
            "subscriptions/listen" if modern => return self.listen(id, &params),
            _ => {}
        }
        if !self.state.session_marked && (modern || method == "initialize") {
            // One session per process on stdio; its era is known at its first handshake.
            self.state.session_marked = true;
            let era = if modern { "modern" } else { "legacy" };
            self.log
                .mark("session", json!({"pid": std::process::id(), "era": era}));
        }
        if method == "tools/call"
            && let Some(f) = Flow::WITH_TOOL
                .into_iter()
                .find(|f| params.get("name").and_then(Value::as_str) == Some(f.ask_tool()))
        {
            return self.ask(id, f, &params, modern);
        }
        let (reply, mutated) = self.handle(method, &params);
        if method == "initialize" && reply.is_ok() {
            self.state.initialized = true;
            self.state.caps = params.get("capabilities").cloned().unwrap_or(Value::Null);
        }
        self.reply(id, reply, modern)?;
        if let Some(d) = mutated {
            self.changed(d)?;
        }
        Ok(())
    }

    /// Handles a notification from the client: only cancellation of a listen matters.
    /// A cancelled slow call gets a late reply on purpose (marked in its `_meta`), so the log
    /// shows whether the client ignores it.
    fn on_notification(&mut self, method: &str, params: Option<&Value>) -> io::Result<()> {
        if method == "notifications/roots/list_changed" {
            return self.reask_roots();
        }
        if method == "notifications/cancelled"
            && let Some(rid) = params.and_then(|p| p.get("requestId"))
        {
            self.state.listens.retain(|l| &l.id != rid);
            if let Some(at) = self.state.slow.iter().position(|(id, _)| id == rid) {
                let (id, modern) = self.state.slow.remove(at);
                let mut r = json!({"content": [{"type": "text", "text": "late reply to a cancelled call: a client ignores it"}]});
                r["_meta"] = json!({ LATE_REPLY: true });
                return self.reply(id, Ok(r), modern);
            }
        }
        Ok(())
    }

    /// After `notifications/roots/list_changed` (legacy): asks `roots/list` again, if the
    /// client declared `roots`. The answer is logged and judged by analyze; no call waits.
    fn reask_roots(&mut self) -> io::Result<()> {
        let declared = self.state.initialized && Flow::Roots.declared(Some(&self.state.caps)).0;
        if !declared || self.state.asked.len() >= MAX_ASKED {
            return Ok(());
        }
        self.state.questions += 1;
        let qid = Value::from(format!("witness-roots-reask-{}", self.state.questions));
        self.state.asked.push((qid.clone(), Value::Null, Flow::Roots));
        self.send(json!({"jsonrpc": "2.0", "id": qid, "method": "roots/list", "params": {}}))
    }

    /// A call of a flow's ask tool. Legacy: sends the flow's request to the client (the call
    /// is answered when the client answers). Modern: answers `input_required` with the
    /// request in `inputRequests`, or, on the retry carrying `inputResponses`, the outcome.
    fn ask(&mut self, id: Value, f: Flow, params: &Value, modern: bool) -> io::Result<()> {
        if f == Flow::Logging {
            return self.log_all_levels(id, params, modern);
        }
        if f == Flow::Progress {
            // Reports progress, then never finishes by itself: the client has to give up.
            if self.state.slow.len() >= MAX_ASKED {
                let why = "too many slow calls open: cancel the open ones first";
                return self.reply(id, Ok(tool_error(why.into())), modern);
            }
            if let Some(token) = params.pointer("/_meta/progressToken").cloned() {
                for k in 1..=3 {
                    self.send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": k, "total": 5,
                                   "message": format!("step {k} of 5")}}))?;
                }
            }
            self.state.slow.push((id, modern));
            return Ok(());
        }
        if f == Flow::Subscriptions {
            // Adds one to the counter, answers, then tells every subscriber.
            self.state.counter += 1;
            let text = format!("{COUNTER} is now count {}", self.state.counter);
            self.reply(
                id,
                Ok(json!({"content": [{"type": "text", "text": text}]})),
                modern,
            )?;
            let updated = |tag: Option<&Value>| {
                let mut p = json!({"uri": COUNTER});
                if let Some(t) = tag {
                    p["_meta"] = json!({ META_SUBSCRIPTION: t });
                }
                json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": p})
            };
            if self.state.subscribed {
                self.send(updated(None))?;
            }
            let ids: Vec<Value> = self
                .state
                .listens
                .iter()
                .filter(|l| l.counter)
                .map(|l| l.id.clone())
                .collect();
            for lid in ids {
                self.send(updated(Some(&lid)))?;
            }
            return Ok(());
        }
        let caps = if modern {
            params.pointer(&format!("/_meta/{}", META_CAPS.replace('/', "~1")))
        } else {
            Some(&self.state.caps)
        };
        let (declared, _) = f.declared(caps);
        if declared && matches!(f, Flow::ElicitationUrl | Flow::UndeclaredMode) {
            let modes = ElicitModes::of(caps.and_then(|c| c.get("elicitation")).unwrap_or(&Value::Null));
            return self.ask_mode(id, f, params, modern, modes);
        }
        if !declared {
            let place = if modern {
                "in _meta clientCapabilities"
            } else {
                "in initialize"
            };
            let why = match f {
                Flow::ElicitationUrl => format!(
                    "the client did not declare URL mode (`elicitation.url`), so this server does not send a URL mode elicitation/create: declare it ({place}) to be asked"
                ),
                Flow::UndeclaredMode => "the client declared both elicitation modes, or no elicitation: no mode is left undeclared to test it with".into(),
                _ => format!(
                    "the client did not declare the `{}` capability, so this server does not send {}: declare it ({place}) to be asked",
                    f.name(),
                    f.method(),
                ),
            };
            return self.reply(id, Ok(tool_error(why)), modern);
        }
        if modern {
            let answer = params.get("inputResponses").and_then(|r| r.get(f.name()));
            let Some(answer) = answer else {
                let result = input_required(f, f.request_params(), f.request_state());
                return self.reply(id, Ok(result), true);
            };
            let result = answer.get("result").unwrap_or(answer);
            let state_ok =
                params.get("requestState").and_then(Value::as_str) == Some(f.request_state().as_str());
            let outcome = if state_ok {
                outcome(f, Some(result), None)
            } else {
                tool_error(format!(
                    "requestState missing or changed: send back the requestState `{}` of the input_required result",
                    f.request_state()
                ))
            };
            return self.reply(id, Ok(outcome), true);
        }
        let request = f.request_params();
        self.question(id, f, request)
    }

    /// Legacy: sends the client flow `f`'s question (`request`, its params) as a server
    /// request, remembering which call it belongs to; a tool error when too many are open.
    fn question(&mut self, id: Value, f: Flow, request: Value) -> io::Result<()> {
        if self.state.asked.len() >= MAX_ASKED {
            let why = "too many questions unanswered: answer the open ones first";
            return self.reply(id, Ok(tool_error(why.into())), false);
        }
        self.state.questions += 1;
        let qid = Value::from(format!("witness-{}-{}", f.name(), self.state.questions));
        self.state.asked.push((qid.clone(), id, f));
        self.send(json!({"jsonrpc": "2.0", "id": qid, "method": f.method(), "params": request}))
    }

    /// The elicitation-mode flows: a URL mode request (`elicitation-url`), or one in the mode
    /// the client left out (`elicitation-undeclared`, a test: it must be refused). Legacy: a
    /// server request answered through `on_answer`; modern: `input_required`, then the retry.
    fn ask_mode(
        &mut self,
        id: Value,
        f: Flow,
        params: &Value,
        modern: bool,
        modes: ElicitModes,
    ) -> io::Result<()> {
        let state = params.get("requestState").and_then(Value::as_str);
        if modern && let Some(state) = state {
            let answer = params
                .get("inputResponses")
                .and_then(|r| r.get(f.name()))
                .map(|a| a.get("result").unwrap_or(a));
            let result = if f == Flow::UndeclaredMode && state == f.request_state() {
                match answer {
                    Some(a) if a.get("error").is_none() => tool_error(format!(
                        "elicitation/create in an undeclared mode: the client {}",
                        elicit_url::accepted_undeclared(a)
                    )),
                    _ => json!({"content": [{"type": "text", "text":
                        "elicitation/create in an undeclared mode: refused (correct): the retry did not answer it"}]}),
                }
            } else if let Some(eid) = state
                .strip_prefix(URL_STATE)
                .filter(|_| f == Flow::ElicitationUrl)
            {
                let visited = url_page::page(&self.log).ok().and_then(|p| p.visited(eid));
                match (visited, answer.map(elicit_url::check_url_answer)) {
                    (None, _) => {
                        tool_error("requestState names no open elicitation: call again without it".into())
                    }
                    (_, None) => tool_error("the retry has no inputResponses for the URL request".into()),
                    (_, Some(Err(why))) => {
                        tool_error(format!("elicitation/create answered, but not validly: {why}"))
                    }
                    (Some(true), Some(Ok(s))) if s.starts_with("accept") => {
                        json!({"content": [{"type": "text",
                        "text": "elicitation/create answered: accept; the page was visited: the URL flow is complete"}]})
                    }
                    (Some(false), Some(Ok(s))) if s.starts_with("accept") => {
                        // Not visited yet: ask again (bounded), as the spec allows.
                        if self.url_reask(eid) {
                            let url = url_page::page(&self.log).map(|p| p.url(eid)).unwrap_or_default();
                            let again =
                                input_required(f, elicit_url::url_params(None, &url), state.to_string());
                            return self.reply(id, Ok(again), true);
                        }
                        tool_error(format!(
                            "elicitation/create answered: accept, but the page was not visited after {URL_REASKS} more asks: open the URL, then call again"
                        ))
                    }
                    (_, Some(Ok(s))) => {
                        json!({"content": [{"type": "text", "text": format!("elicitation/create answered: {s}")}]})
                    }
                }
            } else {
                tool_error("requestState missing or changed: send back the requestState of the input_required result".into())
            };
            return self.reply(id, Ok(result), true);
        }
        let mode = match f {
            Flow::ElicitationUrl => "url",
            _ => elicit_url::undeclared_mode(modes).unwrap_or("url"),
        };
        let request = if mode == "form" {
            Flow::Elicitation.request_params()
        } else {
            let page = match url_page::page(&self.log) {
                Ok(p) => p,
                Err(why) => return self.reply(id, Ok(tool_error(why)), modern),
            };
            // Only the URL flow's own page completes towards the client.
            let sink = self.sink.clone().filter(|_| f == Flow::ElicitationUrl && !modern);
            let (eid, url) = match page.open(sink) {
                Ok(x) => x,
                Err(e) => return self.reply(id, Ok(tool_error(format!("no elicitation id: {e}"))), modern),
            };
            let p = elicit_url::url_params((!modern).then_some(eid.as_str()), &url);
            if modern && f == Flow::ElicitationUrl {
                let result = input_required(f, p, format!("{URL_STATE}{eid}"));
                return self.reply(id, Ok(result), true);
            }
            p
        };
        if modern {
            let result = input_required(f, request, f.request_state());
            return self.reply(id, Ok(result), true);
        }
        self.question(id, f, request)
    }

    /// Counts one more ask of a modern URL elicitation whose page was not visited; whether
    /// another is allowed.
    fn url_reask(&mut self, eid: &str) -> bool {
        let asks = &mut self.state.url_reasks;
        let at = match asks.iter().position(|(i, _)| i == eid) {
            Some(at) => at,
            None => {
                if asks.len() >= MAX_ASKED {
                    asks.remove(0);
                }
                asks.push((eid.to_string(), 0));
                asks.len() - 1
            }
        };
        asks[at].1 += 1;
        asks[at].1 <= URL_REASKS
    }

    /// The logging flow: one `notifications/message` per level at or above the client's
    /// level (legacy: `logging/setLevel`, all eight if none was set; modern: the request's
    /// `_meta` logLevel, none without it), then the call's result naming what was sent.
    fn log_all_levels(&mut self, id: Value, params: &Value, modern: bool) -> io::Result<()> {
        let level = if modern {
            params
                .pointer(&format!("/_meta/{}", META_LOG_LEVEL.replace('/', "~1")))
                .and_then(Value::as_str)
                .map(str::to_string)
        } else {
            Some(self.state.log_level.clone().unwrap_or_else(|| "debug".into()))
        };
        let from = level.as_deref().and_then(|l| LEVELS.iter().position(|x| *x == l));
        let sent: Vec<&str> = from.map_or(Vec::new(), |i| LEVELS[i..].to_vec());
        for l in &sent {
            self.send(json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": l, "logger": "mcp-witness", "data": format!("a message at level {l}")}}))?;
        }
        let text = if sent.is_empty() {
            "sent 0 messages: the request did not opt in with a log level".to_string()
        } else {
            format!("sent {} message(s): {}", sent.len(), sent.join(", "))
        };
        self.reply(
            id,
            Ok(json!({"content": [{"type": "text", "text": text}]})),
            modern,
        )
    }

    /// A response from the client: if it answers a flow question, the waiting call is answered.
    fn on_answer(&mut self, msg: &Value) -> io::Result<()> {
        let Some(rid) = msg.get("id") else {
            return Ok(());
        };
        let Some(at) = self.state.asked.iter().position(|(q, _, _)| q == rid) else {
            return Ok(());
        };
        let (_, call, f) = self.state.asked.remove(at);
        if call.is_null() {
            // A re-ask (roots after list_changed): no call waits for it.
            return Ok(());
        }
        let r = outcome(f, msg.get("result"), msg.get("error"));
        self.reply(call, Ok(r), false)
    }

    /// Sends the reply to request `id`; a modern reply carries `resultType` and serverInfo.
    fn reply(&mut self, id: Value, reply: Result<Value, (i64, String)>, modern: bool) -> io::Result<()> {
        let mut out = json!({"jsonrpc": "2.0", "id": id});
        match reply {
            Ok(mut result) => {
                if modern && result.is_object() {
                    if result.get("resultType").is_none() {
                        result["resultType"] = json!("complete");
                    }
                    result["_meta"] = json!({ META_SERVER: server_info() });
                    // Lists are cacheable for long: a client has to rely on list_changed. Reads
                    // of items that can change have a cache lifetime of 0 (the field is a MUST),
                    // so a client that uses a removed item asks again and the log shows it.
                    if result.get("tools").is_some()
                        || result.get("resources").is_some()
                        || result.get("prompts").is_some()
                        || result.get("resourceTemplates").is_some()
                    {
                        result["ttlMs"] = json!(300_000);
                        result["cacheScope"] = json!("public");
                    } else if result.get("contents").is_some() {
                        result["ttlMs"] = json!(0);
                        result["cacheScope"] = json!("public");
                    }
                }
                out["result"] = result;
            }
            Err((code, message)) => out["error"] = json!({"code": code, "message": message}),
        }
        self.send(out)
    }

    /// Opens a `subscriptions/listen` stream: acknowledges the filter it agrees to. The
    /// request stays open (answered only when the server ends it).
    fn listen(&mut self, id: Value, params: &Value) -> io::Result<()> {
        let refuse = |message: &str| json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": message}});
        if self.state.listens.iter().any(|l| l.id == id) {
            return self.send(refuse("a listen stream with this id is already open"));
        }
        if self.state.listens.len() >= MAX_LISTENS {
            return self.send(refuse("too many open listen streams"));
        }
        let asked = params.get("notifications");
        let mut wants = [false; 3];
        let mut agreed = serde_json::Map::new();
        for d in Domain::ALL {
            let field = listen_field(d);
            if asked.and_then(|a| a.get(field)).and_then(Value::as_bool) == Some(true) {
                wants[index(d)] = true;
                agreed.insert(field.into(), Value::Bool(true));
            }
        }
        // Of resourceSubscriptions, only the counter resource is agreed to: it alone changes.
        let counter = asked
            .and_then(|a| a.get("resourceSubscriptions"))
            .and_then(Value::as_array)
            .is_some_and(|uris| uris.iter().any(|u| u.as_str() == Some(COUNTER)));
        if counter {
            agreed.insert("resourceSubscriptions".into(), json!([COUNTER]));
        }
        self.state.listens.push(Listen {
            id: id.clone(),
            wants,
            counter,
        });
        self.send(
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": { META_SUBSCRIPTION: id }, "notifications": agreed}}),
        )
    }

    /// Tells the client that domain `d` changed: once untagged for a legacy session, and
    /// once per modern listen stream that asked for it, tagged with its subscription id.
    fn changed(&mut self, d: Domain) -> io::Result<()> {
        if self.state.initialized {
            self.send(json!({"jsonrpc": "2.0", "method": d.notification()}))?;
        }
        let ids: Vec<Value> = self
            .state
            .listens
            .iter()
            .filter(|l| l.wants[index(d)])
            .map(|l| l.id.clone())
            .collect();
        for id in ids {
            self.send(json!({"jsonrpc": "2.0", "method": d.notification(),
                "params": {"_meta": { META_SUBSCRIPTION: id }}}))?;
        }
        Ok(())
    }

    /// At shutdown: ends every open listen stream gracefully (an empty result).
    fn close_listens(&mut self) {
        for l in std::mem::take(&mut self.state.listens) {
            let _ = self.send(json!({"jsonrpc": "2.0", "id": l.id, "result": {
                "resultType": "complete", "_meta": { META_SUBSCRIPTION: l.id }}}));
        }
    }

    /// The reply to a request, and the domain it mutated, if any.
    fn handle(&mut self, method: &str, params: &Value) -> (Result<Value, (i64, String)>, Option<Domain>) {
        let text = |s: String| json!({"content": [{"type": "text", "text": s}]});
        if method == "initialize" && self.state.initialized {
            let why = "already initialized: initialize is the first request of a session, and only that";
            return (Err((-32600, why.into())), None);
        }
        if method.ends_with("/list") && params.get("cursor").is_some_and(|c| !c.is_null()) {
            let why = "invalid cursor: every list of this server is one page";
            return (Err((-32602, why.into())), None);
        }
        let reply = match method {
            "initialize" => {
                let asked = params.get("protocolVersion").and_then(Value::as_str);
                let version = asked.filter(|v| KNOWN_VERSIONS.contains(v)).unwrap_or(LATEST);
                Ok(json!({
                    "protocolVersion": version,
                    "capabilities": {
                        "tools": {"listChanged": true},
                        "resources": {"listChanged": true, "subscribe": true},
                        "prompts": {"listChanged": true},
                        "logging": {},
                        "completions": {},
                    },
                    "serverInfo": server_info(),
                    "instructions": "Instrumented server of mcp-witness: every message is logged to test how the client handles list_changed notifications.",
                }))
            }
            "server/discover" => Ok(json!({
                "supportedVersions": [MODERN_VERSION],
                "capabilities": {
                    "tools": {"listChanged": true},
                    "resources": {"listChanged": true, "subscribe": true},
                    "prompts": {"listChanged": true},
                    "logging": {},
                    "completions": {},
                },
                "instructions": "Instrumented server of mcp-witness: every message is logged to test how the client handles list_changed notifications.",
                "ttlMs": 300_000,
                "cacheScope": "public",
            })),
            "ping" => Ok(json!({})),
            "logging/setLevel" => match params.get("level").and_then(Value::as_str) {
                Some(l) if LEVELS.contains(&l) => {
                    self.state.log_level = Some(l.to_string());
                    Ok(json!({}))
                }
                _ => Err((-32602, format!("level must be one of {}", LEVELS.join(", ")))),
            },
            "tools/list" => Ok(json!({"tools": self.tools()})),
            "resources/list" => {
                let uri = self.state.current(Domain::Resources);
                let name = uri.replace("://", "-");
                Ok(
                    json!({"resources": [{"uri": uri, "name": name, "mimeType": "text/plain"},
                    {"uri": COUNTER, "name": "probe-counter", "mimeType": "text/plain",
                     "description": "A counter: witness_touch_resource adds one and tells subscribers."}]}),
                )
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                match params.get("uri").and_then(Value::as_str) {
                    Some(COUNTER) => {
                        self.state.subscribed = method == "resources/subscribe";
                        Ok(json!({}))
                    }
                    _ => Err((
                        -32602,
                        format!("only {COUNTER} can be subscribed to: it is the one resource that changes"),
                    )),
                }
            }
            "resources/templates/list" => Ok(json!({"resourceTemplates": []})),
            "prompts/list" => {
                let name = self.state.current(Domain::Prompts);
                let which = if self.state.mutated(Domain::Prompts) {
                    "beta"
                } else {
                    "alpha"
                };
                Ok(json!({"prompts": [
                    {"name": name, "description": format!("The {which} prompt of mcp-witness serve")},
                    {"name": COMPLETE_PROMPT, "description": Flow::Completion.tool_description(),
                     "arguments": [{"name": "language", "required": true}, {"name": "framework", "required": true}]},
                ]}))
            }
            "completion/complete" => {
                let prompt = params.pointer("/ref/type").and_then(Value::as_str) == Some("ref/prompt")
                    && params.pointer("/ref/name").and_then(Value::as_str) == Some(COMPLETE_PROMPT);
                let arg = params.pointer("/argument/name").and_then(Value::as_str);
                let prefix = params.pointer("/argument/value").and_then(Value::as_str);
                match (prompt, arg, prefix) {
                    (true, Some(a), Some(p)) => {
                        let values = flow::completions(a, p, params.pointer("/context/arguments"));
                        Ok(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
                    }
                    (false, _, _) => Err((
                        -32602,
                        format!("no completions: ref must be {{type: ref/prompt, name: {COMPLETE_PROMPT}}}"),
                    )),
                    _ => Err((-32602, "argument must have a string name and value".into())),
                }
            }
            "resources/read" if params.get("uri").and_then(Value::as_str) == Some(COUNTER) => Ok(
                json!({"contents": [{"uri": COUNTER, "mimeType": "text/plain", "text": format!("count {}", self.state.counter)}]}),
            ),
            "resources/read" => {
                let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
                if uri == self.state.current(Domain::Resources) {
                    let which = if self.state.mutated(Domain::Resources) {
                        "beta"
                    } else {
                        "alpha"
                    };
                    Ok(json!({"contents": [{"uri": uri, "mimeType": "text/plain",
                        "text": format!("I am the {which} resource")}]}))
                } else {
                    Err((-32002, format!("Resource not found: {uri}")))
                }
            }
            "prompts/get" if params.get("name").and_then(Value::as_str) == Some(COMPLETE_PROMPT) => {
                let arg = |k: &str| params.pointer(&format!("/arguments/{k}")).and_then(Value::as_str);
                let (language, framework) = (arg("language").unwrap_or(""), arg("framework").unwrap_or(""));
                let ctx = json!({"language": language});
                if flow::completions("language", language, None).contains(&language)
                    && flow::completions("framework", framework, Some(&ctx)).contains(&framework)
                {
                    Ok(
                        json!({"description": "A prompt built from completed arguments", "messages": [
                        {"role": "user", "content": {"type": "text", "text": format!("Write {framework} code in {language}.")}}]}),
                    )
                } else {
                    Err((
                        -32602,
                        "language and framework must be values the completions offer".into(),
                    ))
                }
            }
            "prompts/get" => {
                let name = params.get("name").and_then(Value::as_str).unwrap_or("");
                if name == self.state.current(Domain::Prompts) {
                    let which = if self.state.mutated(Domain::Prompts) {
                        "beta"
                    } else {
                        "alpha"
                    };
                    Ok(json!({"description": format!("The {which} prompt"), "messages": [
                        {"role": "user", "content": {"type": "text", "text": format!("Tell me about {which}")}}]}))
                } else {
                    Err((-32602, format!("Unknown prompt: {name}")))
                }
            }
            "tools/call" => {
                let name = params.get("name").and_then(Value::as_str).unwrap_or("");
                let now = crate::clock::now().rfc3339;
                let known = name == self.state.current(Domain::Tools)
                    || name == STATUS_TOOL
                    || Domain::ALL.iter().any(|d| d.mutate_tool() == name);
                // Every tool of this server declares `additionalProperties: false` and no
                // properties: any argument is refused, as a tool error the model can read.
                let extra = match params.get("arguments") {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(m)) if m.is_empty() => None,
                    Some(Value::Object(m)) => Some(format!(
                        "unexpected argument(s) {}: the inputSchema of {name} takes no properties (additionalProperties: false); call it with `arguments: {{}}`",
                        m.keys()
                            .take(8)
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                    Some(_) => Some(format!(
                        "arguments must be an object: the inputSchema of {name} is an object schema; call it with `arguments: {{}}`"
                    )),
                };
                if let Some(why) = extra.filter(|_| known) {
                    let mut r = text(why);
                    r["isError"] = Value::Bool(true);
                    Ok(r)
                } else if name == self.state.current(Domain::Tools) {
                    let which = if self.state.mutated(Domain::Tools) {
                        "beta"
                    } else {
                        "alpha"
                    };
                    Ok(text(format!("{which} called at {now}")))
                } else if name == STATUS_TOOL {
                    let status = self.state.status();
                    let mut r = text(status.to_string());
                    r["structuredContent"] = status;
                    Ok(r)
                } else if let Some(d) = Domain::ALL.into_iter().find(|d| d.mutate_tool() == name) {
                    if self.state.mutated(d) {
                        let mut r = text(format!("{} already mutated", d.name()));
                        r["isError"] = Value::Bool(true);
                        Ok(r)
                    } else {
                        self.state.mutated[index(d)] = true;
                        let r = text(format!(
                            "{}: removed {}, added {}; sent {}",
                            d.name(),
                            d.alpha(),
                            d.beta(),
                            d.notification()
                        ));
                        return (Ok(r), Some(d));
                    }
                } else {
                    Err((-32602, format!("Unknown tool: {name}")))
                }
            }
            _ => Err((-32601, format!("Method not found: {method}"))),
        };
        (reply, None)
    }

    fn tools(&self) -> Value {
        let none = json!({"type": "object", "additionalProperties": false});
        let probe = self.state.current(Domain::Tools);
        let which = if self.state.mutated(Domain::Tools) {
            "beta"
        } else {
            "alpha"
        };
        let mut tools = vec![json!({"name": probe,
            "description": format!("Probe tool of the {which} set: says {which} and the time."),
            "inputSchema": none})];
        for d in Domain::ALL {
            tools.push(json!({"name": d.mutate_tool(),
                "description": format!("Removes the alpha {} item, adds the beta one and sends {}.", d.name(), d.notification()),
                "inputSchema": none}));
        }
        for f in Flow::WITH_TOOL {
            tools.push(
                json!({"name": f.ask_tool(), "description": f.tool_description(), "inputSchema": none}),
            );
        }
        tools.push(json!({"name": STATUS_TOOL,
            "description": "Which set (alpha or beta) each domain is in, as JSON.",
            "inputSchema": none}));
        Value::Array(tools)
    }
}

/// The `_meta` mark of the late reply serve sends to a cancelled call.
pub const LATE_REPLY: &str = "mcp-witness/lateReply";

/// The one resource that changes, and so the one a client can subscribe to.
pub const COUNTER: &str = "probe://counter";

/// The eight log levels, least severe first.
pub const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];
/// The modern per-request log level.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// How many times a modern URL elicitation is asked again while its page is not visited.
const URL_REASKS: u32 = 3;

/// Questions of the legacy flows open at once.
const MAX_ASKED: usize = 16;

/// A modern `input_required` result asking the flow's request (keyed by the flow's name).
fn input_required(f: Flow, params: Value, state: String) -> Value {
    let mut requests = serde_json::Map::new();
    requests.insert(f.name().into(), json!({"method": f.method(), "params": params}));
    json!({"resultType": "input_required", "inputRequests": requests, "requestState": state})
}

fn tool_error(why: String) -> Value {
    json!({"content": [{"type": "text", "text": why}], "isError": true})
}

/// The result of a flow's ask tool once the client answered: what came back, judged.
fn outcome(f: Flow, result: Option<&Value>, error: Option<&Value>) -> Value {
    let (text, bad) = match (result, error) {
        _ if f == Flow::UndeclaredMode => elicit_url::undeclared_outcome(result, error),
        (Some(r), _) => match f.check_answer(r) {
            Ok(s) => (format!("{} answered: {s}", f.method()), false),
            Err(why) => (format!("{} answered, but not validly: {why}", f.method()), true),
        },
        (None, Some(e)) => (format!("{} refused by the client: {e}", f.method()), true),
        (None, None) => (
            format!("{} answered with neither result nor error", f.method()),
            true,
        ),
    };
    let mut r = json!({"content": [{"type": "text", "text": text}],
        "structuredContent": {"answer": result.cloned().unwrap_or(Value::Null)}});
    if bad {
        r["isError"] = Value::Bool(true);
    }
    r
}

fn server_info() -> Value {
    json!({"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")})
}

impl Serve<Vec<u8>> {
    /// Takes the lines written so far (the HTTP front answers with them).
    pub fn drain(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// Puts drained lines back in front of what is still to be taken (already logged: a
    /// message one HTTP stream took that belongs to another).
    pub fn undrain(&mut self, lines: &[u8]) {
        let rest = std::mem::take(&mut self.out);
        self.out = lines.to_vec();
        self.out.extend_from_slice(&rest);
    }
}

/// Runs the server on this process's stdin and stdout until stdin ends.
pub fn run(log_path: &Path) -> io::Result<()> {
    let mut log = Log::open(log_path)?;
    // Clients restart servers and several clients may share one log: every process starts
    // with an entry of its own, and `analyze` never reads two processes as one session.
    log.mark(
        "start",
        json!({"pid": std::process::id(), "version": env!("CARGO_PKG_VERSION")}),
    );
    // Unlocked stdout: the URL page's thread writes `notifications/elicitation/complete` to it
    // too, each message one locked write of a whole line.
    let sink_log = std::sync::Mutex::new(log.try_clone()?);
    let sink: Sink = std::sync::Arc::new(move |msg: &Value| {
        let mut line = serde_json::to_vec(msg).expect("serializing a Value cannot fail");
        sink_log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .line("out", &line);
        line.push(b'\n');
        let mut out = io::stdout();
        let _ = out.write_all(&line).and_then(|()| out.flush());
    });
    let mut serve = Serve::new(log, io::stdout()).with_sink(sink);
    let mut splitter = Splitter::new(MAX_LINE);
    let mut stdin = io::stdin().lock();
    let mut buf = vec![0u8; 64 * 1024];
    let mut result = Ok(());
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut lines = Vec::new();
        splitter.push(&buf[..n], &mut |f| lines.push(f));
        for frame in lines {
            let step = match frame {
                Frame::Line(line) => serve.on_line(&line),
                Frame::Oversize(bytes) => {
                    serve.log.line(
                        "in",
                        format!("(line of {bytes} bytes dropped: over the bound)").as_bytes(),
                    );
                    serve.send(json!({"jsonrpc": "2.0", "id": null,
                        "error": {"code": -32600, "message": "Invalid Request: line too long"}}))
                }
            };
            if let Err(e) = step {
                // stdout is gone: the client hung up.
                result = if e.kind() == io::ErrorKind::BrokenPipe {
                    Ok(())
                } else {
                    Err(e)
                };
                return result;
            }
        }
    }
    if let Some(Frame::Line(line)) = splitter.finish() {
        result = serve.on_line(&line).or_else(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(e)
            }
        });
    }
    serve.close_listens();
    result
}
