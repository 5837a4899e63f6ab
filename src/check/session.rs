//! The state the checks share: the server session, the handshake's result, the lists walked
//! once up front, and the fresh-process version-negotiation runs.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::CheckOptions;
use super::checks::{List, Prefetch};
use super::model::{CheckReport, CheckResult, SessionSeen};
use crate::clock;
use crate::mcp::{CLIENT_NAME, DEFAULT_LEGACY, Era, EraChoice, ServerInfo, wire};
use crate::probe::outcome::{Bound, Silence, TargetSeen};
use crate::redact::Redactor;
use crate::rpc::{NoReply, Reply, Rpc, Traffic};
use crate::session::{Connector, Envelope, HandshakeError, ListSpec, Listing, Plan};
use crate::surface::{ItemKind, Surface};
use crate::text::truncate;
use crate::wire::stdio::{SpawnSpec, StderrLog, Teardown};

/// An opt-in tool call: the tool's name and its reply.
pub type OptInCall = (String, Result<Reply, NoReply>);

/// What became of a raw line sent by `probe_line`.
#[derive(Debug, Clone, PartialEq)]
pub enum Probed {
    Reply(Reply),
    /// No reply to it, though the server answered the request sent after it.
    Ignored,
    NoReply(NoReply),
}

/// A fresh process that was sent one `initialize`.
#[derive(Debug, Clone)]
pub struct SideRun {
    pub requested: String,
    /// The reply's protocolVersion, when it replied with a result.
    pub answered: Option<String>,
    /// The error reply, when it replied with one.
    pub error: Option<(i64, String)>,
    /// No reply within the timeout while alive.
    pub silent: bool,
    /// The process exited before or right after replying.
    pub exited: Option<String>,
    /// The reply could not be read within the side run's bounds (`SIDE_RUN_MAX_LINE`, a
    /// small parse budget): why.
    pub unreadable: Option<String>,
}

/// An error reply the run provoked (a JSON-RPC error, or a tool result with `isError`), kept
/// for `security.error_*`: the reply's text is redacted as it arrived.
#[derive(Debug, Clone)]
pub struct ErrorSeen {
    /// The check (or `start-up`) that sent the request.
    pub step: &'static str,
    /// The method sent, or `(raw line)` for a line that was not a request.
    pub method: String,
    /// The error's message and data, or the result's text content: at most `ERROR_TEXT_KEEP`
    /// characters.
    pub text: String,
    /// The reply held a known secret (a literal of the run, a URL password, a token shape),
    /// masked in `text`.
    pub secret: bool,
}

/// Error replies kept for the security checks, and the characters kept of each.
const ERRORS_KEEP: usize = 64;
const ERROR_TEXT_KEEP: usize = 4000;
/// After a check that sends input meant to be rejected, stderr may still be arriving: wait
/// until it has been quiet this long (at most `STDERR_SETTLE_MAX`) before closing the step.
const STDERR_QUIET: Duration = Duration::from_millis(40);
const STDERR_SETTLE_MAX: Duration = Duration::from_millis(300);
/// A server that keeps dying on the suite's input is started again at most this often.
const MAX_RESTARTS: usize = 3;

/// What one step of the run (the start-up, or one check) left on the server's stderr: the
/// last `STDERR_TAIL` bytes of it at most.
#[derive(Debug, Clone)]
pub struct StderrStep {
    /// `start-up` (spawn, handshake, list walks) or a check id.
    pub step: &'static str,
    /// The step sent input a correct server rejects: what it provoked is not held against
    /// the server's stderr hygiene.
    pub provoked: bool,
    pub text: String,
}

/// A side run under way: its version, where its result arrives, and its thread, which
/// returns its teardown (taken once joined).
type SideHandle = (
    String,
    std::sync::mpsc::Receiver<SideRun>,
    Option<JoinHandle<Option<Teardown>>>,
);
/// The side runs started at a lower priority beside the main handshake (their pids), and
/// whether that handshake is over: from then on they run at the usual priority, so that on
/// a busy machine they are not starved by other sessions' work (`sys::restore_autogroup`).
#[derive(Debug, Default)]
struct Lowered {
    handshake_done: bool,
    pids: Vec<u32>,
}

/// The longest line a version-negotiation process may send: it runs beside the main session,
/// and only its reply's protocolVersion is read, so it never holds a big line at the same time.
const SIDE_RUN_MAX_LINE: usize = 1 << 20;

/// Shared state for the checks.
pub struct Ctx<'o> {
    pub opts: &'o CheckOptions,
    pub rpc: Option<Rpc>,
    pub era: Era,
    pub protocol_version: Option<String>,
    /// What every request of the main session carries (`_meta` in the modern era).
    envelope: Envelope,
    /// The surface of the lists walked up front.
    surface: Option<crate::surface::Surface>,
    /// The initialize (legacy) or server/discover (modern) result.
    pub init: Option<Map<String, Value>>,
    pub server: Option<ServerInfo>,
    pub tools: Listing,
    pub resources: Listing,
    pub prompts: Listing,
    /// `resources/templates/list`, walked when `resources` is declared and a check reads it.
    pub templates: Listing,
    pub could_not_run: Option<String>,
    /// The handshake was refused with HTTP 401: the server wants credentials, which is no
    /// defect of it (the handshake checks skip rather than fail).
    pub auth_required: bool,
    pub redactor: Redactor,
    pub teardown: Option<Teardown>,
    pub stderr: Option<Arc<Mutex<StderrLog>>>,
    /// The opt-in tool calls, made once for the result checks.
    pub opt_in: Option<Vec<OptInCall>>,
    /// Error replies the run provoked, in order (at most `ERRORS_KEEP`).
    pub errors_seen: Vec<ErrorSeen>,
    /// Side runs under way: their result arrives on the channel before their teardown ends.
    side: Vec<SideHandle>,
    side_done: Vec<SideRun>,
    lowered: Arc<Mutex<Lowered>>,
    /// The run's deadline: no wait goes past it.
    deadline: Instant,
    /// Which bound ended the run early.
    pub bound: Option<Bound>,
    /// The handshake's unanswered wait.
    silence: Option<Silence>,
    /// Traffic and byte counts of server processes already stopped (a restart).
    earlier_traffic: Traffic,
    earlier_stdout: u64,
    earlier_stderr: u64,
    /// Checks after which the server had exited on their input and was started again.
    pub restarts: Vec<&'static str>,
    /// stderr attributed to the steps of the run.
    pub stderr_steps: Vec<StderrStep>,
    /// The step now running and the stderr byte count of the current process when it began.
    step: (&'static str, bool, u64),
    /// Redacted stderr tail of the last process that died.
    died_tail: Option<String>,
    /// The stdio server's spawn spec, for the side runs (none over HTTP).
    spec: Option<SpawnSpec>,
    endpoint: Option<crate::target::Endpoint>,
    /// What each main HTTP session showed, once closed.
    http_seen: Option<crate::probe::outcome::HttpSeen>,
    target: TargetSeen,
    stamp: clock::Stamp,
    host: String,
    digest: Option<crate::target::DigestJob>,
    /// Every message of the main session is validated (a `wire.*` check is selected).
    validate: bool,
    /// What the messages of stopped processes broke (see `wire_seen`).
    wire_log: wire::Log,
}

impl<'o> Ctx<'o> {
    /// Resolves the program, starts the version-negotiation side runs (legacy) and the main
    /// session, runs the handshake and walks the declared lists.
    pub fn start(opts: &'o CheckOptions, prefetch: &Prefetch) -> Ctx<'o> {
        let stamp = clock::now();
        let started = Instant::now();
        let host = crate::evidence::block::host_name();
        let (prepared, launched) = opts.server.prepare();
        let mut ctx = Ctx {
            opts,
            rpc: None,
            era: Era::Legacy,
            protocol_version: None,
            envelope: Envelope {
                era: Era::Legacy,
                version: DEFAULT_LEGACY.into(),
                client: CLIENT_NAME,
            },
            surface: None,
            init: None,
            server: None,
            tools: Listing::not_fetched(false),
            resources: Listing::not_fetched(false),
            prompts: Listing::not_fetched(false),
            templates: Listing::not_fetched(false),
            could_not_run: None,
            auth_required: false,
            redactor: prepared.redactor,
            teardown: None,
            stderr: None,
            opt_in: None,
            errors_seen: Vec::new(),
            side: Vec::new(),
            side_done: Vec::new(),
            lowered: Arc::default(),
            deadline: started + opts.server.deadline.unwrap_or(crate::target::CHECK_DEADLINE),
            bound: None,
            silence: None,
            earlier_traffic: Traffic::default(),
            earlier_stdout: 0,
            earlier_stderr: 0,
            restarts: Vec::new(),
            stderr_steps: Vec::new(),
            step: ("start-up", false, 0),
            died_tail: None,
            spec: None,
            endpoint: None,
            http_seen: None,
            target: prepared.target,
            stamp,
            host,
            digest: None,
            validate: prefetch.wire,
            wire_log: wire::Log::default(),
        };
        match launched {
            Ok(launch) => {
                ctx.spec = launch.endpoint.spec().cloned();
                ctx.endpoint = Some(launch.endpoint);
                ctx.digest = launch.digest;
            }
            Err(e) => {
                ctx.could_not_run = Some(e);
                return ctx;
            }
        }
        ctx.handshake(&prefetch.side_runs);
        if ctx.could_not_run.is_none() {
            ctx.walk_lists(&prefetch.lists);
        }
        ctx
    }

    /// The main session's handshake and the version-negotiation side runs (legacy era).
    /// A stdio server asked for the legacy era needs the side runs whatever its handshake
    /// shows, so they start with the main session: a server that is slow to start starts
    /// three times at once, not twice one after the other. The side runs start at a lower
    /// CPU priority (`SpawnSpec::background`) until the main handshake is done, so a server
    /// whose start is CPU-bound is not slowed in its main handshake by its own two copies.
    /// Otherwise (another era, which the handshake settles, or HTTP, where it settles the
    /// transport the side runs use) they start once the handshake is done.
    fn handshake(&mut self, side_runs: &[&'static str]) {
        let early = self.opts.server.era == EraChoice::Legacy && self.spec.is_some();
        if early {
            self.start_side_runs(side_runs, true);
        }
        self.open_session(self.opts.server.era);
        self.raise_side_runs();
        if !early && self.could_not_run.is_none() && self.era == Era::Legacy {
            self.start_side_runs(side_runs, false);
        }
    }

    /// The main handshake is over: the side runs started so far go back to the usual
    /// priority (on a thread of its own, beside the checks: the kernel spaces such changes),
    /// and those still starting do it themselves.
    fn raise_side_runs(&mut self) {
        let pids = match self.lowered.lock() {
            Ok(mut lowered) => {
                lowered.handshake_done = true;
                std::mem::take(&mut lowered.pids)
            }
            Err(_) => return,
        };
        if !pids.is_empty() {
            std::thread::spawn(move || {
                for pid in pids {
                    let _ = crate::sys::restore_autogroup(pid);
                }
            });
        }
    }

    /// Connects and runs the handshake of `choice` (the session engine); on failure sets
    /// `could_not_run`.
    fn open_session(&mut self, choice: EraChoice) {
        let opts = self.opts;
        let plan = Plan {
            choice,
            version: opts.server.protocol_version.as_deref(),
            timeout: opts.server.timeout,
            client: CLIENT_NAME,
        };
        let (rpc, hs, outcome) = crate::session::open(self, &plan);
        self.rpc = rpc;
        self.era = hs.era;
        self.envelope = hs.envelope();
        self.protocol_version = hs.version.clone();
        self.server = hs.server;
        self.init = hs.result;
        let version = hs.version.as_deref().and_then(wire::Version::parse);
        if let Some(log) = self.rpc.as_mut().and_then(|r| r.wire_log.as_mut()) {
            log.version = version;
        }
        if let Err(e) = outcome {
            self.auth_required = matches!(&e, HandshakeError::NoReply {
                why: NoReply::Refused(r),
                ..
            } if r.status == 401);
            if let HandshakeError::NoReply {
                step,
                why: NoReply::Timeout { waited_ms },
            } = &e
            {
                self.note_silence(step, *waited_ms);
            }
            let hint = match self.bound {
                Some(Bound::Deadline) => "; the run's --deadline passed (raise it with --deadline)",
                Some(Bound::Timeout) => "; raise the wait with --timeout",
                None => "",
            };
            self.could_not_run = Some(format!("{}{hint}", e.sentence()));
        }
    }

    /// Records a handshake wait that ended without a reply while the server was alive.
    fn note_silence(&mut self, step: &str, waited_ms: u64) {
        let Some(rpc) = self.rpc.as_mut() else { return };
        let bound = if rpc.past_deadline() {
            Bound::Deadline
        } else {
            Bound::Timeout
        };
        self.bound = Some(bound);
        let stats = rpc.wire().stats();
        self.silence = Some(Silence {
            step: step.to_string(),
            waited_ms,
            stdout_bytes: stats.output_bytes,
            stderr_bytes: stats.stderr_bytes,
            alive: rpc.wire().exit().is_none(),
        });
    }

    /// Starts the fresh-process initialize runs of the version-negotiation checks.
    fn start_side_runs(&mut self, versions: &[&'static str], lowered: bool) {
        // A stdio server's side runs read lines of a bounded length; an HTTP one's replies
        // are bounded by its wire.
        let endpoint = match (&self.spec, &self.endpoint) {
            (Some(spec), _) => {
                let mut spec = spec.clone();
                spec.max_line = spec.max_line.min(SIDE_RUN_MAX_LINE);
                spec.background = lowered;
                crate::target::Endpoint::Stdio(spec)
            }
            (None, Some(endpoint)) => endpoint.clone(),
            (None, None) => return,
        };
        for &version in versions {
            let spec = endpoint.clone();
            let timeout = self.opts.server.timeout;
            let grace = self.opts.server.grace;
            let (tx, rx) = std::sync::mpsc::channel();
            let deadline = self.deadline;
            let legacy_sse = self.target.transport == crate::target::Transport::HttpSse;
            let gate = lowered.then(|| Arc::clone(&self.lowered));
            let handle = std::thread::spawn(move || {
                side_run(&spec, legacy_sse, version, timeout, grace, deadline, gate, tx)
            });
            self.side.push((version.to_string(), rx, Some(handle)));
        }
    }

    /// The side run for `version`, waiting for it if needed.
    pub fn side_run(&mut self, version: &str) -> Option<SideRun> {
        let until = self.deadline.saturating_duration_since(Instant::now());
        if !self.side_done.iter().any(|r| r.requested == version)
            && let Some((_, rx, _)) = self.side.iter().find(|(v, _, _)| v == version)
            && let Ok(run) = rx.recv_timeout(until)
        {
            self.side_done.push(run);
        }
        self.side_done.iter().find(|r| r.requested == version).cloned()
    }

    /// Whether `side_run(version)` would answer without waiting: its result is in, or it
    /// will never come (not started, or its thread is gone).
    pub fn side_run_ready(&mut self, version: &str) -> bool {
        if self.side_done.iter().any(|r| r.requested == version) {
            return true;
        }
        let Some((_, rx, _)) = self.side.iter().find(|(v, _, _)| v == version) else {
            return true;
        };
        match rx.try_recv() {
            Ok(run) => {
                self.side_done.push(run);
                true
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => false,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => true,
        }
    }

    /// Walks every declared list once; the checks read the results.
    fn walk_lists(&mut self, wanted: &[List]) {
        let caps = self
            .init
            .as_ref()
            .and_then(|i| i.get("capabilities"))
            .cloned()
            .unwrap_or(Value::Null);
        let mut surface = Surface::new(self.init.as_ref().and_then(|i| i.get("instructions")));
        for (list, cap, spec, kind) in [
            (List::Tools, "tools", ListSpec::TOOLS, ItemKind::Tool),
            (
                List::Resources,
                "resources",
                ListSpec::RESOURCES,
                ItemKind::Resource,
            ),
            // Part of the `resources` capability; walked only for the checks that read it.
            (
                List::Templates,
                "resources",
                ListSpec::TEMPLATES,
                ItemKind::ResourceTemplate,
            ),
            (List::Prompts, "prompts", ListSpec::PROMPTS, ItemKind::Prompt),
        ] {
            let declared = caps.get(cap).is_some();
            let mut listing = match self.rpc.as_mut() {
                Some(rpc) if declared && wanted.contains(&list) => {
                    surface.listed(kind);
                    crate::session::walk(
                        rpc,
                        &self.envelope,
                        self.opts.server.timeout,
                        spec,
                        &mut |_, item| surface.add(kind, item),
                    )
                }
                _ => Listing::not_fetched(declared),
            };
            listing.declared = declared;
            match list {
                List::Tools => self.tools = listing,
                List::Resources => self.resources = listing,
                List::Prompts => self.prompts = listing,
                List::Templates => self.templates = listing,
            }
        }
        self.surface = Some(surface);
    }

    /// The capabilities the server declared (initialize or server/discover), when an object.
    pub fn capabilities(&self) -> Option<&Map<String, Value>> {
        self.init.as_ref()?.get("capabilities")?.as_object()
    }

    /// `params` as the session's era sends them (`_meta` added in the modern era).
    pub fn wrap(&self, params: Option<Value>) -> Option<Value> {
        self.envelope.wrap(params)
    }

    /// Sends a notification on the main session; false when it could not be sent.
    pub fn notify(&mut self, method: &str, params: Option<Value>) -> bool {
        self.rpc.as_mut().is_some_and(|rpc| rpc.notify(method, params))
    }

    /// Walks tools/list again on the main session, for `security.tool_list_drift`.
    pub fn relist_tools(&mut self) -> Listing {
        let mut l = match self.rpc.as_mut() {
            Some(rpc) => crate::session::walk(
                rpc,
                &self.envelope,
                self.opts.server.timeout,
                ListSpec::TOOLS,
                &mut |_, _| {},
            ),
            None => Listing::not_fetched(self.tools.declared),
        };
        l.declared = self.tools.declared;
        l
    }

    /// Sends a request on the main session (with `_meta` in the modern era).
    pub fn request(&mut self, method: &str, params: Option<Value>) -> Result<Reply, NoReply> {
        self.request_with(method, params, true)
    }

    /// Sends a request; `meta` false leaves `_meta` out even in the modern era.
    pub fn request_with(
        &mut self,
        method: &str,
        params: Option<Value>,
        meta: bool,
    ) -> Result<Reply, NoReply> {
        let params = if meta { self.envelope.wrap(params) } else { params };
        let timeout = self.opts.server.timeout;
        let Some(rpc) = self.rpc.as_mut() else {
            return Err(NoReply::Exited);
        };
        let masked_before = rpc.replies_with_secrets;
        let reply = rpc.request(method, params, timeout);
        let masked = rpc.replies_with_secrets > masked_before;
        self.keep_error(method, &reply, masked);
        reply
    }

    /// Keeps an error reply (or an `isError` tool result) for the security checks.
    fn keep_error(&mut self, method: &str, reply: &Result<Reply, NoReply>, secret: bool) {
        if self.errors_seen.len() >= ERRORS_KEEP {
            return;
        }
        let text = match reply {
            Ok(Reply::Error { message, data, .. }) => {
                let mut t = truncate(message, ERROR_TEXT_KEEP);
                if let Some(d) = data {
                    t.push('\n');
                    t.push_str(&match d {
                        Value::String(s) => truncate(s, ERROR_TEXT_KEEP),
                        other => truncate(&other.to_string(), ERROR_TEXT_KEEP),
                    });
                }
                t
            }
            Ok(Reply::Result(r)) if r.get("isError") == Some(&Value::Bool(true)) => {
                let texts: Vec<&str> = r
                    .get("content")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .take(16)
                            .filter_map(|c| c.get("text").and_then(Value::as_str))
                            .collect()
                    })
                    .unwrap_or_default();
                texts
                    .iter()
                    .map(|t| truncate(t, ERROR_TEXT_KEEP))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            _ => return,
        };
        self.errors_seen.push(ErrorSeen {
            step: self.step.0,
            method: truncate(method, 128),
            text: truncate(&text, ERROR_TEXT_KEEP),
            secret,
        });
    }

    /// Writes a raw line, then a harmless request behind it, and waits for a reply `accept`
    /// takes. A server answers in order, so when the later request's reply comes first (plus
    /// a short grace), the raw line got no reply: this costs a round trip, not a timeout.
    pub fn probe_line(&mut self, line: &[u8], accept: &dyn Fn(Option<&Value>) -> bool) -> Probed {
        let before = self.rpc.as_ref().map_or(0, |r| r.replies_with_secrets);
        let probed = self.probe_line_unkept(line, accept);
        if let Probed::Reply(reply) = &probed {
            let masked = self.rpc.as_ref().is_some_and(|r| r.replies_with_secrets > before);
            self.keep_error("(raw line)", &Ok(reply.clone()), masked);
        }
        probed
    }

    fn probe_line_unkept(&mut self, line: &[u8], accept: &dyn Fn(Option<&Value>) -> bool) -> Probed {
        let timeout = self.opts.server.timeout;
        let sentinel = match self.era {
            Era::Modern => ("tools/list", self.envelope.wrap(None)),
            Era::Legacy => ("ping", None),
        };
        let Some(rpc) = self.rpc.as_mut() else {
            return Probed::NoReply(NoReply::Exited);
        };
        let sent = Instant::now();
        if !rpc.send_raw(line) {
            return Probed::NoReply(NoReply::StdinClosed);
        }
        let Some(sid) = rpc.request_nowait(sentinel.0, sentinel.1) else {
            return Probed::NoReply(NoReply::StdinClosed);
        };
        let hit = std::cell::Cell::new(false);
        let first = rpc.wait_reply(
            &|id| {
                if id == Some(&sid) {
                    hit.set(true);
                    true
                } else {
                    accept(id)
                }
            },
            timeout,
        );
        match first {
            Ok(reply) if !hit.get() => {
                // Drain the sentinel's reply so it is not counted as unmatched later.
                let _ = rpc.wait_for(&sid, timeout);
                Probed::Reply(reply)
            }
            Ok(_) => match rpc.wait_reply(accept, late_reply_grace(sent.elapsed())) {
                Ok(reply) => Probed::Reply(reply),
                Err(_) => Probed::Ignored,
            },
            Err(e) => Probed::NoReply(e),
        }
    }

    /// Writes a raw line and waits for a reply `accept` takes.
    pub fn send_raw_and_wait(
        &mut self,
        line: &[u8],
        accept: &dyn Fn(Option<&Value>) -> bool,
    ) -> Result<Reply, NoReply> {
        let timeout = self.opts.server.timeout;
        let Some(rpc) = self.rpc.as_mut() else {
            return Err(NoReply::Exited);
        };
        if !rpc.send_raw(line) {
            return Err(NoReply::StdinClosed);
        }
        let before = rpc.replies_with_secrets;
        let reply = rpc.wait_reply(accept, timeout);
        let masked = rpc.replies_with_secrets > before;
        self.keep_error("(raw line)", &reply, masked);
        reply
    }

    /// Whether the run's deadline has passed.
    pub fn past_deadline(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// The Streamable HTTP endpoint, when the server is reached over it (not when the run
    /// fell back to the HTTP+SSE transport of 2024-11-05).
    pub fn http_target(&self) -> Option<&crate::target::HttpTarget> {
        if self.target.transport != crate::target::Transport::StreamableHttp {
            return None;
        }
        match &self.endpoint {
            Some(crate::target::Endpoint::Http(t)) => Some(t),
            _ => None,
        }
    }

    /// When a wait that starts now must end: after one `--timeout`, never past the run's
    /// deadline.
    pub fn wait_until(&self) -> Instant {
        (Instant::now() + self.opts.server.timeout).min(self.deadline)
    }

    /// How long the run may take in all.
    pub fn deadline_secs(&self) -> f64 {
        self.opts
            .server
            .deadline
            .unwrap_or(crate::target::CHECK_DEADLINE)
            .as_secs_f64()
    }

    /// The stderr byte count of the current server process.
    fn stderr_bytes_now(&self) -> u64 {
        self.stderr
            .as_ref()
            .and_then(|s| s.lock().ok().map(|l| l.bytes))
            .unwrap_or(0)
    }

    /// The step now running.
    pub fn current_step(&self) -> &'static str {
        self.step.0
    }

    /// Starts a step (a check): what stderr carries from now on is attributed to it.
    pub fn begin_step(&mut self, step: &'static str, provoking: bool) {
        self.end_step();
        self.step = (step, provoking, self.stderr_bytes_now());
    }

    /// Closes the running step, keeping what it left on stderr (at most `STDERR_TAIL` bytes
    /// of it, redacted). After a step that provoked the server, stderr is given a moment to
    /// arrive, since its reader runs beside the one that brought the reply.
    pub fn end_step(&mut self) {
        let (step, provoked, start) = self.step;
        if provoked {
            std::thread::sleep(Duration::from_millis(5));
            let settle_until = Instant::now() + STDERR_SETTLE_MAX;
            let mut seen = self.stderr_bytes_now();
            while seen > start && Instant::now() < settle_until {
                std::thread::sleep(STDERR_QUIET);
                let now = self.stderr_bytes_now();
                if now == seen {
                    break;
                }
                seen = now;
            }
        }
        let text = self.stderr.as_ref().and_then(|s| {
            let log = s.lock().ok()?;
            let new = usize::try_from(log.bytes.saturating_sub(start)).unwrap_or(usize::MAX);
            let keep = new.min(log.tail.len());
            (keep > 0).then(|| {
                (
                    String::from_utf8_lossy(&log.tail[log.tail.len() - keep..]).into_owned(),
                    new > keep,
                )
            })
        });
        if let Some((text, cut)) = text {
            let mut text = self.redactor.text(&text);
            if cut {
                // The step's output began before the kept tail: its first line is partial and
                // could hold the end of a secret the redactor no longer recognises.
                text.drain(..text.find('\n').map_or(text.len(), |i| i + 1));
            }
            self.stderr_steps.push(StderrStep { step, provoked, text });
        }
        self.step = ("between checks", false, self.stderr_bytes_now());
    }

    /// After a check whose input killed the server: keeps what the dead process showed and
    /// starts a fresh one (same era, no list walk) so the remaining checks still run. The
    /// first handshake's record stays the run's record. Returns false when no restart was
    /// made (too many already, or the new process did not handshake).
    pub fn restart_after(&mut self, check: &'static str) -> bool {
        self.end_step();
        if self.restarts.len() >= MAX_RESTARTS {
            return false;
        }
        self.restarts.push(check);
        self.stop_main();
        let first = (
            self.era,
            self.protocol_version.clone(),
            self.init.take(),
            self.server.clone(),
            self.envelope.clone(),
        );
        let era = if self.era == Era::Modern {
            EraChoice::Modern
        } else {
            EraChoice::Legacy
        };
        self.open_session(era);
        let ok = self.could_not_run.is_none() && self.rpc.is_some();
        if !ok {
            // The suite did run: the later checks see a server that is gone and say so.
            self.could_not_run = None;
            self.silence = None;
            self.bound = None;
            self.stop_main();
        }
        (
            self.era,
            self.protocol_version,
            self.init,
            self.server,
            self.envelope,
        ) = first;
        self.step = ("restart", false, 0);
        ok
    }

    /// Everything seen on stdout, over every server process of the run.
    pub fn traffic(&self) -> Traffic {
        let current = self.rpc.as_ref().map(|r| r.traffic.clone()).unwrap_or_default();
        crate::probe::merge_traffic(self.earlier_traffic.clone(), current)
    }

    /// What every message validated so far broke, over every server process of the run.
    pub fn wire_seen(&self) -> wire::Log {
        let mut log = self.wire_log.clone();
        if let Some(current) = self.rpc.as_ref().and_then(|r| r.wire_log.as_deref()) {
            log.merge(current.clone());
        }
        log
    }

    /// Whether the main server process is still running.
    pub fn alive(&mut self) -> bool {
        let Some(rpc) = self.rpc.as_mut() else {
            return false;
        };
        // Take in whatever events are already there (an exit, say) without waiting.
        let _ = rpc.wait_reply(&|_| false, Duration::from_millis(0));
        rpc.wire().exit().is_none()
    }

    /// Stops the main process and keeps its teardown (with the escapees and survivors of the
    /// side runs, other processes of the same server, added to it), its traffic and byte
    /// counts, and (when it had died) its stderr tail.
    pub fn stop_main(&mut self) -> Option<&Teardown> {
        let mut rpc = self.rpc.take()?;
        let died = rpc.wire().exit().is_some();
        self.earlier_stdout += rpc.wire().stats().output_bytes;
        let traffic = std::mem::take(&mut rpc.traffic);
        if let Some(log) = rpc.wire_log.take() {
            self.wire_log.merge(*log);
        }
        self.earlier_traffic =
            crate::probe::merge_traffic(std::mem::take(&mut self.earlier_traffic), traffic);
        let stderr = self.stderr.take();
        let closing = rpc.close(self.opts.server.grace);
        let sides = self.join_side_runs();
        if let crate::wire::Closing::Http(end) = &closing {
            let mut end = (**end).clone();
            for x in &mut end.facts.exchanges {
                x.content_type = x.content_type.as_deref().map(|c| self.redactor.text(c));
            }
            self.http_seen
                .get_or_insert_with(Default::default)
                .sessions
                .push(end);
        }
        if let Some(mut td) = closing.into_teardown() {
            for side in sides {
                td.escapees.extend(side.escapees);
                td.survivors.extend(side.survivors);
            }
            td.survivors.sort_unstable();
            td.survivors.dedup();
            self.teardown = Some(td);
        }
        if let Some(log) = stderr.as_ref().and_then(|s| s.lock().ok().map(|l| l.clone())) {
            self.earlier_stderr += log.bytes;
            if died || self.could_not_run.is_some() {
                self.died_tail = Some(redacted_tail(&self.redactor, &log));
            }
        }
        self.teardown.as_ref()
    }

    /// Waits for the side runs' teardowns (each bounded by the grace) and returns them.
    fn join_side_runs(&mut self) -> Vec<Teardown> {
        self.side
            .iter_mut()
            .filter_map(|(_, _, h)| h.take())
            .filter_map(|h| h.join().ok().flatten())
            .collect()
    }

    pub(super) fn finish(mut self, results: Vec<CheckResult>, duration_ms: u64) -> CheckReport {
        self.end_step();
        self.stop_main();
        self.join_side_runs();
        if let Some(h) = self.digest.take()
            && let Ok(Ok((hex, source))) = h.join()
        {
            self.target.program_sha256 = Some(hex);
            self.target.program_sha256_source = Some(source);
        }
        CheckReport {
            stamp: self.stamp,
            host: self.host,
            target: self.target,
            era: self.era,
            protocol_version: self.protocol_version,
            server: self.server,
            results,
            surface: self.surface,
            could_not_run: self.could_not_run,
            bound: self.bound,
            session: SessionSeen {
                stdout_bytes: self.earlier_stdout,
                stderr_bytes: self.earlier_stderr,
                stderr_tail: self.died_tail,
                silence: self.silence,
                restarts: self.restarts,
                http: self.http_seen,
            },
            duration_ms,
            strict: self.opts.strict,
        }
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    /// The tools as listed (each a JSON object as replied).
    pub fn tool_list(&self) -> &[Value] {
        &self.tools.items
    }

    /// How the main session reaches the server.
    pub fn transport(&self) -> crate::wire::Transport {
        self.rpc
            .as_ref()
            .map_or(crate::wire::Transport::Stdio, |r| r.wire().transport())
    }

    pub fn started(&self) -> Instant {
        Instant::now()
    }
}

impl Connector for Ctx<'_> {
    fn connect(&mut self) -> Result<Rpc, String> {
        let endpoint = self.endpoint.as_ref().ok_or("the server was not resolved")?;
        let wire = endpoint.connect(self.opts.server.timeout, self.deadline)?;
        self.stderr = wire.stderr();
        let mut rpc = Rpc::new(wire);
        rpc.redactor = self.redactor.clone();
        rpc.deadline = Some(self.deadline);
        if self.validate {
            rpc.wire_log = Some(Box::default());
        }
        Ok(rpc)
    }

    fn connect_legacy_sse(&mut self) -> Option<Result<Rpc, String>> {
        let endpoint = self.endpoint.as_ref()?;
        let attempt = endpoint.connect_legacy_sse(self.opts.server.timeout, self.deadline)?;
        Some(attempt.map_err(|failed| failed.why).map(|wire| {
            self.target.transport = crate::target::Transport::HttpSse;
            let mut rpc = Rpc::new(wire);
            rpc.redactor = self.redactor.clone();
            rpc.deadline = Some(self.deadline);
            if self.validate {
                rpc.wire_log = Some(Box::default());
            }
            rpc
        }))
    }

    fn retire(&mut self, rpc: Rpc) -> String {
        self.rpc = Some(rpc);
        self.stop_main();
        String::new()
    }
}

/// One `initialize` of `version` on a fresh connection (`legacy_sse`: over the HTTP+SSE
/// transport the main session fell back to). A process started at a lower priority
/// (`lowered`) is noted there, or raised at once if the main handshake is already over.
#[allow(clippy::too_many_arguments)]
fn side_run(
    endpoint: &crate::target::Endpoint,
    legacy_sse: bool,
    version: &str,
    timeout: Duration,
    grace: crate::wire::stdio::Grace,
    deadline: Instant,
    lowered: Option<Arc<Mutex<Lowered>>>,
    done: std::sync::mpsc::Sender<SideRun>,
) -> Option<Teardown> {
    let mut run = SideRun {
        requested: version.into(),
        answered: None,
        error: None,
        silent: false,
        exited: None,
        unreadable: None,
    };
    let connected = match endpoint.connect_legacy_sse(timeout, deadline) {
        Some(attempt) if legacy_sse => attempt.map_err(|f| f.why),
        _ => endpoint.connect(timeout, deadline),
    };
    let wire = match connected {
        Ok(w) => w,
        Err(e) => {
            run.exited = Some(format!("could not start: {e}"));
            let _ = done.send(run);
            return None;
        }
    };
    if let (Some(pid), Some(lowered)) = (wire.pid(), lowered)
        && let Ok(mut lowered) = lowered.lock()
    {
        if lowered.handshake_done {
            drop(lowered);
            let _ = crate::sys::restore_autogroup(pid);
        } else {
            lowered.pids.push(pid);
        }
    }
    let mut rpc = Rpc::new(wire);
    rpc.deadline = Some(deadline);
    // Only protocolVersion and an error are read: a reply needs no more than this, text too.
    rpc.parse_budget = crate::json_budget::Budget::small(1 << 20);
    let params = crate::mcp::initialize_params(version, CLIENT_NAME);
    match rpc.request("initialize", Some(params), timeout) {
        Ok(Reply::Result(r)) => {
            run.answered = Some(
                r.get("protocolVersion")
                    .and_then(Value::as_str)
                    .map(|v| truncate(v, 64))
                    .unwrap_or_default(),
            )
        }
        Ok(Reply::Error { code, message, .. }) => run.error = Some((code, truncate(&message, 200))),
        Ok(Reply::Malformed(_)) => run.error = Some((0, "a reply with neither result nor error".into())),
        Err(NoReply::Timeout { .. }) => run.silent = true,
        Err(NoReply::Oversize { bytes }) => {
            run.unreadable = Some(format!(
                "its reply passed {SIDE_RUN_MAX_LINE} bytes ({bytes} seen)"
            ))
        }
        Err(NoReply::TooComplex { bytes }) => {
            run.unreadable = Some(format!("its reply ({bytes} bytes) held more than it needs to"))
        }
        Err(_) => {}
    }
    // Did it stay up? Give an exit a moment to show.
    let _ = rpc.wait_reply(&|_| false, Duration::from_millis(100));
    if let Some(status) = rpc.wire().exit() {
        run.exited = Some(match status {
            crate::wire::stdio::ExitInfo::Code(c) => format!("exited with code {c}"),
            crate::wire::stdio::ExitInfo::Signal(s) => format!("was killed by signal {s}"),
        });
    }
    // The result goes out first: a slow teardown does not hold the checks up.
    let _ = done.send(run);
    rpc.close(grace).into_teardown()
}

/// How long a reply to a raw line is still waited for once the reply to the request sent
/// behind it came first: a server that answers out of order answers within a few round
/// trips of that exchange (`round_trip`), so four of them, at least `LATE_REPLY_MIN` and at
/// most `LATE_REPLY_MAX`. A fixed wait cost every ignored line the maximum.
fn late_reply_grace(round_trip: Duration) -> Duration {
    (round_trip * 4).clamp(LATE_REPLY_MIN, LATE_REPLY_MAX)
}

const LATE_REPLY_MIN: Duration = Duration::from_millis(30);
const LATE_REPLY_MAX: Duration = Duration::from_millis(150);

/// The redacted stderr tail of a process, without a partial first line (it could hold the
/// end of a secret the redactor no longer recognises).
fn redacted_tail(redactor: &Redactor, log: &StderrLog) -> String {
    let mut tail = redactor.text(&log.text_tail());
    if log.bytes as usize > crate::wire::stdio::STDERR_HEAD {
        let cut = tail.find('\n').map_or(tail.len(), |i| i + 1);
        tail.drain(..cut);
    }
    tail
}
